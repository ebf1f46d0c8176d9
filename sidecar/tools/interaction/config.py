"""Config: read or change the session's settings (model, small model, permission mode, brief).

Reading is free. Changing asks the user first (a permission request showing old → new). The model
settings are the session's (a model change is logged and announced as ``config_option_update``, as the
editor's picker does it); so is the permission mode, and ``bypassPermissions`` can only be chosen by
the user, never through this tool.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.model.client import MODEL
from sidecar.model.options import change as change_config_option
from sidecar.permissions.request import PermissionRequest
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext

Setting = Literal["model", "smallModel", "permissionMode", "brief"]
MODES = ("default", "acceptEdits", "plan")


class ConfigInput(ToolInput):
    """Read or change a setting of this session: the model ("model"), the small fast model ("smallModel"),
    the permission mode ("permissionMode": default, acceptEdits or plan) or concise output ("brief":
    true/false). Omit value to read the current one. Use it only when the user asks to change how you
    work; a change asks the user for approval first.
    """

    setting: Setting = Field(description="Which setting.")
    value: str | bool | None = Field(default=None, description="The new value; omit to read.")


def current(ctx: ToolContext, setting: str) -> Any:
    model = ctx.session.find_service(MODEL)
    if setting == "model":
        return model.settings.model if model else None
    if setting == "smallModel":
        return model.settings.small_model if model else None
    if setting == "permissionMode":
        return ctx.session.mode
    return ctx.session.brief


class Config(Tool[ConfigInput]):
    name: ClassVar[str] = "Config"
    kind: ClassVar[ToolKind] = "other"
    Input = ConfigInput

    def title(self, raw_input: dict[str, Any]) -> str:
        if raw_input.get("value") is None:
            return f"Read setting {raw_input.get('setting') or ''}".strip()
        return f"Set {raw_input.get('setting')} to {raw_input.get('value')}"

    def is_read_only(self, inp: ConfigInput) -> bool:
        return inp.value is None

    async def validate(self, inp: ConfigInput, ctx: ToolContext) -> None:
        if inp.value is None:
            return
        if inp.setting == "permissionMode" and inp.value not in MODES:
            raise ToolError(f"permissionMode must be one of {', '.join(MODES)}; bypassPermissions can only be "
                            "chosen by the user in the editor.")
        if inp.setting == "brief" and not isinstance(inp.value, bool) and str(inp.value).lower() not in (
                "true", "false"):
            raise ToolError("brief takes true or false.")
        if inp.setting in ("model", "smallModel") and not str(inp.value).strip():
            raise ToolError(f"{inp.setting} needs a model id, e.g. claude-sonnet-5-5.")

    async def check_permission(self, inp: ConfigInput, ctx: ToolContext) -> None:
        if inp.value is None:
            return
        old = current(ctx, inp.setting)
        await ctx.permissions.require(PermissionRequest(
            tool_name=self.name, access="other", title=f"Change {inp.setting}: {old} → {inp.value}",
            raw_input=inp.model_dump(), read_only=False, suggested_rule=None), ctx)

    async def run(self, inp: ConfigInput, ctx: ToolContext) -> ToolOutput:
        session = ctx.session
        old = current(ctx, inp.setting)
        if inp.value is None:
            return ToolOutput.text(f"{inp.setting} = {old}")
        # The session's own model client: a change here leaves every other session's model as it was.
        model = session.find_service(MODEL)
        value: Any = inp.value
        if inp.setting == "model" and model is not None:
            await change_config_option(session, "model", str(value), by="Config")
        elif inp.setting == "smallModel" and model is not None:
            model.settings.small_model = str(value)
        elif inp.setting == "permissionMode":
            await session.set_mode(value, by="Config")
        elif inp.setting == "brief":
            value = value if isinstance(value, bool) else str(value).lower() == "true"
            session.brief = value
        if inp.setting != "model":  # a model change audits itself
            session.audit("config", setting=inp.setting, old=old, new=value)
        if inp.setting == "model":
            return ToolOutput.text(f"model changed from {old} to {value}; it answers from the user's next message "
                                   f"(this turn finishes with {old}).")
        return ToolOutput.text(f"{inp.setting} changed from {old} to {value}.")

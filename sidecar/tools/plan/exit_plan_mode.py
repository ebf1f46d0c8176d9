"""ExitPlanMode: show the plan and ask the user to leave plan mode (docs/contract.md §5, §6).

In plan mode the gate refuses every change; this tool is the way out. The user answers with one of
three options, as Claude Code offers them: leave plan mode and auto-accept edits (``acceptEdits``),
leave plan mode and approve edits one by one (``default``), or keep planning (stay in ``plan``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from sidecar.client_messages import PermissionOption
from sidecar.errors import ToolError
from sidecar.permissions.request import PermissionRequest
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext


class ExitPlanModeInput(ToolInput):
    """Use this tool when you are in plan mode and have finished planning an implementation that changes
    code, to present the plan to the user and ask to leave plan mode and start working.

    - Only for tasks that need writing code; when the user only asked you to research or explain,
      answer instead of calling this.
    - The plan should be concise, in Markdown, and concrete: the files you will change and how.
    - The user may approve (you can then edit and run commands) or reject it with feedback: then keep
      planning with read-only tools and present a revised plan.
    """

    plan: str = Field(description="The plan to run by the user, in Markdown.")


OPTIONS: list[PermissionOption] = [
    {"optionId": "acceptEdits", "name": "Yes, and auto-accept edits", "kind": "allow_always"},
    {"optionId": "default", "name": "Yes, and manually approve edits", "kind": "allow_once"},
    {"optionId": "plan", "name": "No, keep planning", "kind": "reject_once"},
]


class ExitPlanMode(Tool[ExitPlanModeInput]):
    name: ClassVar[str] = "ExitPlanMode"
    kind: ClassVar[ToolKind] = "switch_mode"
    Input = ExitPlanModeInput

    def title(self, raw_input: dict[str, Any]) -> str:
        return "Ready to code?"

    def is_read_only(self, inp: ExitPlanModeInput) -> bool:
        return True  # it changes nothing but the mode, and only with the user's consent

    async def check_permission(self, inp: ExitPlanModeInput, ctx: ToolContext) -> None:
        # The question is the tool itself (run); rules and hooks still apply to the call.
        mode = ctx.session.mode
        if mode != "plan":
            raise ToolError(f"ExitPlanMode is only for leaving plan mode, and the session is in {mode} mode. "
                            "Go ahead with the task without calling it.")

    async def run(self, inp: ExitPlanModeInput, ctx: ToolContext) -> ToolOutput:
        session = ctx.session
        request = PermissionRequest(
            tool_name=self.name, access="other", title="Ready to code? Leave plan mode with this plan",
            raw_input={"plan": inp.plan}, read_only=True,
            content=[{"type": "content", "content": {"type": "text", "text": inp.plan}}],
        )
        answer = await session.permissions.ask_user(request, ctx, options=OPTIONS)
        chosen = answer.option_id if answer.allowed else None
        session.audit("permission", tool=self.name, toolCallId=ctx.tool_call_id, title=request.title,
                      verdict="allow" if chosen else "deny", decided_by="user", mode=session.mode,
                      reason="user cancelled" if answer.cancelled else f"user chose {answer.option_id}")
        if chosen not in ("acceptEdits", "default"):
            if answer.cancelled:
                raise ToolError("The user cancelled; the session stays in plan mode. Wait for the user's "
                                "next instruction.")
            msg = "The user did not approve the plan; the session stays in plan mode."
            if answer.feedback:
                msg += f" The user said: {answer.feedback}"
            raise ToolError(msg + " Keep researching with read-only tools and present a revised plan with "
                            "ExitPlanMode.")
        await session.set_mode("acceptEdits" if chosen == "acceptEdits" else "default", by="ExitPlanMode")
        how = ("Edits will be applied without asking" if chosen == "acceptEdits"
               else "The user will approve each edit")
        return ToolOutput.text(f"The user approved your plan and the session left plan mode ({chosen}). "
                               f"{how}. Start implementing the plan now, and keep your todo list up to date.")

"""Brief: switch concise output on or off for the rest of the session.

While on, every user turn carries a short reminder to answer briefly (``session.add_notice`` at the
start of the turn, from ``sidecar.features``), so the setting survives compaction.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext

BRIEF_NOTICE = ("Brief mode is on: answer in as few words as the task allows; no preamble, no recap, no "
                "explanations unless asked.")


class BriefInput(ToolInput):
    """Switch concise output on or off. Use it when the user asks you to be brief (or to explain more
    again). While on, keep every answer as short as the task allows."""

    enabled: bool = Field(description="true for concise output, false for normal.")


class Brief(Tool[BriefInput]):
    name: ClassVar[str] = "Brief"
    kind: ClassVar[ToolKind] = "other"
    Input = BriefInput

    def title(self, raw_input: dict[str, Any]) -> str:
        return "Brief mode on" if raw_input.get("enabled") else "Brief mode off"

    def is_read_only(self, inp: BriefInput) -> bool:
        return True

    def is_concurrency_safe(self, inp: BriefInput, ctx: ToolContext) -> bool:
        return False

    async def run(self, inp: BriefInput, ctx: ToolContext) -> ToolOutput:
        ctx.session.brief = inp.enabled
        ctx.session.audit("brief", enabled=inp.enabled)
        return ToolOutput.text(BRIEF_NOTICE if inp.enabled else "Brief mode is off: answer normally.")

"""The gate every tool call passes before its first side effect (DESIGN.md §6).

Order: forbidden (catastrophic) → rules (deny → ask → allow, first match wins) → mode → the user.
The rules engine lives in ``sidecar.permissions.rules``; this module turns its verdict and the
session's mode into "go", "refuse" or "ask the user", and asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sidecar.permissions.request import PermissionRequest
from sidecar.tools.base import ToolError

if TYPE_CHECKING:
    from sidecar.tools.base import Tool, ToolInput
    from sidecar.tools.context import ToolContext

Verdict = Literal["allow", "ask", "deny"]
Mode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
MODES: tuple[Mode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")

# Writes here ask even in bypassPermissions: they change the tooling that governs the agent.
PROTECTED_DIRS = (".git", ".claude", ".vscode", ".idea")


@dataclass
class Decision:
    verdict: Verdict
    reason: str
    rule: str | None = None
    decided_by: Literal["rule", "mode", "user", "hook", "default"] = "default"


@dataclass
class UserAnswer:
    """The user's answer to a permission question."""

    allowed: bool
    always: bool = False
    feedback: str | None = None
    cancelled: bool = False


class PermissionGate:
    """Per-session gate. ``require`` returns when the call may proceed and raises ToolError otherwise."""

    def __init__(self, session: Any) -> None:
        self.session = session
        # Rules granted "always" for this session only (edits), as Claude Code does.
        self.session_allow: list[str] = []

    async def require_for(self, tool: Tool[Any], inp: ToolInput, ctx: ToolContext) -> None:
        request = permission_request_of(tool, inp, ctx)
        await self.require(request, ctx)

    async def require(self, request: PermissionRequest, ctx: ToolContext) -> None:
        decision = self.decide(request)
        self.session.audit("permission", request=request.title, verdict=decision.verdict, reason=decision.reason,
                           rule=decision.rule, decided_by=decision.decided_by)
        if decision.verdict == "allow":
            return
        if decision.verdict == "deny":
            raise ToolError(f"Permission denied: {decision.reason}. Do not retry this call; "
                            "choose another approach or ask the user.")
        answer = await self.ask_user(request, ctx)
        self.session.audit("permission", request=request.title, verdict="allow" if answer.allowed else "deny",
                           reason="user answered", decided_by="user", always=answer.always)
        if not answer.allowed:
            raise ToolError(rejection_message(answer))

    def decide(self, request: PermissionRequest) -> Decision:
        """Rules and mode only; never asks. The permissions issue refines this (settings files, hooks)."""
        if request.forbidden_reason:
            return Decision("deny", request.forbidden_reason, decided_by="default")
        mode: Mode = self.session.mode
        if request.read_only and all(self.session.within_roots(p) for p in request.paths):
            return Decision("allow", "read-only inside the workspace", decided_by="default")
        if mode == "plan" and not request.read_only:
            return Decision("deny", "plan mode allows no changes; present the plan with ExitPlanMode first",
                            decided_by="mode")
        if mode == "bypassPermissions":
            if request.access == "write" and any(is_protected(p) for p in request.paths):
                return Decision("ask", "writes to protected folders always ask", decided_by="mode")
            return Decision("allow", "bypassPermissions mode", decided_by="mode")
        if mode == "acceptEdits" and request.access == "write" and all(
                self.session.within_roots(p) for p in request.paths) and not any(is_protected(p) for p in request.paths):
            return Decision("allow", "acceptEdits mode", decided_by="mode")
        return Decision("ask", "needs approval", decided_by="default")

    async def ask_user(self, request: PermissionRequest, ctx: ToolContext) -> UserAnswer:
        options = [
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow_always",
             "name": f"Always allow {request.suggested_rule}" if request.suggested_rule else "Always allow",
             "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        ]
        tool_call: dict[str, Any] = {
            "toolCallId": ctx.tool_call_id,
            "title": request.title if not ctx.agent_label else f"[{ctx.agent_label}] {request.title}",
            "rawInput": request.raw_input,
            "status": "pending",
        }
        if request.content:
            tool_call["content"] = request.content
        outcome = await self.session.request_permission(tool_call, options)
        if outcome is None:
            return UserAnswer(allowed=False, cancelled=True)
        option_id = outcome.get("optionId", "")
        feedback = outcome.get("_meta", {}).get("feedback") if isinstance(outcome.get("_meta"), dict) else None
        if option_id.startswith("allow"):
            answer = UserAnswer(allowed=True, always=option_id == "allow_always")
            if answer.always and request.suggested_rule:
                self.session_allow.append(request.suggested_rule)
            return answer
        return UserAnswer(allowed=False, feedback=feedback)


def rejection_message(answer: UserAnswer) -> str:
    if answer.cancelled:
        return "The user cancelled this request; the tool did not run. Wait for the user's next instruction."
    msg = "The user rejected this tool call; it did not run."
    if answer.feedback:
        msg += f" The user said: {answer.feedback}"
    return msg + " Do not retry the same call; adjust your approach to what the user wants."


def is_protected(path: Any) -> bool:
    parts = getattr(path, "parts", ())
    return any(p in PROTECTED_DIRS for p in parts)


def permission_request_of(tool: Tool[Any], inp: ToolInput, ctx: ToolContext) -> PermissionRequest:
    """Default request for tools that do not describe their own: read-only by the tool's own judgement."""
    read_only = tool.is_read_only(inp)
    return PermissionRequest(
        tool_name=tool.name,
        access="read" if read_only else "other",
        title=tool.title(inp.model_dump()),
        raw_input=inp.model_dump(by_alias=True, exclude_none=True),
        read_only=read_only,
        suggested_rule=tool.name,
    )

"""Running one tool call, every tool through the same steps, each shared concern done once:

    unknown tool → schema validation → tool.validate → PreToolUse hook → tool.prepare (what the call
      will do: a file tool's proposed text, a command's analysis) → tool.check_permission (decide/ask:
      ``gate.require``; for file tools the review of the diff) → before-call observers (checkpoint)
      → tool.run (only what was approved; raced against cancel by the caller) → PostToolUse hook
      → bounded output → metadata → editor update

A call that was prepared and stops before ``run`` gets ``tool.abandon`` (a file tool's early temp file).

A tool only implements what is particular to it. Errors become ``is_error`` results addressed to the
model; a crash inside a tool is reported as one, never propagated.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sidecar.errors import ToolError
from sidecar.permissions.hooks import run_post_tool_use, run_pre_tool_use
from sidecar.secrets import redact
from sidecar.session import ServiceKey
from sidecar.tools.base import ImageBlock, TextBlock, Tool, ToolInput, ToolOutput
from sidecar.tools.context import SpawnAgent, ToolContext

if TYPE_CHECKING:
    from sidecar.session import Session
    from sidecar.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

# What the model sees of one result at most; the whole is saved to a file it can Read.
MAX_RESULT_CHARS = 30_000


# Tool-call observers (docs/architecture.md): run around every call, in the order appended. Before:
# (tool name, whether it may write); after: the same and the call's id, True when the state before the call
# can be restored (a checkpoint's restore point).
BeforeToolCall = Callable[[str, bool], Awaitable[None]]
AfterToolCall = Callable[[str, bool, str], Awaitable[bool]]
# Announced: the model began a call of this tool (its name has streamed, its input is still streaming): a
# head start for what the call will wait on (the agent loop calls these; they must not block).
ToolCallAnnounced = Callable[[str], None]
TOOL_CALL_ANNOUNCED = ServiceKey[list[ToolCallAnnounced]]("tool_call_announced", lambda _session: [])
BEFORE_TOOL_CALL = ServiceKey[list[BeforeToolCall]]("before_tool_call", lambda _session: [])
AFTER_TOOL_CALL = ServiceKey[list[AfterToolCall]]("after_tool_call", lambda _session: [])


@dataclass
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


@dataclass
class ToolCallResult:
    call: ToolCall
    output: ToolOutput
    started: float = 0.0
    finished: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_api(self) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [b.to_api() for b in self.output.blocks]
        if not blocks:
            blocks = [{"type": "text", "text": "(no output)"}]
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": self.call.id, "content": blocks}
        if self.output.is_error:
            result["is_error"] = True
        return result


def parse_input(tool: Tool[Any], raw: dict[str, Any]) -> ToolInput:
    try:
        return tool.Input.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(input)'}: {err['msg']}" for err in exc.errors()
        )
        raise ToolError(f"Invalid input for {tool.name}: {problems}. Fix the arguments and call it again.") from None


def bound_text(text: str, save_dir: Any, call_id: str, limit: int = MAX_RESULT_CHARS) -> tuple[str, bool]:
    """Keep head and tail of an over-long text; save the whole so the model can Read it."""
    if len(text) <= limit:
        return text, False
    path = save_dir / f"{call_id}.txt"
    path.write_text(text, encoding="utf-8")
    head, tail = text[: limit * 2 // 3], text[-(limit // 3):]
    omitted = len(text) - len(head) - len(tail)
    marker = (f"\n\n[... {omitted} characters omitted. The whole output ({len(text)} characters) is saved at "
              f"{path}; Read it with offset/limit to see the rest ...]\n\n")
    return head + marker + tail, True


async def _abandon(tool: Tool[Any] | None, inp: ToolInput | None, ctx: ToolContext) -> None:
    if tool is None or inp is None:
        return
    try:
        await tool.abandon(inp, ctx)
    except Exception:
        log.exception("tool %s failed to release what it prepared", tool.name)


class Dispatcher:
    """Executes tool calls for one agent (the main agent or a sub-agent) of a session."""

    def __init__(self, session: Session, registry: ToolRegistry, agent_label: str | None = None,
                 parent_tool_call_id: str | None = None, spawn_agent: SpawnAgent | None = None) -> None:
        self.session = session
        self.registry = registry
        self.agent_label = agent_label
        self.parent_tool_call_id = parent_tool_call_id  # the Task call a sub-agent runs under
        self.spawn_agent = spawn_agent
        # Each call's context from the first step that sees it (``announce``, ``is_concurrency_safe``)
        # until ``run`` takes it: what was learned there (the editor's view of the call, a command's
        # analysis) is not worked out again.
        self._contexts: dict[str, ToolContext] = {}

    def _context(self, call: ToolCall) -> ToolContext:
        ctx = self._contexts.get(call.id)
        if ctx is None:
            async def progress(text: str) -> None:
                await self.session.send_update({
                    "sessionUpdate": "tool_call_update", "toolCallId": call.id, "status": "in_progress",
                    "content": [{"type": "content", "content": {"type": "text", "text": redact(text)}}],
                })

            ctx = self._contexts[call.id] = ToolContext(
                session=self.session, tool_call_id=call.id, agent_label=self.agent_label, _progress=progress,
                spawn_agent=self.spawn_agent, shown=self.registry.describe_call(call.name, call.input))
        return ctx

    def is_concurrency_safe(self, call: ToolCall) -> bool:
        tool = self.registry.get(call.name)
        if tool is None:
            return True  # fails fast without side effects
        try:
            return tool.is_concurrency_safe(tool.Input.model_validate(call.input), self._context(call))
        except (ValidationError, ToolError):
            return True
        except Exception:
            return False

    async def announce(self, call: ToolCall) -> None:
        """Tell the editor a call exists (status pending) as soon as the model finished it."""
        shown = self._context(call).shown
        title = str(shown["title"])
        if self.agent_label:
            title = f"[{self.agent_label}] {title}"
        meta: dict[str, Any] = {"tool": call.name}
        if self.parent_tool_call_id:
            meta["parentToolCallId"] = self.parent_tool_call_id
        await self.session.send_update({
            "sessionUpdate": "tool_call",
            "toolCallId": call.id,
            "title": title,
            "kind": shown["kind"],
            "status": "pending",
            "rawInput": call.input,
            "locations": shown["locations"],
            "_meta": {"sidecar": meta},
        })

    async def run(self, call: ToolCall) -> ToolCallResult:
        started = time.time()
        started_monotonic = time.monotonic()  # the duration survives a wall-clock step
        tool = self.registry.get(call.name)
        writes = True  # until the tool, having checked the call, says it cannot write
        ctx = self._context(call)
        del self._contexts[call.id]
        inp: ToolInput | None = None
        prepared = ran = False  # ``abandon`` is owed when the call was prepared and never ran
        try:
            if tool is None:
                available = ", ".join(sorted(self.registry.names()))
                raise ToolError(f"No tool named {call.name!r}. Available tools: {available}.")
            inp = parse_input(tool, call.input)
            await tool.validate(inp, ctx)
            # May block; its allow/ask feeds the gate. Before ``prepare``: what a hook changes is seen.
            ctx.hook_verdict = await run_pre_tool_use(self.session, call.id, tool.name, call.input)
            prepared = True
            await tool.prepare(inp, ctx)
            await tool.check_permission(inp, ctx)
            await self.session.send_update({
                "sessionUpdate": "tool_call_update", "toolCallId": call.id, "status": "in_progress"})
            writes = tool.may_write(inp, ctx)
            for before in self.session.find_service(BEFORE_TOOL_CALL) or ():
                await before(call.name, writes)  # e.g. the turn's checkpoint, before anything is written
            ran = True
            output = await tool.run(inp, ctx)
            hook_note = await run_post_tool_use(self.session, call.id, tool.name, call.input,
                                                output.joined_text())
            if hook_note:
                output.blocks.append(TextBlock(hook_note))
        except ToolError as exc:
            output = ToolOutput.text(exc.message, is_error=True, metadata=exc.metadata)
        except asyncio.CancelledError:
            if prepared and not ran:
                await _abandon(tool, inp, ctx)
            await self._finish_update(call, ToolOutput.text("Cancelled by the user.", is_error=True))
            raise
        except Exception as exc:
            log.exception("tool %s crashed", call.name)
            output = ToolOutput.text(
                f"{call.name} failed with an internal error: {type(exc).__name__}: {exc}. "
                "This is a fault in the tool, not in your input; try another approach.", is_error=True)
        if prepared and not ran:
            await _abandon(tool, inp, ctx)
        restore_point = False
        for after in self.session.find_service(AFTER_TOOL_CALL) or ():
            try:  # e.g. a checkpoint of what the call changed (True: the state before it can be restored)
                restore_point = bool(await after(call.name, writes, call.id)) or restore_point
            except Exception:
                log.exception("after-tool-call observer failed")
        output = self._bounded(call, output)
        output.metadata.update({
            "tool": call.name, "time": started, "duration_ms": int((time.monotonic() - started_monotonic) * 1000),
            "is_error": output.is_error,
        })
        if restore_point:  # the client may offer Compare / Restore to before this call (docs/protocol.md)
            output.metadata["restore_point"] = True
        await self._finish_update(call, output)
        self.session.audit("tool_result", toolCallId=call.id, tool=call.name, is_error=output.is_error,
                           metadata=output.metadata)
        return ToolCallResult(call=call, output=output, started=started, finished=time.time(),
                              metadata=output.metadata)

    def _bounded(self, call: ToolCall, output: ToolOutput) -> ToolOutput:
        blocks: list[TextBlock | ImageBlock] = []
        truncated = False
        for block in output.blocks:
            if isinstance(block, TextBlock):
                text = redact(block.text)
                if output.bound_output:
                    text, cut = bound_text(text, self.session.store.tool_output_dir(self.session.id), call.id)
                    truncated = truncated or cut
                blocks.append(TextBlock(text))
            else:
                blocks.append(block)
        output.blocks = blocks
        output.metadata.setdefault("truncated", truncated)
        return output

    async def _finish_update(self, call: ToolCall, output: ToolOutput) -> None:
        content = output.editor_content or [
            {"type": "content", "content": {"type": "text", "text": output.joined_text()}}]
        await self.session.send_update({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call.id,
            "status": "failed" if output.is_error else "completed",
            "content": content,
            "_meta": {"sidecar": {"metadata": output.metadata}},
        })


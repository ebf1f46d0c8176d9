"""The agent loop: model turn → tool calls → results → model turn, until the model ends the turn.

Prompt-cache discipline: the system prompt and tool list are fixed for the life of an agent, and
reminders (files changed, …) are appended to the newest user message, so each request's bytes start
with the previous request's bytes. Cache breakpoints sit on the tools, the system prompt and the last
message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sidecar.client_messages import ModelRetryParams
from sidecar.model.client import JSON_ENCODER, EncodedParts, ModelClient, ModelReply, RetryInfo, StreamCallbacks
from sidecar.model.pricing import USAGE_METER, charge
from sidecar.permissions.hooks import run_stop, run_user_prompt_submit
from sidecar.session import ServiceKey
from sidecar.tools.dispatch import TOOL_CALL_ANNOUNCED, Dispatcher, ToolCall, ToolCallResult

if TYPE_CHECKING:
    from sidecar.session import Session
    from sidecar.tools.context import SubAgentSpec
    from sidecar.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

CACHE = {"type": "ephemeral"}
StopReason = str  # end_turn | max_tokens | max_turn_requests | refusal | cancelled


class Conversation:
    """Where an agent's messages live. The main agent's are the session's (saved); a sub-agent's are its own."""

    def __init__(self, messages: list[dict[str, Any]] | None = None,
                 on_append: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.messages: list[dict[str, Any]] = messages if messages is not None else []
        self._on_append = on_append

    def append(self, message: dict[str, Any]) -> None:
        if self._on_append is not None:
            self._on_append(message)  # the session appends to the shared list itself
        else:
            self.messages.append(message)


class Coalescer:
    """Batches streamed text into fewer editor notifications (every ~20 ms), keeping order."""

    def __init__(self, send: Callable[[str], Awaitable[None]], interval: float = 0.02) -> None:
        self._send = send
        self._interval = interval
        self._buffer: list[str] = []
        self._timer: asyncio.Task[None] | None = None
        self._since = 0.0  # when the oldest buffered piece arrived

    async def add(self, text: str) -> None:
        self._buffer.append(text)
        if self._timer is None:
            self._since = time.monotonic()
            self._timer = asyncio.create_task(self._flush_later())
        elif time.monotonic() - self._since >= self._interval:
            # A stream whose bytes are already buffered never yields to the event loop, so the timer
            # cannot fire: flush from here, or the editor would see nothing until the stream ends.
            await self.flush()

    async def _flush_later(self) -> None:
        await asyncio.sleep(self._interval)
        self._timer = None
        await self._flush_now()

    async def _flush_now(self) -> None:
        if self._buffer:
            text, self._buffer = "".join(self._buffer), []
            await self._send(text)

    async def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        await self._flush_now()


@dataclass
class TurnStats:
    requests: int = 0
    tool_calls: int = 0


# The main agent's messages' JSON (``EncodedParts``: its requests and ``AgentLoop.request_chars``), kept across
# prompts.
MESSAGE_JSON = ServiceKey[EncodedParts]("message_json", lambda _session: EncodedParts())

class AgentLoop:
    def __init__(self, session: Session, registry: ToolRegistry, model: ModelClient, system_prompt: str,
                 conversation: Conversation, *, label: str | None = None, model_name: str | None = None,
                 stream_to_client: bool = True, parent_tool_call_id: str | None = None) -> None:
        self.session = session
        self.registry = registry
        self.model = model
        self.system_prompt = system_prompt
        self.conversation = conversation
        self.label = label
        self.model_name = model_name
        self.stream_to_client = stream_to_client
        # Sub-agents cannot start sub-agents: only the main agent gets the factory.
        self.dispatcher = Dispatcher(session, registry, agent_label=label, parent_tool_call_id=parent_tool_call_id,
                                     spawn_agent=self.spawn if label is None else None)
        self._tool_defs: list[dict[str, Any]] | None = None
        # ``request_chars``' memory: (model, the request's length without its messages).
        self._fixed_chars: tuple[str, int] | None = None
        # The history's JSON, kept between requests. The main agent's history outlives this loop (one per
        # prompt): so does its JSON.
        self._parts = session.service(MESSAGE_JSON) if label is None else EncodedParts()
        self.last_text = ""

    def spawn(self, spec: SubAgentSpec) -> AgentLoop:
        """A sub-agent of this agent (the Task tool's factory): its own history, the same governance."""
        return AgentLoop(self.session, self.registry.restricted_to(spec.tool_names), self.model,
                         spec.system_prompt, Conversation(),
                         label=spec.label, model_name=spec.model_name, stream_to_client=False,
                         parent_tool_call_id=spec.parent_tool_call_id)

    def tool_call_count(self) -> int:
        return sum(1 for m in self.conversation.messages if m["role"] == "user"
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")

    # ---- request shape -----------------------------------------------------------------
    def tool_definitions(self) -> list[dict[str, Any]]:
        if self._tool_defs is None:  # fixed for the agent's life: part of the cached prefix
            from sidecar.tools.toolsearch import deferred_tool_names

            # Over the budget, deferrable tools go with defer_loading (sidecar.tools.toolsearch).
            deferred = deferred_tool_names(self.registry, self.session)
            defs = [{**t.api_definition(), "defer_loading": True} if t.name in deferred else t.api_definition()
                    for t in self.registry.all() if t.name != "ToolSearch" or deferred]
            loaded = [i for i, d in enumerate(defs) if not d.get("defer_loading")]
            if loaded:
                defs[loaded[-1]] = {**defs[loaded[-1]], "cache_control": CACHE}
            self._tool_defs = defs
        return self._tool_defs

    def build_request(self) -> dict[str, Any]:
        # The history as it is, but for the newest message's last block, which gets the cache breakpoint
        # in a copy (a deep copy of the whole history was 6 ms a step in a long session, and the SDK
        # copies the params it sends anyway).
        messages = list(self.conversation.messages)
        if messages and isinstance(messages[-1].get("content"), list) and messages[-1]["content"]:
            content = list(messages[-1]["content"])
            content[-1] = {**content[-1], "cache_control": CACHE}
            messages[-1] = {**messages[-1], "content": content}
        model = self.model_name or self.model.settings.model
        params: dict[str, Any] = {
            "model": model,
            # max_tokens, thinking (adaptive where the model has it) and effort, per model
            **self.model.settings.request_options(model),
            "system": [{"type": "text", "text": self.system_prompt, "cache_control": CACHE}],
            "messages": messages,
        }
        tools = self.tool_definitions()
        if tools:
            params["tools"] = tools
            if any(t.get("defer_loading") for t in tools):
                from sidecar.tools.toolsearch import BETA
                params["extra_headers"] = {"anthropic-beta": BETA}
        return params

    def request_chars(self) -> int:
        """About the JSON length of the next request (its body but for the newest message's cache
        breakpoint), kept incrementally: the fixed part (system, tools, options) once per model, each
        message's JSON as the request sends it (``EncodedParts``: the next request then encodes only what
        is new). Per step this was a whole build and encode of the request (1.2 ms, growing with the
        session)."""
        model = self.model_name or self.model.settings.model
        if self._fixed_chars is None or self._fixed_chars[0] != model:
            request = self.build_request()
            fixed = {k: v for k, v in request.items() if k not in ("messages", "extra_headers", "tools")}
            tools = request.get("tools")  # encoded once for this loop: its requests send the same list
            self._fixed_chars = (model, len(JSON_ENCODER.encode(fixed))
                                 + (len(self._parts.tools(tools)) + len('"tools":,') if tools else 0))
        encoded = self._parts.messages(self.conversation.messages)
        return self._fixed_chars[1] + sum(map(len, encoded)) + len(encoded) + len('"messages":[],')

    def take_reminders(self) -> list[dict[str, Any]]:
        if not self.session.pending_notices or self.label is not None:
            return []
        notices, self.session.pending_notices = self.session.pending_notices, []
        body = "\n".join(f"- {n}" for n in notices)
        return [{"type": "text", "text": f"<system-reminder>\n{body}\n</system-reminder>"}]

    # ---- the loop -----------------------------------------------------------------------
    async def run(self, user_content: list[dict[str, Any]]) -> StopReason:
        hook_context: list[dict[str, Any]] = []
        if self.label is None:  # UserPromptSubmit hooks: may drop the prompt or add context
            prompt = "\n".join(str(b.get("text", "")) for b in user_content if b.get("type") == "text")
            submitted = await run_user_prompt_submit(self.session, prompt)
            if submitted.blocked or submitted.stop:
                why = submitted.message or submitted.stop_reason or "no reason given"
                await self._send_chunk("agent_message_chunk",
                                       f"A UserPromptSubmit hook blocked this prompt: {why}")
                return "end_turn"
            hook_context = [{"type": "text", "text": f"<system-reminder>\n{c}\n</system-reminder>"}
                            for c in submitted.context]
        self.conversation.append(
            {"role": "user", "content": [*user_content, *hook_context, *self.take_reminders()]})
        stats = TurnStats()
        stop_hook_active = False
        try:
            while True:
                if stats.requests >= self.model.settings.max_requests_per_turn:
                    return "max_turn_requests"
                # The model's limits, thinking and effort (Models API once, else the built-in table).
                await self.model.ensure_capabilities(self.model_name or self.model.settings.model)
                for hook in self.session.find_service(BEFORE_MODEL_REQUEST) or ():
                    await hook(self)  # e.g. compaction near the context window (sidecar.agent.compaction)
                stats.requests += 1
                reply = await self._model_turn()
                self.conversation.append({"role": "assistant", "content": reply.content})
                await self._report_usage(reply)
                tool_uses = [b for b in reply.content if b.get("type") == "tool_use"]
                if reply.stop_reason == "pause_turn":
                    continue  # a server tool paused the turn; sending the conversation back resumes it
                if reply.stop_reason == "tool_use" and tool_uses:
                    results = await self._run_tools(tool_uses)
                    stats.tool_calls += len(results)
                    self.conversation.append(
                        {"role": "user", "content": [r.to_api() for r in results] + self.take_reminders()})
                    if any(r.output.metadata.get("end_turn") for r in results):
                        return "end_turn"  # e.g. the user dismissed a question: wait for them
                    continue
                if tool_uses:  # cut off mid-call (max_tokens): close the calls so the history stays valid
                    self.conversation.append({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": b["id"], "is_error": True,
                         "content": "The response was cut off before this call was complete; it did not run."}
                        for b in tool_uses]})
                if reply.stop_reason in ("max_tokens", "refusal"):
                    return reply.stop_reason
                if self.label is None:  # Stop hooks: a blocking one sends the agent back to work
                    keep_going = await run_stop(self.session, stop_hook_active)
                    if keep_going:
                        stop_hook_active = True
                        self.conversation.append({"role": "user", "content": [
                            {"type": "text", "text": f"Stop hook feedback: {keep_going}"}]})
                        continue
                return "end_turn"
        except asyncio.CancelledError:
            self._close_dangling_tool_uses("The user cancelled the turn; this call did not complete.")
            raise

    def _close_dangling_tool_uses(self, reason: str) -> None:
        messages = self.conversation.messages
        if not messages or messages[-1].get("role") != "assistant":
            return
        uses = [b for b in messages[-1].get("content", []) if b.get("type") == "tool_use"]
        if uses:
            self.conversation.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b["id"], "is_error": True, "content": reason} for b in uses]})

    async def _model_turn(self) -> ModelReply:
        text_out = Coalescer(lambda t: self._send_chunk("agent_message_chunk", t))
        thought_out = Coalescer(lambda t: self._send_chunk("agent_thought_chunk", t))
        self.last_text = ""

        async def on_text(t: str) -> None:
            self.last_text += t
            if self.stream_to_client:
                await text_out.add(t)

        async def on_thinking(t: str) -> None:
            if self.stream_to_client:
                await thought_out.add(t)

        async def on_retry(info: RetryInfo) -> None:
            await text_out.flush()
            params: ModelRetryParams = {
                "attempt": info.attempt, "maxAttempts": info.max_attempts, "delayMs": int(info.delay_s * 1000),
                "errorType": info.error_type, "message": info.message()}
            if info.status is not None:
                params["status"] = info.status
            if self.label is not None:
                params["agent"] = self.label
            await self.session.client.model_retry(params)

        async def on_block_start(block: dict[str, Any]) -> None:
            if block.get("type") == "tool_use":
                tool = self.registry.get(str(block.get("name")))
                if tool is not None:
                    try:  # a head start, never a reason for the turn to fail
                        tool.anticipate(self.session)
                        for announced in self.session.find_service(TOOL_CALL_ANNOUNCED) or ():
                            announced(tool.name)  # e.g. the turn's checkpoint, while the input streams
                    except Exception:
                        log.exception("%s could not prepare for its call", tool.name)

        try:
            reply = await self.model.stream(self.build_request(), StreamCallbacks(
                on_text=on_text, on_thinking=on_thinking, on_retry=on_retry, on_block_start=on_block_start),
                parts=self._parts)
        finally:
            await thought_out.flush()
            await text_out.flush()
        return reply

    async def _send_chunk(self, kind: str, text: str) -> None:
        await self.session.send_update({"sessionUpdate": kind, "content": {"type": "text", "text": text}})

    async def _report_usage(self, reply: ModelReply) -> None:
        u = reply.usage
        used = int(u.get("input_tokens", 0)) + int(u.get("cache_read_input_tokens", 0)) + \
            int(u.get("cache_creation_input_tokens", 0)) + int(u.get("output_tokens", 0))
        self.session.last_usage = {"used": used, **u}
        charge(self.session, self.model_name or self.model.settings.model, u, self.model.settings.prices)
        meter = self.session.find_service(USAGE_METER)
        if self.label is None:
            update: dict[str, Any] = {"sessionUpdate": "usage_update", "used": used,
                                      "size": self.model.settings.context_window}
            if meter is not None:
                session_spend = meter.session.to_json()
                if "cost" in session_spend:
                    update["cost"] = session_spend["cost"]  # ACP: the session's cumulative cost
                update["_meta"] = {"sidecar": {"sessionSpend": session_spend}}
            await self.session.send_update(update)

    async def _run_tools(self, tool_uses: list[dict[str, Any]]) -> list[ToolCallResult]:
        """Concurrency-safe calls that are adjacent run together; the rest one at a time. Results in call order."""
        calls = [ToolCall(b["id"], b["name"], b.get("input") or {}) for b in tool_uses]
        # Announced once the message is complete: a stream that fails and is retried shows no phantom calls.
        for call in calls:
            await self.dispatcher.announce(call)
        results: list[ToolCallResult] = []
        batch: list[ToolCall] = []

        async def flush_batch() -> None:
            if len(batch) == 1:
                # Awaited here, not as a task of its own: it starts now, before whatever else the loop has
                # queued (the session log's writes), which then runs while the call waits (issue 29).
                results.append(await self.dispatcher.run(batch[0]))
            elif batch:
                results.extend(await asyncio.gather(*(self.dispatcher.run(c) for c in batch)))
            batch.clear()

        for call in calls:
            if self.dispatcher.is_concurrency_safe(call):
                batch.append(call)
            else:
                await flush_batch()
                results.append(await self.dispatcher.run(call))
        await flush_batch()
        return results


# Run before every model request of every agent of the session (compaction: ``sidecar.agent.compaction``).
BEFORE_MODEL_REQUEST = ServiceKey[list[Callable[[AgentLoop], Awaitable[None]]]]("before_model_request",
                                                                           lambda _session: [])

"""A streamed Messages API reply read from its raw server-sent events into plain dicts.

``ModelClient.stream`` sends the request through the SDK (auth, headers, timeouts, HTTP errors as
``APIStatusError``) but reads the response's events itself: ``json.loads`` per event, accumulated here into
the message the loop keeps. The SDK's ``MessageStream`` built a pydantic model per event, a second set of
event models for its callbacks, a snapshot model of the whole message, and re-parsed a tool call's whole
input JSON on every delta; that was most of the sidecar's own CPU per model call (docs/performance.md,
issue 29, "Fourth pass").

What comes out is what the SDK's final message gave through ``model_dump(mode="json", exclude_none=True)``:
the blocks as the API sent them with their deltas applied (text, thinking and its signature, a tool call's
input parsed as the SDK parses it, citations appended), ``None`` fields left out except inside a tool's
``input`` (the SDK's models keep an input dict as it is), and the usage of ``message_start`` with
``message_delta``'s cumulative counts written over it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

TextSink = Callable[[str], Awaitable[None]]
BlockSink = Callable[[dict[str, Any]], Awaitable[None]]

TOOL_INPUT_BLOCKS = ("tool_use", "server_tool_use")
# The usage counts a message_delta carries are totals: written over message_start's when present.
DELTA_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use",
                    "output_tokens_details")


class StreamIncomplete(ConnectionError):
    """The response ended before ``message_stop``: what arrived is not a whole message (retried as a
    dropped connection is)."""


class StreamProtocolError(ValueError):
    """The events do not make a message (a delta for a block that was never started, an event before
    ``message_start``, a tool input that is not JSON): not retried, as the SDK's stream did not either."""


def without_none(value: Any) -> Any:
    """``value`` with every ``None`` member of its mappings left out, at every depth but inside a tool call's
    ``input`` (``exclude_none`` on the SDK's models, whose ``input`` is a plain dict)."""
    if isinstance(value, dict):
        return {k: (v if k == "input" else without_none(v)) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


def parse_tool_input(buffer: str) -> Any:
    """A tool call's input from its streamed JSON, as the SDK parses it (jiter, partial mode: a call cut
    off by max_tokens keeps what was complete)."""
    import jiter  # the SDK's dependency, loaded with it: not at the sidecar's startup

    try:
        return jiter.from_json(buffer.encode(), partial_mode=True)
    except ValueError as exc:
        raise StreamProtocolError(
            "Unable to parse tool parameter JSON from model. Please retry your request or adjust your prompt. "
            f"Error: {exc}. JSON: {buffer}") from None


class MessageBuilder:
    """One attempt's message, built event by event (``feed``); ``on_text``/``on_thinking`` get each delta,
    ``on_block`` each finished block (as it will be in the final message), ``on_block_start`` each block
    as it begins (a tool_use block's name, its input still to come)."""

    def __init__(self, on_text: TextSink | None = None, on_thinking: TextSink | None = None,
                 on_block: BlockSink | None = None, on_block_start: BlockSink | None = None) -> None:
        self.on_text = on_text
        self.on_thinking = on_thinking
        self.on_block = on_block
        self.on_block_start = on_block_start
        self.message: dict[str, Any] | None = None
        self.content: list[dict[str, Any]] = []
        self.usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stopped = False  # message_stop seen
        self._json: dict[int, list[str]] = {}  # a tool block's input JSON so far, by index

    async def feed(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "content_block_delta":
            block = self._block(data)
            delta = data["delta"]
            delta_type = delta.get("type")
            block_type = block.get("type")
            if delta_type == "text_delta":
                if block_type == "text":
                    text = delta["text"]
                    block["text"] = block.get("text", "") + text
                    if self.on_text is not None:
                        await self.on_text(text)
            elif delta_type == "input_json_delta":
                if block_type in TOOL_INPUT_BLOCKS:
                    self._json.setdefault(data["index"], []).append(delta["partial_json"])
            elif delta_type == "thinking_delta":
                if block_type == "thinking":
                    thinking = delta["thinking"]
                    block["thinking"] = block.get("thinking", "") + thinking
                    if self.on_thinking is not None:
                        await self.on_thinking(thinking)
            elif delta_type == "signature_delta":
                if block_type == "thinking":
                    block["signature"] = delta["signature"]
            elif delta_type == "citations_delta" and block_type == "text":
                citations = block.get("citations")
                if isinstance(citations, list):
                    citations.append(delta["citation"])
                else:
                    block["citations"] = [delta["citation"]]
        elif kind == "content_block_start":
            self._started()
            self.content.append(dict(data["content_block"]))
            if self.on_block_start is not None:
                await self.on_block_start(self.content[-1])
        elif kind == "content_block_stop":
            index = data["index"]
            self._block(data)
            self._finish_input(index)
            if self.on_block is not None:
                await self.on_block(without_none(self.content[index]))
        elif kind == "message_start":
            self.message = data["message"]
            self.content = [dict(b) for b in self.message.get("content") or []]
            self.usage = dict(self.message.get("usage") or {})
            self.stop_reason = self.message.get("stop_reason")
        elif kind == "message_delta":
            self._started()
            self.stop_reason = data["delta"].get("stop_reason")
            usage = data.get("usage") or {}
            self.usage["output_tokens"] = usage.get("output_tokens")
            for key in DELTA_USAGE_KEYS:
                if usage.get(key) is not None:
                    self.usage[key] = usage[key]
        elif kind == "message_stop":
            self._started()
            self.stopped = True
        # ping, and event types this reader does not know, change nothing (as in the SDK's stream).

    def final(self) -> tuple[list[dict[str, Any]], str | None, dict[str, Any]]:
        """(content, stop_reason, usage) of the whole message; ``StreamIncomplete`` before ``message_stop``."""
        if not self.stopped:
            raise StreamIncomplete("the model's stream ended before message_stop")
        for index in list(self._json):
            self._finish_input(index)
        return [without_none(b) for b in self.content], self.stop_reason, without_none(self.usage)

    def _started(self) -> None:
        if self.message is None:
            raise StreamProtocolError("the model's stream sent an event before message_start")

    def _block(self, data: dict[str, Any]) -> dict[str, Any]:
        self._started()
        index: int = data["index"]
        if not 0 <= index < len(self.content):
            raise StreamProtocolError(f"the model's stream named content block {index}, which it never started")
        return self.content[index]

    def _finish_input(self, index: int) -> None:
        pieces = self._json.pop(index, None)
        if pieces:
            buffer = "".join(pieces)
            if buffer:
                self.content[index]["input"] = parse_tool_input(buffer)

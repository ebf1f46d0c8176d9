"""The model reply read from the stream's raw events (``sidecar.model.stream``): the same message the SDK's
``MessageStream`` accumulated, every kind of block, and the failures a stream can have mid-way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from sidecar.model.client import (
    JSON_ENCODER,
    EncodedParts,
    ModelClient,
    ModelError,
    RetryInfo,
    StreamCallbacks,
    request_body,
)
from sidecar.model.settings import ModelSettings
from sidecar.model.stream import MessageBuilder, StreamIncomplete
from sidecar.testing.scripted_server import ScriptedModelServer

MODEL = "claude-sonnet-4-6"
HELLO = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


def _start(usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": MODEL, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 1, "cache_creation_input_tokens": 0,
                           "cache_read_input_tokens": 30, "cache_creation": None, "server_tool_use": None,
                           "service_tier": "standard"}}}


def _block(index: int, block: dict[str, Any], *deltas: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield {"type": "content_block_start", "index": index, "content_block": block}
    for delta in deltas:
        yield {"type": "content_block_delta", "index": index, "delta": delta}
    yield {"type": "content_block_stop", "index": index}


def _end(stop_reason: str, usage: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": usage},
            {"type": "message_stop"}]


TOOL_INPUT = {"file_path": "/tmp/ü notes.txt", "limit": None, "nested": {"a": [1, 2.5, None], "b": None}}
TOOL_JSON = json.dumps(TOOL_INPUT, ensure_ascii=False)
CITATION = {"type": "char_location", "cited_text": "alpha", "document_index": 0, "document_title": None,
            "start_char_index": 0, "end_char_index": 5, "file_id": None}

STREAMS: dict[str, list[dict[str, Any]]] = {
    "thinking with its signature, text, a tool call split across deltas": [
        _start(),
        *_block(0, {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "thinking_delta", "thinking": "The user wants "},
                {"type": "thinking_delta", "thinking": "notes."},
                {"type": "signature_delta", "signature": "c2lnbmVkOnRoZSB1c2Vy"}),
        *_block(1, {"type": "text", "text": "", "citations": None},
                {"type": "text_delta", "text": "Reading "}, {"type": "text_delta", "text": "them."}),
        *_block(2, {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}, "caller": None},
                {"type": "input_json_delta", "partial_json": ""},
                *({"type": "input_json_delta", "partial_json": TOOL_JSON[i:i + 5]}
                  for i in range(0, len(TOOL_JSON), 5))),
        *_end("tool_use", {"output_tokens": 87, "input_tokens": 12, "cache_read_input_tokens": None}),
    ],
    "redacted thinking and text with citations": [
        _start(),
        *_block(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
        *_block(1, {"type": "text", "text": "", "citations": None},
                {"type": "text_delta", "text": "Alpha is first"},
                {"type": "citations_delta", "citation": CITATION},
                {"type": "citations_delta", "citation": {**CITATION, "cited_text": "beta"}}),
        *_end("end_turn", {"output_tokens": 20}),
    ],
    "a server tool call and its result": [
        _start(),
        *_block(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                {"type": "input_json_delta", "partial_json": '{"query": "py'},
                {"type": "input_json_delta", "partial_json": 'thon 3.13"}'}),
        *_block(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "title": "Python", "url": "https://python.org", "encrypted_content": "x",
             "page_age": None}]}),
        *_block(2, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Found it."}),
        *_end("end_turn", {"output_tokens": 30, "server_tool_use": {"web_search_requests": 1}}),
    ],
    "a tool call cut off by max_tokens keeps what was complete": [
        _start(),
        *_block(0, {"type": "tool_use", "id": "toolu_2", "name": "Write", "input": {}},
                {"type": "input_json_delta", "partial_json": '{"file_path": "/a.py", "content": "print(1'}),
        *_end("max_tokens", {"output_tokens": 4096}),
    ],
}


def _sdk_oracle(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """What ``MessageStream`` (the SDK's accumulation) made of the same events: the final message and the
    blocks its ``content_block_stop`` events carried, dumped as the client dumped them."""
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    finished = []
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)  # type: ignore[arg-type]
        if event["type"] == "content_block_stop":
            finished.append(snapshot.content[event["index"]].model_dump(mode="json", exclude_none=True))
    return ([b.model_dump(mode="json", exclude_none=True) for b in snapshot.content],
            {"stop_reason": snapshot.stop_reason, **snapshot.usage.model_dump(mode="json", exclude_none=True)},
            finished)


@pytest.mark.parametrize("name", list(STREAMS))
async def test_the_message_is_what_the_sdk_accumulated(name: str) -> None:
    events = STREAMS[name]
    texts: list[str] = []
    thoughts: list[str] = []
    finished: list[dict[str, Any]] = []

    async def on_text(t: str) -> None:
        texts.append(t)

    async def on_thinking(t: str) -> None:
        thoughts.append(t)

    async def on_block(b: dict[str, Any]) -> None:
        finished.append(b)

    builder = MessageBuilder(on_text, on_thinking, on_block)
    for event in events:
        await builder.feed(event["type"], json.loads(json.dumps(event)))
    content, stop_reason, usage = builder.final()

    sdk_content, sdk_usage, sdk_finished = _sdk_oracle(events)
    assert content == sdk_content
    assert {"stop_reason": stop_reason, **usage} == sdk_usage
    assert finished == sdk_finished
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert "".join(texts) == "".join(d.get("text", "") for d in deltas)
    assert "".join(thoughts) == "".join(d.get("thinking", "") for d in deltas)


async def test_the_tool_input_split_across_deltas_is_parsed_whole() -> None:
    builder = MessageBuilder()
    for event in STREAMS["thinking with its signature, text, a tool call split across deltas"]:
        await builder.feed(event["type"], event)
    content, stop_reason, usage = builder.final()
    assert content[0] == {"type": "thinking", "thinking": "The user wants notes.", "signature": "c2lnbmVkOnRoZSB1c2Vy"}
    assert content[2]["input"] == TOOL_INPUT  # the nulls inside an input are the model's: kept
    assert stop_reason == "tool_use"
    # message_delta's totals over message_start's; a null one leaves message_start's
    assert usage == {"input_tokens": 12, "output_tokens": 87, "cache_creation_input_tokens": 0,
                     "cache_read_input_tokens": 30, "service_tier": "standard"}


async def test_a_stream_without_message_stop_is_incomplete() -> None:
    builder = MessageBuilder()
    for event in STREAMS["redacted thinking and text with citations"][:-2]:
        await builder.feed(event["type"], event)
    with pytest.raises(StreamIncomplete):
        builder.final()


# ---- through the SDK's HTTP request, against the scripted server on loopback ----------------------------------

@pytest.fixture
def client(model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch) -> ModelClient:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    settings = ModelSettings.from_env({"apiBaseUrl": model_server.base_url})
    settings.max_backoff_s = 0.05
    return ModelClient(settings)


class Seen:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.retries: list[RetryInfo] = []

    def callbacks(self) -> StreamCallbacks:
        async def on_text(t: str) -> None:
            self.text.append(t)

        async def on_thinking(t: str) -> None:
            self.thinking.append(t)

        async def on_retry(info: RetryInfo) -> None:
            self.retries.append(info)

        return StreamCallbacks(on_text=on_text, on_thinking=on_thinking, on_retry=on_retry)


def _params(messages: list[dict[str, Any]] = HELLO) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 2048, "messages": messages,
            "thinking": {"type": "enabled", "budget_tokens": 1024}}


async def test_a_signed_thinking_block_and_a_split_tool_call_go_back_as_the_api_takes_them(
        client: ModelClient, model_server: ScriptedModelServer) -> None:
    read = {"type": "tool_use", "name": "Read", "input": {"file_path": "/tmp/notes ü.txt", "offset": 3}}
    model_server.add_turns([
        {"content": [{"type": "thinking", "thinking": "Read the notes first."}, read], "json_chunk": 3,
         "text_chunk": 2},
        {"content": [{"type": "text", "text": "They say alpha."}]},
    ])
    reply = await client.stream(_params())
    thinking, tool_use = reply.content
    assert thinking["thinking"] == "Read the notes first." and thinking["signature"]
    assert tool_use["input"] == read["input"] and tool_use["name"] == "Read"
    assert reply.stop_reason == "tool_use" and reply.usage["output_tokens"] > 1
    # The strict server checks the signature against the thinking it issued: an altered block is refused.
    history = [*HELLO, {"role": "assistant", "content": reply.content}, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tool_use["id"], "content": "alpha"}]}]
    second = await client.stream(_params(history))
    assert second.content == [{"type": "text", "text": "They say alpha."}]


async def test_an_overloaded_error_event_mid_stream_is_retried_without_repeating_text(
        client: ModelClient, model_server: ScriptedModelServer) -> None:
    partial = {"content": [{"type": "text", "text": "Part one. "}]}
    model_server.add_turns([
        {"fault": "sse_error", "error_type": "overloaded_error", "after_blocks": 1, "turn": partial},
        {"content": [{"type": "text", "text": "Part one. Part two."}]},
    ])
    seen = Seen()
    reply = await client.stream(_params(), seen.callbacks())
    assert reply.content == [{"type": "text", "text": "Part one. Part two."}] and reply.attempts == 2
    assert "".join(seen.text) == "Part one. Part two."
    assert [(r.error_type, r.detail) for r in seen.retries] == [("overloaded_error", "Overloaded")]


async def test_thinking_shown_before_a_retried_failure_is_not_shown_twice(
        client: ModelClient, model_server: ScriptedModelServer) -> None:
    """The editor shows thinking as it streams: the retried attempt's thinking starts again from its
    beginning, and only what goes beyond what was shown is passed on (as for text)."""
    turn = {"content": [{"type": "thinking", "thinking": "Look at the notes first."},
                        {"type": "text", "text": "Done."}]}
    model_server.add_turns([{"fault": "sse_error", "error_type": "overloaded_error", "after_blocks": 1,
                             "turn": turn}, turn])
    seen = Seen()
    reply = await client.stream(_params(), seen.callbacks())
    assert reply.attempts == 2 and reply.content[0]["thinking"] == "Look at the notes first."
    assert "".join(seen.thinking) == "Look at the notes first."
    assert "".join(seen.text) == "Done."


async def test_an_invalid_request_error_event_mid_stream_is_a_clear_error(
        client: ModelClient, model_server: ScriptedModelServer) -> None:
    model_server.add_turn({"fault": "sse_error", "error_type": "invalid_request_error",
                           "message": "prompt is too long: 210000 tokens > 200000 maximum"})
    with pytest.raises(ModelError) as err:
        await client.stream(_params())
    assert err.value.error_type == "invalid_request_error" and err.value.attempts == 1
    assert "prompt is too long" in str(err.value)
    assert len(model_server.message_requests()) == 1


@pytest.mark.parametrize("fault", ["drop", "truncate"])
async def test_a_stream_cut_before_message_stop_is_retried(
        fault: str, client: ModelClient, model_server: ScriptedModelServer) -> None:
    """Cut mid-body (the connection shut) or ended cleanly without message_stop: neither is a whole
    message, so neither becomes the turn's answer (the SDK's stream returned the second as if complete)."""
    turn = {"content": [{"type": "text", "text": "Reading."},
                        {"type": "tool_use", "name": "Read", "input": {"file_path": "/tmp/a"}}]}
    model_server.add_turns([{"fault": fault, "after_blocks": 1, "turn": turn}, turn])
    seen = Seen()
    reply = await client.stream(_params(), seen.callbacks())
    assert [b["type"] for b in reply.content] == ["text", "tool_use"] and reply.stop_reason == "tool_use"
    assert reply.attempts == 2 and "".join(seen.text) == "Reading."
    assert [r.error_type for r in seen.retries] == ["connection_error"]


async def test_a_stream_that_keeps_ending_early_fails_after_the_retries(
        client: ModelClient, model_server: ScriptedModelServer) -> None:
    client.settings.max_retries = 2
    turn = {"content": [{"type": "text", "text": "Never finished."}]}
    model_server.add_turns([{"fault": "truncate", "after_blocks": 1, "turn": turn}] * 3)
    with pytest.raises(ModelError) as err:
        await client.stream(_params())
    assert err.value.error_type == "connection_error" and err.value.attempts == 3
    assert "ended before message_stop" in str(err.value)


async def test_an_overloaded_answer_is_retried_then_succeeds(
        client: ModelClient, model_server: ScriptedModelServer) -> None:
    model_server.add_turns([{"fault": "http", "status": 529}, {"content": [{"type": "text", "text": "ok"}]}])
    seen = Seen()
    reply = await client.stream(_params(), seen.callbacks())
    assert reply.content == [{"type": "text", "text": "ok"}]
    assert [(r.status, r.error_type) for r in seen.retries] == [(529, "overloaded_error")]


async def test_cancelling_mid_stream_closes_the_response(
        client: ModelClient, model_server: ScriptedModelServer) -> None:
    model_server.add_turn({"content": [{"type": "text", "text": "x" * 400}], "text_chunk": 1, "chunk_delay": 0.01})
    first = asyncio.Event()

    async def on_text(_t: str) -> None:
        first.set()

    task = asyncio.create_task(client.stream(_params(), StreamCallbacks(on_text=on_text)))
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The connection is given back (or closed), not left reading: the next call goes through.
    model_server.add_turn({"content": [{"type": "text", "text": "next"}]})
    assert (await client.stream(_params())).content == [{"type": "text", "text": "next"}]


async def test_the_request_body_is_the_bytes_the_sdk_would_send(
        client: ModelClient, model_server: ScriptedModelServer) -> None:
    """The body is encoded by the client (not the SDK's ``messages.create``, whose copy of the params cost
    CPU): the same bytes, the extra headers sent, the SDK's own headers (key, version) there as before."""
    params = {**_params([*HELLO, {"role": "assistant", "content": [{"type": "text", "text": "Hi — ü"}]},
                         {"role": "user", "content": [{"type": "text", "text": "again",
                                                        "cache_control": {"type": "ephemeral"}}]}]),
              "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
              "tools": [{"name": "Read", "description": "Read a file.", "input_schema": {
                  "type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}],
              "output_config": {"effort": "low"}, "extra_headers": {"anthropic-beta": "tool-search-tool-2025-10-19"}}
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}] * 3)
    await client.stream(params)
    async with client.client.messages.with_streaming_response.create(**params, stream=True) as raw:
        await raw.read()
    async with client.client.messages.stream(**params) as helper:  # what the client used to call
        await helper.get_final_message()
    ours, sdks, streamed = model_server.message_requests()
    assert ours.body["stream"] is True and ours.raw_body == sdks.raw_body
    for name in ("anthropic-beta", "anthropic-version", "authorization", "x-api-key", "content-type", "user-agent"):
        assert ours.headers.get(name) == sdks.headers.get(name), name
    assert ours.headers["x-stainless-helper-method"] == streamed.headers["x-stainless-helper-method"] == "stream"
    assert ours.headers["anthropic-beta"] == "tool-search-tool-2025-10-19"


def test_a_body_encoded_from_kept_parts_is_the_body_encoded_whole() -> None:
    """Issue 29: a conversation's requests encode only what is new (``EncodedParts``); every body is
    byte for byte the one encoded whole, as the history grows, as the newest message is replaced by a
    copy with its cache breakpoint, when the tool list is another list, and after the history is cut."""
    parts = EncodedParts()
    tools = [{"name": "Read", "description": "Read a file — ü.", "input_schema": {"type": "object"}}]
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "hi ✓"}]}]
    for step in range(6):
        history.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{step}", "name": "Read", "input": {"file_path": f"/w/{step}.py"}}]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{step}", "content": f"line\n{step}\t\"x\""}]})
        messages = list(history)
        messages[-1] = {**messages[-1], "content": [{**messages[-1]["content"][0],
                                                      "cache_control": {"type": "ephemeral"}}]}
        params = {"model": "claude-test", "max_tokens": 100, "messages": messages, "tools": tools,
                  "system": [{"type": "text", "text": "terse"}], "extra_headers": {"anthropic-beta": "b"}}
        assert request_body(params, parts) == request_body(params)
        if step == 3:
            tools = [*tools, {"name": "Glob", "description": "", "input_schema": {"type": "object"}}]
            history = history[4:]  # compacted: what left is forgotten, what stays is the same
    assert json.loads(request_body(params, parts)[0])["tools"][1]["name"] == "Glob"


def test_a_tool_list_built_again_is_the_same_json_and_a_new_schema_is_its_own() -> None:
    """Issue 29: every prompt's agent builds its tool list afresh from the same parts and each definition's
    JSON is kept for the process (``definition_json``). A list built again encodes as a whole list would;
    a definition with the same name and description but another schema object (an MCP server's, listed
    again with a changed schema) gets its own JSON, never the one kept for the first."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    cache = {"type": "ephemeral"}

    def tool_list(s: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"name": "Read", "description": "Read a file — ü.", "input_schema": schema},
                {"name": "mcp__db__query", "description": "Run a query", "input_schema": s, "cache_control": cache}]

    first = tool_list(schema)
    assert EncodedParts().tools(first) == JSON_ENCODER.encode(first)
    again = tool_list(schema)
    assert EncodedParts().tools(again) == JSON_ENCODER.encode(first)
    changed = tool_list({"type": "object", "properties": {"sql": {"type": "string"}}})
    assert json.loads(EncodedParts().tools(changed))[1]["input_schema"]["properties"] == {"sql": {"type": "string"}}
    assert EncodedParts().tools(changed) == JSON_ENCODER.encode(changed)
    flagged = [{"name": "Skill", "description": "", "input_schema": schema, "defer_loading": flag}
               for flag in (True, 1)]  # equal as keys, not as JSON
    assert [EncodedParts().tools([d]) for d in flagged] == [JSON_ENCODER.encode([d]) for d in flagged]

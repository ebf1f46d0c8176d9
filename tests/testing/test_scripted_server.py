"""The scripted Messages API server, driven by the real `anthropic` SDK over real loopback HTTP."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx
import httpx2
import pytest

from sidecar.testing.scripted_server import EXHAUSTED_TEXT, RecordedRequest, ScriptedModelServer

MODEL = "claude-test"
HELLO: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def client(server: ScriptedModelServer, retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-key", base_url=server.base_url, max_retries=retries)


def aclient(server: ScriptedModelServer, retries: int = 0) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="test-key", base_url=server.base_url, max_retries=retries)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def test_text_streams_in_chunks_and_final_message_is_complete(server: ScriptedModelServer) -> None:
    server.add_turn({"content": [text("Hello there, world!")]})
    with client(server).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert pieces == ["Hello th", "ere, wor", "ld!"]
    assert [b.type for b in final.content] == ["text"]
    assert final.content[0].text == "Hello there, world!"  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert final.model == MODEL
    assert final.usage.output_tokens > 0 and final.usage.input_tokens > 0


def test_sse_event_sequence_matches_the_real_api(server: ScriptedModelServer) -> None:
    server.add_turn(
        {
            "content": [
                {"type": "thinking", "thinking": "abc"},
                text("hi"),
                {"type": "tool_use", "name": "Read", "input": {"p": "x"}},
            ],
            "text_chunk": 2,
        }
    )
    body = {"model": MODEL, "max_tokens": 10, "stream": True, "messages": HELLO}
    response = httpx.post(f"{server.base_url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert response.headers["content-type"].startswith("text/event-stream")
    events = []
    for frame in response.text.strip().split("\n\n"):
        name_line, data_line = frame.split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        assert name_line == f"event: {data['type']}"
        delta = data.get("delta", {}).get("type") or data.get("content_block", {}).get("type")
        events.append(f"{data['type']}:{delta}" if delta else data["type"])
    assert events == [
        "message_start",
        "ping",
        "content_block_start:thinking",
        "content_block_delta:thinking_delta",
        "content_block_delta:thinking_delta",
        "content_block_delta:signature_delta",
        "content_block_stop",
        "content_block_start:text",
        "content_block_delta:text_delta",
        "content_block_stop",
        "content_block_start:tool_use",
        "content_block_delta:input_json_delta",
        "content_block_delta:input_json_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert server.requests[0].headers["x-api-key"] == "k"


def test_tool_use_input_is_reassembled_by_the_sdk(server: ScriptedModelServer) -> None:
    big_input = {"file_path": "/src/app.py", "offset": 10, "limit": 200, "note": 'ünïcode "quoted" ' * 5}
    server.add_turn(
        {
            "content": [
                text("Reading two files."),
                {"type": "tool_use", "name": "Read", "input": big_input},
                {"type": "tool_use", "name": "Glob", "input": {"pattern": "**/*.py"}, "id": "toolu_mine"},
            ]
        }
    )
    with client(server).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        partials = [e.partial_json for e in stream if e.type == "input_json"]
        final = stream.get_final_message()
    assert len(partials) > 5  # split into pieces, not one blob
    tools = [b for b in final.content if b.type == "tool_use"]
    assert [(t.name, t.input) for t in tools] == [("Read", big_input), ("Glob", {"pattern": "**/*.py"})]
    assert tools[0].id.startswith("toolu_") and tools[1].id == "toolu_mine"
    assert final.stop_reason == "tool_use"


def test_thinking_block_with_signature(server: ScriptedModelServer) -> None:
    server.add_turn(
        {"content": [{"type": "thinking", "thinking": "Let me look at the file first."}, text("ok")]}
    )
    with client(server).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        thoughts = "".join(e.thinking for e in stream if e.type == "thinking")
        final = stream.get_final_message()
    block = final.content[0]
    assert block.type == "thinking"
    assert block.thinking == thoughts == "Let me look at the file first."
    assert block.signature  # a non-empty signature, as the API sends


def test_web_search_blocks_stream_through(server: ScriptedModelServer) -> None:
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [
            {"type": "web_search_result", "url": "https://x.test", "title": "X", "encrypted_content": "e"}
        ],
    }
    server.add_turn(
        {
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "q"},
                },
                result,
                text("found"),
            ]
        }
    )
    with client(server).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["server_tool_use", "web_search_tool_result", "text"]
    assert final.content[0].input == {"query": "q"}  # type: ignore[union-attr]
    assert final.content[1].content[0].url == "https://x.test"  # type: ignore[union-attr,index]
    assert final.stop_reason == "end_turn"


def test_non_streaming_returns_full_message_with_explicit_stop_reason_and_usage(
    server: ScriptedModelServer,
) -> None:
    server.add_turn({"content": [text("cut")], "stop_reason": "max_tokens", "usage": {"output_tokens": 4096}})
    message = client(server).messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert message.content[0].text == "cut"  # type: ignore[union-attr]
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 4096


def test_callable_turn_sees_previous_tool_result(server: ScriptedModelServer) -> None:
    seen: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> dict[str, Any]:
        seen.append(request)
        (result,) = request.tool_results()
        return {"content": [text(f"The file says: {result['content']}")]}

    server.add_turns(
        [{"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "a"}}]}, answer]
    )
    sdk = client(server)
    first = sdk.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    tool_use = first.content[0]
    assert tool_use.type == "tool_use"
    second = sdk.messages.create(
        model=MODEL,
        max_tokens=100,
        system="You are terse.",
        messages=[
            *HELLO,
            {"role": "assistant", "content": [tool_use.model_dump(exclude_none=True)]},  # type: ignore[misc,list-item]
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "42 lines"}],
            },
        ],
    )
    assert second.content[0].text == "The file says: 42 lines"  # type: ignore[union-attr]
    assert seen[0].tool_results()[0]["tool_use_id"] == tool_use.id
    assert seen[0].last_user_message()["role"] == "user"
    assert seen[0].text() == "You are terse.\nhello\n42 lines"


def test_529_surfaces_as_overloaded_status_error(server: ScriptedModelServer) -> None:
    server.add_turn({"fault": "http", "status": 529})
    with pytest.raises(anthropic.APIStatusError) as info:
        with client(server).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            stream.get_final_message()
    assert isinstance(info.value, anthropic.OverloadedError)
    assert info.value.status_code == 529
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_429_with_retry_after_surfaces_status_and_header(server: ScriptedModelServer) -> None:
    server.add_turn({"fault": "http", "status": 429, "headers": {"retry-after": "1"}})
    with pytest.raises(anthropic.RateLimitError) as info:
        client(server).messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "1"


def test_sdk_retry_consumes_the_next_turn(server: ScriptedModelServer) -> None:
    server.add_turns(
        [{"fault": "http", "status": 529, "headers": {"retry-after": "0"}}, {"content": [text("ok")]}]
    )
    message = client(server, retries=1).messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert message.content[0].text == "ok"  # type: ignore[union-attr]
    assert [r.headers["x-stainless-retry-count"] for r in server.message_requests()] == ["0", "1"]


def test_drop_cuts_the_connection_mid_stream(server: ScriptedModelServer) -> None:
    server.add_turn(
        {"fault": "drop", "after_blocks": 1, "turn": {"content": [text("first"), text("second")]}}
    )
    received: list[str] = []
    with pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)) as info:
        with client(server).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            received.extend(stream.text_stream)
    assert "incomplete chunked read" in str(info.value) or "closed" in str(info.value)
    assert received == ["first"]


def test_drop_on_non_streaming_request_is_a_connection_error(server: ScriptedModelServer) -> None:
    server.add_turn({"fault": "drop", "turn": {"content": [text("never")]}})
    with pytest.raises(anthropic.APIConnectionError):
        client(server).messages.create(model=MODEL, max_tokens=100, messages=HELLO)


def test_sse_error_event_mid_stream(server: ScriptedModelServer) -> None:
    server.add_turn({"fault": "sse_error", "error_type": "overloaded_error"})
    events: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as info:
        with client(server).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            events.extend(e.type for e in stream)
    assert events == ["message_start"]
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_count_tokens_is_answered_and_recorded(server: ScriptedModelServer) -> None:
    server.add_turn({"content": [text("x")]})
    sdk = client(server)
    counted = sdk.messages.count_tokens(model=MODEL, messages=HELLO)
    sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    raw = server.requests[0].raw_body
    assert counted.input_tokens == len(raw) // 4
    assert [r.path for r in server.requests] == ["/v1/messages/count_tokens", "/v1/messages"]
    assert [r.path for r in server.message_requests()] == ["/v1/messages"]
    assert server.pending_turns == 0


def test_requests_are_recorded_with_headers_body_and_time(server: ScriptedModelServer) -> None:
    server.add_turns([{"content": [text("a")]}, {"content": [text("b")]}])
    before = time.monotonic()
    sdk = client(server)
    sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    sdk.messages.create(model=MODEL, max_tokens=11, messages=HELLO, extra_headers={"x-api-key": "raw-key"})
    first, second = server.requests
    assert first.api_key == "test-key"  # SDK 2.x sends it as `authorization: Bearer`
    assert first.headers["authorization"] == "Bearer test-key"
    assert second.headers["x-api-key"] == "raw-key" and second.api_key == "raw-key"
    assert first.headers["anthropic-version"]
    assert (first.body["max_tokens"], second.body["max_tokens"]) == (10, 11)
    assert first.body["messages"] == HELLO
    assert before <= first.time <= second.time <= time.monotonic()


def test_exhausted_script_answers_end_turn_and_records(server: ScriptedModelServer) -> None:
    with client(server).messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == EXHAUSTED_TEXT  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert len(server.message_requests()) == 1


def test_ten_thousand_deltas(server: ScriptedModelServer) -> None:
    long_text = "abcdefghij" * 1000
    server.add_turn({"content": [text(long_text)], "text_chunk": 1})
    with client(server).messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
        count = sum(1 for e in stream if e.type == "text")
        final = stream.get_final_message()
    assert count == 10_000
    assert final.content[0].text == long_text  # type: ignore[union-attr]


async def test_async_client_streams_and_requests_run_concurrently(server: ScriptedModelServer) -> None:
    barrier = threading.Barrier(4, timeout=10)

    def together(request: RecordedRequest) -> dict[str, Any]:
        index = barrier.wait()  # only returns once all four requests are being served at the same time
        return {"content": [text(f"answer {index}")]}

    server.add_turns([together] * 4)
    sdk = aclient(server)

    async def ask() -> str:
        async with sdk.messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
            final = await stream.get_final_message()
        return final.content[0].text  # type: ignore[union-attr]

    answers = await asyncio.gather(*(ask() for _ in range(4)))
    assert sorted(answers) == [f"answer {i}" for i in range(4)]
    assert server.errors == []
    assert all(r.headers["x-stainless-async"] != "false" for r in server.requests)


def test_delay_holds_the_answer_back(server: ScriptedModelServer) -> None:
    server.add_turn({"content": [text("late")], "delay": 0.3})
    started = time.monotonic()
    client(server).messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert time.monotonic() - started >= 0.3


def test_chunk_delay_spaces_events(server: ScriptedModelServer) -> None:
    server.add_turn({"content": [text("abcd")], "text_chunk": 1, "chunk_delay": 0.05})
    arrivals: list[float] = []
    with client(server).messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
        for _ in stream.text_stream:
            arrivals.append(time.monotonic())
    assert len(arrivals) == 4
    assert arrivals[-1] - arrivals[0] >= 0.12


def test_wait_for_requests(server: ScriptedModelServer) -> None:
    assert server.wait_for_requests(1, timeout=0.1) is False
    server.add_turn({"content": [text("x")]})
    client(server).messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert server.wait_for_requests(1, timeout=1.0) is True


def test_broken_callable_answers_500_instead_of_hanging(server: ScriptedModelServer) -> None:
    def broken(request: RecordedRequest) -> dict[str, Any]:
        raise KeyError("nope")

    server.add_turn(broken)
    with pytest.raises(anthropic.InternalServerError):
        client(server).messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert server.errors == ["scripted turn failed: KeyError: 'nope'"]


def test_stop_returns_promptly_with_idle_keepalive_connection() -> None:
    server = ScriptedModelServer([{"content": [text("x")]}]).start()
    sdk = client(server)
    sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)  # leaves a pooled connection open
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2.0
    with pytest.raises(RuntimeError):
        _ = server.base_url


def test_from_file(tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps({"turns": [{"content": [text("from a file")]}]}), encoding="utf-8")
    with ScriptedModelServer.from_file(script) as server:
        message = client(server).messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert message.content[0].text == "from a file"  # type: ignore[union-attr]


def test_cli_prints_base_url_and_serves_the_script(tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps([{"content": [text("from the CLI")]}]), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar.testing.scripted_server", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        sdk = anthropic.Anthropic(api_key="test-key", base_url=base_url, max_retries=0)
        message = sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
        assert message.content[0].text == "from the CLI"  # type: ignore[union-attr]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_records_each_request_body_as_a_json_line(tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps([{"content": [text("recorded")]}]), encoding="utf-8")
    record = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar.testing.scripted_server", "--script", str(script), "--record", str(record)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        sdk = anthropic.Anthropic(api_key="test-key", base_url=base_url, max_retries=0)
        sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
        deadline = time.monotonic() + 10
        while not (record.exists() and record.read_text(encoding="utf-8").endswith("\n")):
            assert time.monotonic() < deadline, "the request was not recorded"
            time.sleep(0.05)
        lines = record.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 1
        entry = json.loads(lines[0])
        assert entry["path"] == "/v1/messages"
        assert entry["body"]["messages"] == HELLO
        assert entry["body"]["model"] == MODEL
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_client_closing_mid_stream_is_quiet_and_server_keeps_serving(server: ScriptedModelServer) -> None:
    server.add_turns(
        [
            {"content": [text("x" * 200)], "text_chunk": 1, "chunk_delay": 0.01},
            {"content": [text("still here")]},
        ]
    )
    sdk = client(server)
    with sdk.messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
        for _ in stream.text_stream:
            break  # the user pressed cancel: the SDK closes the response
    message = sdk.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert message.content[0].text == "still here"  # type: ignore[union-attr]
    time.sleep(0.3)  # let the abandoned stream notice the closed socket
    assert server.errors == []


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2) to read the listening socket")
def test_a_burst_of_new_connections_fits_its_listen_backlog(server: ScriptedModelServer) -> None:
    """The kernel's view of the listening socket (``ss``: Send-Q of a listener is its backlog): socketserver's
    default of 5 dropped the SYNs of a burst (50 sessions' first requests), each retried a second later, and
    the benchmarks read that second as the sidecar's."""
    port = urlsplit(server.base_url).port
    listed = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    [listener] = listed.splitlines()
    backlog = int(listener.split()[2])
    assert backlog >= 128, listener

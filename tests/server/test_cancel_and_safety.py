"""Cancellation, parallel read-only calls, secrets, and malformed protocol input."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import TEST_API_KEY, Harness


def _saved_events(tmp_path: Path, session: str) -> list[dict[str, Any]]:
    path = tmp_path / "xdg-data" / "sidecar" / "sessions" / f"{session}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _processes_matching(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


async def _wait_for(predicate: Any, timeout: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def test_three_parallel_read_only_calls_overlap_and_results_keep_call_order(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    calls = [{"type": "tool_use", "name": "Bash", "input": {"command": f"sleep 1 && echo result-{i}"}}
             for i in range(3)]
    model_server.add_turns([{"content": calls}, {"content": [{"type": "text", "text": "all three done"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "run three") == "end_turn"

    results = model_server.message_requests()[1].tool_results()
    texts = ["".join(b["text"] for b in r["content"]) for r in results]
    assert [("result-0" in t, "result-1" in t, "result-2" in t) for t in texts] == [
        (True, False, False), (False, True, False), (False, False, True)]
    spans = [(e["metadata"]["time"], e["metadata"]["time"] + e["metadata"]["duration_ms"] / 1000)
             for e in _saved_events(tmp_path, session) if e.get("event") == "tool_result"]
    assert len(spans) == 3
    assert max(start for start, _ in spans) < min(end for _, end in spans), f"calls did not overlap: {spans}"


async def test_cancel_during_a_long_tool_kills_it_and_the_session_goes_on(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    marker = "sleep 417.25"
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": f"{marker}; echo finished"}}]},
        {"content": [{"type": "text", "text": "next turn works"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    prompt = asyncio.create_task(acp_sidecar.prompt(session, "run the long thing"))
    await _wait_for(lambda: bool(_processes_matching(marker)))
    await acp_sidecar.process.notify("session/cancel", {"sessionId": session})
    assert await asyncio.wait_for(prompt, 15) == "cancelled"
    await _wait_for(lambda: not _processes_matching(marker), timeout=10)
    assert await acp_sidecar.prompt(session, "again") == "end_turn"
    assert "next turn works" in acp_sidecar.text(session)
    # The model's history stays valid: the cancelled call has a result.
    last = model_server.message_requests()[-1].body["messages"]
    assert any(b.get("type") == "tool_result" and b.get("is_error")
               for m in last if isinstance(m["content"], list) for b in m["content"])


async def test_cancel_while_a_permission_request_waits(any_transport: Harness, workspace: Path,
                                                       model_server: ScriptedModelServer) -> None:
    acp_sidecar = any_transport  # both transports: a late reply to a forgotten request is dropped
    never = asyncio.Event()

    async def hold(params: dict[str, Any]) -> dict[str, Any]:
        await never.wait()
        return {"outcome": {"outcome": "cancelled"}}

    acp_sidecar.permission_policy = hold
    target = workspace / "created-by-agent.txt"
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": f"touch {target}"}}]},
        {"content": [{"type": "text", "text": "after cancel"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    prompt = asyncio.create_task(acp_sidecar.prompt(session, "make a file"))
    await _wait_for(lambda: bool(acp_sidecar.permission_requests))
    await acp_sidecar.process.notify("session/cancel", {"sessionId": session})
    assert await asyncio.wait_for(prompt, 15) == "cancelled"
    assert not target.exists()
    never.set()  # the late answer to the forgotten request must not upset the sidecar
    assert await acp_sidecar.prompt(session, "again") == "end_turn"
    assert "after cancel" in acp_sidecar.text(session)


async def test_the_api_key_never_leaks(acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer,
                                       tmp_path: Path) -> None:
    (workspace / "leak.txt").write_text("nothing secret here\n")
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "env; echo $ANTHROPIC_API_KEY"}},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "leak.txt")}}]},
        {"fault": "http", "status": 401, "message": f"invalid x-api-key {TEST_API_KEY}"},
    ])
    session = await acp_sidecar.new_session(workspace)
    with pytest.raises(Exception) as err:
        await acp_sidecar.prompt(session, "show me the environment")
    assert TEST_API_KEY not in str(err.value)
    results = model_server.message_requests()[1].tool_results()
    assert results and TEST_API_KEY not in json.dumps(results)
    assert "HOME=" in json.dumps(results)  # the command did run and print its environment
    await acp_sidecar.process.close()
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and TEST_API_KEY.encode() in p.read_bytes()]
    assert leaks == []
    assert TEST_API_KEY not in json.dumps(acp_sidecar.process.notifications)


@pytest.mark.parametrize("framing", ["acp", "lsp"])
async def test_malformed_input_gets_errors_and_never_kills_the_sidecar(
        framing: str, sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path) -> None:
    from tests.conftest import start_harness

    harness = await start_harness(framing, sidecar_env, model_server, tmp_path)
    process = harness.process
    try:
        if framing == "acp":
            await process.send_raw(b"{this is not json\n")
            await process.send_raw(b"[1, 2]\n")
            await process.send_raw(b'{"jsonrpc": "2.0", "id": "x", "method": ' + b'"' + b"a" * (65 << 20) + b'"}\n')
        with pytest.raises(Exception) as unknown:
            await process.request("no/such_method", {})
        assert "-32601" in str(unknown.value)
        with pytest.raises(Exception) as bad_params:
            await process.request("session/new", {"cwd": 42})
        assert "-32602" in str(bad_params.value)
        with pytest.raises(Exception) as bad_session:
            await process.request("session/prompt", {"sessionId": "sess_nope", "prompt": []})
        assert "-32002" in str(bad_session.value)  # ACP: resource not found
        # Still alive and serving.
        result = await process.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert result["sessionId"].startswith("sess_")
        if framing == "acp":
            errors = [n for n in process.notifications if "error" in n]
            assert errors == []  # replies are not notifications
    finally:
        await process.close()
    assert process.proc is not None and process.proc.returncode in (0, None)

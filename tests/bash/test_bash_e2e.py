"""Bash through the agent loop: a spawned `sidecar serve` (ACP), the scripted model server, real processes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from sidecar.tools.bash import sandbox
from tests.bash.test_bash_runtime import procs_running
from tests.conftest import Harness


def result_text(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


async def test_model_issued_command_result_reaches_the_next_request(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / "data.txt").write_text("alpha\nbeta\n")
    call = {
        "type": "tool_use",
        "name": "Bash",
        "input": {"command": "cat data.txt | grep -n beta; echo done >&2"},
    }
    model_server.add_turns([{"content": [call]}, {"content": [{"type": "text", "text": "ok"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "find beta") == "end_turn"
    result = model_server.message_requests()[-1].tool_results()[-1]
    text = result_text(result)
    assert text.startswith("2:beta\ndone\nExit code 0 (")
    assert not result.get("is_error")
    assert acp_sidecar.permission_requests == []  # read-only: no question


async def test_non_read_only_command_asks_with_the_narrowest_rule(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer
) -> None:
    call = {"type": "tool_use", "name": "Bash", "input": {"command": "echo ok && touch made.txt"}}
    model_server.add_turns([{"content": [call]}, {"content": [{"type": "text", "text": "ok"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "make it") == "end_turn"
    assert len(acp_sidecar.permission_requests) == 1
    names = [o["name"] for o in acp_sidecar.permission_requests[0]["options"]]
    assert any("Bash(touch made.txt)" in n for n in names), names
    assert (workspace / "made.txt").exists()


async def test_cancel_during_a_long_command_leaves_no_process(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer
) -> None:
    call = {"type": "tool_use", "name": "Bash", "input": {"command": "sleep 64.5 & sleep 64.75; wait"}}
    model_server.add_turns([{"content": [call]}, {"content": [{"type": "text", "text": "never"}]}])
    session = await acp_sidecar.new_session(workspace)
    prompt = asyncio.create_task(acp_sidecar.prompt(session, "wait a while"))
    for _ in range(2000):
        if len(procs_running("sleep 64.")) == 2:
            break
        await asyncio.sleep(0.05)
    assert len(procs_running("sleep 64.")) == 2
    await acp_sidecar.process.notify("session/cancel", {"sessionId": session})
    assert await asyncio.wait_for(prompt, 30) == "cancelled"
    for _ in range(100):
        if not procs_running("sleep 64."):
            break
        await asyncio.sleep(0.05)
    assert procs_running("sleep 64.") == []


async def test_the_first_read_only_command_runs_in_a_sandbox_started_while_it_streamed(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer
) -> None:
    """The sandbox is started when the tool_use block begins (``Tool.anticipate``), so the command's process
    is older than the end of the stream: here its input streams for ~1 s, and the process that prints its
    own start time (``cat``: field 22 of /proc/self/stat, in clock ticks since boot) began well before it
    ran. Without the head start it begins when it runs (age ~0.01 s)."""
    if not sandbox.available():
        pytest.skip(f"no sandbox: {sandbox.unavailable_reason()}")
    call = {"type": "tool_use", "name": "Bash", "input": {"command": "cat /proc/self/stat /proc/uptime"}}
    model_server.add_turns([{"content": [call], "chunk_delay": 0.1, "json_chunk": 8},
                            {"content": [{"type": "text", "text": "ok"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "how old") == "end_turn"
    stat, uptime = result_text(model_server.message_requests()[-1].tool_results()[-1]).splitlines()[:2]
    started = int(stat[stat.rindex(")") + 2:].split()[19]) / os.sysconf("SC_CLK_TCK")
    age = float(uptime.split()[0]) - started
    assert age >= 0.3, age

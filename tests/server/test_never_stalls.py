"""A connection that never stalls (issue 29): during the first prompt of a fresh process, while the
warm-up thread still imports the SDK, ``session/set_mode`` is answered and ``session/cancel`` ends the
prompt about as fast as when the process is idle — the methods wait for the warm-up without blocking the
event loop. Measured as ratios to idle answers of the same process, never against a fixed time. Before
the fix each waited for the whole warm-up (issue 29: 1.4 s for a set_mode, 0.9-1.8 s for a cancel;
thousands of times an idle answer)."""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError, SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO

# Generous for a loaded machine (idle answers are ~1-10 ms here, a stall of the old kind 400-4,000×).
RATIO = 25


def answer(request: Any) -> dict[str, Any]:
    """A prompt saying "slow" waits at the model (a request to cancel); any other is answered at once."""
    last = request.body["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last if isinstance(b, dict))
    if "slow" in text:
        return {"delay": 5, "content": [{"type": "text", "text": "slow answer"}]}
    return {"content": [{"type": "text", "text": "answer"}]}


async def timed(coro: Any) -> float:
    started = time.monotonic()
    await coro
    return time.monotonic() - started


async def test_set_mode_and_cancel_are_answered_during_the_first_prompt(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, workspace: Path, tmp_path: Path) -> None:
    for _ in range(4):
        model_server.add_turn(answer)
    process = SidecarProcess(framing="acp", env=sidecar_env, cwd=str(REPO),
                             stderr=open(tmp_path / "sidecar.stderr", "wb"),
                             argv=[sys.executable, "-m", "sidecar", "serve", "--acp"])
    await process.start()
    try:
        await process.initialize()
        session = (await process.request("session/new", {"cwd": str(workspace), "mcpServers": []}))["sessionId"]

        async def set_mode(mode: str) -> float:
            return await timed(process.request("session/set_mode", {"sessionId": session, "modeId": mode}))

        async def cancel(prompt: asyncio.Task[Any]) -> float:
            started = time.monotonic()
            await process.notify("session/cancel", {"sessionId": session})
            assert (await prompt)["stopReason"] == "cancelled"
            return time.monotonic() - started

        async def refusal() -> float:
            started = time.monotonic()
            with pytest.raises(RemoteError) as refused:
                await process.request("session/prompt", {"sessionId": session,
                                                         "prompt": [{"type": "text", "text": "again"}]})
            assert refused.value.data["kind"] == "prompt_running"
            return time.monotonic() - started

        def send_prompt(text: str) -> asyncio.Task[Any]:
            return asyncio.create_task(process.request(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}))

        # The fresh process's first prompt: its preparation (the SDK's import) is under way.
        first = send_prompt("slow first")
        busy_modes = [await set_mode(m) for m in ("plan", "default", "acceptEdits", "default", "plan")]
        # Still preparing: nothing reached the model, so these answers overlapped the warm-up. (Without the
        # fix this fails: each answer waited until the warm-up was over and the request had left.)
        assert model_server.message_requests() == [], "set_mode was answered only after the warm-up"
        busy_refusal = await refusal()  # a second prompt is refused at once, not after the warm-up
        busy_cancel = await cancel(first)
        assert model_server.message_requests() == []  # cancelled while preparing: no request left

        # The references, same process, warm and idle.
        warm = send_prompt("warm")
        assert (await warm)["stopReason"] == "end_turn"
        idle_modes = [await set_mode(m) for m in ("plan", "default", "acceptEdits", "default", "plan")]
        slow = send_prompt("slow later")
        assert await asyncio.to_thread(model_server.wait_for_requests, 2, 30, messages_only=True)  # warm + slow
        idle_refusal = await refusal()
        idle_cancel = await cancel(slow)
    finally:
        await process.close()
    busy, idle = statistics.median(busy_modes), statistics.median(idle_modes)
    print(f"set_mode during the first prompt {busy * 1000:.1f} ms vs idle {idle * 1000:.1f} ms "
          f"({busy / idle:.1f}×); cancel {busy_cancel * 1000:.1f} vs {idle_cancel * 1000:.1f} ms "
          f"({busy_cancel / idle_cancel:.1f}×); second prompt refused {busy_refusal * 1000:.1f} vs "
          f"{idle_refusal * 1000:.1f} ms")
    assert busy <= RATIO * idle, (busy_modes, idle_modes)
    assert busy_cancel <= RATIO * idle_cancel, (busy_cancel, idle_cancel)
    assert busy_refusal <= RATIO * idle_refusal, (busy_refusal, idle_refusal)


# ``git`` for the sidecar: ``status`` waits until the test lets it go (the file ``go`` appears), so the test
# can ask the sidecar something while the system prompt's git status is still running.
HELD_GIT = """#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = status ]; then
    echo $$ > "$HELD_GIT_DIR/started.tmp" && mv "$HELD_GIT_DIR/started.tmp" "$HELD_GIT_DIR/started"
    n=0
    while [ ! -e "$HELD_GIT_DIR/go" ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
    break
  fi
done
exec {git} "$@"
"""


async def test_the_system_prompts_git_status_runs_off_the_loop(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, workspace: Path, tmp_path: Path) -> None:
    """``session/new`` builds the system prompt, whose ``git status`` may take long in a big repository: the
    connection answers meanwhile, and the prompt still carries the status."""
    import shutil

    real_git = shutil.which("git")
    assert real_git is not None
    _commit_all(workspace, real_git)
    (workspace / "notes.txt").write_text("changed\n")
    held = tmp_path / "held-git"
    (held / "bin").mkdir(parents=True)
    (held / "bin" / "git").write_text(HELD_GIT.format(git=real_git))
    (held / "bin" / "git").chmod(0o755)
    env = {**sidecar_env, "PATH": f"{held / 'bin'}:{sidecar_env['PATH']}", "HELD_GIT_DIR": str(held)}
    model_server.add_turn({"content": [{"type": "text", "text": "answer"}]})
    process = SidecarProcess(framing="acp", env=env, cwd=str(REPO), stderr=open(tmp_path / "sidecar.stderr", "wb"),
                             argv=[sys.executable, "-m", "sidecar", "serve", "--acp"])
    await process.start()
    try:
        await process.initialize()
        opening = asyncio.create_task(process.request("session/new", {"cwd": str(workspace), "mcpServers": []}))
        while not (held / "started").exists():  # the system prompt's git status has started
            assert not opening.done(), opening.result()
            await asyncio.sleep(0.01)
        git_pid = int((held / "started").read_text())
        # Answered while git status still waits: before the fix the loop waited for git until the prompt's
        # 3 s timeout killed it, and the prompt said "git not available".
        with pytest.raises(RemoteError):
            await process.request("_sidecar/no_such_method", {}, timeout=30)
        answered_while_held = _alive(git_pid)
        (held / "go").touch()
        session = (await opening)["sessionId"]
        result = await process.request("session/prompt", {"sessionId": session,
                                                          "prompt": [{"type": "text", "text": "hi"}]})
        assert result["stopReason"] == "end_turn"
    finally:
        await process.close()
    assert answered_while_held
    system = model_server.message_requests()[0].body["system"][0]["text"]
    assert "Git status at session start:\nbranch main\n M notes.txt" in system


def _alive(pid: int) -> bool:
    """A live process, not a zombie (its parent has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _commit_all(workspace: Path, git: str) -> None:
    import subprocess

    for args in (["init", "-q", "-b", "main"], ["add", "."],
                 ["-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "first"]):
        subprocess.run([git, *args], cwd=workspace, check=True, capture_output=True)

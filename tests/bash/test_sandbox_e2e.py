"""Issue 15 over ACP: a spawned `sidecar serve --acp`, the scripted model, real bubblewrap, real git.

Every question the sidecar asks is rejected, so whatever lands on disk ran without asking."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sidecar.shell.classify import Analysis
from sidecar.testing.scripted_server import ScriptedModelServer
from sidecar.tools.bash import sandbox
from tests.bash.test_bash_e2e import result_text
from tests.conftest import Harness, reject_once, trust_workspace

pytestmark = pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox: {sandbox.unavailable_reason()}")


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


def bash(command: str) -> dict[str, Any]:
    return {"type": "tool_use", "name": "Bash", "input": {"command": command}}


def write(path: Path, content: str) -> dict[str, Any]:
    return {"type": "tool_use", "name": "Write", "input": {"file_path": str(path), "content": content}}


async def run_calls(harness: Harness, model: ScriptedModelServer, session: str,
                    calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One model turn per call, then a final text; the tool results in order."""
    model.add_turns([{"content": [c]} for c in calls] + [{"content": [{"type": "text", "text": "done"}]}])
    assert await harness.prompt(session, "go") == "end_turn"
    return [r for req in model.message_requests()[-len(calls):] for r in req.tool_results()]


async def test_a_writer_that_runs_without_asking_cannot_touch_claude_or_git(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer, sidecar_env: dict[str, str]
) -> None:
    git("init", "-q", str(workspace))
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(python3 *)"]}}))
    trust_workspace(sidecar_env, workspace)  # a project allow rule applies only in a trusted workspace
    config_before = (workspace / ".git" / "config").read_bytes()
    acp_sidecar.permission_policy = reject_once
    session = await acp_sidecar.new_session(workspace)
    py = "python3 -c \"open('{}', 'a').write('{}')\""
    results = await run_calls(acp_sidecar, model_server, session, [
        bash(py.format(".claude/settings.local.json", "{}")),
        bash(py.format(".git/config", "[core] fsmonitor = touch PWNED")),
        bash(py.format(".git/hooks/post-checkout", "touch PWNED")),
        bash(py.format(".mcp.json", "{}")),
        bash(py.format("made.txt", "fine")),  # the rest of the workspace is writable
    ])
    assert acp_sidecar.permission_requests == []  # allowed by the rule: nothing was asked
    for result in results[:4]:
        text = result_text(result)  # .mcp.json was absent: its read-only placeholder is a directory
        assert result.get("is_error") and ("Read-only file system" in text or "Is a directory" in text), text
    assert not results[4].get("is_error")
    assert not (workspace / ".claude" / "settings.local.json").exists()
    assert (workspace / ".git" / "config").read_bytes() == config_before
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists()
    assert not (workspace / ".mcp.json").exists()
    assert (workspace / "made.txt").read_text() == "fine"


async def test_a_read_only_command_gets_a_read_only_workspace(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer
) -> None:
    """`git status` is read-only: it runs without asking, in a sandbox where it could not write at all;
    and the repository's fsmonitor does not run (the agent's git has it off)."""
    git("init", "-q", str(workspace))
    (workspace / "hello.py").write_text("print('hi')\n")
    canary = workspace.parent / "FSMONITOR-RAN"
    git("-C", str(workspace), "config", "core.fsmonitor", f"touch {canary}; false #")
    acp_sidecar.permission_policy = reject_once
    session = await acp_sidecar.new_session(workspace)
    results = await run_calls(acp_sidecar, model_server, session, [bash("git status --short")])
    assert acp_sidecar.permission_requests == []
    assert "hello.py" in result_text(results[0])
    assert not canary.exists()


async def test_write_that_builds_a_git_dir_asks_in_accept_edits(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer
) -> None:
    acp_sidecar.permission_policy = reject_once
    session = await acp_sidecar.new_session(workspace)
    await acp_sidecar.process.request("session/set_mode", {"sessionId": session, "modeId": "acceptEdits"})
    evil = workspace / "evil"
    results = await run_calls(acp_sidecar, model_server, session, [
        write(evil / "HEAD", "ref: refs/heads/main\n"),
        write(evil / "config", "[core]\n\tfsmonitor = touch PWNED\n"),
    ])
    assert not results[0].get("is_error")  # a lone HEAD is an ordinary file: acceptEdits writes it
    assert len(acp_sidecar.permission_requests) == 1
    assert results[1].get("is_error") and not (evil / "config").exists()


needs_paths = pytest.mark.skipif("read_paths" not in Analysis.__dataclass_fields__,
                                 reason="the classifier's Analysis.read_paths is not on this branch yet")


@needs_paths
async def test_reading_a_key_outside_the_workspace_asks(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"  # the sidecar's HOME (tests/conftest.py)
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    acp_sidecar.permission_policy = reject_once
    session = await acp_sidecar.new_session(workspace)
    results = await run_calls(acp_sidecar, model_server, session, [bash("cat ~/.ssh/id_rsa")])
    assert len(acp_sidecar.permission_requests) == 1
    assert results[0].get("is_error") and "PRIVATE KEY" not in result_text(results[0])


@pytest.mark.skipif("match_texts" not in Analysis.__dataclass_fields__,
                    reason="the classifier's deny-rule spellings (Analysis.match_texts) are not on this branch yet")
async def test_denied_spellings_of_a_denied_command_are_denied(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer
) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(curl:*)"]}}))
    session = await acp_sidecar.new_session(workspace)
    spellings = ["'curl' x", "\\curl x", "c\\url x", "/usr/bin/curl x", "env curl x", "LANG=C curl x"]
    results = await run_calls(acp_sidecar, model_server, session, [bash(s) for s in spellings])
    for spelling, result in zip(spellings, results, strict=True):
        assert result.get("is_error") and "denied" in result_text(result), spelling
    assert acp_sidecar.permission_requests == []

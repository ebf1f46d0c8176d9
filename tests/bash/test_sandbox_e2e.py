"""Issue 15 over ACP: a spawned `sidecar serve --acp`, the scripted model, real bubblewrap, real git.

Every question the sidecar asks is rejected, so whatever lands on disk ran without asking."""

from __future__ import annotations

import json
import os
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


def plant_git_programs(repo: Path) -> list[Path]:
    """A repository whose own .git/config (as an unpacked archive could bring) names programs git runs
    by itself on diff, log -p and status; each program leaves a canary."""
    git("init", "-q", str(repo))
    (repo / "a.txt").write_text("hello\n")
    git("-C", str(repo), "add", "a.txt")
    git("-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    canaries = []
    for name in ("clean", "textconv", "external"):
        script = repo.parent / f"{name}.sh"
        script.write_text(f"#!/bin/sh\ntouch {repo.parent}/PWNED_{name}\ncat \"${{1:-/dev/stdin}}\"\n")
        script.chmod(0o755)
        canaries.append(repo.parent / f"PWNED_{name}")
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "x"]\n\tclean = {repo.parent}/clean.sh\n\tsmudge = cat\n'
                     f'[diff "x"]\n\ttextconv = {repo.parent}/textconv.sh\n'
                     f"[diff]\n\texternal = {repo.parent}/external.sh\n")
    (repo / ".gitattributes").write_text("a.txt filter=x diff=x\n")
    (repo / "a.txt").write_text("hello, changed\n")
    return canaries


async def test_git_in_a_repository_whose_config_names_programs_asks(
    acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer
) -> None:
    """`git diff`, `git log -p`, `git -C . status` are read-only words, but this repository's own config
    would make git run its programs: each asks (rejected here), and no program ever ran — neither for
    them nor for the sidecar's own `git status` in the system prompt."""
    canaries = plant_git_programs(workspace)
    acp_sidecar.permission_policy = reject_once
    session = await acp_sidecar.new_session(workspace)
    results = await run_calls(acp_sidecar, model_server, session, [
        bash("git diff"), bash("git log -p -1"), bash("git -C . status --short"), bash("ls"),
    ])
    assert len(acp_sidecar.permission_requests) == 3, [result_text(r) for r in results]
    for result in results[:3]:
        assert result.get("is_error"), result_text(result)
        assert "did not run" in result_text(result)
    assert not results[3].get("is_error")
    assert [c.name for c in canaries if c.exists()] == []
    shown = json.dumps(acp_sidecar.permission_requests[0]["toolCall"]["content"])
    assert f"Warning: this repository's own git configuration names a program git would run (filter.x.clean=" \
        f"{workspace.parent}/clean.sh)" in shown
    system = json.dumps(model_server.message_requests()[0].body["system"])
    assert "M a.txt" in system  # the system prompt's status still shows the change


def test_repo_programs_lists_only_the_repository_own_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sidecar.agent.prompt import git_status
    from sidecar.shell.classify import Where, analyze
    from sidecar.workspace.gitenv import repo_programs

    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[diff]\n\texternal = difft\n")  # the user's own: trusted
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    plain = tmp_path / "plain"
    git("init", "-q", str(plain))
    assert repo_programs(plain) == []
    assert analyze("git diff", Where(plain, git_programs=repo_programs)).read_only
    repo = tmp_path / "repo"
    canaries = plant_git_programs(repo)
    found = repo_programs(repo)
    assert [f.split("=", 1)[0] for f in found] == ["filter.x.clean", "filter.x.smudge", "diff.x.textconv",
                                                   "diff.external"]
    analysis = analyze("cd / && git -C " + str(repo) + " diff", Where(tmp_path, git_programs=repo_programs))
    assert not analysis.read_only
    assert "own git configuration names a program git would run (filter.x.clean=" in analysis.subcommands[-1].reason
    assert analyze("git diff", Where(repo)).read_only  # pure classification: not checked
    # The sidecar's own status: a file whose mtime changed makes git hash it through the clean filter.
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "a.txt"], check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "filter.x.smudge",
                        "GIT_CONFIG_VALUE_0": ""})
    os.utime(repo / "a.txt", (1_000_000_000, 1_000_000_000))
    assert "branch" in git_status(repo)
    assert [c.name for c in canaries if c.exists()] == []

"""The bubblewrap sandbox around Bash commands, and the git every command runs (issue 15).

Real bwrap, real git, real files: a guarded path is "guarded" when a real write from inside the sandbox
fails and the bytes on disk are unchanged."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sidecar.agent.prompt import git_status
from sidecar.session import Session
from sidecar.shell.classify import Where, analyze
from sidecar.tools.bash import runner, sandbox
from sidecar.tools.bash.sandbox import SandboxPolicy, remove_stale_placeholders
from sidecar.tools.bash.shells import session_setting, shells_of
from sidecar.workspace.gitenv import safe_git_env
from tests.bash.test_bash_runtime import run_bash
from tests.conftest import REPO

needs_bwrap = pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox: {sandbox.unavailable_reason()}")


def settings(workspace: Path, data: dict[str, object]) -> None:
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text(json.dumps(data))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(path: Path) -> None:
    path.mkdir(exist_ok=True)
    git(path, "init", "-q", "-b", "main", ".")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "T")
    (path / "f.txt").write_text("one\n")
    git(path, "add", "f.txt")
    git(path, "commit", "-qm", "first")


async def run_guarded(session: Session, command: str) -> tuple[str, int | None]:
    """``command`` the way the Bash tool runs a command the user approved (roots writable, guards on)."""
    shells = shells_of(session)
    policy = shells.sandbox_policy(network=False, read_only=False)
    assert policy is not None
    running = await shells.start(command, "call_guard", policy)
    await runner.run(running, 20_000)
    return running.output_path.read_text(errors="replace"), running.exit_code


# ---- settings reach the sandbox (session_setting used to read a method as an attribute) ---------------

async def test_session_setting_reads_the_settings_files(session: Session, workspace: Path) -> None:
    settings(workspace, {"sandbox": {"enabled": False}, "secretEnvVars": ["MY_TOKEN"]})
    assert session_setting(session, "sandbox", "enabled") is False
    assert session_setting(session, "secretEnvVars") == ["MY_TOKEN"]


@needs_bwrap
async def test_sandbox_enabled_false_runs_unsandboxed(session: Session, workspace: Path) -> None:
    tool_out = await _bash_meta(session, "echo hi")
    assert tool_out["sandboxed"] is True
    settings(workspace, {"sandbox": {"enabled": False}})
    assert (await _bash_meta(session, "echo hi"))["sandboxed"] is False


@needs_bwrap
async def test_allow_network_setting_opens_the_network(session: Session, workspace: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                listener.accept()[0].close()

    threading.Thread(target=accept, daemon=True).start()
    probe = (f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); "
             "print('CONNECTED')\"")
    text, failed = await run_bash(session, probe)
    assert failed and "CONNECTED" not in text  # no network in the sandbox by default
    settings(workspace, {"sandbox": {"allowNetwork": True}})
    text, failed = await run_bash(session, probe)
    assert not failed and "CONNECTED" in text
    listener.close()


@needs_bwrap
async def test_unsandboxed_commands_only_when_settings_allow(session: Session, workspace: Path) -> None:
    text, _ = await run_bash(session, "echo hi", dangerouslyDisableSandbox=True)
    assert "dangerouslyDisableSandbox was ignored" in text
    settings(workspace, {"sandbox": {"allowUnsandboxedCommands": True}})
    text, _ = await run_bash(session, "echo hi", dangerouslyDisableSandbox=True)
    assert "Ran outside the sandbox" in text
    assert not (workspace / "CLAUDE.md").exists()  # the discarded policy's placeholders were removed


async def _bash_meta(session: Session, command: str) -> dict[str, object]:
    from sidecar.tools.bash.bash import Bash, BashInput
    from tests.bash.conftest import make_ctx

    tool, inp, ctx = Bash(), BashInput(command=command), make_ctx(session)
    await tool.check_permission(inp, ctx)
    return (await tool.run(inp, ctx)).metadata


# ---- the agent's configuration is read-only inside the sandbox ----------------------------------------

@needs_bwrap
async def test_read_only_command_gets_no_writable_workspace(session: Session, workspace: Path) -> None:
    shells = shells_of(session)
    policy = shells.sandbox_policy(network=False, read_only=True)
    assert policy is not None
    running = await shells.start("touch made.txt; echo x > \"$TMPDIR/t\" && echo TMP-OK", "c1", policy)
    await runner.run(running, 20_000)
    out = running.output_path.read_text()
    assert "Read-only file system" in out and "TMP-OK" in out
    assert not (workspace / "made.txt").exists()


@needs_bwrap
async def test_guarded_paths_cannot_be_written_or_created(session: Session, workspace: Path) -> None:
    make_repo(workspace)
    settings(workspace, {})
    (workspace / "sub").mkdir()
    (workspace / "sub" / "AGENTS.md").write_text("nested memory\n")
    config_before = (workspace / ".git" / "config").read_bytes()
    attempts = [
        "echo '{\"permissions\":{\"allow\":[\"Bash(*)\"]}}' > .claude/settings.local.json",
        "echo '[core] fsmonitor = touch PWNED' >> .git/config",
        "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit",
        "mkdir .vscode",
        "mkdir -p .idea/x",
        "echo '{}' > .mcp.json",
        "echo evil > CLAUDE.md",
        "echo evil > AGENTS.md",
        "echo evil >> sub/AGENTS.md",
        "rmdir .vscode",
        "mv .claude moved",
    ]
    for command in attempts:
        out, code = await run_guarded(session, command)
        assert code != 0, f"{command!r} succeeded: {out}"
    assert (workspace / ".git" / "config").read_bytes() == config_before
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert not (workspace / ".claude" / "settings.local.json").exists()
    assert (workspace / "sub" / "AGENTS.md").read_text() == "nested memory\n"
    # Placeholders are gone once the sandbox ended: nothing new in the user's workspace.
    for name in (".vscode", ".idea", ".mcp.json", "CLAUDE.md", "AGENTS.md"):
        assert not (workspace / name).exists(), name
    # The workspace itself stays writable, and git still commits (objects, index, refs are not guarded).
    out, code = await run_guarded(session, "echo two >> f.txt && git commit -qam second && git log --oneline | wc -l")
    assert code == 0, out
    assert out.strip().endswith("2")


@needs_bwrap
async def test_directory_that_looks_like_a_git_dir_is_guarded(session: Session, workspace: Path) -> None:
    evil = workspace / "evil"
    git(workspace, "init", "-q", "--bare", str(evil))
    _out, code = await run_guarded(session, "echo '[core] fsmonitor = touch PWNED' >> evil/config")
    assert code != 0 and "PWNED" not in (evil / "config").read_text()


@needs_bwrap
async def test_placeholder_kept_when_someone_fills_it_outside(session: Session, workspace: Path) -> None:
    policy = sandbox.SandboxPolicy(writable=[workspace])
    policy.guard([workspace])
    assert (workspace / ".claude").is_dir()  # placeholder while the sandbox would run
    (workspace / ".claude" / "settings.json").write_text("{}")  # the user, outside the sandbox
    policy.cleanup()
    assert (workspace / ".claude" / "settings.json").read_text() == "{}"
    assert not (workspace / "CLAUDE.md").exists()


# ---- git never runs a repository's programs -------------------------------------------------------

def _fsmonitor_repo(workspace: Path) -> Path:
    make_repo(workspace)
    canary = workspace.parent / "FSMONITOR-RAN"
    git(workspace, "config", "core.fsmonitor", f"touch {canary}; false #")
    return canary


def test_plain_git_status_runs_the_fsmonitor(workspace: Path) -> None:
    """The control: without the safe environment this repository does run code on `git status`."""
    canary = _fsmonitor_repo(workspace)
    subprocess.run(["git", "status"], cwd=workspace, capture_output=True)
    assert canary.exists()


def test_sidecar_git_status_does_not_run_the_fsmonitor(workspace: Path) -> None:
    canary = _fsmonitor_repo(workspace)
    assert "branch main" in git_status(workspace)
    assert not canary.exists()


async def test_bash_git_does_not_run_fsmonitor_or_hooks(session: Session, workspace: Path) -> None:
    canary = _fsmonitor_repo(workspace)
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {canary}.hook\n")
    hook.chmod(0o755)
    text, failed = await run_bash(session, "git status --short && echo x >> f.txt && git commit -qam two && "
                                           "git log --oneline | wc -l")
    assert not failed, text
    assert not canary.exists() and not Path(f"{canary}.hook").exists()
    assert text.splitlines()[0].strip() == "2"


async def test_bash_git_refuses_a_bare_repository_found_by_discovery(session: Session, workspace: Path) -> None:
    evil = workspace / "evil"
    git(workspace, "init", "-q", "--bare", str(evil))
    canary = workspace.parent / "BARE-FSMONITOR"
    git(evil, "config", "core.fsmonitor", f"touch {canary}; false #")
    text, failed = await run_bash(session, "cd evil && git status")
    assert failed and "bare repository" in text
    assert not canary.exists()


def test_safe_git_env_appends_after_existing_config() -> None:
    env = safe_git_env({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "x",
                        "GIT_EXTERNAL_DIFF": "evil"})
    assert env["GIT_CONFIG_KEY_0"] == "user.name"
    assert env["GIT_CONFIG_KEY_1"] == "core.fsmonitor" and env["GIT_CONFIG_VALUE_1"] == "false"
    assert int(env["GIT_CONFIG_COUNT"]) == 6
    assert "GIT_EXTERNAL_DIFF" not in env


@pytest.mark.parametrize("command", ["cat < /dev/tcp/127.0.0.1/80", "echo hi > /dev/udp/10.0.0.1/53",
                                     "head -1 </dev/tcp/example.com/80"])
def test_dev_tcp_and_udp_redirections_are_network(command: str, workspace: Path) -> None:
    analysis = analyze(command, Where(workspace))
    assert not analysis.read_only
    assert "network" in [s.cls for s in analysis.subcommands]


def test_placeholders_of_a_killed_sidecar_are_removed_by_the_next_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sidecar killed while a sandboxed command runs leaves its empty placeholders (``CLAUDE.md/`` as a
    directory); the next sidecar removes them, and leaves a live sidecar's alone."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    dead_ws, live_ws = tmp_path / "dead", tmp_path / "live"
    dead_ws.mkdir()
    live_ws.mkdir()
    (dead_ws / "CLAUDE.md").write_text("kept: a real file\n")
    script = ("import sys, time; from pathlib import Path; from sidecar.tools.bash.sandbox import SandboxPolicy;"
              "SandboxPolicy().guard([Path(sys.argv[1])]); print('guarded', flush=True); time.sleep(60)")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": str(REPO)}
    dead = subprocess.Popen([sys.executable, "-c", script, str(dead_ws)], stdout=subprocess.PIPE, text=True, env=env)
    live = subprocess.Popen([sys.executable, "-c", script, str(live_ws)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert dead.stdout is not None and dead.stdout.readline() == "guarded\n"
        assert live.stdout is not None and live.stdout.readline() == "guarded\n"
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        assert (dead_ws / ".mcp.json").is_dir() and (dead_ws / "AGENTS.md").is_dir()  # left behind
        (dead_ws / ".idea" / "workspace.xml").write_text("<x/>")  # the user's own since: kept
        removed = remove_stale_placeholders()
        assert sorted(p.name for p in removed) == [".claude", ".mcp.json", ".vscode", "AGENTS.md"]
        assert sorted(p.name for p in dead_ws.iterdir()) == [".idea", "CLAUDE.md"]
        assert (dead_ws / "CLAUDE.md").read_text() == "kept: a real file\n"
        assert (live_ws / "CLAUDE.md").is_dir()  # its command may still be running
        assert remove_stale_placeholders() == []
    finally:
        live.kill()
        live.wait()
    SandboxPolicy().cleanup()  # a policy without placeholders cleans nothing

"""A read-only command runs in a sandbox started ahead (issue 29, docs/bash.md "A sandbox started ahead").

Real bwrap, real bash, the real Bash tool. The oracle is the command itself: what it prints in the spare is
what it prints in a sandbox started for it (its environment, its directory, its PID namespace), each
command gets a sandbox of its own, and no spare outlives its session."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.session import Session
from sidecar.tools.bash import runner, sandbox
from sidecar.tools.bash.shells import shells_of
from tests.bash.test_bash_runtime import gone, pid_alive, procs_running, run_bash
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox: {sandbox.unavailable_reason()}")


def lines(text: str) -> list[str]:
    """What a command printed, in order for one program and sorted for ``env`` (bash lists the variables
    it exports in its own order), without the tool's trailer (exit code and duration)."""
    body = [line for line in text.splitlines() if not line.startswith("Exit code ") and "(took " not in line]
    return sorted(body)


async def ended(pid: int) -> bool:
    """Whether ``pid`` ends soon (a discarded spare is killed, and its death takes a moment)."""
    for _ in range(250):
        if not pid_alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def ready_spare(session: Session) -> runner.SpareSandbox:
    """The spare a read-only command leaves for the next one (started from the loop right after it)."""
    text, err = await run_bash(session, "true")
    assert not err, text
    for _ in range(3):
        await asyncio.sleep(0)
    spare = shells_of(session).spare
    assert spare is not None and spare.alive()
    return spare


async def without_spare(session: Session, command: str) -> str:
    shells = shells_of(session)
    if shells.spare is not None:
        shells._discard_spare()
    text, _ = await run_bash(session, command)
    for _ in range(3):
        await asyncio.sleep(0)
    shells._discard_spare()  # the one this command left: the next command starts its own sandbox
    return text


@pytest.mark.parametrize("command", ["env", "bash -c 'env; echo $SHLVL $$; pwd'", "pwd -P; ls -a",
                                     "readlink /proc/self/cwd", "echo $_", "printenv _"])
async def test_the_spare_runs_a_command_as_a_sandbox_started_for_it(session: Session, workspace: Path,
                                                                    command: str) -> None:
    (workspace / "a.txt").write_text("a\n")
    fresh = await without_spare(session, command)
    spare = await ready_spare(session)
    text, err = await run_bash(session, command)
    assert not err
    assert not pid_alive(spare.popen.pid)  # it ran there, and ended with the command
    assert lines(text) == lines(fresh) and lines(text)


async def test_each_command_gets_a_sandbox_of_its_own(session: Session) -> None:
    spare = await ready_spare(session)
    first, _ = await run_bash(session, "readlink /proc/self/ns/pid")
    await asyncio.sleep(0)
    second_spare = shells_of(session).spare
    assert second_spare is not None and second_spare.popen.pid != spare.popen.pid
    second, _ = await run_bash(session, "readlink /proc/self/ns/pid")
    assert lines(first)[0].startswith("pid:[") and lines(first) != lines(second)


async def test_the_directory_a_cd_left_is_where_the_spare_runs(session: Session, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    await ready_spare(session)
    text, err = await run_bash(session, "cd sub")
    assert not err and "Working directory is now" in text
    assert shells_of(session).spare is not None  # a cd ran in a sandbox of its own
    text, err = await run_bash(session, "pwd")
    assert lines(text) == [str(workspace / "sub")]


async def test_a_changed_environment_gets_a_fresh_sandbox(session: Session,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    spare = await ready_spare(session)
    monkeypatch.setenv("SPARE_TEST_VAR", "set-after-the-spare")
    text, _ = await run_bash(session, "printenv SPARE_TEST_VAR")
    assert lines(text) == ["set-after-the-spare"]
    assert await ended(spare.popen.pid)  # discarded, not left waiting


async def test_a_command_that_writes_never_takes_the_spare(session: Session, workspace: Path) -> None:
    spare = await ready_spare(session)
    text, err = await run_bash(session, "echo x > made.txt")
    assert not err, text
    assert (workspace / "made.txt").read_text() == "x\n"
    assert shells_of(session).spare is spare and spare.alive()  # still there for the next read-only one


async def test_a_timeout_in_the_spare_kills_it(session: Session) -> None:
    spare = await ready_spare(session)
    text, _ = await run_bash(session, "sleep 30", timeout=300)
    assert "timed out" in text.lower()
    assert await ended(spare.popen.pid)


async def test_exit_codes_and_signals_read_as_bash_says(session: Session) -> None:
    await ready_spare(session)
    text, _ = await run_bash(session, "ls /no/such/dir")
    assert "Exit code 2" in text and "No such file or directory" in text
    await asyncio.sleep(0)
    assert shells_of(session).spare is not None
    text, _ = await run_bash(session, "bash -c 'kill -SEGV $$'")
    assert "Exit code 139" in text


async def test_no_spare_outlives_its_session(session: Session) -> None:
    spare = await ready_spare(session)
    await shells_of(session).close()
    assert shells_of(session).spare is None
    assert await ended(spare.popen.pid)


async def test_an_idle_spare_ends(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sidecar.tools.bash.shells.SPARE_IDLE_S", 0.05)
    spare = await ready_spare(session)
    for _ in range(200):
        if shells_of(session).spare is None and not pid_alive(spare.popen.pid):
            break
        await asyncio.sleep(0.02)
    assert shells_of(session).spare is None and not pid_alive(spare.popen.pid)


# Environments a user's shell may really have, and ones a hostile settings file or launcher could give:
# the loader's own variable names, a trace or noexec for every bash, a missing locale (bash warns as it
# starts), a read timeout, an IFS, no SHLVL. Whatever the spare does with them, the command prints what it
# prints in a sandbox started for it.
HOSTILE_ENVS = [
    {"d": "orig", "u": "orig", "w": "orig", "a": "orig", "o": "orig", "__sidecar_d": "x"},
    {"SHELLOPTS": "xtrace"}, {"SHELLOPTS": "noexec"}, {"BASHOPTS": "nullglob"}, {"LC_ALL": "de_DE.UTF-8"},
    {"TMOUT": "1"}, {"IFS": "x"}, {"SHLVL": None}, {"SHLVL": "007"}, {"POSIXLY_CORRECT": "1"}, {"PS4": "$(date)"},
]


@pytest.mark.parametrize("changes", HOSTILE_ENVS, ids=lambda c: ",".join(c)[:30])
async def test_the_spare_changes_nothing_a_command_sees_whatever_the_environment(
        session: Session, monkeypatch: pytest.MonkeyPatch, changes: dict[str, str | None]) -> None:
    for name, value in changes.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    for command in ("env", "ls /", "printenv d u w a o SHLVL IFS _", "echo $_ $SHLVL"):
        fresh = await without_spare(session, command)
        await run_bash(session, "true")
        await asyncio.sleep(0.3)  # a TMOUT=1 spare would have ended by now
        for _ in range(3):
            await asyncio.sleep(0)
        text, _ = await run_bash(session, command)
        assert lines(text) == lines(fresh), (command, changes)


async def test_no_spare_is_started_once_the_session_closed(session: Session) -> None:
    await run_bash(session, "true")  # schedules the next spare
    await shells_of(session).close()
    for _ in range(5):
        await asyncio.sleep(0.02)
    assert shells_of(session).spare is None
    assert procs_running("__sidecar_d") == []  # no loader of any spare left running


async def test_a_spare_ends_once(session: Session) -> None:
    """A second discard closes nothing: the fds it had may belong to someone else by then."""
    spare = await ready_spare(session)
    shells_of(session)._discard_spare()
    spare.discard()
    r, w = os.pipe()  # the numbers just freed
    spare.discard()
    assert os.write(w, b"x") == 1 and os.read(r, 1) == b"x"
    os.close(r)
    os.close(w)


MOUNT_CHILD = """
import asyncio, os, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, {repo!r})
from sidecar.permissions.gate import govern
from sidecar.session import Session
from sidecar.store import SessionStore
from sidecar.tools.bash import runner
from sidecar.tools.bash.shells import shells_of
from tests.bash.conftest import RecordingChannel

async def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    ws = tmp / "ws"
    (ws / "mnt").mkdir(parents=True)
    session = govern(Session(id="m", cwd=ws, channel=RecordingChannel(), store=SessionStore(tmp / "s")), trusted=True)
    shells = shells_of(session)
    shells.prepare_spare()
    assert shells.spare is not None and shells.spare.alive()
    subprocess.run(["mount", "-t", "tmpfs", "none", str(ws / "mnt")], check=True)
    # A command the classifier called read-only that writes after all (the sandbox is the last line)
    policy = shells.sandbox_policy(network=False, read_only=True)
    running = await shells.start("sh -c 'echo x > mnt/planted'", "call_m", policy, report_cwd=False)
    await runner.run(running, 20_000)
    print("WROTE" if (ws / "mnt" / "planted").exists() else "REFUSED", running.output_path.read_text())
    await shells.close()

asyncio.run(main())
"""


def test_a_mount_made_after_the_spare_started_is_read_only_for_the_command(tmp_path: Path) -> None:
    """bwrap makes the mounts it sees read-only; a spare waiting while a file system is mounted (an
    automount, FUSE) would let a command write there. The spare that saw the mount table change is not
    used. In a mount namespace of the test's own whose mounts propagate as a host's do
    (``unshare -rm --propagation shared``), with a real tmpfs. Fails on the spare's first version (WROTE)."""
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("no unprivileged mount namespace here")
    out = subprocess.run([unshare, "-rm", "--propagation", "shared", sys.executable, "-c",
                          MOUNT_CHILD.format(repo=str(REPO))], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("REFUSED"), out.stdout
    assert "Read-only file system" in out.stdout


async def test_a_spare_taken_for_a_command_that_fails_to_start_ends(session: Session,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault between taking the spare and handing it the command (here: making the command's argv)
    ends the spare with the call: it is out of the session's hands then, and nothing else would end it."""
    spare = await ready_spare(session)

    def broken(command: str, env: dict[str, str]) -> None:
        raise OSError("injected: no argv")

    monkeypatch.setattr(runner, "plain_argv", broken)
    with pytest.raises(OSError, match="injected"):  # the pipeline turns it into the model's error
        await run_bash(session, "ls")
    assert shells_of(session).spare is not spare
    assert await ended(spare.popen.pid)


async def test_a_command_the_spare_took_ends_when_its_output_cannot_be_pumped(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault after the spare took the command (its output pump cannot start): the command already runs
    in the spare, out of the session's hands, so it is ended with the call instead of running on unowned."""
    spare = await ready_spare(session)

    def broken(self: runner.OutputPump, on_loop: bool = False) -> None:
        raise OSError("injected: no pump")

    monkeypatch.setattr(runner.OutputPump, "start", broken)
    with pytest.raises(OSError, match="injected"):
        await run_bash(session, "sleep 65.375")
    assert await ended(spare.popen.pid)
    assert await gone("sleep 65.375")

"""A read-only command runs in a sandbox started ahead (issue 29, docs/bash.md "A sandbox started ahead").

Real bwrap, real bash, the real Bash tool. The oracle is the command itself: what it prints in the spare is
what it prints in a sandbox started for it (its environment, its directory, its PID namespace), each
command gets a sandbox of its own, and no spare outlives its session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sidecar.session import Session
from sidecar.tools.bash import runner, sandbox
from sidecar.tools.bash.shells import shells_of
from tests.bash.test_bash_runtime import pid_alive, run_bash

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
    text, err = await run_bash(session, command)
    assert not err, text
    for _ in range(3):
        await asyncio.sleep(0)
    shells._discard_spare()  # the one this command left: the next command starts its own sandbox
    return text


@pytest.mark.parametrize("command", ["env", "bash -c 'env; echo $SHLVL $$; pwd'", "pwd -P; ls -a",
                                     "readlink /proc/self/cwd"])
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

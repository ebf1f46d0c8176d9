"""A command run without bash, or without its EXIT trap, has the effect bash would have given it: the same
program runs, with the same output, and the model reads the same exit code (docs/bash.md, "Running").
Each case runs for real, unsandboxed and in bubblewrap, and is compared with what bash itself does."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from sidecar.errors import ToolError
from sidecar.session import Session
from sidecar.tools.bash import runner, sandbox
from sidecar.tools.bash.bash import status_line
from tests.bash.test_bash_runtime import run_bash

SANDBOXED = [False, pytest.param(True, marks=pytest.mark.skipif(
    not sandbox.available(), reason=f"no sandbox: {sandbox.unavailable_reason()}"))]
_calls = itertools.count()


def program(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)
    return path


async def ran(command: str, tmp_path: Path, env: dict[str, str], *, sandboxed: bool, cwd: Path | None = None,
              report_cwd: bool = False) -> tuple[str, str]:
    """The command's output and the status line the model reads (``report_cwd`` False: the trap-less
    path, bash-less when ``runner.plain_argv`` takes it)."""
    policy = sandbox.SandboxPolicy(writable=[tmp_path]) if sandboxed else None
    running = await runner.start(command, cwd=cwd or tmp_path, env=env, policy=policy, report_cwd=report_cwd,
                                 output_path=tmp_path / f"out-{next(_calls)}.log")
    await runner.run(running, 20_000)
    return running.output_path.read_text(), status_line(running, 20_000).split(" (")[0]


@pytest.mark.parametrize("sandboxed", SANDBOXED)
async def test_a_tilde_path_entry_runs_the_program_bash_finds(tmp_path: Path, sandboxed: bool) -> None:
    """bash expands a leading ``~`` in a PATH entry; ``shutil.which`` took ``~/tb`` as a relative name and
    ran the program of the next entry."""
    home = tmp_path / "home"
    program(home / "tb", "hello29", "#!/bin/sh\necho from-home\n")
    program(tmp_path / "other", "hello29", "#!/bin/sh\necho from-other\n")
    env = {**os.environ, "HOME": str(home), "PATH": f"~/tb:{tmp_path / 'other'}:/usr/bin:/bin"}
    assert await ran("hello29", tmp_path, env, sandboxed=sandboxed) == ("from-home\n", "Exit code 0")
    assert await ran("hello29", tmp_path, env, sandboxed=sandboxed, report_cwd=True) == ("from-home\n", "Exit code 0")


@pytest.mark.parametrize("sandboxed", SANDBOXED)
@pytest.mark.parametrize("entry", [".", "", "bin"])
async def test_a_relative_path_entry_is_resolved_in_the_commands_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, sandboxed: bool
) -> None:
    """A relative or empty PATH entry names a directory of the command's cwd. The program found in the
    sidecar's own cwd made Popen raise FileNotFoundError (unsandboxed) or bwrap exit 1 (sandboxed)."""
    sidecar_cwd = tmp_path / "sidecar"
    program(sidecar_cwd, "hello29", "#!/bin/sh\necho wrong\n")
    program(sidecar_cwd / "bin", "hello29", "#!/bin/sh\necho wrong\n")
    monkeypatch.chdir(sidecar_cwd)
    command_cwd = tmp_path / "ws"
    command_cwd.mkdir()
    env = {**os.environ, "PATH": f"{entry}:/usr/bin:/bin"}
    for report_cwd in (False, True):
        out, status = await ran("hello29", tmp_path, env, sandboxed=sandboxed, cwd=command_cwd,
                                report_cwd=report_cwd)
        assert "hello29: command not found" in out and status == "Exit code 127"
    program(command_cwd / ("bin" if entry == "bin" else ""), "hello29", "#!/bin/sh\necho right\n")
    assert await ran("hello29", tmp_path, env, sandboxed=sandboxed, cwd=command_cwd) == ("right\n", "Exit code 0")


def test_what_keeps_bash_because_of_path() -> None:
    ls = {**os.environ, "PATH": "/usr/bin:/bin"}
    assert runner.plain_argv("ls", ls) is not None
    without_path = {k: v for k, v in ls.items() if k != "PATH"}  # bash's default PATH is not os.defpath
    for env in (without_path, {**ls, "PATH": "~/bin:/usr/bin"}, {**ls, "PATH": "/usr/bin::/bin"},
                {**ls, "PATH": "/usr/bin:."}, {**ls, "PATH": "bin:/usr/bin"}):
        assert runner.plain_argv("ls", env) is None, env.get("PATH")


@pytest.mark.parametrize("sandboxed", SANDBOXED)
async def test_a_program_without_a_shebang_runs_as_a_bash_script(tmp_path: Path, sandboxed: bool) -> None:
    """bash runs an executable text file without ``#!`` as a bash script; execvp failed with ENOEXEC
    (unsandboxed: an exception out of the tool) or ran it with /bin/sh (dash, in bwrap)."""
    bin_dir = tmp_path / "bin"
    program(bin_dir, "plain29", 'echo "bash:${BASH_VERSION:+yes}"\n')
    program(bin_dir, "shebang29", "#!/bin/sh\necho shebang\n")
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert runner.plain_argv("plain29", env) is None
    assert runner.plain_argv("shebang29", env) is not None
    assert await ran("plain29", tmp_path, env, sandboxed=sandboxed) == ("bash:yes\n", "Exit code 0")
    assert await ran("shebang29", tmp_path, env, sandboxed=sandboxed) == ("shebang\n", "Exit code 0")


@pytest.mark.parametrize("sandboxed", SANDBOXED)
@pytest.mark.parametrize(("how", "command", "report_cwd"), [
    ("bash-less", "die29", False), ("trap-less", "die29 'x'", False), ("trap", "die29", True),
])
@pytest.mark.parametrize(("sig", "code"), [("SEGV", 139), ("TERM", 143)])
async def test_a_command_killed_by_a_signal_reports_128_plus_its_number(
    tmp_path: Path, how: str, command: str, report_cwd: bool, sig: str, code: int, sandboxed: bool
) -> None:
    """Popen reports -N for a process killed by signal N; bash reports 128 + N. A command bash exec'd
    (no trap) or that ran without bash read "Exit code -11"."""
    bin_dir = tmp_path / "bin"
    program(bin_dir, "die29", f"#!/bin/sh\nulimit -c 0\necho before\nkill -{sig} $$\necho after\n")
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert (not report_cwd and runner.plain_argv(command, env) is not None) == (how == "bash-less")
    out, status = await ran(command, tmp_path, env, sandboxed=sandboxed, report_cwd=report_cwd)
    assert (out.strip().splitlines()[0], status) == ("before", f"Exit code {code}")


async def test_a_removed_working_directory_is_said_and_the_shell_goes_back_to_the_workspace(
        session: Session, workspace: Path) -> None:
    """The directory a `cd` moved the shell to is removed: the next command is not run (it would run
    elsewhere than meant), the model reads why and where the shell is now, and the command after that runs
    there. Before, every later command failed with "cannot be entered" and the advised `cd /abs && …` too
    (the process could not start in the gone directory, so the `cd` never ran)."""
    (workspace / "sub").mkdir()
    (workspace / "marker.txt").write_text("here\n")
    await run_bash(session, "cd sub")
    (workspace / "sub").rmdir()
    with pytest.raises(ToolError, match=r"working directory .*sub no longer exists\. The working directory "
                                        r"is now .*; run the command again"):
        await run_bash(session, "ls")
    text, is_error = await run_bash(session, "ls")
    assert not is_error and text.splitlines()[0] == "marker.txt"


async def test_bash_not_found_reads_as_exit_127(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    with pytest.raises(ToolError, match=r"^bash: bash: No such file or directory\nExit code 127") as caught:
        await ran("echo hi", tmp_path, env, sandboxed=False, report_cwd=True)
    assert caught.value.metadata["exit_code"] == 127


async def test_a_signal_reads_as_128_plus_its_number_without_a_pidfd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no pidfd a thread waits for the command: its exit code is mapped the same way."""
    def no_pidfd(pid: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    program(tmp_path / "bin", "die29", "#!/bin/sh\nulimit -c 0\nkill -SEGV $$\n")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    assert await ran("die29", tmp_path, env, sandboxed=False) == ("", "Exit code 139")


async def test_a_script_whose_interpreter_is_missing_reads_as_bash_says_it(tmp_path: Path) -> None:
    """On the bash-less path execve's ENOENT names the missing #! interpreter, not the script: the model
    reads bash's words ("cannot execute: required file not found"), not "No such file" for a file that is
    there, and no .cwd file is left behind by a start that failed."""
    bin_dir = tmp_path / "bin"
    program(bin_dir, "orphan29", "#!/nonexistent/interpreter\necho never\n")
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert runner.plain_argv("orphan29", env) is not None
    with pytest.raises(ToolError, match=r"orphan29: cannot execute: required file not found\nExit code 127"):
        await ran("orphan29", tmp_path, env, sandboxed=False)
    out = tmp_path / "out-trap.log"
    with pytest.raises(ToolError):
        await runner.start("cd / && orphan29", cwd=tmp_path / "gone", env=env, policy=None, output_path=out)
    assert not out.with_suffix(".cwd").exists()

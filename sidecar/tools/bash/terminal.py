"""A foreground Bash command run by the ACP client in its own terminal (``terminal/*``), when offered.

The editor shows the output live (the tool call embeds the terminal); everything else is as when the
sidecar runs the command itself (``runner``). The client and the sidecar share the host, so the client is
asked to run exactly what the sidecar would exec: ``env -i`` with the session's scrubbed environment (no
secret reaches the command, whatever the client's own environment holds), the bubblewrap sandbox when it
applies, then ``bash -c``. The script differs from the local one only in its first line: stdin from
``/dev/null`` and stderr into stdout (a client may give the command a terminal and keep only stdout), and
the EXIT trap writes the final directory to a file in the session's TMPDIR (writable in every sandbox)
instead of an inherited fd.

Output for the model: ``terminal/create`` asks the client to keep the last ``OUTPUT_BYTE_LIMIT`` bytes.
While the command runs, ``terminal/output`` is polled until ``HEAD_CHARS`` of output are known (or the
client starts dropping the start), so the start is kept; after the exit one more ``terminal/output``
gives the end. Both go to the session's output file and are bounded by ``runner.render`` as today.

Timeout → ``terminal/kill``; cancel → ``terminal/kill`` then ``terminal/release`` within
``CANCEL_BUDGET_S`` (the turn's ``cancelled`` answer does not wait longer); a client error → kill and
release (best effort) and a ``ToolError``. The terminal is always released.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sidecar.client_messages import TerminalExitStatus
from sidecar.errors import ClientRequestError, ToolError
from sidecar.secrets import redact
from sidecar.tools.bash import runner, sandbox

if TYPE_CHECKING:
    from sidecar.session import ClientPort
    from sidecar.tools.bash.shells import ShellManager

T = TypeVar("T")
log = logging.getLogger(__name__)

# What the client keeps of the output (its end); a 1 GB output costs the client at most this.
OUTPUT_BYTE_LIMIT = 1 << 20
# Enough start of the output for ``runner.render`` (it keeps two thirds of MAX_OUTPUT_CHARS from it).
HEAD_CHARS = runner.MAX_OUTPUT_CHARS * 4
POLL_EVERY_S = 0.3
# terminal/create, output, kill, release: the client answers these at once (only wait_for_exit waits).
CLIENT_ANSWER_S = 10.0
# On cancel, kill + release get this long before the turn answers ``cancelled`` (issue 17: 200 ms).
CANCEL_BUDGET_S = 0.15
# Names an ``env NAME=VALUE`` argument can carry (anything else would be read as an option or command).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables bash will not take from an ``export`` (it sets them itself).
_BASH_READONLY = frozenset({"UID", "EUID", "PPID", "BASHOPTS", "SHELLOPTS", "BASH_VERSINFO"})
# A path that can be written inside the trap's single quotes as it is.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./+-]+")

Show = Callable[[list[dict[str, Any]]], Awaitable[None]]
# Kill + release still under way after a cancel answered (kept referenced until they finish).
_stopping: set[asyncio.Task[None]] = set()


@dataclass
class TerminalRun:
    """A command the client ran: how it ended and what it printed (the same fields the result needs)."""

    command: str
    output_path: Path
    cwd_path: Path | None
    terminal_id: str | None = None
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False
    killed: bool = False
    head: str = ""  # the complete output as of the last poll that saw it whole (up to HEAD_CHARS)
    total: int = 0  # bytes written to the output file
    lost_middle: bool = False  # the client dropped part of the output between ``head`` and its end

    @property
    def duration(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    def final_cwd(self) -> Path | None:
        if self.cwd_path is None:
            return None
        try:
            text = self.cwd_path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None
        return Path(text) if text and Path(text).is_dir() else None


def env_program() -> str:
    return shutil.which("env", path="/usr/bin:/bin") or "/usr/bin/env"


def bash_program() -> str:
    return shutil.which("bash", path="/usr/bin:/bin") or "/bin/bash"


# Run by ``env -i bash -c LOADER ENV_FILE ARGV…``: exports every NAME=VALUE of the NUL-separated file,
# deletes the file, then execs the argv. The environment's values never appear in an argv (world-readable
# in /proc/<pid>/cmdline, and shown by editors as the terminal's title).
# Without its file (already used, or removed because the run was abandoned) it runs nothing.
ENV_LOADER = ('while IFS= read -r -d "" kv; do export "$kv" 2>/dev/null || :; done < "$0" && '
              'rm -f -- "$0" && exec "$@"')


def write_env_file(path: Path, env: dict[str, str]) -> None:
    """The scrubbed environment as ``NAME=VALUE\0`` records, readable by this user only."""
    data = b"".join(f"{name}={value}".encode("utf-8", "surrogateescape") + b"\0"
                    for name, value in sorted(env.items())
                    if _ENV_NAME.fullmatch(name) and name not in _BASH_READONLY and "\0" not in value)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def client_argv(command: str, *, env_file: Path, policy: sandbox.SandboxPolicy | None, cwd: Path,
                cwd_report: Path | None) -> list[str]:
    """The argv the client is asked to run: ``env -i bash -c LOADER ENV_FILE [bwrap …] bash -c SCRIPT``."""
    prelude = "exec </dev/null 2>&1; "
    target = shlex.quote(str(cwd_report)) if cwd_report is not None else "/dev/null"
    argv = runner.shell_argv(runner.command_script(command, target, prelude))
    if policy is not None:
        argv = sandbox.wrap(argv, policy, cwd)
    return [env_program(), "-i", bash_program(), "-c", ENV_LOADER, str(env_file), *argv]


def cwd_report_path(tmp_dir: Path, output_path: Path) -> Path | None:
    """Where the trap reports the final directory; None (no cwd tracking) for a path the trap's single
    quotes could not hold."""
    path = tmp_dir / f"{output_path.stem}.cwd"
    return path if _PLAIN_PATH.fullmatch(str(path)) else None


async def run(port: ClientPort, shells: ShellManager, command: str, call_id: str,
              policy: sandbox.SandboxPolicy | None, timeout_ms: int, show: Show) -> TerminalRun:
    """Run ``command`` in the client's terminal; raises ``ToolError`` when the client fails it."""
    output_path = shells.output_path(call_id)
    cwd_report = cwd_report_path(shells.tmp_dir, output_path)
    env_file = shells.tmp_dir / f"{output_path.stem}.env"
    write_env_file(env_file, shells.env())
    argv = client_argv(command, env_file=env_file, policy=policy, cwd=shells.cwd, cwd_report=cwd_report)
    done = TerminalRun(command, output_path, cwd_report)
    # Shielded: a cancel that arrives while the client is creating the terminal must still learn its id,
    # to kill and release it (a cancelled request would leave the command running in the editor).
    creating = asyncio.ensure_future(
        port.create_terminal(argv[0], argv[1:], str(shells.cwd), OUTPUT_BYTE_LIMIT))
    try:
        try:
            async with asyncio.timeout(CLIENT_ANSWER_S):
                done.terminal_id = await asyncio.shield(creating)
        except (ClientRequestError, TimeoutError) as exc:
            creating.cancel()  # an unanswered create is forgotten ($/cancel_request)
            raise ToolError(
                f"The editor could not start the command in its terminal ({_describe('terminal/create', exc)}). "
                "Nothing ran. Try again; if it keeps failing, tell the user their editor's terminal "
                "integration failed.") from None
        terminal_id = done.terminal_id
        await show([{"type": "terminal", "terminalId": terminal_id}])
        await _wait(port, done, terminal_id, timeout_ms)
        await _collect(port, done, terminal_id)
    except asyncio.CancelledError:
        done.killed = True
        stop = asyncio.create_task(_abandon(port, creating, policy))
        _stopping.add(stop)
        stop.add_done_callback(_stopping.discard)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(stop), CANCEL_BUDGET_S)
        raise
    except BaseException:
        await _abandon(port, creating, policy)
        raise
    finally:
        with contextlib.suppress(OSError):
            env_file.unlink()  # the loader deleted it, unless the command never started (then it never will)
    await _release(port, done.terminal_id, policy)
    return done


async def _abandon(port: ClientPort, creating: asyncio.Future[str], policy: sandbox.SandboxPolicy | None) -> None:
    """Kill and release the terminal once its id is known (the creation may still be under way)."""
    try:
        async with asyncio.timeout(CLIENT_ANSWER_S):
            terminal_id = await creating
    except (Exception, asyncio.CancelledError):  # never created: nothing runs
        if not creating.done():
            creating.cancel()
        if policy is not None:
            policy.cleanup()
        return
    await _stop(port, terminal_id, policy)


async def _wait(port: ClientPort, done: TerminalRun, terminal_id: str, timeout_ms: int) -> None:
    """Until the command ends (or its timeout: then it is killed); the output's start is polled meanwhile."""
    head = asyncio.create_task(_poll_head(port, done, terminal_id))
    try:
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that arrives as the answer does.
        async with asyncio.timeout(timeout_ms / 1000):
            status = await port.wait_for_terminal_exit(terminal_id)
    except TimeoutError:
        done.timed_out = done.killed = True
        await _ask(port.kill_terminal(terminal_id), "terminal/kill")
        status = await _ask(port.wait_for_terminal_exit(terminal_id), "terminal/wait_for_exit")
    except ClientRequestError as exc:
        raise ToolError(
            f"The editor's terminal failed while the command ran ({_describe('terminal/wait_for_exit', exc)}); "
            "the command was stopped. Its effects so far may remain: check before running it again.") from None
    finally:
        head.cancel()
        with contextlib.suppress(BaseException):
            await head
    done.finished = time.monotonic()
    _take_status(done, status)


async def _poll_head(port: ClientPort, done: TerminalRun, terminal_id: str) -> None:
    delay = 0.05  # soon at first (a fast writer fills the client's buffer early), then every POLL_EVERY_S
    while True:
        await asyncio.sleep(delay)
        delay = min(POLL_EVERY_S, delay * 2)
        try:
            out = await port.terminal_output(terminal_id)
        except ClientRequestError as exc:
            log.debug("terminal/output while running failed: %s", exc)
            return
        if out["truncated"]:
            return  # the client dropped the start already: keep the head seen last
        done.head = out["output"]
        if len(done.head) >= HEAD_CHARS or "exitStatus" in out:
            return


async def _collect(port: ClientPort, done: TerminalRun, terminal_id: str) -> None:
    """The output after the exit, joined with the start polled earlier, into the output file."""
    try:
        out = await _ask(port.terminal_output(terminal_id), "terminal/output")
    except ToolError as exc:
        raise ToolError(f"The command ended but its output could not be read: {exc.message}") from None
    tail = out["output"]
    if "exitStatus" in out and done.exit_code is None and done.signal is None:
        _take_status(done, out["exitStatus"])
    text = tail
    if out["truncated"]:
        text, done.lost_middle = _join(done.head, tail)
    data = redact(runner.strip_ansi(text)).encode("utf-8", errors="replace")
    done.output_path.write_bytes(data)
    done.total = len(data)


def _join(head: str, tail: str) -> tuple[str, bool]:
    """The start seen while running and the end the client kept: one text, and whether a part is missing."""
    if not head:
        return tail, True
    probe = head[-200:]
    at = tail.find(probe)
    if at >= 0:  # they overlap: nothing is missing
        return head + tail[at + len(probe):], False
    return head + "\n[... output the editor's terminal did not keep ...]\n" + tail, True


def _take_status(done: TerminalRun, status: TerminalExitStatus) -> None:
    done.exit_code, done.signal = status["exitCode"], status["signal"]


async def _ask(request: Awaitable[T], method: str) -> T:
    try:
        async with asyncio.timeout(CLIENT_ANSWER_S):
            return await request
    except (ClientRequestError, TimeoutError) as exc:
        raise ToolError(f"the editor's terminal failed ({_describe(method, exc)})") from None


async def _stop(port: ClientPort, terminal_id: str, policy: sandbox.SandboxPolicy | None) -> None:
    """Kill, then release; failures only logged (the client may be gone)."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(CLIENT_ANSWER_S):
            await port.kill_terminal(terminal_id)
    await _release(port, terminal_id, policy)


async def _release(port: ClientPort, terminal_id: str | None, policy: sandbox.SandboxPolicy | None) -> None:
    if policy is not None:
        policy.cleanup()  # the sandbox has ended: its placeholders go
    if terminal_id is None:
        return
    try:
        async with asyncio.timeout(CLIENT_ANSWER_S):
            await port.release_terminal(terminal_id)
    except Exception as exc:
        log.info("terminal/release %s failed: %s", terminal_id, exc)


def _describe(method: str, exc: ClientRequestError | TimeoutError) -> str:
    if isinstance(exc, ClientRequestError):
        return exc.describe()
    return f"{method} got no answer within {CLIENT_ANSWER_S:.0f} s"

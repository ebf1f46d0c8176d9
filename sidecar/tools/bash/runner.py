"""Running one shell command: process group, cwd tracking, timeout and cancel, output to a file.

The command runs as ``bash -c`` in a new session (its own process group), stdout and stderr on one
pipe (so they interleave as they happen). A pump thread drains the pipe into the output file, ANSI
escapes stripped; past ``FILE_CAP`` bytes it keeps only a bounded tail in memory and writes it after
the gap, so a 1 GB output costs neither memory nor a gigabyte of disk. A ``trap … EXIT`` reports the
final working directory on a separate fd, so a ``cd`` persists to the next call while environment
changes do not. On timeout or cancel the whole group gets SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import fcntl
import os
import re
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from sidecar.tools.bash import sandbox

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
KILL_GRACE_S = 2.0
_PROGRESS_EVERY_S = 0.3
_PROGRESS_CHARS = 4_000
FILE_CAP = 64 << 20  # foreground output kept whole up to this; beyond, start + gap + TAIL_CAP
TAIL_CAP = 16 << 20
_CHUNK = 1 << 20
_ANSI_BYTES = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])"
)

# CSI, OSC, and two-byte escapes (colour, cursor movement, titles, hyperlinks).
_ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])"
)


def strip_ansi(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        # A bare CR redraws the line (progress bars): keep what was drawn last.
        text = "\n".join(
            line.rsplit("\r", 1)[-1] if "\r" in line.rstrip("\r") else line.rstrip("\r")
            for line in text.split("\n")
        )
    return text


def shell_argv(script: str) -> list[str]:
    """How a script is run on this platform (bash on Linux and macOS)."""
    return ["bash", "-c", script]


class OutputPump(threading.Thread):
    """Drains the command's pipe into ``path`` (ANSI stripped), bounded by ``cap`` bytes when given."""

    def __init__(self, fd: int, path: Path, cap: int | None) -> None:
        super().__init__(daemon=True, name=f"bash-output-{path.name}")
        self.fd = fd
        self.path = path
        self.cap = cap
        self.total = 0  # bytes produced (after stripping)
        self.omitted = 0  # bytes dropped from the middle of the file
        self.recent = b""
        self.done = threading.Event()

    def run(self) -> None:
        tail: list[bytes] = []
        tail_size = 0
        carry = b""
        try:
            with open(self.path, "wb") as out:
                while True:
                    try:
                        chunk = os.read(self.fd, _CHUNK)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        break
                    chunk = carry + chunk
                    carry = b""
                    if b"\x1b" in chunk:
                        esc = chunk.rfind(b"\x1b")
                        if len(chunk) - esc < 256 and not _ANSI_BYTES.match(chunk, esc):
                            chunk, carry = chunk[:esc], chunk[esc:]
                        chunk = _ANSI_BYTES.sub(b"", chunk)
                    self.total += len(chunk)
                    keep = _PROGRESS_CHARS * 4
                    self.recent = chunk[-keep:] if len(chunk) >= keep else (self.recent + chunk)[-keep:]
                    written = self.total - len(chunk) - self.omitted - tail_size
                    if self.cap is None or (written + len(chunk) <= self.cap and not tail):
                        out.write(chunk)
                        if self.cap is None:
                            out.flush()
                        continue
                    room = max(0, self.cap - written) if not tail else 0
                    if room:
                        out.write(chunk[:room])
                        chunk = chunk[room:]
                    tail.append(chunk)
                    tail_size += len(chunk)
                    while tail_size - len(tail[0]) >= TAIL_CAP:
                        tail_size -= len(tail[0])
                        self.omitted += len(tail.pop(0))
                if carry:
                    self.total += len(carry)
                    (tail.append(carry) if tail else out.write(carry))
                    tail_size += len(carry) if tail else 0
                if tail:
                    if self.omitted:
                        out.write(f"\n[... {self.omitted:,} bytes omitted here ...]\n".encode())
                    out.write(b"".join(tail))
        finally:
            os.close(self.fd)
            self.done.set()


@dataclass
class RunningCommand:
    command: str
    proc: asyncio.subprocess.Process
    output_path: Path
    cwd_path: Path
    pump: OutputPump
    started: float = field(default_factory=time.monotonic)
    killed: bool = False
    timed_out: bool = False
    exit_code: int | None = None
    finished: float | None = None

    @property
    def pgid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    async def wait(self) -> int:
        code = await self.proc.wait()
        self.exit_code = code
        self.finished = self.finished or time.monotonic()
        return code

    async def drained(self, within: float = 0.5) -> bool:
        """Wait for the pipe's end (a leftover background child may keep it open: then keep pumping)."""
        return await asyncio.to_thread(self.pump.done.wait, within)

    async def kill(self, grace: float = KILL_GRACE_S) -> None:
        """SIGTERM the whole group, SIGKILL whatever is left after ``grace`` seconds."""
        self.killed = True
        kill_group(self.pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and group_alive(self.pgid):  # noqa: ASYNC110 - polling the kernel
            await asyncio.sleep(0.05)
        kill_group(self.pgid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.wait(), timeout=5)

    def final_cwd(self) -> Path | None:
        try:
            text = self.cwd_path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None
        return Path(text) if text and Path(text).is_dir() else None

    @property
    def duration(self) -> float:
        return (self.finished or time.monotonic()) - self.started


def kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def start(
    command: str,
    *,
    cwd: Path,
    env: dict[str, str],
    output_path: Path,
    policy: sandbox.SandboxPolicy | None,
    cap: int | None = FILE_CAP,
) -> RunningCommand:
    """Start ``command``; its output goes to ``output_path``. ``policy`` None runs unsandboxed."""
    cwd_path = output_path.with_suffix(".cwd")
    cwd_fd = os.open(cwd_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    read_fd, out_fd = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(out_fd, 1031, 1 << 20)  # F_SETPIPE_SZ: fewer wake-ups for big outputs
    script = f"trap 'pwd -P >&{cwd_fd} 2>/dev/null' EXIT\n{command}"
    argv = shell_argv(script)
    if policy is not None:
        argv = sandbox.wrap(argv, policy, cwd)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_fd,
            stderr=out_fd,
            cwd=str(cwd),
            env=env,
            start_new_session=True,
            pass_fds=(cwd_fd,),
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(cwd_fd)
        os.close(out_fd)
    pump = OutputPump(read_fd, output_path, cap)
    pump.start()
    return RunningCommand(command, proc, output_path, cwd_path, pump)


ProgressFn = Callable[[str], Awaitable[None]]


async def run(
    running: RunningCommand, timeout_ms: int, progress: ProgressFn | None = None, grace: float = KILL_GRACE_S
) -> RunningCommand:
    """Wait for ``running`` to end (streaming its tail to ``progress``); kill its group on timeout/cancel."""
    ticker = asyncio.create_task(_stream(running, progress)) if progress is not None else None
    try:
        await asyncio.wait_for(running.wait(), timeout=timeout_ms / 1000)
    except TimeoutError:
        running.timed_out = True
        await running.kill(grace)
    except asyncio.CancelledError:
        await asyncio.shield(running.kill(grace))
        raise
    finally:
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
    await running.drained()
    return running


async def _stream(running: RunningCommand, progress: ProgressFn) -> None:
    last_total = 0
    while True:
        await asyncio.sleep(_PROGRESS_EVERY_S)
        total = running.pump.total
        if total == last_total:
            continue
        last_total = total
        text = strip_ansi(running.pump.recent.decode("utf-8", errors="replace"))[-_PROGRESS_CHARS:]
        with contextlib.suppress(Exception):
            await progress(text)


# ---- what the model reads -------------------------------------------------------------------------


@dataclass
class RenderedOutput:
    text: str
    truncated: bool
    size: int
    saved_path: Path | None


def _decode(data: bytes) -> str:
    return codecs.decode(data, "utf-8", errors="replace")


def render(
    path: Path, offset: int = 0, limit: int = MAX_OUTPUT_CHARS, total: int | None = None
) -> RenderedOutput:
    """The output from byte ``offset`` on, bounded to ``limit`` chars (head and tail kept, middle marked).

    When cut, the output file (ANSI already stripped by the pump) is named for the model to Read."""
    size = path.stat().st_size if path.exists() else 0
    span = size - offset
    if span <= 0:
        return RenderedOutput("", False, 0, None)
    with open(path, "rb") as f:
        f.seek(offset)
        if span <= limit * 4:
            text = strip_ansi(_decode(f.read(span)))
            if len(text) <= limit:
                return RenderedOutput(text, False, span, None)
            head, tail = text[: limit * 2 // 3], text[-(limit // 3) :]
        else:
            head = strip_ansi(_decode(f.read(limit * 4)))[: limit * 2 // 3]
            f.seek(max(offset, size - limit * 4))
            tail = strip_ansi(_decode(f.read()))[-(limit // 3) :]
    produced = total if total is not None else span
    kept = (
        "The whole output is saved at"
        if produced <= span
        else (f"The first {FILE_CAP >> 20} MiB and the last {TAIL_CAP >> 20} MiB are saved at")
    )
    marker = (
        f"\n\n[... output cut: {produced:,} bytes in all, only the start and the end are shown. "
        f"{kept} {path}; Read it with offset/limit or search it with Grep ...]\n\n"
    )
    head = head[: max(0, limit - len(tail) - len(marker))]
    return RenderedOutput(head + marker + tail, True, produced, path)

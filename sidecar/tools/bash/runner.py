"""Running one shell command: process group, cwd tracking, timeout and cancel, output to a file.

The command runs as ``bash -c`` in its own process group (a new session when the sidecar has a
controlling terminal), stdout and stderr on one pipe (so they interleave as they happen). The pump drains
the pipe into the output file (on the event loop for a quick command, else on a thread), ANSI escapes
stripped; past ``FILE_CAP`` bytes it keeps only a ring of the last ``TAIL_CAP`` bytes in memory and writes
it after a gap marker, so a 1 GB output costs neither memory nor a gigabyte of disk. A ``trap … EXIT``
reports the final working directory on a separate fd, so a ``cd`` persists to the next call while
environment changes do not. On timeout or cancel the whole group gets SIGTERM, then SIGKILL after a grace
period.
"""

from __future__ import annotations

import asyncio
import codecs
import collections
import contextlib
import errno
import fcntl
import logging
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from sidecar.errors import ToolError
from sidecar.secrets import redact_file
from sidecar.tools.bash import sandbox

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
KILL_GRACE_S = 2.0
# When the user cancels the turn, the command's group gets this long after SIGTERM before SIGKILL: the
# user asked for it to stop now (issue 17: cancel to ``stopReason: cancelled`` within 200 ms).
CANCEL_GRACE_S = 0.1
_PROGRESS_EVERY_S = 0.3
_PROGRESS_CHARS = 4_000
FILE_CAP = 64 << 20  # foreground output kept whole up to this; beyond, start + gap + TAIL_CAP
# The tail is what a long build or test log ends with (its errors): 4 MiB is tens of thousands of lines, and
# held as pipe pages it stays small enough to be recycled warm in the cache (16 MiB cost a 1 GiB output ~6 %,
# docs/bash.md "Issue 29: a 4 MiB tail") and to leave the user's pipe quota to other commands.
TAIL_CAP = 4 << 20
_CHUNK = 1 << 20
# A foreground command's output is read on the event loop at first: a quick command with a short output
# (most of them) then ends without any thread having to wake, each wake-up costing ms on a loaded machine
# (docs/performance.md, issue 29 "Fourth pass"). Past this many bytes or this long, a pump thread takes over.
LOOP_HOLD_MAX = 256 << 10
LOOP_HOLD_S = 0.1
_LOOP_READ = 64 << 10
# A pump that reads the pipe as fast as it fills wakes, and turns its loop, once per write of the command
# (8 KiB for `head`): ~90,000 times for 1 GiB, each turn costing the command's CPU on a 2-core machine. After
# a read that found the pipe nearly empty it naps before the next one, longer while reads stay small, shorter
# when one finds the pipe half full, so a fast writer never waits long on a full pipe (docs/bash.md, "Output
# speed"). A slow command's line reaches the file at most ``_NAP_MAX_S`` later.
_NAP_MIN_S = 50e-6
_NAP_MAX_S = 400e-6
# Past the file's head a long output's tail is held as pipe pages (``_PipeTail``) when it is at least this big:
# in ``_TAIL_PIPES_MAX`` pipes at most (32 MiB when they take 1 MiB each, 2 MiB at the default 64 KiB).
_PIPE_TAIL_MIN = _CHUNK
_TAIL_PIPES_MAX = 32
# A read this small is copied into the tail's pipes rather than moved: moved, its partly filled page would take
# a pipe slot of its own.
_COPY_BELOW = 16 << 10
_ANSI_BYTES = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])"
)

_STRING_ESCAPES = (b"]", b"P", b"X", b"^", b"_")

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


# bash's builtins and reserved words (``compgen -b -k``): a command starting with one needs bash (an
# external ``echo`` or ``pwd`` is another program).
_SHELL_WORDS = frozenset(
    ". : [ alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs disown "
    "echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout "
    "mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test times "
    "trap true type typeset ulimit umask unalias unset wait if then else elif fi case esac for select while "
    "until do done in function time { } ! [[ ]] coproc".split()
)
# Words bash takes as they are: no quoting, expansion, glob, redirection, operator or comment.
_PLAIN_WORDS = re.compile(r"[A-Za-z0-9_./:@%+,=-]+(?: +[A-Za-z0-9_./:@%+,=-]+)*")


def plain_argv(command: str, env: dict[str, str]) -> tuple[list[str], str] | None:
    """The argv bash would exec for ``command`` and the program's path, when bash would do nothing else:
    one line of plain words whose first names a program on PATH (not a builtin, a keyword, an assignment
    or a path), and no ``BASH_ENV`` or exported function that would change what runs. Such a command runs
    without bash: 2-5 ms less of a sandboxed ``ls`` on this loaded machine (docs/performance.md, issue 29
    "Fourth pass").

    Bash is kept wherever its lookup or its exec would differ from ``shutil.which`` and execvp: no PATH
    (bash's default is not ``os.defpath``); a PATH entry that is not absolute (bash expands a leading
    ``~``, and resolves ``.``, an empty entry or ``bin`` against the command's cwd, not the sidecar's);
    a program that starts with neither ``#!`` nor an ELF header (bash runs such a file as a bash script,
    execvp fails with ENOEXEC or falls back to ``/bin/sh``)."""
    if not _PLAIN_WORDS.fullmatch(command.strip(" ")):
        return None
    words = command.split()
    first = words[0]
    if first in _SHELL_WORDS or "=" in first or "/" in first:
        return None
    if "BASH_ENV" in env or any(name.startswith("BASH_FUNC_") for name in env):
        return None
    path = env.get("PATH")
    if path is None or not all(entry.startswith("/") for entry in path.split(":")):
        return None
    program = shutil.which(first, path=path)
    if program is None or not _execs_itself(program):
        return None
    return words, program


def _execs_itself(program: str) -> bool:
    """Whether the kernel execs ``program`` as it is: an ELF binary or a ``#!`` script."""
    try:
        with open(program, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return head.startswith(b"#!") or head == b"\x7fELF"


def command_script(command: str, cwd_report: str, prelude: str = "") -> str:
    """What bash runs: an EXIT trap that writes the final working directory to ``cwd_report`` (a
    redirection target: ``&N`` for an fd, or a quoted file name), then the command on the next line."""
    return f"{prelude}trap 'pwd -P >{cwd_report} 2>/dev/null' EXIT\n{command}"


class _PumpThreads:
    """Threads kept for the output pumps. A command's pump goes to an idle one: a new thread's ``start``
    waits until that thread has run, 0.7-1 ms of a read-only step on this loaded machine
    (docs/performance.md, issue 29 "Fourth pass"). A finished pump's thread waits for the next one,
    up to ``KEEP_IDLE`` of them; the rest end."""

    KEEP_IDLE = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), daemon=True, name="bash-output").start()
        inbox.put(job)

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            job = inbox.get()
            try:
                job()
            except Exception:
                log.exception("a Bash output pump failed")
            del job
            with self._lock:
                if len(self._idle) >= self.KEEP_IDLE:
                    return
                self._idle.append(inbox)


_pump_threads = _PumpThreads()


class _PipeTail:
    """The last ``keep`` bytes of a long output, held in pipes of the pump's own as the pages the command
    wrote: splice(2) moves them there from the command's pipe and, once the other pipes hold ``keep`` bytes,
    the oldest pipe's on to /dev/null. So the middle of a 1 GiB output is never copied, into this process or
    anywhere: copying it through a ring evicted the command's own pages from the cache and made it
    ~15 % slower (docs/bash.md, "Output speed"). Bytes the pump did read (the head's last chunk, a look for
    the progress, a slow command's small reads) are written in. Every pipe is non-blocking at both ends,
    so a full or empty one can never hang the pump; past ``_TAIL_PIPES_MAX`` pipes (or when no more can be
    made) the oldest is emptied even if that leaves less than ``keep``."""

    def __init__(self, keep: int, src: int, null: int) -> None:
        self.keep = keep
        self.held = 0
        self._null = null
        self._pipes: collections.deque[list[int]] = collections.deque()  # [read end, write end, bytes held]
        self._src_ready = select.poll()
        self._src_ready.register(src, select.POLLIN)

    @classmethod
    def make(cls, keep: int, src: int) -> _PipeTail | None:
        try:
            null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return None
        tail = cls(keep, src, null)
        if not tail._add():
            tail.close()
            return None
        return tail

    def _add(self) -> bool:
        try:
            read_end, write_end = os.pipe()
        except OSError:  # out of descriptors or pipes
            return False
        with contextlib.suppress(OSError):  # else the default size: more pipes, or a shorter tail
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _CHUNK)
        os.set_blocking(read_end, False)
        os.set_blocking(write_end, False)
        self._pipes.append([read_end, write_end, 0])
        return True

    def _next(self) -> None:
        """The newest pipe is full: a new one, or the oldest emptied when it is not needed (or none can be had)."""
        oldest = self._pipes[0]
        if self.held - oldest[2] < self.keep and len(self._pipes) < _TAIL_PIPES_MAX and self._add():
            return
        self._empty(oldest)
        self._pipes.rotate(-1)

    def _empty(self, entry: list[int]) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.splice(entry[0], self._null, 1 << 30):
                pass
        self.held -= entry[2]
        entry[2] = 0

    def move_from(self, src: int, count: int) -> int:
        """Up to ``count`` bytes moved from the command's pipe (waiting for them as a read would); 0 at its end.
        BlockingIOError when even an empty pipe of ours took nothing from a readable one (the caller reads)."""
        while True:
            self._src_ready.poll()
            entry = self._pipes[-1]
            try:
                n = os.splice(src, entry[1], count)
            except BlockingIOError:
                if not entry[2]:
                    raise
                self._next()  # the newest pipe is full
                continue
            entry[2] += n
            self.held += n
            return n

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            entry = self._pipes[-1]
            try:
                n = os.write(entry[1], view)
            except BlockingIOError:
                if not entry[2]:
                    return  # an empty pipe takes a page at least: not reached
                self._next()
                continue
            entry[2] += n
            self.held += n
            view = view[n:]

    def drain(self) -> bytearray:
        """What is held, the oldest pipes that are not needed for ``keep`` bytes emptied first."""
        while len(self._pipes) > 1 and self.held - self._pipes[0][2] >= self.keep:
            self._empty(self._pipes[0])
            self._pipes.rotate(-1)
        out = bytearray(self.held)
        view = memoryview(out)
        got = 0
        for entry in self._pipes:
            with contextlib.suppress(BlockingIOError):
                while got < len(out) and (n := os.readv(entry[0], [view[got:]])):
                    got += n
        view.release()
        del out[got:]
        return out

    def close(self) -> None:
        for read_end, write_end, _ in self._pipes:
            os.close(read_end)
            os.close(write_end)
        self._pipes.clear()
        os.close(self._null)


class OutputPump:
    """Drains the command's pipe into ``path`` (ANSI stripped), bounded by ``cap`` bytes when given.

    Bounded: the first ``cap`` bytes go to the file as they come, then a ring of the last ``tail_cap``
    bytes is kept in memory and written after a gap marker at the end. The hot path does no per-byte
    Python work: reads land in a reused buffer (or straight in the ring), a chunk without an ESC byte
    skips the ANSI regex, and nothing is decoded. It runs on one of ``_PumpThreads``; ``done`` is set
    when the pipe has ended and the file is complete, and ``ended`` (given a loop) resolves then too.

    ``start(on_loop=True)`` reads on the loop first and holds what it reads: a pipe that ends within
    ``LOOP_HOLD_S`` after at most ``LOOP_HOLD_MAX`` bytes is pumped to the file right there on the loop
    (the fd is at its end then, so no read blocks); otherwise a thread takes over, the held bytes first."""

    def __init__(self, fd: int, path: Path, cap: int | None, tail_cap: int = TAIL_CAP,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.fd = fd
        self.path = path
        self.cap = cap
        self.tail_cap = tail_cap
        self.total = 0  # bytes produced (after stripping)
        self.omitted = 0  # bytes dropped from the middle of the file
        self.recent = b""
        self.done = threading.Event()
        self._loop = loop
        self.ended: asyncio.Future[None] | None = loop.create_future() if loop is not None else None
        self._held = bytearray()  # read on the loop, not yet pumped
        self._handover: asyncio.TimerHandle | None = None
        self._carry = b""  # an escape sequence cut by the end of a read: stripped with the next one
        self._ring: bytearray | None = None
        self._ring_pos = 0
        self._ring_total = 0
        self._nap = 0.0  # before the next read of the pipe (``_paced``)
        self._last_read = 0
        self._tail: _PipeTail | None = None  # past the head, when the tail is held in pipes
        self._look_at = 0.0  # when the pipe tail next reads a chunk, for the progress shown
        try:
            self._pipe_size = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
        except OSError:  # not a pipe: nothing to pace
            self._pipe_size = 0

    def start(self, on_loop: bool = False) -> None:
        loop = self._loop
        if not on_loop or loop is None:
            _pump_threads.submit(self.run)
            return
        os.set_blocking(self.fd, False)
        try:
            loop.add_reader(self.fd, self._readable_on_loop)
        except NotImplementedError:  # a loop without readers
            os.set_blocking(self.fd, True)
            _pump_threads.submit(self.run)
            return
        self._handover = loop.call_later(LOOP_HOLD_S, self._to_thread)

    def _readable_on_loop(self) -> None:
        try:
            data = os.read(self.fd, _LOOP_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            self._held += data
            if len(self._held) >= LOOP_HOLD_MAX:
                self._to_thread()
            return
        self._stop_reading_on_loop()
        self.run()  # every writer has closed the pipe: what is left is held, and reading the fd cannot block

    def _stop_reading_on_loop(self) -> None:
        assert self._loop is not None
        self._loop.remove_reader(self.fd)
        if self._handover is not None:
            self._handover.cancel()
            self._handover = None

    def _to_thread(self) -> None:
        self._stop_reading_on_loop()
        os.set_blocking(self.fd, True)
        _pump_threads.submit(self.run)

    def _ended(self) -> None:
        self.done.set()
        loop, ended = self._loop, self.ended
        if loop is None or ended is None:
            return
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            _resolve(ended)
            return
        # The loop may have closed meanwhile (its sidecar is leaving): nobody waits then.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_resolve, ended)

    def _read(self, into: memoryview) -> int:
        held = self._held
        if held:
            n = min(len(into), len(held))
            into[:n] = held[:n]
            del held[:n]
            return n
        if self._nap:
            time.sleep(self._nap)
        try:
            n = os.readv(self.fd, [into])
        except OSError:
            return 0
        self._paced(n, len(into))
        return n

    def _paced(self, n: int, room: int) -> None:
        """The nap before the next read, from what this one found: ``n`` bytes, into ``room``."""
        size = self._pipe_size
        self._last_read = n
        if not size or n >= room or n >= size // 2:
            self._nap = 0.0 if self._nap < 2 * _NAP_MIN_S else self._nap / 2
        elif n < size // 8:
            self._nap = min(_NAP_MAX_S, max(_NAP_MIN_S, self._nap * 2))

    def _strip(self, data: bytes) -> bytes:
        """``data`` (after the carried bytes) without ANSI escapes; an unfinished one is carried over."""
        data = self._carry + data
        self._carry = b""
        esc = data.rfind(b"\x1b")
        if esc < 0:
            return data
        if len(data) - esc < 256:
            # Unfinished, or a string escape (OSC `ESC ] … BEL`, DCS, …) whose end the read cut off: the
            # regex would take its `ESC ]` for a two-byte escape and leave the rest. Wait for the next read.
            done = _ANSI_BYTES.match(data, esc)
            if done is None or (done.end() == esc + 2 and data[esc + 1 : esc + 2] in _STRING_ESCAPES):
                data, self._carry = data[:esc], data[esc:]
        return _ANSI_BYTES.sub(b"", data)

    def _note(self, data: bytes | memoryview) -> None:
        self.total += len(data)
        keep = _PROGRESS_CHARS * 4
        if len(data) >= keep:
            self.recent = bytes(data[-keep:])
        else:
            self.recent = (self.recent + data)[-keep:]

    def _to_ring(self, data: bytes | memoryview) -> None:
        ring = self._ring
        if ring is None:
            # _CHUNK of slack: a read straight into the ring that the stripping then shortens leaves its
            # unused end over bytes older than ``tail_cap``, never over kept ones.
            ring = self._ring = bytearray(self.tail_cap + _CHUNK)
        size = len(ring)
        if len(data) > size:
            data = data[-size:]
        pos = self._ring_pos
        first = min(len(data), size - pos)
        ring[pos : pos + first] = data[:first]
        ring[: len(data) - first] = data[first:]
        self._ring_pos = (pos + len(data)) % size

    def run(self) -> None:
        buf = bytearray(_CHUNK)
        view = memoryview(buf)
        cap = self.cap
        written = 0  # bytes in the file's head part
        try:
            with open(self.path, "wb") as out:
                while True:
                    if self._tail is not None:
                        if not self._tail_step(self._tail, view):
                            break
                        continue
                    ring = self._ring
                    if ring is not None and not self._carry:
                        # Past the cap: read straight into the ring (no copy) when there is nothing to strip.
                        pos = self._ring_pos
                        n = self._read(memoryview(ring)[pos : pos + min(_CHUNK, len(ring) - pos)])
                        if not n:
                            break
                        if ring.find(b"\x1b", pos, pos + n) < 0:
                            self._ring_pos = (pos + n) % len(ring)
                            self._ring_total += n
                            self._note(memoryview(ring)[pos : pos + n])
                            continue
                        chunk: bytes | memoryview = self._strip(bytes(ring[pos : pos + n]))
                    else:
                        n = self._read(view)
                        if not n:
                            break
                        data = view[:n]
                        chunk = self._strip(bytes(data)) if self._carry or buf.find(b"\x1b", 0, n) >= 0 else data
                    self._note(chunk)
                    if cap is None:
                        out.write(chunk)
                        out.flush()  # BashOutput reads the file while the shell runs
                        continue
                    if ring is None:
                        room = cap - written
                        if len(chunk) <= room:
                            out.write(chunk)
                            written += len(chunk)
                            continue
                        out.write(chunk[:room])
                        written += room
                        chunk = chunk[room:]
                        if self._pipe_size and self.tail_cap >= _PIPE_TAIL_MIN and not self._held:
                            self._tail = _PipeTail.make(self.tail_cap, self.fd)
                        if self._tail is not None:
                            # Stripped, and the escape it cut (carried) as it came: the tail is stripped at the end.
                            self._tail.write(chunk)
                            self._tail.write(self._carry)
                            self.total += len(self._carry)
                            self._ring_total += len(chunk) + len(self._carry)
                            self._carry = b""
                            continue
                    self._to_ring(chunk)
                    self._ring_total += len(chunk)
                if self._carry:
                    rest, self._carry = _ANSI_BYTES.sub(b"", self._carry), b""
                    self._note(rest)
                    if cap is None or (self._ring is None and written + len(rest) <= cap):
                        out.write(rest)
                    else:
                        if self._ring is None:
                            out.write(rest[: cap - written])
                            rest = rest[cap - written :]
                        self._to_ring(rest)
                        self._ring_total += len(rest)
                self._flush_ring(out)
                self._flush_tail(out)
            # The saved output is redacted like everything else; when it is whole, its size is the total
            # (a key's place is shorter now: else the result would say the middle was dropped).
            if redact_file(self.path) and not self.omitted:
                self.total = self.path.stat().st_size
        finally:
            if self._tail is not None:
                self._tail.close()
                self._tail = None
            os.close(self.fd)
            self._ended()

    def _tail_step(self, tail: _PipeTail, view: memoryview) -> int:
        """One step past the head with the tail in pipes: the bytes taken, 0 at the end. After a read under
        ``_COPY_BELOW`` (a slow command) the next is copied (it costs little, and pages written whole hold
        more than pages moved as they came); so is one chunk every ``_PROGRESS_EVERY_S``, for the progress."""
        if self._nap:
            time.sleep(self._nap)
        now = time.monotonic()
        try:
            n = -1
            if self._last_read >= _COPY_BELOW and now < self._look_at:
                with contextlib.suppress(BlockingIOError):
                    n = tail.move_from(self.fd, len(view))
                    self.total += n
            if n < 0:
                self._look_at = now + _PROGRESS_EVERY_S
                n = os.readv(self.fd, [view])
                tail.write(view[:n])
                self._note(view[:n])
        except OSError:
            return 0
        self._paced(n, len(view))
        self._ring_total += n
        return n

    def _flush_tail(self, out: BinaryIO) -> None:
        """The tail held in pipes, stripped, after the gap marker. The dropped middle was never read: it is
        counted as the command wrote it, its escapes included."""
        tail = self._tail
        if tail is None:
            return
        raw = tail.drain()
        stripped = _ANSI_BYTES.sub(b"", raw) if raw.find(b"\x1b") >= 0 else raw
        kept = memoryview(stripped)[-self.tail_cap :]
        self.omitted = self._ring_total - len(raw) + len(stripped) - len(kept)
        self.total -= len(raw) - len(stripped)  # the tail's escapes are not output
        if self.omitted:
            out.write(f"\n[... {self.omitted:,} bytes omitted here ...]\n".encode())
        out.write(kept)

    def _flush_ring(self, out: BinaryIO) -> None:
        ring = self._ring
        if ring is None:
            return
        kept = min(self._ring_total, self.tail_cap)
        self.omitted = self._ring_total - kept
        if self.omitted:
            out.write(f"\n[... {self.omitted:,} bytes omitted here ...]\n".encode())
        pos = self._ring_pos
        start = (pos - kept) % len(ring)
        if start <= pos:
            out.write(memoryview(ring)[start:pos])
        else:
            out.write(memoryview(ring)[start:])
            out.write(memoryview(ring)[:pos])
        self._ring = None


def _as_bash_reports(code: int) -> int:
    """Popen's exit code as bash reports it: a process killed by signal N (Popen: -N) is 128 + N. A command
    bash exec'd (no trap, or no bash at all) would otherwise read as "Exit code -11"."""
    return 128 - code if code < 0 else code


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class ChildProcess:
    """A started command's process, its exit awaited on the loop that started it.

    On Linux through a pidfd the loop watches, so the exit wakes the loop directly. asyncio's own
    subprocess (3.11) starts a ``waitpid`` thread per child instead (``ThreadedChildWatcher``:
    ~1 ms of a read-only step here, docs/performance.md) and then takes three more hops of the loop;
    its ``PidfdChildWatcher`` is bound to one loop, and a process may run more than one. Where there is
    no pidfd, a thread of the command's own waits for it."""

    def __init__(self, popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.loop = loop
        self._exited: asyncio.Future[int] = loop.create_future()
        try:
            pidfd = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
            pidfd = -1
        if pidfd >= 0:
            try:
                loop.add_reader(pidfd, self._pidfd_readable, pidfd)
                return
            except NotImplementedError:  # a loop without readers
                os.close(pidfd)
        threading.Thread(target=self._wait_in_thread, daemon=True, name=f"bash-exit-{popen.pid}").start()

    @property
    def returncode(self) -> int | None:
        """The exit code as bash reports it (128 + N: killed by signal N), None while it runs."""
        code = self._popen.returncode
        return None if code is None else _as_bash_reports(code)

    def _pidfd_readable(self, pidfd: int) -> None:
        code = self._popen.poll()  # reaps it, through Popen: its own bookkeeping stays right
        if code is None:
            return
        self.loop.remove_reader(pidfd)
        os.close(pidfd)
        if not self._exited.done():
            self._exited.set_result(_as_bash_reports(code))

    def _wait_in_thread(self) -> None:
        code = _as_bash_reports(self._popen.wait())
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self.loop.call_soon_threadsafe(self._set_exited, code)

    def _set_exited(self, code: int) -> None:
        if not self._exited.done():
            self._exited.set_result(code)

    async def wait(self) -> int:
        """The exit code once it has ended; a waiter cancelled leaves the watch in place."""
        return await asyncio.shield(self._exited)


@dataclass
class RunningCommand:
    command: str
    proc: ChildProcess
    output_path: Path
    cwd_path: Path | None  # where the final working directory is reported (None: not reported)
    pump: OutputPump
    started: float = field(default_factory=time.monotonic)
    killed: bool = False
    timed_out: bool = False
    exit_code: int | None = None
    finished: float | None = None
    # Called once when the process has ended (the sandbox's placeholder cleanup).
    on_exit: Callable[[], None] | None = None

    @property
    def pgid(self) -> int:
        return self.proc.pid

    @property
    def total(self) -> int:
        """Bytes the command printed (ANSI stripped), the omitted middle of a long output included."""
        return self.pump.total

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    async def wait(self) -> int:
        code = await self.proc.wait()
        self.exit_code = code
        self.finished = self.finished or time.monotonic()
        done, self.on_exit = self.on_exit, None
        if done is not None:
            done()
        return code

    async def drained(self, within: float = 0.5) -> bool:
        """Wait for the pipe's end (a leftover background child may keep it open: then keep pumping)."""
        if self.pump.done.is_set():
            return True
        ended = self.pump.ended
        if ended is None:  # a pump started without a loop
            return await asyncio.to_thread(self.pump.done.wait, within)
        try:
            await asyncio.wait_for(asyncio.shield(ended), within)
        except TimeoutError:
            return False
        return True

    async def kill(self, grace: float = KILL_GRACE_S) -> None:
        """SIGTERM the whole group, SIGKILL whatever is left after ``grace`` seconds."""
        self.killed = True
        kill_group(self.pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and group_alive(self.pgid):  # noqa: ASYNC110 - polling the kernel
            await asyncio.sleep(min(0.05, grace / 5))
        kill_group(self.pgid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.wait(), timeout=5)

    def final_cwd(self) -> Path | None:
        if self.cwd_path is None:
            return None
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


@lru_cache(maxsize=1)
def _has_controlling_tty() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. Zombies do not count: the sandbox's inner ``bwrap``
    is re-parented to PID 1 when the outer one dies, and a container's PID 1 may reap it only a second
    later, while ``killpg(pgid, 0)`` still succeeds on it (that made every cancel wait ~1.3 s)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _live_member(pgid)


def _live_member(pgid: int) -> bool:
    """Any process of group ``pgid`` that is not a zombie, from /proc (True when /proc cannot tell)."""
    try:
        pids = os.listdir("/proc")
    except OSError:
        return True
    for pid in pids:
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


# What a spare sandbox's bash runs while it waits (fd {fd}: the control pipe; fd {out}: the command's output
# pipe, the loader's own stdout and stderr being /dev/null, so nothing bash says while it starts reaches the
# output). It reads the command's working directory, ``_`` ("=value", or "" for none) and argv, each item
# ended by a NUL; closes the pipe; puts the output pipe on stdout and stderr; goes there; execs the argv
# with ``_`` set as bash (or, for a script, the sidecar's environment) would give it. ``cd`` exports
# OLDPWD (the spare's own directory), so it is put back as it was. The loader's variables are named so no
# environment it runs in has them (``can_spare``), and are not exported; builtins by name: no function
# can stand in for them (``can_spare``).
_SPARE_LOADER = (
    "IFS= builtin read -r -d '' __sidecar_d <&{fd} || exit 125\n"
    "IFS= builtin read -r -d '' __sidecar_u <&{fd} || exit 125\n"
    "__sidecar_a=()\n"
    "while IFS= builtin read -r -d '' __sidecar_w <&{fd}; do __sidecar_a+=(\"$__sidecar_w\"); done\n"
    "exec {fd}<&- 1>&{out} 2>&{out} {out}>&-\n"
    "if [[ -v OLDPWD ]]; then __sidecar_o=$OLDPWD; builtin cd -- \"$__sidecar_d\" || exit 1; OLDPWD=$__sidecar_o\n"
    "else builtin cd -- \"$__sidecar_d\" || exit 1; unset OLDPWD; fi\n"
    "if [[ $__sidecar_u == =* ]]; then _=${{__sidecar_u#=}} exec -- \"${{__sidecar_a[@]}}\"\n"
    "else exec -- \"${{__sidecar_a[@]}}\"; fi\n"
)
_LOADER_NAMES = "__sidecar_"
# Variables that change what the loader's bash does before the command runs (a trace, ``noexec``, a read
# timeout, POSIX mode, other compatibility rules, a different command lookup): a spare is not started in
# an environment that has any of them.
_CHANGES_THE_LOADER = frozenset({"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "TMOUT", "POSIXLY_CORRECT",
                                 "BASH_COMPAT", "BASH_XTRACEFD", "PS4", "EXECIGNORE", "BASH_LOADABLES_PATH",
                                 "GLOBIGNORE", "IFS"})
# A command's argv and directory go to the spare in one write to its pipe: at most this much (the pipe
# holds 64 KiB; bash reads it a byte at a time, so a long script is not worth it).
SPARE_PAYLOAD_MAX = 4096


SpareKey = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]  # (sandbox arguments, environment)


def spare_key(policy: sandbox.SandboxPolicy, env: dict[str, str]) -> SpareKey:
    """What a spare sandbox must have been started with to run a command of ``policy`` and ``env``."""
    return tuple(sandbox.sandbox_args(policy)), tuple(sorted(env.items()))


def can_spare(env: dict[str, str]) -> str | None:
    """The bash a spare sandbox's loader runs under ``env`` (None: no spare for it). As ``plain_argv``:
    PATH of absolute entries (the loader's lookups are then the ones bwrap's and bash's would be), no
    ``BASH_ENV`` or exported function (either would run code in the loader). Nor any variable that changes
    what bash does as it starts (``_CHANGES_THE_LOADER``) or that the loader's own names could take, and
    ``SHLVL`` must be a plain number bash counts up and ``exec`` counts down to the same text (unset, bash
    would export a ``SHLVL`` the command did not have)."""
    if any(name in _CHANGES_THE_LOADER or name.startswith(("BASH_FUNC_", _LOADER_NAMES)) for name in env):
        return None
    level = env.get("SHLVL", "")
    if not level.isdigit() or str(int(level)) != level or int(level) >= 998:
        return None
    path = env.get("PATH")
    if path is None or not all(entry.startswith("/") for entry in path.split(":")):
        return None
    return shutil.which("bash", path=path)


@dataclass
class SpareSandbox:
    """A read-only sandbox started before the command it will run (docs/bash.md, "A sandbox started
    ahead"): bubblewrap's namespaces and mounts take ~6.5 ms of a read-only step, so the next one is made
    while the model is still answering. Its bash waits on ``control_fd`` for one command (``_SPARE_LOADER``)
    and ends with it: every command still gets a sandbox of its own, no state carries from one to the next.
    Used only for a command whose sandbox arguments and environment are the ones it was started with
    (``key``), on the loop that started it."""

    key: SpareKey
    popen: subprocess.Popen[bytes]
    control_fd: int
    read_fd: int
    loop: asyncio.AbstractEventLoop
    # /proc/self/mountinfo, opened when it started: it polls as changed once a mount is made or changed.
    # bwrap makes the spare's mounts read-only as they were then; one made since (an automount, a FUSE
    # file system) would be writable in it, so a spare that has seen a change is not used.
    mounts_fd: int = -1
    ended: bool = False

    @classmethod
    def start(cls, key: SpareKey, env: dict[str, str]) -> SpareSandbox | None:
        """A spare for commands whose sandbox and environment are ``key`` (``spare_key`` of their policy
        and ``env``), or None (no sandbox, or no bash for it)."""
        bash = can_spare(env)
        if bash is None or not key[0]:
            return None
        try:
            mounts_fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        loop = asyncio.get_running_loop()
        control_r, control_w = os.pipe()
        read_fd, out_fd = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(out_fd, 1031, 1 << 20)  # F_SETPIPE_SZ, as ``start``
        try:
            # On the loop's thread, like every command: --die-with-parent follows the thread that started it.
            popen = subprocess.Popen(
                [*key[0], "--chdir", "/", "--", bash, "-c", _SPARE_LOADER.format(fd=control_r, out=out_fd)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", env=env,
                start_new_session=_has_controlling_tty(),
                process_group=None if _has_controlling_tty() else 0,
                pass_fds=(control_r, out_fd),
            )
        except OSError:
            for fd in (control_w, read_fd, mounts_fd):
                os.close(fd)
            return None
        finally:
            os.close(control_r)
            os.close(out_fd)
        return cls(key, popen, control_w, read_fd, loop, mounts_fd)

    def alive(self) -> bool:
        return not self.ended and self.popen.poll() is None

    def fits(self, key: SpareKey) -> bool:
        """Whether it can run a command whose sandbox and environment are ``key`` (``spare_key``): the one
        check of a spare's fit, made once per command by its caller (it stats the policy's paths)."""
        return self.key == key and self.alive()

    def mounts_changed(self) -> bool:
        poller = select.poll()
        poller.register(self.mounts_fd, select.POLLPRI | select.POLLERR)
        return bool(poller.poll(0))

    def discard(self) -> None:
        """End it unused (its group killed unless it has ended, its fds closed; Popen reaps it later).
        Once: a second call does nothing."""
        if self.ended:
            return
        self.ended = True
        if self.popen.poll() is None:
            kill_group(self.popen.pid, signal.SIGKILL)
        for fd in (self.control_fd, self.read_fd, self.mounts_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.popen.poll()

    def run(self, argv: list[str], cwd: Path, underscore: str | None) -> bool:
        """Hand it ``argv`` to run in ``cwd``, ``_`` set to ``underscore`` (None: not set); False when it
        cannot take it (the caller discards it). Its control pipe is closed either way; on True the output
        pipe (``read_fd``) is the caller's."""
        items = [os.fsencode(item) for item in (str(cwd), "" if underscore is None else "=" + underscore, *argv)]
        payload = b"".join(item + b"\0" for item in items)
        if (len(payload) > SPARE_PAYLOAD_MAX or any(b"\0" in item for item in items) or not self.alive()
                or asyncio.get_running_loop() is not self.loop or self.mounts_changed()):
            return False
        try:
            os.write(self.control_fd, payload)
        except OSError:
            return False
        finally:
            os.close(self.control_fd)
            self.control_fd = -1
        self.ended = True  # the command's now: its group and output are the caller's
        os.close(self.mounts_fd)
        self.mounts_fd = -1
        return True


async def start(
    command: str,
    *,
    cwd: Path,
    env: dict[str, str],
    output_path: Path,
    policy: sandbox.SandboxPolicy | None,
    cap: int | None = FILE_CAP,
    report_cwd: bool = True,
    spare: SpareSandbox | None = None,
) -> RunningCommand:
    """Start ``command``; its output goes to ``output_path``. ``policy`` None runs unsandboxed.

    ``report_cwd`` False: the command cannot move the shell (no ``cd``, ``pushd``, ``popd``), so bash runs
    it without the EXIT trap. Without a trap bash execs a simple command instead of forking it first:
    3 ms of a sandboxed ``ls`` on this loaded machine (docs/performance.md, issue 29 "Fourth pass"). Such a
    command made of plain words runs without bash at all (``plain_argv``), with the ``PWD`` and ``_``
    bash would have exported to it. ``spare``: a sandbox started ahead for this policy and environment
    (the caller checked ``SpareSandbox.fits``), for such a command: it runs there, unless it cannot take
    it (then it is discarded)."""
    cwd_path: Path | None = None
    cwd_fd = -1
    if report_cwd:
        cwd_path = output_path.with_suffix(".cwd")
        cwd_fd = os.open(cwd_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    program: str | None = None
    try:
        plain = None if report_cwd else plain_argv(command, env)
        if plain is not None:
            argv, program = plain
        else:
            argv = shell_argv(command_script(command, f"&{cwd_fd}") if report_cwd else command)
        if spare is not None:
            # ``_`` as the command would get it: bash exports the program's path; a script gets the sidecar's.
            underscore = program if plain is not None else env.get("_")
            if not report_cwd and policy is not None and os.path.isdir(cwd) and spare.run(argv, cwd, underscore):
                return _started(command, spare.popen, spare.loop, spare.read_fd, output_path, None, cap, policy)
    finally:
        if spare is not None:  # not taken, or a step before ``run`` failed: it ends here. Once ``run`` took
            spare.discard()    # the command the spare is ended and this does nothing (the command's now)
    if plain is not None:
        env = {**env, "PWD": str(cwd), "_": program or ""}
    read_fd, out_fd = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(out_fd, 1031, 1 << 20)  # F_SETPIPE_SZ: fewer wake-ups for big outputs
    if policy is not None:
        argv = sandbox.wrap(argv, policy, cwd)
    loop = asyncio.get_running_loop()
    try:
        # Popen on the loop, as asyncio's own subprocess does (~0.3 ms: vfork), then watched by ``ChildProcess``.
        popen = subprocess.Popen(  # noqa: ASYNC220 - the same call asyncio would make here, minus its watcher
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out_fd,
            stderr=out_fd,
            cwd=str(cwd),
            env=env,
            # Its own process group either way (kill_group). A new session only when the sidecar has a
            # controlling terminal, to keep commands off it (no /dev/tty prompts, no TIOCSTI); without
            # one a session adds nothing but a scheduler autogroup of its own, which here made the pipe
            # from the command to the pump ~1.6x slower on a loaded machine (docs/bash.md, Output speed).
            start_new_session=_has_controlling_tty(),
            process_group=None if _has_controlling_tty() else 0,
            pass_fds=(cwd_fd,) if report_cwd else (),
        )
    except BaseException as exc:
        os.close(read_fd)
        if policy is not None:
            policy.cleanup()
        if cwd_path is not None:  # nothing will report a directory into it
            with contextlib.suppress(OSError):
                cwd_path.unlink()
        if isinstance(exc, OSError):
            raise not_started(exc, command, cwd, program) from exc
        raise
    finally:
        if report_cwd:
            os.close(cwd_fd)
        os.close(out_fd)
    return _started(command, popen, loop, read_fd, output_path, cwd_path, cap, policy)


def _started(command: str, popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop, read_fd: int,
             output_path: Path, cwd_path: Path | None, cap: int | None,
             policy: sandbox.SandboxPolicy | None) -> RunningCommand:
    """The started process watched and its output pumped. When either cannot start (no thread to be had,
    a pipe gone bad), the process is ended before the error goes on: once it runs, nothing but the
    ``RunningCommand`` made here would ever end it."""
    try:
        proc = ChildProcess(popen, loop)
        pump = OutputPump(read_fd, output_path, cap, loop=loop)
        # A background command's file is read while it runs (BashOutput): it is pumped to the file at once.
        pump.start(on_loop=cap is not None)
    except BaseException:
        kill_group(popen.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            popen.wait(timeout=5)  # SIGKILLed: reaped at once, no zombie left
        with contextlib.suppress(Exception):
            loop.remove_reader(read_fd)
        with contextlib.suppress(OSError):
            os.close(read_fd)
        if policy is not None:
            policy.cleanup()
        if cwd_path is not None:
            with contextlib.suppress(OSError):
                cwd_path.unlink()
        raise
    return RunningCommand(command, proc, output_path, cwd_path, pump,
                          on_exit=policy.cleanup if policy is not None and policy.placeholders else None)


def not_started(exc: OSError, command: str, cwd: Path, program: str | None = None) -> ToolError:
    """What the model reads when the command's process could not start (Popen raised): the reason, and the
    exit code bash gives a command it cannot run (127: not found, 126: found but not executable)."""
    if exc.filename == str(cwd):
        return ToolError(
            f"The command was not run: its working directory {cwd} cannot be entered ({exc.strerror}). "
            "Run it from an existing directory (`cd /absolute/path && ...`).",
            metadata={"subject": command, "exit_code": None})
    code = 127 if exc.errno == errno.ENOENT else 126
    # ENOENT for a program that was found (bash-less: ``program``, its path): its #! interpreter is missing.
    # Said as bash says it, not "No such file" for a file that is there.
    exists = exc.errno == errno.ENOENT and program is not None and os.path.isfile(program)
    reason = "cannot execute: required file not found" if exists else exc.strerror
    return ToolError(f"bash: {exc.filename}: {reason}\nExit code {code} (the command did not start)",
                     metadata={"subject": command, "exit_code": code})


ProgressFn = Callable[[str], Awaitable[None]]


async def run(
    running: RunningCommand, timeout_ms: int, progress: ProgressFn | None = None, grace: float = KILL_GRACE_S
) -> RunningCommand:
    """Wait for ``running`` to end (streaming its tail to ``progress``); kill its group on timeout/cancel."""
    ticker = asyncio.create_task(_stream(running, progress)) if progress is not None else None
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            await running.wait()
    except TimeoutError:
        running.timed_out = True
        await running.kill(grace)
    except asyncio.CancelledError:
        await asyncio.shield(running.kill(min(grace, CANCEL_GRACE_S)))
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
    path: Path, offset: int = 0, limit: int = MAX_OUTPUT_CHARS, total: int | None = None,
    lost_middle: bool = False,
) -> RenderedOutput:
    """The output from byte ``offset`` on, bounded to ``limit`` chars (head and tail kept, middle marked).

    When cut, the output file (ANSI already stripped by the pump) is named for the model to Read.
    ``lost_middle``: the file holds only the start and the end of a longer output (a client's terminal
    kept only its end), so its size is a lower bound."""
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
        "The editor's terminal kept only the start and the end; they are saved at"
        if lost_middle
        else "The whole output is saved at"
        if produced <= span
        else (f"The first {FILE_CAP >> 20} MiB and the last {TAIL_CAP >> 20} MiB are saved at")
    )
    amount = f"more than {produced:,} bytes" if lost_middle else f"{produced:,} bytes in all"
    marker = (
        f"\n\n[... output cut: {amount}, only the start and the end are shown. "
        f"{kept} {path}; Read it with offset/limit or search it with Grep ...]\n\n"
    )
    head = head[: max(0, limit - len(tail) - len(marker))]
    return RenderedOutput(head + marker + tail, True, produced, path)

"""Per-session read ledger: what the agent has seen of each file, and the file's fingerprint then (§7).

Access it through the session: ``ledger = ctx.session.service(LEDGER)`` (made on first use).

An entry holds the ranges read (``"lines:1-2000"``, ``"pages:1-5"``, ``"image"`` ...) and the
``Fingerprint`` of the file at that time: ``mtime_ns``, ``size`` and a blake2b digest.

Hashing choice. The digest is SHA-256 cut to 128 bits (hashlib; OpenSSL uses the CPU's SHA
instructions, measured 2.2x faster than blake2b here) over the bytes the tool already holds, one pass per
version of the content: Edit hashes the old bytes in a thread while it decodes and searches, and the new
bytes in a thread while they are written and fsynced. Read/Edit/Write of an ordinary file have the
whole content in memory, so the digest covers it all (``full=True``). A streamed Read of a large file (over
``STREAM_THRESHOLD``) never loads the file, so its digest covers only what was needed: the first
and last 64 KiB plus the bytes of the range returned (``full=False``). Staleness is decided by
``mtime_ns`` and ``size`` first (any change → stale); when both match and a full digest exists, the
digest of the bytes about to be edited is compared too, which catches a same-size rewrite inside one
mtime tick. Edit and Write always re-read the whole file before writing, so they compare a full digest.

Content kept for rebasing. An entry may also keep the bytes the agent saw (``content``: the whole file
of an ordinary Read, or what the agent's own Edit/Write left on disk), so that an Edit of a file changed
since can be merged with the outside change instead of refused (``sidecar.workspace.rebase``). This is
bounded: a file over ``CONTENT_FILE_MAX`` (2 MiB) is never kept, and the session keeps at most
``CONTENT_BUDGET`` (32 MiB) in all, dropping the least recently used content first (the fingerprint
stays; such a file is refused when stale, as before). The bytes are the ones the tool already held (no
copy).

Text the editor served. When the ACP client offers ``fs/read_text_file``, Read takes a text file's
content from the editor (its unsaved buffer included), so the entry's fingerprint describes that text:
``source="client"``, the digest of its UTF-8 bytes, no stat (``mtime_ns`` 0, ``size`` its length). Such an
entry is fresh while the text it is compared with has that digest: the editor's current text for an
Edit/Write through the client, or the bytes on disk for one that writes disk. A change on disk marks it
stale only when the disk no longer holds what the agent saw (the user saving the buffer the agent read,
or the editor saving the agent's own edit, is no change); ``disk_seen`` keeps the disk's stat when last
compared, so an unchanged disk is not hashed again.

Entries also carry a newline checkpoint index for huge files (byte offset of every ``CHECKPOINT``
lines), valid while the stat part of the fingerprint is unchanged: a second Read late in a 1 GB file
seeks instead of rescanning.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sidecar.errors import ToolError
from sidecar.session import ServiceKey
from sidecar.workspace.textfile import BinaryFileError, decode

STREAM_THRESHOLD = 16 * 1024 * 1024
SAMPLE = 64 * 1024
THREAD_DIGEST_OVER = 1 << 20
CONTENT_FILE_MAX = 2 * 1024 * 1024
CONTENT_BUDGET = 32 * 1024 * 1024


class StaleError(ToolError):
    """The file changed since the agent read it (Edit may still rebase onto the change)."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def digest_parts(parts: Sequence[bytes | memoryview]) -> str:
    """``digest`` of the concatenation of ``parts`` (without building it)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    return h.hexdigest()[:32]


def digest_soon(data: bytes | Sequence[bytes | memoryview]) -> asyncio.Future[str]:
    """Start ``digest(data)`` now and await it later: large data is hashed in a thread (hashlib releases
    the GIL), so the caller's own work (decoding, writing, fsync) runs beside it. ``data`` may be a
    sequence of pieces (hashed as their concatenation)."""
    loop = asyncio.get_running_loop()
    parts: Sequence[bytes | memoryview] = [data] if isinstance(data, bytes) else data
    if sum(len(p) for p in parts) >= THREAD_DIGEST_OVER:
        return loop.run_in_executor(None, digest_parts, parts)
    done: asyncio.Future[str] = loop.create_future()
    done.set_result(digest_parts(parts))
    return done


@dataclass(frozen=True)
class Fingerprint:
    mtime_ns: int
    size: int
    digest: str | None = None
    full: bool = True
    # "disk": the file's bytes and stat; "client": the text the editor served (fs/read_text_file).
    source: str = "disk"
    # A client fingerprint: the digest of the text with CRLF read as LF (an editor may serve LF text for
    # a CRLF file on disk); equal to ``digest`` when the text has no CRLF.
    loose: str | None = None
    # The inode and ctime, which no ``touch`` or same-size rewrite with its mtime set back can keep: known
    # to a read's fingerprint (partial, ``of_stat``, or whole), and learnt by a write's from a later
    # partial read. 0: not known (a written file's stat is taken before its rename, which moves the
    # ctime). What a write relies on compares them only when there is no digest (``may_hold``).
    ctime_ns: int = 0
    ino: int = 0

    @classmethod
    def of_stat(cls, st: os.stat_result, digest: str | None = None) -> Fingerprint:
        """What a read that saw only part of the file (or none of it) knows: the whole stat."""
        return cls(st.st_mtime_ns, st.st_size, digest, False, ctime_ns=st.st_ctime_ns, ino=st.st_ino)

    def same_stat(self, other: Fingerprint) -> bool:
        if self.ctime_ns and other.ctime_ns and (self.ctime_ns, self.ino) != (other.ctime_ns, other.ino):
            return False
        return self.mtime_ns == other.mtime_ns and self.size == other.size and self.source == other.source

    def same_file_stat(self, st: os.stat_result) -> bool:
        """Whether the file's stat ``st`` is the one this fingerprint was taken of (as far as it knows)."""
        if self.ctime_ns and (self.ctime_ns, self.ino) != (st.st_ctime_ns, st.st_ino):
            return False
        return self.mtime_ns == st.st_mtime_ns and self.size == st.st_size

    def may_hold(self, st: os.stat_result) -> bool:
        """Whether the file whose stat is ``st`` may still hold what this fingerprint describes, as far as
        the stat tells. A full fingerprint with a digest leaves the ctime out (a ``chmod``, a hard link or
        an xattr changes nothing a write relies on, and its digest checks the content); a partial one keeps
        it, since nothing else sees a same-size rewrite with its mtime set back."""
        if self.full and self.digest is not None:
            return (not self.ino or self.ino == st.st_ino) and (
                self.mtime_ns == st.st_mtime_ns and self.size == st.st_size)
        return self.same_file_stat(st)


def client_fingerprint(content: bytes) -> Fingerprint:
    """The fingerprint of text the editor served or took (``content``: its UTF-8 bytes)."""
    exact = digest(content)
    loose = digest(content.replace(b"\r\n", b"\n")) if b"\r\n" in content else exact
    return Fingerprint(0, len(content), exact, True, source="client", loose=loose)


def holds_client_text(fp: Fingerprint, data: bytes, data_digest: str | None = None) -> bool:
    """Whether file bytes ``data`` hold the text a client fingerprint describes, line endings compared
    loosely (docs/files.md): byte for byte as UTF-8, or decoded (any encoding/BOM ``decode`` reads) with
    CRLF read as LF."""
    if fp.size == len(data) and fp.digest == (data_digest or digest(data)):
        return True
    if fp.loose is None:
        return False
    try:
        text, _ = decode(data)
    except BinaryFileError:
        return False
    return digest(text.replace("\r\n", "\n").encode("utf-8")) == fp.loose


def stat_fingerprint(path: Path) -> Fingerprint | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return Fingerprint.of_stat(st)


def fingerprint_of(path: Path, data: bytes, st: os.stat_result | None = None,
                   data_digest: str | None = None) -> Fingerprint:
    """Fingerprint of a file whose whole content ``data`` is in hand (``st`` taken before reading)."""
    st = st or os.stat(path)
    return Fingerprint(st.st_mtime_ns, st.st_size, data_digest or digest(data), True)


@dataclass
class LedgerEntry:
    path: Path
    fingerprint: Fingerprint
    ranges: set[str] = field(default_factory=set)
    # A range whose text was over Read's output bound: the lines Read returned of it and the range's
    # first line (first shown, last shown, first asked), so a repeat of that Read can say what it showed
    # ("unchanged") instead of returning the text again.
    shown: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    stale: bool = False
    read_at: float = field(default_factory=time.time)
    # Lines checkpoint index of a huge file: [(line_number_0_based, byte_offset)], every CHECKPOINT lines.
    line_index: list[tuple[int, int]] | None = None
    total_lines: int | None = None
    # A large UTF-8 file's block scan (its line count and block index, ``sidecar.tools.files.read``); it
    # holds the stat it is valid for.
    scan: object | None = None
    # The bytes whose fingerprint is ``fingerprint`` (None: not kept; see "Content kept for rebasing").
    content: bytes | None = None
    # A client-sourced entry: the disk's (mtime_ns, size) when last compared with what the agent saw.
    disk_seen: tuple[int, int] | None = None


class ReadLedger:
    """What this session has read. Edit/Write consult it; the watcher marks entries stale."""

    def __init__(self, session: Any = None, content_budget: int = CONTENT_BUDGET) -> None:
        self.session = session
        self._entries: dict[Path, LedgerEntry] = {}
        self.content_budget = content_budget
        self._kept: dict[Path, int] = {}  # paths whose entry keeps content, least recently used first
        self._landing: set[Path] = set()  # the agent's own write is being renamed into place off the loop

    def _keep(self, entry: LedgerEntry, content: bytes | None) -> None:
        """Keep ``content`` on ``entry`` within the budget (None or too large: keep nothing)."""
        self._kept.pop(entry.path, None)
        entry.content = None
        if content is None or len(content) > min(CONTENT_FILE_MAX, self.content_budget):
            return
        entry.content = content
        self._kept[entry.path] = len(content)
        total = sum(self._kept.values())
        while total > self.content_budget:
            oldest = next(iter(self._kept))
            total -= self._kept.pop(oldest)
            victim = self._entries.get(oldest)
            if victim is not None:
                victim.content = None

    @contextlib.contextmanager
    def landing(self, path: Path) -> Iterator[None]:
        """While the agent's own write of ``path`` lands off the event loop (Edit renames in a thread),
        before ``record_write``: a watcher event for it then is the agent's write, not someone else's.
        A real change in that window is still caught by ``check_now`` before the next model request."""
        self._landing.add(path)
        try:
            yield
        finally:
            self._landing.discard(path)

    def seen_content(self, path: Path) -> bytes | None:
        """The bytes the agent last saw of ``path`` (what its fingerprint describes), if kept."""
        entry = self._entries.get(path)
        if entry is None or entry.content is None:
            return None
        self._kept[path] = self._kept.pop(path, len(entry.content))  # most recently used
        return entry.content

    def get(self, path: Path) -> LedgerEntry | None:
        return self._entries.get(path)

    def paths(self) -> set[Path]:
        return set(self._entries)

    def record_read(self, path: Path, fp: Fingerprint, range_key: str | None,
                    content: bytes | None = None) -> LedgerEntry:
        """``content``: the whole file's bytes when the tool read them all (kept for rebasing).
        ``range_key`` None: the Read showed no line (past the end, an empty file): the file counts as read,
        but no range does, so the same Read again is answered as the first, never "unchanged"."""
        entry = self._entries.get(path)
        if entry is None or entry.stale or not entry.fingerprint.same_stat(fp) or (
                entry.fingerprint.digest and fp.digest and entry.fingerprint.full and fp.full
                and entry.fingerprint.digest != fp.digest):
            keep_index = entry is not None and entry.fingerprint.same_stat(fp) and not entry.stale
            old = entry
            entry = LedgerEntry(path=path, fingerprint=fp)
            if keep_index and old is not None:
                entry.line_index, entry.total_lines, entry.scan = old.line_index, old.total_lines, old.scan
            self._entries[path] = entry
            self._kept.pop(path, None)
        elif fp.full or not entry.fingerprint.full:
            entry.fingerprint = fp
        elif not entry.fingerprint.ctime_ns:
            # A write's full fingerprint (no ctime: its stat was taken before the rename) learns the stat a
            # partial read saw: a later same-size rewrite with its mtime set back is then seen by the next
            # "unchanged" check.
            entry.fingerprint = replace(entry.fingerprint, ctime_ns=fp.ctime_ns, ino=fp.ino)
        if content is not None:
            self._keep(entry, content)
        if range_key is not None:
            entry.ranges.add(range_key)
        entry.read_at = time.time()
        return entry

    def record_write(self, path: Path, fp: Fingerprint, content: bytes | None = None) -> LedgerEntry:
        """After the agent wrote the file: it knows the content, but has not *seen* any range of it.
        ``content``: the bytes written, when the writer has them whole (kept for rebasing)."""
        entry = LedgerEntry(path=path, fingerprint=fp)
        self._entries[path] = entry
        self._keep(entry, content)
        return entry

    def note_editor_change(self, path: Path, before: str | None, after: str) -> None:
        """The agent handed the editor ``after`` as the text of ``path`` (``fs/write_text_file``), replacing
        ``before`` (None: the editor had no such file). Checkpoints record it (``ObservedLedger``) so a
        rewind can hand the editor its earlier text back; the plain ledger has nothing to do with it."""

    def rebase_onto(self, path: Path, data: bytes, st: os.stat_result, data_digest: str | None = None) -> None:
        """The agent's next write applies on top of ``data`` (the file now, changed by someone else since
        the agent saw it, and merged with the agent's edit): it is what the write replaces."""
        entry = self._entries.get(path)
        if entry is None:
            return
        entry.fingerprint = Fingerprint(st.st_mtime_ns, st.st_size, data_digest or digest(data), True)
        entry.stale = False
        self._keep(entry, data)

    def forget(self, path: Path) -> None:
        self._entries.pop(path, None)
        self._kept.pop(path, None)

    def is_unchanged_read(self, path: Path, range_key: str, now: Fingerprint) -> bool:
        """The same range was read before and the file has not changed since (stat, and digest if given)."""
        entry = self._entries.get(path)
        if entry is None or entry.stale or range_key not in entry.ranges:
            return False
        if not entry.fingerprint.same_stat(now):
            return False
        return not (now.digest and entry.fingerprint.digest and now.full and entry.fingerprint.full
                    and now.digest != entry.fingerprint.digest)

    def mark_stale(self, path: Path) -> bool:
        """Mark ``path`` stale if the file differs from what was read. True when newly marked."""
        entry = self._entries.get(path)
        if entry is None or entry.stale or path in self._landing:
            return False
        try:
            st: os.stat_result | None = os.stat(path)
        except OSError:
            st = None
        if entry.fingerprint.source == "client":
            if not self._disk_differs(entry, None if st is None else Fingerprint.of_stat(st)):
                return False
        elif st is not None and entry.fingerprint.may_hold(st):
            return False  # our own write, a touch that changed nothing we track, or (known content) a chmod
        entry.stale = True
        return True

    @staticmethod
    def _disk_differs(entry: LedgerEntry, now: Fingerprint | None) -> bool:
        """For a client-sourced entry: whether the disk now holds other text than the agent saw."""
        if now is None:
            return entry.disk_seen is not None  # deleted (a file only in the editor never was on disk)
        stat = (now.mtime_ns, now.size)
        if entry.disk_seen == stat:
            return False
        if now.size > STREAM_THRESHOLD:
            return True
        try:  # no size shortcut: a CRLF file on disk is longer than the LF text an editor may serve
            same = holds_client_text(entry.fingerprint, entry.path.read_bytes())
        except OSError:
            return True
        if same:
            entry.disk_seen = stat
        return not same

    def mark_buffer_changed(self, path: Path) -> bool:
        """The open editor buffer changed: the agent's view is out of date even though disk is not."""
        entry = self._entries.get(path)
        if entry is None or entry.stale:
            return False
        entry.stale = True
        return True

    def wants_digest(self, path: Path, st: os.stat_result) -> bool:
        """Whether ``require_fresh`` will compare a digest of the data (so it is worth computing early)."""
        entry = self._entries.get(path)
        if entry is None:
            return False
        fp = entry.fingerprint
        if fp.source == "client":
            return fp.size == st.st_size
        if entry.stale:
            return False
        return fp.full and fp.digest is not None and fp.may_hold(st)

    def require_fresh(self, path: Path, shown: str, data: bytes, st: os.stat_result,
                      data_digest: str | None = None) -> None:
        """Raise ToolError unless ``path`` was read in this session and ``data`` is what was read.

        ``data_digest`` is ``digest(data)`` when the caller already has it (else computed if needed)."""
        entry = self._entries.get(path)
        if entry is None:
            raise ToolError(f"{shown} has not been read in this session. Read it first (Read tool), "
                            "then make the change.")
        fp = entry.fingerprint
        if fp.source == "client":  # the editor served it: fresh while the disk holds that very text
            changed = not holds_client_text(fp, data, data_digest)
        else:
            changed = entry.stale or not fp.may_hold(st) or (
                fp.full and fp.digest is not None and fp.digest != (data_digest or digest(data)))
        if changed:
            raise StaleError(f"{shown} was modified since read (by the user, a formatter or another "
                            "process). Read it again, then redo the change against its current content.")


# The session's ledger (``sidecar.workspace.checkpoints`` provides an observed one at session start).
LEDGER = ServiceKey[ReadLedger]("ledger", ReadLedger)

"""Bytes ↔ text for the file tools: encoding and BOM detection, line endings, binary refusal, atomic write.

Detection order: a BOM (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE) decides; otherwise NUL bytes in the first
8 KiB or a known binary signature mean binary (refused); otherwise strict UTF-8; otherwise Latin-1
(every byte decodes, so nothing is lost and writing back gives the same bytes).

Line endings: a file whose every ``\\n`` is part of ``\\r\\n`` is a CRLF file; tools show and match it
with ``\\n`` and write ``\\r\\n`` back (``to_model`` / ``from_model``). Mixed files are left raw.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import secrets
import stat
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.errors import ToolError

_BOMS: list[tuple[bytes, str]] = [
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
]
_BINARY_MAGIC = (b"\x7fELF", b"PK\x03\x04", b"MZ", b"\xca\xfe\xba\xbe", b"\x1f\x8b", b"BZh", b"\xfd7zXZ",
                 b"7z\xbc\xaf", b"SQLite format 3\x00", b"\x89HDF")


class BinaryFileError(Exception):
    pass


@dataclass(frozen=True)
class Encoding:
    name: str  # a Python codec name
    bom: bytes = b""
    crlf: bool = False

    def describe(self) -> str:
        return self.name + (" with BOM" if self.bom else "") + (", CRLF" if self.crlf else "")


def sniff_binary(head: bytes) -> bool:
    if any(head.startswith(b) for b, _ in _BOMS):
        return False
    return b"\x00" in head[:8192] or any(head.startswith(m) for m in _BINARY_MAGIC)


def decode(data: bytes) -> tuple[str, Encoding]:
    """Decode file bytes; raise BinaryFileError for binary content."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom):].decode(name)
            except UnicodeDecodeError as exc:
                raise BinaryFileError(f"starts with a {name} BOM but does not decode as {name}") from exc
            return text, Encoding(name, bom, is_crlf(text))
    if sniff_binary(data[:8192]):
        raise BinaryFileError("contains NUL bytes or a binary signature")
    try:
        text = data.decode("utf-8")
        name = "utf-8"
    except UnicodeDecodeError:
        text = data.decode("latin-1")
        name = "latin-1"
    return text, Encoding(name, b"", is_crlf(text))


def encode(text: str, enc: Encoding) -> bytes:
    """The file's bytes; a ToolError naming the encoding and the first character it cannot hold."""
    try:
        data = text.encode(enc.name)
    except UnicodeEncodeError as exc:
        raise unencodable(text, enc, exc) from None
    return enc.bom + data if enc.bom else data  # no copy of the whole file for the common no-BOM case


def check_encodable(text: str, enc: Encoding, who: str = "the file") -> None:
    """Raise the ToolError of ``encode`` before anything is asked or written (Edit's new_string, Write's
    content). UTF-8 and UTF-16 hold every character but lone surrogates, so only those are checked there."""
    if enc.name == "utf-8" and text.isascii():
        return
    try:
        text.encode(enc.name)
    except UnicodeEncodeError as exc:
        raise unencodable(text, enc, exc, who) from None


def unencodable(text: str, enc: Encoding, exc: UnicodeEncodeError, who: str = "the file") -> ToolError:
    bad = text[exc.start:exc.end]
    chars = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in dict.fromkeys(bad))
    line = text.count("\n", 0, exc.start) + 1
    column = exc.start - (text.rfind("\n", 0, exc.start) + 1) + 1
    return ToolError(f"{who} is encoded as {enc.name}, which cannot hold {chars} (line {line}, column {column} of "
                     f"the new text). Nothing was written. Use characters {enc.name} holds (an escape the "
                     "file's language understands, such as \\u2192 or &rarr;, or plain ASCII such as ->), "
                     "then call again.")


def to_model(text: str, enc: Encoding) -> str:
    return text.replace("\r\n", "\n") if enc.crlf else text


def from_model(text: str, enc: Encoding) -> str:
    if not enc.crlf:
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def is_crlf(text: str) -> bool:
    if "\r" not in text:  # the common case, at memchr speed; no full count
        return False
    n = text.count("\n")
    return n > 0 and text.count("\r\n") == n


TEMP_SUFFIX = ".sidecar-tmp"
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass
class TempFile:
    """A fsynced temp file beside its target, held by the parent directory's descriptor."""

    dir_fd: int
    name: str  # relative to dir_fd
    target: Path
    stat: os.stat_result  # of the temp file once written (the rename keeps mtime and size)


def write_error(path: Path, exc: OSError, *, created: bool = False) -> ToolError:
    """An OSError of a write as a tool error that says what happened and that nothing was lost."""
    kept = "Nothing was written." if created else f"Nothing was written; {path.name} is unchanged."
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return ToolError(f"The disk is full (no space left for {path}). {kept} Free some space (or ask the "
                         "user to), then try again.")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return ToolError(f"A folder on the path {path} was replaced by a symbolic link or a file while the "
                         f"write was being prepared. {kept} Check the path (ls -la), then call again.")
    if exc.errno == errno.ENOENT:
        return ToolError(f"A folder on the path {path} disappeared while the write was being prepared. "
                         f"{kept} Check that the folder exists, then call again.")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ToolError(f"Permission denied writing {path} ({exc.strerror}). {kept}")
    if exc.errno == errno.EISDIR:
        return ToolError(f"{path} is now a directory. {kept} Give a file path.")
    return ToolError(f"Could not write {path}: {exc.strerror or exc}. {kept}")


_SYS_OPENAT2 = 437  # the same number on every Linux architecture (unified syscall table)
_RESOLVE_NO_SYMLINKS = 0x04
_openat2_works: bool | None = None if sys.platform.startswith("linux") else False


@functools.cache
def _libc_syscall() -> Any:
    """libc's ``syscall``, looked up once: a ``CDLL`` made per call (every Read opens its folder this
    way) builds a class of its own each time: 66 µs a call, 7 µs with the lookup kept."""
    return ctypes.CDLL(None, use_errno=True).syscall


def _openat2(path: str) -> int | None:
    """``openat2(AT_FDCWD, path, O_DIRECTORY, RESOLVE_NO_SYMLINKS)``; None when the kernel lacks it."""
    global _openat2_works
    if _openat2_works is False:
        return None
    try:
        syscall = _libc_syscall()
        how = (ctypes.c_uint64 * 3)(_O_DIR & ~getattr(os, "O_NOFOLLOW", 0), 0, _RESOLVE_NO_SYMLINKS)
        fd = syscall(_SYS_OPENAT2, -100, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
    except (OSError, AttributeError):
        _openat2_works = False
        return None
    if fd >= 0:
        _openat2_works = True
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM, errno.E2BIG) and _openat2_works is None:
        _openat2_works = False  # an old kernel or a seccomp filter: walk the components instead
        return None
    raise OSError(err, os.strerror(err), path)


def open_dir_nofollow(directory: Path, *, create: bool = False) -> int:
    """A descriptor of the canonical ``directory``, opened without following any symbolic link on the
    way (``openat2`` with ``RESOLVE_NO_SYMLINKS`` where the kernel has it, else ``O_NOFOLLOW`` on every
    component from ``/``). ``create`` makes the missing folders, each relative to its parent's
    descriptor. A symlink anywhere raises OSError(ELOOP or ENOTDIR): the path changed since it was
    resolved and checked."""
    if not directory.is_absolute():
        raise ValueError(f"not absolute: {directory}")
    if not create:
        fd = _openat2(str(directory))
        if fd is not None:
            return fd
    fd = os.open("/", _O_DIR)
    try:
        for part in directory.parts[1:]:
            if part in (".", ".."):
                raise OSError(errno.EINVAL, "not a canonical path", str(directory))
            try:
                nxt = os.open(part, _O_DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                nxt = os.open(part, _O_DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def atomic_write(path: Path, data: bytes, mode: int | None = None, *, create_parents: bool = False,
                 create_only: bool = False, durable: bool = True) -> os.stat_result:
    """Write ``data`` to ``path`` via a temp file in the same directory, fsync, rename; keep ``mode``.

    A crash at any point leaves either the old file or the new one, never a truncated file. The parent is
    opened without following symlinks (``open_dir_nofollow``), so a folder swapped for a link between
    the check and the write sends nothing elsewhere. Returns the stat of the written file. OSErrors come
    out as ``ToolError`` (disk full, a link on the path, …) with nothing lost. ``create_only``: the file
    must not exist; if anything appears at ``path`` meanwhile, it is kept and ``FileExistsError`` raised.
    ``durable=False`` skips the two fsyncs (the sidecar's own bookkeeping, e.g. ``checkpoints.json``,
    whose git objects are not fsynced either): still never torn by a crash, but the newest write may be
    lost with it.
    """
    return commit_temp(write_temp(path, data, mode, create_parents=create_parents, durable=durable), path,
                       create_only=create_only, durable=durable)


def write_temp(path: Path, data: bytes | Sequence[bytes | memoryview], mode: int | None = None, *,
               create_parents: bool = False, durable: bool = True) -> TempFile:
    """First half of ``atomic_write``: ``data`` in a fsynced temp file beside ``path``.

    ``data`` may be a sequence of pieces written one after the other (e.g. memoryview slices of the old
    content around a replacement, so the new content is never built in memory).
    Blocking I/O only (the GIL is released): callers may run it in a thread beside other work."""
    try:
        dir_fd = open_dir_nofollow(path.parent, create=create_parents)
    except OSError as exc:
        raise write_error(path, exc) from None
    name = f".{path.name[:100]}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=dir_fd)
    except OSError as exc:
        os.close(dir_fd)
        raise write_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb", buffering=0) as f:
            for piece in [data] if isinstance(data, bytes) else data:
                view = memoryview(piece)
                while view:  # raw writes may be partial
                    n = f.write(view)
                    if not n:
                        raise OSError(errno.EIO, f"short write to {name}")
                    view = view[n:]
            if mode is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(mode))
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(f.fileno(), 0o666 & ~umask)
            if durable:
                os.fsync(f.fileno())
            st = os.fstat(f.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        os.close(dir_fd)
        if isinstance(exc, OSError):
            raise write_error(path, exc) from None
        raise
    return TempFile(dir_fd, name, path, st)


def commit_temp(tmp: TempFile, path: Path, *, create_only: bool = False, durable: bool = True) -> os.stat_result:
    """Second half of ``atomic_write``: check the folder is still the one the temp file is in (reached
    without a symlink), rename the temp file over ``path`` in it, fsync the folder.

    ``create_only`` links the temp file to ``path`` instead of renaming it (a link never replaces an
    existing name, so a file created by someone else since the caller's check is kept) and raises
    ``FileExistsError``; where the file system has no hard links it falls back to a checked rename."""
    try:
        try:
            now = open_dir_nofollow(path.parent)
        except OSError as exc:
            raise write_error(path, exc) from None
        try:
            a, b = os.fstat(now), os.fstat(tmp.dir_fd)
            if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
                raise ToolError(f"The folder {path.parent} was moved or replaced while the write was being "
                                f"prepared. Nothing was written; check the path, then call again.")
            try:
                if create_only:
                    _link_new(tmp, path.name, now)
                else:
                    os.rename(tmp.name, path.name, src_dir_fd=tmp.dir_fd, dst_dir_fd=now)
            except FileExistsError:
                raise
            except OSError as exc:
                raise write_error(path, exc) from None
            if durable:
                with contextlib.suppress(OSError):
                    os.fsync(now)
        finally:
            os.close(now)
    except BaseException:
        discard_temp(tmp)
        raise
    os.close(tmp.dir_fd)
    return tmp.stat


def _link_new(tmp: TempFile, name: str, dir_fd: int) -> None:
    try:
        os.link(tmp.name, name, src_dir_fd=tmp.dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise  # EEXIST (FileExistsError) included: the other file stays
        try:  # no hard links here: the window between this check and the rename is as small as it gets
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(tmp.name, name, src_dir_fd=tmp.dir_fd, dst_dir_fd=dir_fd)
            return
        raise FileExistsError(errno.EEXIST, "File exists", name) from None
    os.unlink(tmp.name, dir_fd=tmp.dir_fd)


@dataclass(frozen=True)
class LateWrite:
    """What another process wrote to a file's old inode while it was being replaced (between the last
    check and the rename): ``tail`` when it only appended to the text that was read, else ``content``,
    the whole of that version."""

    tail: bytes | None = None
    content: bytes | None = None


def open_old(path: Path, st: os.stat_result) -> int | None:
    """A read-only descriptor of the file now at ``path`` when it is still the inode ``st`` describes
    (None otherwise): held across the rename, it shows writes that land on the old inode."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        return None
    return fd


def late_write(fd: int, st: os.stat_result, old_data: bytes) -> LateWrite | None:
    """After the rename: what reached the old inode since ``st`` was checked (None: nothing). Closes
    ``fd``."""
    try:
        now = os.fstat(fd)
        if (now.st_size, now.st_mtime_ns) == (st.st_size, st.st_mtime_ns):
            return None
        data = b""
        while chunk := os.pread(fd, max(now.st_size - len(data), 1 << 16), len(data)):
            data += chunk
        if len(data) > len(old_data) and data.startswith(old_data):
            return LateWrite(tail=data[len(old_data):])
        return None if data == old_data else LateWrite(content=data)
    except OSError:
        return None
    finally:
        os.close(fd)


def append_late(path: Path, tail: bytes) -> None:
    """Add what another process appended to the replaced file to the new one (its append is kept)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        view = memoryview(tail)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def discard_temp(tmp: TempFile) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp.name, dir_fd=tmp.dir_fd)
    with contextlib.suppress(OSError):
        os.close(tmp.dir_fd)


# Not searched for a killed write's temp file: git's own, installed packages and caches.
STALE_TEMP_SKIP = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                             ".ruff_cache", ".pytest_cache"})


def remove_stale_temps(root: Path, *, older_than: float = 60.0, limit: int = 100_000) -> list[Path]:
    """Delete the temp files a killed write left under ``root`` (named ``.<name>.<hex>.sidecar-tmp``,
    untouched for ``older_than`` seconds, so a write in progress elsewhere keeps its own). Symlinks
    are not followed; ``.git`` and the generated trees (``STALE_TEMP_SKIP``: packages, caches) are not
    entered: a virtualenv alone is most of a Python repository's files. Returns what was removed."""
    removed: list[Path] = []
    now = time.time()
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in STALE_TEMP_SKIP]
        seen += len(filenames)
        if seen > limit:
            break
        for name in filenames:
            if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
                continue
            p = Path(dirpath) / name
            with contextlib.suppress(OSError):
                st = os.lstat(p)
                if stat.S_ISREG(st.st_mode) and now - st.st_mtime >= older_than:
                    os.unlink(p)
                    removed.append(p)
    return removed

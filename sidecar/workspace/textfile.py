"""Bytes ↔ text for the file tools: encoding and BOM detection, line endings, binary refusal, atomic write.

Detection order: a BOM (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE) decides; otherwise NUL bytes in the first
8 KiB or a known binary signature mean binary (refused); otherwise strict UTF-8; otherwise Latin-1
(every byte decodes, so nothing is lost and writing back gives the same bytes).

Line endings: a file whose every ``\\n`` is part of ``\\r\\n`` is a CRLF file; tools show and match it
with ``\\n`` and write ``\\r\\n`` back (``to_model`` / ``from_model``). Mixed files are left raw.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
            return text, Encoding(name, bom, _is_crlf(text))
    if sniff_binary(data[:8192]):
        raise BinaryFileError("contains NUL bytes or a binary signature")
    try:
        text = data.decode("utf-8")
        name = "utf-8"
    except UnicodeDecodeError:
        text = data.decode("latin-1")
        name = "latin-1"
    return text, Encoding(name, b"", _is_crlf(text))


def encode(text: str, enc: Encoding) -> bytes:
    data = text.encode(enc.name)
    return enc.bom + data if enc.bom else data  # no copy of the whole file for the common no-BOM case


def to_model(text: str, enc: Encoding) -> str:
    return text.replace("\r\n", "\n") if enc.crlf else text


def from_model(text: str, enc: Encoding) -> str:
    if not enc.crlf:
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _is_crlf(text: str) -> bool:
    if "\r" not in text:  # the common case, at memchr speed; no full count
        return False
    n = text.count("\n")
    return n > 0 and text.count("\r\n") == n


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory, fsync, rename; keep ``mode``.

    A crash at any point leaves either the old file or the new one, never a truncated file.
    """
    commit_temp(write_temp(path, data, mode), path)


def write_temp(path: Path, data: bytes | Sequence[bytes | memoryview], mode: int | None = None) -> str:
    """First half of ``atomic_write``: ``data`` in a fsynced temp file beside ``path`` (its name returned).

    ``data`` may be a sequence of pieces written one after the other (e.g. memoryview slices of the old
    content around a replacement, so the new content is never built in memory).
    Blocking I/O only (the GIL is released): callers may run it in a thread beside other work."""
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".sidecar-tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb", buffering=0) as f:
            for piece in [data] if isinstance(data, bytes) else data:
                view = memoryview(piece)
                while view:  # raw writes may be partial
                    n = f.write(view)
                    if not n:
                        raise OSError(f"short write to {tmp}")
                    view = view[n:]
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, stat.S_IMODE(mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        discard_temp(tmp)
        raise
    return tmp


def commit_temp(tmp: str, path: Path) -> None:
    """Second half of ``atomic_write``: rename the temp file over ``path``, fsync the directory."""
    try:
        os.replace(tmp, path)
    except BaseException:
        discard_temp(tmp)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def discard_temp(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)

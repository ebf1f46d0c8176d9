"""The ONE path canonicaliser every tool uses (docs/contract.md §6: paths canonicalised, kept inside the roots).

``resolve_path(raw, session, field="file_path")`` turns what the model wrote into the real path the tool
will touch, or raises ``ToolError`` with a message that tells the model what to do:

1. ``file://`` URIs and percent-encoding are decoded (``%2e%2e`` is ``..``) unless a file by the
   literal name exists.
2. Unicode look-alikes are resolved: NFKC (fullwidth ``／`` ``．``) plus the confusable slashes and dots
   NFKC keeps (``∕`` U+2215, ``⁄`` U+2044, ``⧸`` U+29F8, ``․`` U+2024 ...), again unless the literal
   name exists on disk. NUL bytes are refused.
3. Absolute paths only (``~`` is expanded); a relative path is refused with the absolute path meant
   (relative to the session's cwd) in the message.
4. ``os.path.realpath``: ``..`` and every symlink, also symlinked parents, resolved. The permission check
   and the tool's I/O both use this result, so a link inside the workspace pointing outside is judged
   by where it points.
5. Special files are refused without ever opening them: character and block devices, FIFOs, sockets
   (``os.stat``, which never blocks), anything under ``/proc/<pid>/fd`` or ``/dev/fd``, ``/dev/std*``.
6. ``inside_roots`` says whether the result lies in ``session.roots``. Outside paths are NOT refused
   here: the tool sends them to the permission gate, which asks (reads too) unless a rule allows.

Fail closed: a path that cannot be canonicalised (loops, permission errors) is refused.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote, urlsplit

from sidecar.errors import ToolError

if TYPE_CHECKING:
    from sidecar.session import Session

# Characters NFKC leaves alone that render like "/" or "." (Unicode confusables for path syntax).
_CONFUSABLES = {
    "\u2215": "/",  # DIVISION SLASH
    "\u2044": "/",  # FRACTION SLASH
    "\u29f8": "/",  # BIG SOLIDUS
    "\u2571": "/",  # BOX DRAWINGS LIGHT DIAGONAL
    "\u1735": "/",  # PHILIPPINE SINGLE PUNCTUATION
    "\u3033": "/",  # VERTICAL KANA REPEAT MARK UPPER HALF
    "\u2024": ".",  # ONE DOT LEADER (NFKC too)
    "\u2e33": ".",  # RAISED DOT
    "\u0701": ".",  # SYRIAC SUPRALINEAR FULL STOP
    "\ua60e": ".",  # VAI FULL STOP
}
_CONFUSABLE_RE = re.compile("[" + "".join(_CONFUSABLES) + "]")
_PERCENT_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_FD_DIR_RE = re.compile(r"^/proc/[^/]+/(fd|fdinfo|task/[^/]+/fd)(/|$)|^/dev/fd(/|$)")
_STD_STREAMS = {"/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/console"}

Kind = Literal["file", "dir", "missing", "other"]


@dataclass(frozen=True)
class ResolvedPath:
    path: Path  # canonical: absolute, no "..", no symlinks
    requested: str  # what the model wrote
    inside_roots: bool
    kind: Kind

    @property
    def exists(self) -> bool:
        return self.kind != "missing"


def resolve_path(raw: str, session: Session, *, field: str = "file_path") -> ResolvedPath:
    """Canonicalise ``raw`` for ``session``; raise ToolError for paths no tool may touch."""
    if not raw or not raw.strip():
        raise ToolError(f"{field} is empty; pass an absolute path.")
    if "\x00" in raw:
        raise ToolError(f"{field} contains a NUL byte; pass a plain absolute path.")
    text = _decode(raw)
    text = os.path.expanduser(text)
    if not os.path.isabs(text):
        meant = os.path.normpath(os.path.join(session.cwd, text))
        raise ToolError(f"{field} must be an absolute path, not a relative one. "
                        f"Did you mean {meant}? Call again with the absolute path.")
    _refuse_special_name(text, raw, field)
    try:
        canonical = os.path.realpath(text, strict=False)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ToolError(f"Cannot resolve {raw}: {exc}. Check the path and call again.") from exc
    _refuse_special_name(canonical, raw, field)
    kind = _kind_of(canonical, raw)
    path = Path(canonical)
    return ResolvedPath(path=path, requested=raw, inside_roots=session.within_roots(path), kind=kind)


def display_path(path: Path, session: Session) -> str:
    """The path as shown to the model: relative to cwd when inside it, absolute otherwise."""
    try:
        return str(path.relative_to(session.cwd))
    except ValueError:
        return str(path)


def special_file_reason(st_mode: int) -> str | None:
    if stat.S_ISCHR(st_mode):
        return "a character device"
    if stat.S_ISBLK(st_mode):
        return "a block device"
    if stat.S_ISFIFO(st_mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(st_mode):
        return "a socket"
    return None


# ---- internals ------------------------------------------------------------------------------

def _decode(raw: str) -> str:
    text = raw
    if text.startswith("file://"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise ToolError(f"{raw} names a remote host; pass a local absolute path.")
        text = unquote(parts.path)
    elif _PERCENT_RE.search(text) and not os.path.lexists(text):
        text = unquote(text)
    if not os.path.lexists(text):
        folded = _CONFUSABLE_RE.sub(lambda m: _CONFUSABLES[m.group(0)], unicodedata.normalize("NFKC", text))
        if folded != text:
            text = folded
    return text


def _refuse_special_name(path: str, raw: str, field: str) -> None:
    # The /proc pattern is compiled on first use (by ``re``'s cache), so only for a /proc path.
    if _FD_DIR_RE.match(path) or path in _STD_STREAMS or path in ("/proc/kcore", "/proc/kmsg") or (
            path.startswith("/proc/") and re.match(r"^/proc/[^/]+/(mem|kcore|kmsg)$", path)):
        raise ToolError(f"{raw} is a stream or process file descriptor, not a regular file; it cannot be "
                        f"read or written by this tool. Use a regular file path in {field}.")


def _kind_of(canonical: str, raw: str) -> Kind:
    try:
        st = os.stat(canonical)  # stat never opens: a FIFO or device cannot block us here
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "missing"
    except PermissionError as exc:
        raise ToolError(f"Permission denied while checking {raw}: {exc.strerror}.") from exc
    except OSError as exc:
        raise ToolError(f"Cannot check {raw}: {exc.strerror or exc}.") from exc
    reason = special_file_reason(st.st_mode)
    if reason:
        raise ToolError(f"{raw} is {reason}, not a regular file; reading or writing it could block or "
                        "never end, so it is refused. Use a regular file.")
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode):
        return "file"
    return "other"

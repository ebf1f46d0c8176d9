"""The user's credentials: known in one place so they can be kept out of every output and every child.

Logs, saved sessions, tool output and error messages pass through ``redact``; child processes get
``scrubbed_env``. A process that holds the key (``sidecar serve``, ``sidecar chat``) calls
``capture_secrets()`` first thing: the key moves from the environment into this module, its bytes are
overwritten in the process's initial environment block (what ``/proc/<pid>/environ`` shows), and on Linux
the process becomes non-dumpable, so a same-user process (a command the agent runs, a hook, a server) can
read neither ``/proc/<pid>/environ`` nor ``/proc/<pid>/mem`` of it. See README "Secrets" for the limits.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import mmap
import os
import re
import sys
from collections.abc import Mapping
from typing import BinaryIO

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_extra_secrets: set[str] = set()
# Secrets taken out of the environment by ``capture_secrets``, by variable name.
_captured: dict[str, str] = {}
REDACTED = "[REDACTED]"
PR_SET_DUMPABLE = 4

log = logging.getLogger(__name__)


def register_secret(value: str) -> None:
    """Mark a value (e.g. a key from settings) as secret for the life of the process."""
    if len(value) >= 8:
        _extra_secrets.add(value)


def secret(name: str) -> str | None:
    """A credential by its variable name: captured, or still in the environment (a library caller)."""
    return _captured.get(name) or os.environ.get(name) or None


def secret_values() -> list[str]:
    values = {os.environ.get(name, "") for name in SECRET_ENV_VARS} | set(_captured.values()) | _extra_secrets
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def redact(text: str) -> str:
    for value in secret_values():
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_bytes(data: bytes) -> bytes:
    for value in secret_values():
        raw = value.encode()
        if raw in data:
            data = data.replace(raw, REDACTED.encode())
    return data


def redact_file(path: str | os.PathLike[str]) -> bool:
    """Rewrite a saved output file without any secret in it; True when something was replaced.

    The file is read in ``_FILE_PIECE`` pieces, so a large one (a Bash output keeps up to 80 MiB) costs no
    more memory than a piece: first a scan, which is all a file without a secret needs; only when one is
    found, a rewrite through a temporary file beside it."""
    values = [v.encode() for v in secret_values()]
    if not values:
        return False
    keep = max(len(v) for v in values) - 1  # a secret cut by a piece's end is whole in the next scan
    temp = f"{os.fspath(path)}.redacting"
    try:
        with open(path, "rb") as f:
            if not _holds_secret(f, values, keep):
                return False
            f.seek(0)
            with open(temp, "wb") as out:
                _redact_stream(f, out, values, keep)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        return False
    return True


_FILE_PIECE = 1 << 20


_MAP_WINDOW = 8 << 20


def _holds_secret(f: BinaryIO, values: list[bytes], keep: int) -> bool:
    """Whether any of ``values`` is in ``f``: searched where the file lies, ``_MAP_WINDOW`` bytes mapped at a
    time (a 1 GiB command's 80 MiB file is not copied once more, and no more than a window is resident)."""
    size = os.fstat(f.fileno()).st_size
    try:
        for start in range(0, size, _MAP_WINDOW):
            with mmap.mmap(f.fileno(), min(_MAP_WINDOW + keep, size - start), access=mmap.ACCESS_READ,
                           offset=start) as window:
                if any(window.find(v) >= 0 for v in values):
                    return True
        return False
    except (OSError, ValueError):  # not mappable here: read through
        return _read_holds_secret(f, values, keep)


def _read_holds_secret(f: BinaryIO, values: list[bytes], keep: int) -> bool:
    tail = b""
    while piece := f.read(_FILE_PIECE):
        data = tail + piece
        if any(v in data for v in values):
            return True
        tail = data[-keep:] if keep else b""
    return False


def _redact_stream(f: BinaryIO, out: BinaryIO, values: list[bytes], keep: int) -> None:
    """``f`` to ``out`` with every secret replaced (the longest first where two overlap)."""
    pattern = re.compile(b"|".join(re.escape(v) for v in values))  # ``values`` are sorted longest first
    pending = b""
    while True:
        piece = f.read(_FILE_PIECE)
        data = pending + piece
        # A match starting before ``safe`` ends inside ``data``; one starting at or after it may be cut
        # by the piece's end, so that part waits for the next piece (all of it at the end of the file).
        safe = len(data) - keep if piece else len(data)
        done = 0
        for match in pattern.finditer(data):
            if match.start() >= safe:
                break
            out.write(data[done : match.start()])
            out.write(REDACTED.encode())
            done = match.end()
        cut = max(done, safe)
        out.write(data[done:cut])
        pending = data[cut:]
        if not piece:
            return


def scrubbed_env(base: Mapping[str, str] | None = None, extra_secret_names: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment for commands the agent runs: without the sidecar's own credentials, the names in
    ``extra_secret_names`` (``secretEnvVars``), and any variable whose value holds a known secret."""
    env = dict(os.environ if base is None else base)
    for name in (*SECRET_ENV_VARS, *extra_secret_names):
        env.pop(name, None)
    values = secret_values()
    for name in [n for n, v in env.items() if any(s in v for s in values)]:
        env.pop(name)
    return env


# The sidecar's own configuration (``SIDECAR_MANAGED_SETTINGS``, ``ANTHROPIC_BASE_URL`` …): a
# ``secretEnvVars`` list never takes these out of the sidecar's own environment (a repository's list would
# unset the managed policy's path); they are still kept from children (``scrubbed_env``).
OWN_ENV_PREFIXES = ("SIDECAR_", "ANTHROPIC_")


def capture_secrets(extra_names: tuple[str, ...] = ()) -> dict[str, str]:
    """Take the credentials out of this process's environment (see the module's docstring); idempotent.
    ``extra_names`` naming the sidecar's own variables (``OWN_ENV_PREFIXES``) are left in place.
    Returns what was captured, by name."""
    extra = tuple(n for n in extra_names if not n.upper().startswith(OWN_ENV_PREFIXES))
    for name in (*SECRET_ENV_VARS, *extra):
        value = os.environ.get(name)
        if value:
            _captured[name] = value
            register_secret(value)
            del os.environ[name]  # unsetenv too: children started later never inherit it
    if _captured:
        wipe_initial_environment(list(_captured.values()))
    make_undumpable()
    return dict(_captured)


def wipe_initial_environment(values: list[str]) -> int:
    """Overwrite every occurrence of ``values`` in the initial environment block with NUL bytes (Linux;
    the block lies between ``env_start`` and ``env_end`` of ``/proc/self/stat``). Returns the count."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2:].split()
        # Fields 50 and 51 of proc(5) (env_start, env_end); index from field 3 on.
        start, end = int(fields[50 - 3]), int(fields[51 - 3])
    except (OSError, ValueError, IndexError):
        return 0
    if not start or end <= start:
        return 0
    block = ctypes.string_at(start, end - start)
    wiped = 0
    for value in values:
        raw = value.encode()
        at = block.find(raw)
        while at >= 0 and raw:
            ctypes.memset(start + at, 0, len(raw))
            wiped += 1
            at = block.find(raw, at + len(raw))
    return wiped


def make_undumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)``: ``/proc/<pid>/{environ,mem,maps}`` become root-owned and ptrace by
    the same user is refused, so a child cannot read this process's memory or environment (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True

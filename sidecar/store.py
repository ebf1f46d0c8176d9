"""Sessions saved as JSONL under the XDG data dir (``$XDG_DATA_HOME/sidecar/sessions/<id>.jsonl``).

One line per event: the session header, every message, mode and config changes and audit records. Appends are
line-atomic (one write per line), so a crash loses at most the line being written.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.secrets import redact

# ``json.dumps`` with options builds an encoder per call: one for every line of every session log.
_LOG_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
log = logging.getLogger(__name__)


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "sidecar"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sidecar"


@dataclass
class SavedSession:
    id: str
    cwd: str
    title: str | None
    updated_at: float
    additional_directories: list[str]
    mode: str
    messages: list[dict[str, Any]]
    events: list[dict[str, Any]]
    # The session's config options as last set (``model``, ``effort``); empty in logs before 0.3.
    config: dict[str, str] = field(default_factory=dict)
    # The user set the mode (``session/set_mode``, audited ``by: "user"``): no settings' mode replaces it.
    mode_chosen: bool = False


def _flush_at_exit(ref: weakref.ref[SessionStore]) -> None:
    store = ref()
    if store is not None:
        store.flush()


class SessionStore:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or data_dir() / "sessions"
        self._lock = threading.Lock()
        # Lines not yet written, by session: an event loop's appends are written together at the end of
        # its iteration (one open and write per session and step, not one per event: a tool call made 9,
        # 8 parallel Reads 44). ``load``, ``list`` and ``flush`` write them first; a session's header is
        # written at once (its file must exist, or its error reach ``session/new``).
        self._pending: dict[str, list[str]] = {}
        # Session id → its log's path: asked twice for every event (a pathlib join each time).
        self._paths: dict[str, Path] = {}
        self._flush_scheduled = False
        # A batch's write error, raised by the next append (the batch was written from a loop callback).
        self._failed: OSError | None = None
        atexit.register(_flush_at_exit, weakref.ref(self))

    def path(self, session_id: str) -> Path:
        known = self._paths.get(session_id)
        if known is not None:
            return known
        if not session_id.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"invalid session id {session_id!r}")
        if len(self._paths) >= 1024:
            self._paths.clear()
        path = self._paths[session_id] = self.root / f"{session_id}.jsonl"
        return path

    def append(self, session_id: str, event: dict[str, Any]) -> None:
        """Add an event to the session's log: written at the end of the running event loop's iteration
        (in order with every other append), at once when no loop runs in this thread or the event is
        the session's header. A write error is raised here (for a batch: by the next append)."""
        line = redact(_LOG_JSON.encode(event)) + "\n"
        self.path(session_id)  # a bad id fails here, at the caller
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        now = loop is None or event.get("type") == "session"
        with self._lock:
            failed, self._failed = self._failed, None
            self._pending.setdefault(session_id, []).append(line)
            schedule = not now and not self._flush_scheduled
            self._flush_scheduled = self._flush_scheduled or schedule
        if now:
            self._write_pending(raise_errors=True)
        elif schedule and loop is not None:
            loop.call_soon(self.flush)
        if failed is not None:
            raise failed

    def flush(self) -> None:
        """Write every pending line (the session log's batch); an error is logged and raised by the next
        append."""
        self._write_pending(raise_errors=False)

    def _write_pending(self, raise_errors: bool) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            self._flush_scheduled = False
            error: OSError | None = None
            for session_id, lines in pending.items():
                try:
                    self._append(self.path(session_id), "".join(lines))
                except OSError as exc:  # those lines are lost: the caller (or the next one) is told
                    error = error or exc
            if error is not None and not raise_errors:
                log.warning("cannot write the session log: %s", error)
                self._failed = error
        if error is not None and raise_errors:
            raise error

    def _append(self, path: Path, line: str) -> None:
        """One line, written unbuffered; on a failed write (a full disk: ENOSPC, EDQUOT) the part that got
        in is cut off again, so the next line starts on a line of its own (a torn line would swallow it
        on load). The error names the file."""
        data = line.encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        try:
            try:  # the folder exists after the first write: no mkdir (a system call) per event
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:
                self.root.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, flags, 0o600)
            try:
                end = os.lseek(fd, 0, os.SEEK_END)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                except OSError:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, end)
                        if end == 0:  # a new, now empty file: no session to list
                            os.unlink(path)
                    raise
            finally:
                os.close(fd)
        except OSError as exc:
            if exc.filename is None:
                raise OSError(exc.errno, exc.strerror, str(path)) from exc
            raise

    def tool_output_dir(self, session_id: str) -> Path:
        """Where whole outputs too long for the model are kept (the model can Read them)."""
        d = self.root / session_id / "tool-output"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def load(self, session_id: str) -> SavedSession | None:
        """The saved session, or None when there is none. A line that cannot be used (not UTF-8, not
        JSON, not an object, a message without role and content, a bad truncate length …) is skipped
        with a warning: the rest of the session still loads. A file that cannot be read at all is
        reported and treated as absent."""
        self.flush()
        try:
            p = self.path(session_id)
        except ValueError:
            return None
        try:
            raw_lines = p.read_bytes().split(b"\n")
            mtime = p.stat().st_mtime
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("skipping session file %s: %s", p, exc)
            return None
        header: dict[str, Any] = {}
        messages: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        mode = "default"
        mode_chosen = False
        config: dict[str, str] = {}
        title: str | None = None
        skipped = 0
        for number, raw in enumerate(raw_lines, 1):
            if not raw.strip():
                continue
            try:
                event = json.loads(raw.decode("utf-8"))
                problem = _problem(event, len(messages))
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                problem = f"not a JSON line ({type(exc).__name__})"
            if problem is not None:
                if number == len(raw_lines):  # no newline after it: torn by a crash while written
                    log.info("session %s: torn last line ignored", session_id)
                else:
                    skipped += 1
                    log.warning("session %s, line %d skipped: %s", session_id, number, problem)
                continue
            kind = event.get("type")
            if kind == "session":
                header = event
            elif kind == "message":
                messages.append(event["message"])
            elif kind == "mode":
                mode = event["mode"]
            elif kind == "config":
                config[event["configId"]] = event["value"]
            elif kind == "title":
                title = event["title"]
            elif kind == "truncate":
                del messages[event["length"]:]
            elif kind == "audit" and event.get("event") == "mode" and event.get("by") == "user":
                mode_chosen = True
            events.append(event)
        if skipped:
            log.warning("session %s: %d unusable line(s) skipped", session_id, skipped)
        return SavedSession(
            id=session_id,
            cwd=header.get("cwd", ""),
            title=title or header.get("title"),
            updated_at=mtime,
            additional_directories=list(header.get("additionalDirectories", [])),
            mode=mode,
            messages=messages,
            events=events,
            config=config,
            mode_chosen=mode_chosen,
        )

    def list(self, cwd: str | None = None) -> list[SavedSession]:
        """Every readable saved session (for ``cwd`` when given), newest first; a file that cannot be
        loaded is reported in the log and left out, never failing the list."""
        self.flush()
        try:
            paths = list(self.root.glob("*.jsonl"))
        except OSError as exc:
            log.warning("cannot list saved sessions in %s: %s", self.root, exc)
            return []
        sessions = []
        for p in paths:
            try:
                saved = self.load(p.stem)
            except Exception:
                log.warning("skipping session file %s", p, exc_info=True)
                continue
            if saved and (cwd is None or saved.cwd == cwd):
                sessions.append(saved)
        return sorted(sessions, key=lambda s: s.updated_at, reverse=True)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _problem(event: Any, message_count: int) -> str | None:
    """Why a decoded line cannot be used, or None."""
    if not isinstance(event, dict):
        return f"a JSON {type(event).__name__}, not an object"
    kind = event.get("type")
    if kind == "session":
        if not isinstance(event.get("cwd", ""), str) or not _is_str_list(event.get("additionalDirectories", [])) \
                or not isinstance(event.get("title") or "", str):
            return "a session header with fields of the wrong type"
    elif kind == "message":
        message = event.get("message")
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return "a message without a role"
        content = message.get("content")
        if not isinstance(content, str) and not (isinstance(content, list)
                                                 and all(isinstance(b, dict) for b in content)):
            return "a message without content"
    elif kind == "mode":
        if not isinstance(event.get("mode"), str):
            return "a mode change without a mode"
    elif kind == "config":
        if not isinstance(event.get("configId"), str) or not isinstance(event.get("value"), str):
            return "a config change without an option id and value"
    elif kind == "title":
        if not isinstance(event.get("title"), str):
            return "a title without text"
    elif kind == "truncate":
        length = event.get("length")
        if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= message_count:
            return f"a truncate to a bad length {str(length)[:40]}"
    return None

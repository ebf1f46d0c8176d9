"""Sessions saved as JSONL under the XDG data dir (``$XDG_DATA_HOME/sidecar/sessions/<id>.jsonl``).

One line per event: the session header, every message, mode changes and audit records. Appends are
line-atomic (one write per line), so a crash loses at most the line being written.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.secrets import redact


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


class SessionStore:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or data_dir() / "sessions"
        self._lock = threading.Lock()

    def path(self, session_id: str) -> Path:
        if not session_id.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"invalid session id {session_id!r}")
        return self.root / f"{session_id}.jsonl"

    def append(self, session_id: str, event: dict[str, Any]) -> None:
        line = redact(json.dumps(event, ensure_ascii=False, default=str)) + "\n"
        with self._lock:
            self.root.mkdir(parents=True, exist_ok=True)
            with self.path(session_id).open("a", encoding="utf-8") as f:
                f.write(line)

    def tool_output_dir(self, session_id: str) -> Path:
        """Where whole outputs too long for the model are kept (the model can Read them)."""
        d = self.root / session_id / "tool-output"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def load(self, session_id: str) -> SavedSession | None:
        try:
            p = self.path(session_id)
        except ValueError:
            return None
        if not p.exists():
            return None
        header: dict[str, Any] = {}
        messages: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        mode = "default"
        title = None
        for raw in p.read_text(encoding="utf-8").splitlines():
            try:
                event = json.loads(raw)
            except json.JSONDecodeError:
                continue  # a torn last line after a crash
            kind = event.get("type")
            if kind == "session":
                header = event
            elif kind == "message":
                messages.append(event["message"])
            elif kind == "mode":
                mode = event.get("mode", mode)
            elif kind == "title":
                title = event.get("title")
            elif kind == "truncate":
                messages = messages[: int(event.get("length", len(messages)))]
            events.append(event)
        return SavedSession(
            id=session_id,
            cwd=header.get("cwd", ""),
            title=title or header.get("title"),
            updated_at=p.stat().st_mtime,
            additional_directories=list(header.get("additionalDirectories", [])),
            mode=mode,
            messages=messages,
            events=events,
        )

    def list(self, cwd: str | None = None) -> list[SavedSession]:
        if not self.root.exists():
            return []
        sessions = []
        for p in self.root.glob("*.jsonl"):
            saved = self.load(p.stem)
            if saved and (cwd is None or saved.cwd == cwd):
                sessions.append(saved)
        return sorted(sessions, key=lambda s: s.updated_at, reverse=True)

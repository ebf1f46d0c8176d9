"""The editor's open buffers, fed by the LSP transport's text document sync (one store per server).

Wiring (the LSP adapter): ``didOpen`` → ``open_buffers().open(uri, text, version)``, ``didChange``
(full text) → ``.change(uri, text, version)``, ``didSave`` → ``.save(uri)``, ``didClose`` →
``.close(uri)``. The store is a module-level singleton (``open_buffers()``) because a server has one
editor; a test or an embedding can give a session its own store by putting one in
``BUFFERS`` — tools look it up with ``buffers_for(session)``.

A buffer is *dirty* when its text differs from what was last opened or saved. File tools never write
a dirty file on disk (the user's unsaved work would be silently overwritten or diverge): they refuse
and tell the model to ask the user to save. Every change is reported to subscribers (the per-session
watchers), which mark the agent's read of that file stale.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from sidecar.session import ServiceKey, Session

Listener = Callable[[Path], None]


@dataclass
class Buffer:
    uri: str
    path: Path | None
    text: str
    version: int
    saved_text: str
    dirty: bool = False


def uri_to_path(uri: str) -> Path | None:
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path)).resolve()


class OpenBuffers:
    def __init__(self) -> None:
        self._by_uri: dict[str, Buffer] = {}
        self._by_path: dict[Path, Buffer] = {}
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        # Text the agent asked the editor to put in a buffer (workspace/applyEdit): its didChange is ours,
        # not the user's, so it raises no "modified" notice.
        self._expected: dict[str, str] = {}

    # ---- fed by the LSP transport -----------------------------------------------------------
    def open(self, uri: str, text: str, version: int) -> None:
        buf = Buffer(uri=uri, path=uri_to_path(uri), text=text, version=version, saved_text=text)
        with self._lock:
            self._by_uri[uri] = buf
            if buf.path is not None:
                self._by_path[buf.path] = buf

    def change(self, uri: str, text: str, version: int) -> None:
        with self._lock:
            buf = self._by_uri.get(uri)
            if buf is None:
                return
            buf.text, buf.version = text, version
            buf.dirty = text != buf.saved_text
            path = buf.path
            ours = self._expected.pop(uri, None) == text
        if path is not None and not ours:
            self._emit(path)

    def save(self, uri: str, text: str | None = None) -> None:
        with self._lock:
            buf = self._by_uri.get(uri)
            if buf is None:
                return
            if text is not None:
                buf.text = text
            buf.saved_text, buf.dirty = buf.text, False

    def close(self, uri: str) -> None:
        with self._lock:
            buf = self._by_uri.pop(uri, None)
            if buf is not None and buf.path is not None:
                self._by_path.pop(buf.path, None)

    # ---- read by tools ----------------------------------------------------------------------
    def get(self, path: Path) -> Buffer | None:
        """The open buffer of ``path`` (a copy: uri, text, version as last synced)."""
        with self._lock:
            buf = self._by_path.get(path)
            return None if buf is None else Buffer(buf.uri, buf.path, buf.text, buf.version, buf.saved_text,
                                                   buf.dirty)

    def expect(self, uri: str, text: str) -> None:
        """The agent is about to change this buffer to ``text``: that change is not someone else's."""
        with self._lock:
            self._expected[uri] = text

    def is_dirty(self, path: Path) -> bool:
        buf = self._by_path.get(path)
        return bool(buf and buf.dirty)

    def text(self, path: Path) -> str | None:
        buf = self._by_path.get(path)
        return buf.text if buf else None

    def is_open(self, path: Path) -> bool:
        return path in self._by_path

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, path: Path) -> None:
        for listener in list(self._listeners):
            listener(path)


_STORE = OpenBuffers()


def open_buffers() -> OpenBuffers:
    """The server's one store of open editor buffers."""
    return _STORE


# The server's store unless the session was given its own.
BUFFERS = ServiceKey[OpenBuffers]("buffers", lambda _session: _STORE, shared=True)


def buffers_for(session: Session) -> OpenBuffers:
    """The session's store (``BUFFERS``): the server's unless a test or an embedding provided one."""
    return session.service(BUFFERS)

"""Watch the session roots; when a file the agent has read changes, mark it stale and queue a notice.

``ensure_watcher(session)`` starts one ``Watcher`` per session lazily (the file tools call it after a
Read); ``session.service(WATCHER).close()`` stops it. Sessions with the same roots share one watch
(``_SharedWatch``), stopped when the last of them closes. Two sources feed it:

* ``watchfiles.awatch`` on the session roots (``step`` 20 ms, ``debounce`` 200 ms so a notice is queued
  within a few tens of milliseconds). Events under ``.git``, ``node_modules`` and the other
  ``IGNORED_DIRS``, or matched by the root ``.gitignore``, are dropped before anything else.
* the open-buffers store (``sidecar.workspace.buffers``): an editor change to a read file's buffer.

Either way, if the path is in the read ledger and differs from the fingerprint recorded there, the
entry is marked stale (Edit/Write then refuse until a re-read) and the session gets the notice
"<file> was modified by the user or a linter; re-read before editing". The agent's own writes update
the ledger first, so they never raise a notice.

``check_now()`` re-stats every ledger entry synchronously: the agent loop may call it before a model
request as a belt to the watcher's braces (e.g. on file systems without inotify).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the sidecar imports every tool module at start
    import watchfiles

from sidecar.session import ServiceKey, Session
from sidecar.workspace.buffers import buffers_for
from sidecar.workspace.ledger import LEDGER, ReadLedger
from sidecar.workspace.paths import display_path

log = logging.getLogger(__name__)

IGNORED_DIRS = frozenset({".git", "node_modules", ".hg", ".svn", "__pycache__", ".venv", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache", ".tox", "dist", "build", ".next", "target"})


def notice_text(shown: str) -> str:
    return f"{shown} was modified by the user or a linter; re-read before editing."


class Watcher:
    """A session's view of the watch on its roots: changes to files in its ledger raise its notices."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._watch: _SharedWatch | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.ready = asyncio.Event()

    @property
    def ledger(self) -> ReadLedger:
        return self.session.service(LEDGER)

    def start(self) -> None:
        if self._unsubscribe is not None or self._watch is not None:
            return
        self._unsubscribe = buffers_for(self.session).subscribe(self._on_buffer_change)
        roots = tuple(sorted(str(r) for r in self.session.roots if r.is_dir()))
        if roots:
            self._watch = _SharedWatch.join(roots, self)

    def on_disk_change(self, path: Path) -> None:
        if path in self.ledger.paths() and self.ledger.mark_stale(path):
            self.session.add_notice(notice_text(display_path(path, self.session)))

    def _on_buffer_change(self, path: Path) -> None:
        if path in self.ledger.paths() and self.ledger.mark_buffer_changed(path):
            self.session.add_notice(notice_text(display_path(path, self.session)))

    def check_now(self) -> None:
        for path in self.ledger.paths():
            self.on_disk_change(path)

    async def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._watch is not None:
            watch, self._watch = self._watch, None
            await watch.leave(self)


class _SharedWatch:
    """One ``watchfiles.awatch`` over a set of roots, shared by every session of this event loop that
    watches the same roots: 50 sessions of one workspace cost one watch thread, not 50 threads each
    waking every 100 ms. Stopped when its last session leaves."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots
        self.watchers: list[Watcher] = []
        self.ready = False
        self._stop = threading.Event()
        self._ignores: dict[Path, Any] = {}
        self._task = asyncio.get_running_loop().create_task(self._run(), name="sidecar-watcher")

    @classmethod
    def join(cls, roots: tuple[str, ...], watcher: Watcher) -> _SharedWatch:
        shared = _SHARED.setdefault(asyncio.get_running_loop(), {})
        watch = shared.get(roots)
        if watch is None or watch._task.done():
            watch = shared[roots] = cls(roots)
        watch.watchers.append(watcher)
        if watch.ready:
            watcher.ready.set()
        return watch

    async def leave(self, watcher: Watcher) -> None:
        with contextlib.suppress(ValueError):
            self.watchers.remove(watcher)
        if self.watchers:
            return
        shared = _SHARED.get(asyncio.get_running_loop(), {})
        if shared.get(self.roots) is self:
            del shared[self.roots]
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout=2)
        except (TimeoutError, asyncio.CancelledError):
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    async def _run(self) -> None:
        """The watch runs in a thread of its own, set-up included (``.gitignore`` parsing, the watchfiles
        import, and the recursive inotify registration, which held the event loop up to 61 ms on a big
        tree when ``awatch`` did it on the loop); changes come back to the loop in batches."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def deliver(changes: set[tuple[Any, str]]) -> None:
            self._set_ready()
            for _change, raw in changes:
                path = Path(raw)
                for watcher in list(self.watchers):
                    watcher.on_disk_change(path)

        def finished() -> None:
            if not done.done():
                done.set_result(None)

        def work() -> None:
            try:
                import watchfiles

                self._ignores = {Path(root): _gitignore(Path(root)) for root in self.roots}
                for changes in watchfiles.watch(*self.roots, watch_filter=self._keep, stop_event=self._stop,
                                                step=20, debounce=200, recursive=True, yield_on_timeout=True,
                                                rust_timeout=100, raise_interrupt=False):
                    try:
                        loop.call_soon_threadsafe(deliver, changes)
                    except RuntimeError:  # the loop is closed (its sessions are gone): stop watching
                        break
            except Exception:  # a watcher failure must never take the session down
                log.exception("file watcher stopped")
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    loop.call_soon_threadsafe(finished)

        threading.Thread(target=work, name="sidecar-watcher", daemon=True).start()
        try:
            await done
        finally:
            self._stop.set()
            self._set_ready()

    def _set_ready(self) -> None:
        if not self.ready:
            self.ready = True
            for watcher in self.watchers:
                watcher.ready.set()

    def _keep(self, _change: watchfiles.Change, raw: str) -> bool:
        path = Path(raw)
        if any(part in IGNORED_DIRS for part in path.parts):
            return False
        for root, spec in self._ignores.items():
            if spec is not None and path.is_relative_to(root):
                rel = str(path.relative_to(root))
                if rel and spec.match_file(rel):
                    return False
        return True


# The running watches, per event loop (tests run many loops in one process) and set of roots.
_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, ...], _SharedWatch]] = (
    weakref.WeakKeyDictionary())


# Made on first use; ``ensure_watcher`` also starts it.
WATCHER = ServiceKey[Watcher]("watcher", Watcher)


def ensure_watcher(session: Session) -> Watcher:
    watcher = session.service(WATCHER)
    watcher.start()
    return watcher


def _gitignore(root: Path) -> Any:
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)  # git's own rules, as rules.py and lsp/ignore.py use

"""Checkpoints: the files each user turn changed, as they were before it; rewinding restores them.

The file tools already call the read ledger around every write: ``require_fresh(path, …, data, …)``
with the bytes about to be replaced, then ``record_write(path, fingerprint)`` once the new bytes are on
disk. ``ObservedLedger`` (installed as the session's ``ledger`` service) passes those two moments on,
so checkpoints need no hook inside the tools. A path written without a prior ``require_fresh`` was
created by the write (its state before is "absent").

``_sidecar/sessions/rewind {sessionId, toMessageId}`` (``services["rewind"]``) restores every file
changed by that user message's turn and the turns after it, to its state before that turn, and
truncates the conversation to just before that message (store event ``{"type": "truncate"}``). A file
that changed on disk since the agent last wrote it (the user, a formatter, another process) is not
clobbered: it is reported in ``conflicts`` and left as it is. Message ids are returned by each
``session/prompt`` in ``_meta.sidecar.userMessageId``.

Checkpoints live in memory for the life of the session (a reloaded session has none).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.workspace.ledger import Fingerprint, ReadLedger, digest
from sidecar.workspace.textfile import atomic_write

log = logging.getLogger(__name__)

MAX_SNAPSHOT_BYTES = 8 * 1024 * 1024


class ObservedLedger(ReadLedger):
    """The read ledger, telling observers about reads and writes (checkpoints, nested memory)."""

    def __init__(self, session: Any = None) -> None:
        super().__init__(session)
        self.on_read: list[Callable[[Path], None]] = []
        self.before_write: list[Callable[[Path, bytes], None]] = []
        self.on_write: list[Callable[[Path, Fingerprint], None]] = []

    def record_read(self, path: Path, fp: Fingerprint, range_key: str, content: bytes | None = None) -> Any:
        entry = super().record_read(path, fp, range_key, content)
        for observer in self.on_read:
            observer(path)
        return entry

    def require_fresh(self, path: Path, shown: str, data: bytes, st: os.stat_result,
                      data_digest: str | None = None) -> None:
        super().require_fresh(path, shown, data, st, data_digest)
        for observer in self.before_write:
            observer(path, data)

    def rebase_onto(self, path: Path, data: bytes, st: os.stat_result, data_digest: str | None = None) -> None:
        super().rebase_onto(path, data, st, data_digest)
        for observer in self.before_write:
            observer(path, data)

    def record_write(self, path: Path, fp: Fingerprint, content: bytes | None = None) -> None:
        for observer in self.on_write:
            observer(path, fp)
        super().record_write(path, fp, content)

    def clear(self) -> None:
        for path in list(self.paths()):
            self.forget(path)


def _digest(data: bytes) -> str:
    return digest(data)


@dataclass
class Checkpoint:
    message_id: str
    history_length: int  # len(history) before the turn's user message; -1 once compacted away
    before: dict[Path, bytes | None] = field(default_factory=dict)  # None: the file did not exist


class Checkpoints:
    def __init__(self, session: Any) -> None:
        self.session = session
        self.checkpoints: list[Checkpoint] = []
        self._candidates: dict[Path, bytes] = {}
        # Digest (ledger.digest) of what the agent last wrote to each path (to tell a later change by
        # someone else).
        self._written: dict[Path, str] = {}

    def attach(self, ledger: ObservedLedger) -> None:
        ledger.before_write.append(self._before_write)
        ledger.on_write.append(self._on_write)

    def begin_turn(self) -> str:
        cp = Checkpoint(message_id=f"msg_{uuid.uuid4().hex[:12]}", history_length=len(self.session.history))
        self.checkpoints.append(cp)
        self._candidates.clear()
        return cp.message_id

    def compacted(self) -> None:
        for cp in self.checkpoints:
            cp.history_length = -1

    def _before_write(self, path: Path, data: bytes) -> None:
        self._candidates[path] = data

    def _on_write(self, path: Path, fp: Fingerprint) -> None:
        if self.checkpoints:
            cp = self.checkpoints[-1]
            if path not in cp.before:
                before = self._candidates.get(path)  # None: the write created the file
                if before is not None and len(before) > MAX_SNAPSHOT_BYTES:
                    log.warning("not checkpointing %s: larger than %d bytes", path, MAX_SNAPSHOT_BYTES)
                else:
                    cp.before[path] = before
        self._candidates.pop(path, None)
        if fp.full and fp.digest is not None:  # the writer hashed the bytes it wrote: no re-read
            self._written[path] = fp.digest
            return
        try:
            self._written[path] = _digest(path.read_bytes())
        except OSError:
            self._written.pop(path, None)

    async def rewind(self, session: Any, params: dict[str, Any]) -> dict[str, Any]:
        from sidecar.errors import RESOURCE_NOT_FOUND, RpcError, ToolError, agent_error

        target = str(params.get("toMessageId") or "")
        index = next((i for i, cp in enumerate(self.checkpoints) if cp.message_id == target), None)
        if index is None:
            known = ", ".join(cp.message_id for cp in self.checkpoints) or "none"
            raise RpcError(RESOURCE_NOT_FOUND, f"Unknown toMessageId {target!r}; this session's user messages: {known}")
        if session.prompt_task is not None and not session.prompt_task.done():
            raise agent_error("prompt_running", "A prompt is running in this session; cancel it before rewinding")
        restore_files = params.get("files", True) is not False
        restore_conversation = params.get("conversation", True) is not False
        # Earliest state per file across the rewound turns.
        states: dict[Path, bytes | None] = {}
        for cp in self.checkpoints[index:]:
            for path, before in cp.before.items():
                states.setdefault(path, before)
        restored: list[str] = []
        conflicts: list[dict[str, str]] = []
        ledger = session.services.get("ledger")
        if restore_files:
            for path, before in states.items():
                problem = self._conflict(path)
                if problem:
                    conflicts.append({"path": str(path), "reason": problem})
                    continue
                try:
                    if before is None:
                        if path.exists():
                            path.unlink()
                    else:
                        mode = path.stat().st_mode if path.exists() else None
                        atomic_write(path, before, mode, create_parents=True)
                except (OSError, ToolError) as exc:
                    conflicts.append({"path": str(path), "reason": f"could not restore: {exc}"})
                    continue
                restored.append(str(path))
                self._written.pop(path, None)
                if ledger is not None:
                    ledger.forget(path)
        truncated_to: int | None = None
        cp = self.checkpoints[index]
        if restore_conversation:
            if cp.history_length < 0:
                raise agent_error("rewind_unavailable",
                                  "The conversation was compacted since that message, so it cannot be rewound; "
                                  "files were " + ("restored" if restored else "left as they are"))
            truncated_to = cp.history_length
            del session.history[truncated_to:]
            session.log.truncate(truncated_to)
            del self.checkpoints[index:]
        else:
            for later in self.checkpoints[index:]:
                later.before.clear()
        session.audit("rewind", toMessageId=target, restored=restored, conflicts=conflicts)
        if restored or conflicts:
            changed = ", ".join(restored) or "no files"
            session.add_notice(f"The user rewound the session: restored {changed} to earlier contents; "
                               "read them again before editing.")
        return {"restored": restored, "conflicts": conflicts, "historyLength": truncated_to}

    def _conflict(self, path: Path) -> str | None:
        expected = self._written.get(path)
        try:
            current = _digest(path.read_bytes()) if path.exists() else None
        except OSError as exc:
            return f"unreadable: {exc}"
        if current != expected:
            return "changed since the agent last wrote it; left as it is"
        return None

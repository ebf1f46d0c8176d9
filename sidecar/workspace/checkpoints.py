"""Checkpoints: a shadow git snapshot of the workspace before each user turn that may write (taken when its
first such call starts: a turn that only reads takes none) and after every tool call that may write;
rewinding restores the files the agent changed since a user message.

Snapshots (``workspace/shadow.py``) live in a git repository per session under the data dir
(``$XDG_DATA_HOME/sidecar/checkpoints/<session id>/``), with ``checkpoints.json`` beside it: for each
user message its id, the conversation length before it, and its snapshots in order (``turn``: before the
turn; ``tool``: after an Edit, Write, NotebookEdit or Bash call). So checkpoints survive ``session/load``
and a restart, and a Bash ``sed -i``, codemod or generated file is covered like an Edit.

``_sidecar/sessions/rewind {sessionId, toMessageId, files?, conversation?}`` (``CHECKPOINTS``)
and ``_sidecar/sessions/undo_rewind {sessionId, undoId}``
restores, for every path a tool snapshot of that message's turn or a later one changed, the content it
had in the snapshot before that turn (deleting files that did not exist then), and truncates the
conversation to just before that message (store event ``{"type": "truncate"}``). A path that someone
else also changed after the agent (between turns, or since the last snapshot: compared with a snapshot
taken at the rewind) is not clobbered: it is reported in ``conflicts`` and left as it is. What the agent
handed an ACP editor with ``fs/write_text_file`` is recorded per turn (``Checkpoint.editor``: the editor's
text before, the text handed over; kept in files beside ``checkpoints.json``) and handed back the same way
after the disk restore (``restoredInEditor``; docs/orchestration.md). Message ids are
returned by each ``session/prompt`` in ``_meta.sidecar.userMessageId``.

Each writing tool call's snapshot is kept under its tool call id (``Checkpoint.tool_calls``): a rewind or
compare with ``toolCallId`` goes back to the snapshot before that call (files only; the call's completed
update carries ``metadata.restore_point``). ``_sidecar/sessions/compare`` (``Checkpoints.compare``) answers
what the same rewind of the files would change, per file, with the checkpoint's text and the current one,
and writes nothing. Checkpoints beyond
``MAX_CHECKPOINTS`` are dropped (oldest first) and their git objects pruned; repositories of sessions
untouched for 30 days are removed when a session starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.errors import ClientRequestError, ToolError
from sidecar.session import ServiceKey
from sidecar.workspace.ledger import LEDGER, Fingerprint, LedgerEntry, ReadLedger, digest
from sidecar.workspace.shadow import MAX_FILE_BYTES, ShadowError, ShadowRepo, prune_old_repos
from sidecar.workspace.textfile import atomic_write

log = logging.getLogger(__name__)

MAX_CHECKPOINTS = 100
EDITOR_TEXTS = "editor"  # the editor's texts a rewind may hand back, beside checkpoints.json
MAX_REPO_AGE_S = 30 * 24 * 3600
WRITING_TOOLS = frozenset({"Edit", "Write", "NotebookEdit", "Bash"})


class ObservedLedger(ReadLedger):
    """The read ledger, telling observers about reads and writes (checkpoints, nested memory)."""

    def __init__(self, session: Any = None) -> None:
        super().__init__(session)
        self.on_read: list[Callable[[Path], None]] = []
        self.before_write: list[Callable[[Path, bytes], None]] = []
        self.on_write: list[Callable[[Path, Fingerprint], None]] = []
        self.on_editor_change: list[Callable[[Path, str | None, str], None]] = []

    def record_read(self, path: Path, fp: Fingerprint, range_key: str | None, content: bytes | None = None) -> Any:
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

    def record_write(self, path: Path, fp: Fingerprint, content: bytes | None = None) -> LedgerEntry:
        for observer in self.on_write:
            observer(path, fp)
        return super().record_write(path, fp, content)

    def note_editor_change(self, path: Path, before: str | None, after: str) -> None:
        for observer in self.on_editor_change:
            observer(path, before, after)

    def clear(self) -> None:
        for path in list(self.paths()):
            self.forget(path)


@dataclass
class Checkpoint:
    message_id: str
    history_length: int  # len(history) before the turn's user message; -1 once compacted away
    snapshots: list[tuple[str, str]] = field(default_factory=list)  # (kind "turn"|"tool", commit)
    # Files the agent changed through the editor (fs/write_text_file) in this turn: path → (the key of
    # the editor's text before the turn's first change, None for a file the editor did not have; the key
    # of the text the agent last handed over). Keys name files under ``editor/`` beside checkpoints.json.
    editor: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    # Files the agent's file tools wrote on disk in this turn (absolute paths): a rewind that cannot
    # restore one (no snapshot holds it: gitignored, inside a nested repository, too large, outside the
    # work tree) reports it as a conflict instead of leaving it silently.
    written: list[str] = field(default_factory=list)
    # The writing tool calls of this turn: tool call id → the commit of the snapshot taken after it (the
    # snapshot before it in ``snapshots`` is the state a restore to that call goes back to).
    tool_calls: dict[str, str] = field(default_factory=dict)
    # A call that may write ran in this turn: a restore to it with no snapshot is a failed snapshot's, not
    # a turn that left nothing to restore (issue 29: a turn that only reads takes no snapshot).
    wrote: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"messageId": self.message_id, "historyLength": self.history_length,
                                "snapshots": [list(s) for s in self.snapshots]}
        if self.editor:
            data["editor"] = {p: {"before": b, "after": a} for p, (b, a) in self.editor.items()}
        if self.written:
            data["written"] = self.written
        if self.tool_calls:
            data["toolCalls"] = self.tool_calls
        if self.wrote:
            data["wrote"] = True
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Checkpoint:
        editor = {str(p): (None if r.get("before") is None else str(r["before"]), str(r["after"]))
                  for p, r in (data.get("editor") or {}).items()}
        return Checkpoint(str(data["messageId"]), int(data["historyLength"]),
                          [(str(k), str(c)) for k, c in data.get("snapshots", [])], editor,
                          [str(p) for p in data.get("written") or []],
                          {str(k): str(v) for k, v in (data.get("toolCalls") or {}).items()},
                          data.get("wrote") is True)


def checkpoints_root(session: Any) -> Path:
    return Path(session.store.root).parent / "checkpoints"


class Checkpoints:
    def __init__(self, session: Any, root: Path | None = None) -> None:
        self.session = session
        self.dir = (root or checkpoints_root(session)) / session.id
        self.repo = ShadowRepo(self.dir / "git", Path(session.cwd))
        self.checkpoints: list[Checkpoint] = []
        self._seq = 0
        self._lock = asyncio.Lock()
        # The snapshot before the current turn, once started (the first call of the turn that may write
        # starts it), and the checkpoint it is for.
        self._turn_task: asyncio.Future[None] | None = None
        self._turn_of: Checkpoint | None = None
        # Snapshots and prunes still running in the background: a restore or compare waits for them.
        self._pending: set[asyncio.Future[None]] = set()
        # The last files-only restore, until it is undone, another restore replaces it or a turn starts.
        self._undo: _Undo | None = None
        self._load()

    # ---- persistence ---------------------------------------------------------------------
    def _load(self) -> None:
        try:
            data = json.loads((self.dir / "checkpoints.json").read_text())
            self.checkpoints = [Checkpoint.from_json(c) for c in data.get("checkpoints", [])]
            self._seq = int(data.get("seq", 0))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("checkpoints of session %s unreadable (%s); starting afresh", self.session.id, exc)

    def _save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        data = {"workTree": str(self.repo.work_tree), "seq": self._seq,
                "checkpoints": [c.to_json() for c in self.checkpoints]}
        # Not fsynced: the snapshots it names are loose git objects, which git does not fsync either, and
        # the fsyncs ran on the event loop (~17 ms a save, two a turn, serialising concurrent sessions).
        atomic_write(self.dir / "checkpoints.json", json.dumps(data).encode(), durable=False)

    def attach(self, ledger: ObservedLedger) -> None:
        """Record the agent's changes through the editor, and which files its tools wrote (the snapshots
        hold their content; the list names those no snapshot can hold)."""
        ledger.on_editor_change.append(self.editor_change)
        ledger.on_write.append(self.agent_wrote)

    def agent_wrote(self, path: Path, _fp: Fingerprint) -> None:
        if not self.checkpoints or str(path) in self.checkpoints[-1].written:
            return
        self.checkpoints[-1].written.append(str(path))
        try:
            self._save()
        except OSError as exc:
            log.warning("checkpoints could not record the write of %s: %s", path, exc)

    # ---- the editor's texts ----------------------------------------------------------------
    def editor_change(self, path: Path, before: str | None, after: str) -> None:
        """The agent handed the editor ``after`` for ``path`` in the current turn, replacing ``before``.
        The turn keeps the text before its first change and the last one handed over; the texts are kept
        in files (content-addressed, so a text written back and forth is kept once), which survive a
        restart like the snapshots."""
        if not self.checkpoints:
            return
        cp = self.checkpoints[-1]
        key = str(path)
        try:
            first = cp.editor.get(key)
            before_key = first[0] if first is not None else (None if before is None else self._keep_text(before))
            cp.editor[key] = (before_key, self._keep_text(after))
        except (OSError, ToolError) as exc:
            log.warning("the editor's text of %s could not be kept for rewinding: %s", path, exc)
            return
        self._save()

    def _keep_text(self, text: str) -> str:
        data = text.encode("utf-8")
        key = digest(data)
        target = self.dir / EDITOR_TEXTS / key
        if not target.exists():
            atomic_write(target, data, create_parents=True, durable=False)
        return key

    def _kept_text(self, key: str) -> str:
        data: bytes = (self.dir / EDITOR_TEXTS / key).read_bytes()
        return data.decode("utf-8")

    def _drop_unused_texts(self) -> None:
        """Remove the kept texts no checkpoint names, nor the checkpoints an undo would bring back."""
        kept = [c.to_json() for c in self.checkpoints] + (self._undo.checkpoints if self._undo is not None else [])
        used = {k for c in kept for r in (c.get("editor") or {}).values() for k in (r["before"], r["after"])
                if k is not None}
        try:
            names = os.listdir(self.dir / EDITOR_TEXTS)
        except OSError:
            return
        for name in names:
            if name not in used:
                with contextlib.suppress(OSError):
                    os.unlink(self.dir / EDITOR_TEXTS / name)

    # ---- snapshots -----------------------------------------------------------------------
    async def _snapshot(self, kind: str) -> str | None:
        self._seq += 1
        ref = f"refs/sidecar/{self._seq}"
        try:
            return await asyncio.to_thread(self.repo.snapshot, ref, f"{kind} {self._seq}")
        except (ShadowError, OSError, subprocess.SubprocessError) as exc:
            log.warning("checkpoint snapshot failed: %s", exc)
            return None

    async def begin_turn(self) -> str:
        """Open a user turn's checkpoint and return the user message id. Its snapshot (the state before the
        turn) is taken only once the turn may write: when the model starts an Edit, Write or NotebookEdit
        call (``announce``, while its input streams), or before a Bash command that may write
        (``before_tool``). A turn that only reads and answers runs no git at all (issue 29); what others
        changed meanwhile lands in that snapshot, as changes between turns did."""
        cp = Checkpoint(message_id=f"msg_{uuid.uuid4().hex[:12]}", history_length=len(self.session.history))
        if self._undo is not None:  # a turn since a restore may build on it: undoing it could undo that turn
            self._undo = None
            self._drop_unused_texts()  # the texts only that undo would have brought back
        self.checkpoints.append(cp)
        dropped = self.checkpoints[:-MAX_CHECKPOINTS]
        if dropped:
            del self.checkpoints[:-MAX_CHECKPOINTS]
        self._save()
        if dropped:
            self._in_background(self._prune())
        return cp.message_id

    def announce(self, tool_name: str) -> None:
        """The model began a call of ``tool_name`` (its input still streaming): a file-writing tool starts
        the turn's snapshot now, so the call rarely waits for it. Bash is left to ``before_tool``: only
        its command tells whether it may write."""
        if tool_name in WRITING_TOOLS and tool_name != "Bash":
            self._start_turn_snapshot()

    async def before_tool(self, tool_name: str, may_write: bool = True) -> None:
        """A tool that may write waits until the turn's snapshot is taken (starting it if nothing did). A
        call that cannot write (a read-only Bash command: it runs in a read-only sandbox too) neither waits
        nor snapshots."""
        if tool_name not in WRITING_TOOLS or not may_write or not self.checkpoints:
            return
        cp = self.checkpoints[-1]
        if not cp.wrote:
            cp.wrote = True
            self._save()
        task = self._start_turn_snapshot()
        if task is not None and not task.done():
            await asyncio.shield(task)

    def _start_turn_snapshot(self) -> asyncio.Future[None] | None:
        if not self.checkpoints:
            return None
        cp = self.checkpoints[-1]
        if self._turn_of is not cp:
            self._turn_of = cp
            self._turn_task = self._in_background(self._turn_snapshot(cp))
        return self._turn_task

    def _in_background(self, work: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def _settled(self) -> None:
        """Wait for the snapshots and prunes running in the background (a cancelled turn's among them)."""
        if self._pending:
            await asyncio.wait(set(self._pending))

    async def _turn_snapshot(self, cp: Checkpoint) -> None:
        async with self._lock:
            commit = await self._snapshot("turn")
            if commit is not None:
                cp.snapshots.insert(0, ("turn", commit))
                self._save()

    async def after_tool(self, tool_name: str, may_write: bool = True, tool_call_id: str | None = None) -> bool:
        """Snapshot after a tool call that may have written (its changes are the agent's); the call's id
        names it as a restore point (the state before the call). True when it is one."""
        if tool_name not in WRITING_TOOLS or not may_write or not self.checkpoints:
            return False
        # A call that stopped before it ran (refused, invalid) never started the turn's snapshot: taken now,
        # the chain still starts with the turn's, so what changed before it is never read as the agent's.
        task = self._start_turn_snapshot()
        if task is not None and not task.done():
            await asyncio.shield(task)
        async with self._lock:
            commit = await self._snapshot("tool")
            if commit is None:
                return False
            cp = self.checkpoints[-1]
            cp.snapshots.append(("tool", commit))
            if tool_call_id is not None:
                cp.tool_calls[tool_call_id] = commit
            self._save()
            return tool_call_id is not None

    async def _prune(self) -> None:
        async with self._lock:  # what it keeps is read with no snapshot landing meanwhile
            await self._prune_locked()

    async def _prune_locked(self) -> None:
        keep = {c for cp in self.checkpoints for _, c in cp.snapshots}
        try:
            refs = await asyncio.to_thread(self.repo.git, "for-each-ref", "--format=%(refname) %(objectname)",
                                           "refs/sidecar/")
            for line in refs.decode().splitlines():
                name, _, commit = line.partition(" ")
                if commit not in keep:
                    await asyncio.to_thread(self.repo.drop, name)
            await asyncio.to_thread(self.repo.prune)
        except (ShadowError, OSError) as exc:
            log.warning("checkpoint pruning failed: %s", exc)
        self._drop_unused_texts()

    def compacted(self) -> None:
        for cp in self.checkpoints:
            cp.history_length = -1
        self._save()

    # ---- rewind --------------------------------------------------------------------------
    def _restore_point(self, params: dict[str, Any]) -> tuple[int, str | None]:
        """The checkpoint a rewind or compare goes back to: the index of ``toMessageId``'s turn, and
        ``toolCallId`` when it names one of that turn's writing tool calls (the state before it)."""
        from sidecar.errors import RESOURCE_NOT_FOUND, RpcError

        tool_call = params.get("toolCallId")
        if params.get("toMessageId") is None and tool_call is not None:
            index = next((i for i, cp in enumerate(self.checkpoints) if str(tool_call) in cp.tool_calls), None)
            if index is None:
                raise RpcError(RESOURCE_NOT_FOUND, f"Unknown toolCallId {tool_call!r}: no restore point of this "
                                                   "session was taken after it (it wrote nothing, or was restored "
                                                   "past already)")
            return index, str(tool_call)
        target = str(params.get("toMessageId") or "")
        index = next((i for i, cp in enumerate(self.checkpoints) if cp.message_id == target), None)
        if index is None:
            known = ", ".join(cp.message_id for cp in self.checkpoints) or "none"
            raise RpcError(RESOURCE_NOT_FOUND, f"Unknown toMessageId {target!r}; this session's user messages: {known}")
        if tool_call is None:
            return index, None
        calls = self.checkpoints[index].tool_calls
        if str(tool_call) not in calls:
            known = ", ".join(calls) or "none"
            raise RpcError(RESOURCE_NOT_FOUND, f"Unknown toolCallId {tool_call!r} in the turn of {target}; "
                                               f"its writing tool calls with a restore point: {known}")
        return index, str(tool_call)

    async def compare(self, session: Any, params: dict[str, Any]) -> dict[str, Any]:
        """``_sidecar/sessions/compare``: what a rewind of the files to the same point would change, file
        by file (the checkpoint's text and the current one), and what it would leave alone, with the
        reason; nothing is written."""
        index, tool_call = self._restore_point(params)
        await self._settled()
        async with self._lock:
            files, conflicts = await asyncio.to_thread(self._compare_files, index, tool_call)
        return {"files": files, "conflicts": conflicts}

    async def rewind(self, session: Any, params: dict[str, Any]) -> dict[str, Any]:
        from sidecar.errors import INVALID_PARAMS, RpcError, agent_error

        index, tool_call = self._restore_point(params)
        target = self.checkpoints[index].message_id
        if tool_call is not None and params.get("conversation") is True:
            raise RpcError(INVALID_PARAMS, "Invalid params: a rewind to a toolCallId restores files only; "
                                           "send conversation: false, or rewind to the message without toolCallId")
        if session.running_prompt():
            raise agent_error("prompt_running", "A prompt is running in this session; cancel it before rewinding")
        restore_files = params.get("files", True) is not False
        restore_conversation = tool_call is None and params.get("conversation", True) is not False
        cp = self.checkpoints[index]
        restored: list[str] = []
        in_editor: list[str] = []
        conflicts: list[dict[str, str]] = []
        put: list[_Put] = []
        self._undo = None  # any rewind changes what an earlier undo would put back
        await self._settled()
        # What an undo gives back: taken after the turn's snapshot landed in its checkpoint, not before.
        saved = [c.to_json() for c in self.checkpoints]
        if restore_files:
            async with self._lock:
                restored, conflicts = await asyncio.to_thread(self._restore_files, index, tool_call, put)
            if tool_call is None:  # the editor's texts are kept per turn, not per tool call
                # After disk: an editor that reloads a restored file then already holds its earlier text.
                in_editor, editor_conflicts = await self._restore_editor(session, index, set(restored))
                conflicts += editor_conflicts
        ledger = session.find_service(LEDGER)
        if ledger is not None:
            for p in [*restored, *in_editor]:
                ledger.forget(Path(p))
        truncated_to: int | None = None
        if restore_conversation:
            if cp.history_length < 0:
                raise agent_error("rewind_unavailable",
                                  "The conversation was compacted since that message, so it cannot be rewound; "
                                  "files were " + ("restored" if restored else "left as they are"))
            truncated_to = cp.history_length
            del session.history[truncated_to:]
            session.log.truncate(truncated_to)
            del self.checkpoints[index:]
        elif restore_files:  # the turns stay, but their file changes are undone: later rewinds start from here
            for i, later in enumerate(self.checkpoints[index:]):
                if i == 0 and tool_call is not None:  # what the turn did before that call stays
                    cut = later.snapshots.index(("tool", later.tool_calls[tool_call]))
                    later.snapshots = later.snapshots[:cut]
                else:
                    later.snapshots = [s for s in later.snapshots if s[0] == "turn"][:1]
                kept = {c for _, c in later.snapshots}
                later.tool_calls = {t: c for t, c in later.tool_calls.items() if c in kept}
                # What went back to the editor is undone; what could not be stays for a later try.
                later.editor = {p: r for p, r in later.editor.items() if p not in in_editor}
        if not restore_conversation and put:  # the conversation stays: the files can go back as they were
            self._undo = _Undo(f"undo_{uuid.uuid4().hex[:12]}", put, in_editor, saved, target, tool_call)
        self._save()
        self._drop_unused_texts()  # after the undo is made: the records it brings back keep their texts
        # What the client was told (replayed on session/load as the chat's line: server/content.py).
        session.audit("rewind", toMessageId=target, **({"toolCallId": tool_call} if tool_call else {}),
                      files=restore_files, conversation=restore_conversation,
                      restored=restored, restoredInEditor=in_editor, conflicts=conflicts)
        if restored or in_editor or conflicts:
            done = [f"restored {', '.join(restored)} to earlier contents"] if restored else []
            if in_editor:
                done.append(f"put the earlier text of {', '.join(in_editor)} back in the editor")
            session.add_notice(f"The user rewound the session: {' and '.join(done) or 'restored no files'}; "
                               "read them again before editing.")
        result: dict[str, Any] = {"restored": restored, "restoredInEditor": in_editor, "conflicts": conflicts,
                                  "historyLength": truncated_to}
        if self._undo is not None:
            result["undoId"] = self._undo.id
        return result

    async def undo_rewind(self, session: Any, params: dict[str, Any]) -> dict[str, Any]:
        """``_sidecar/sessions/undo_rewind {sessionId, undoId}``: the files the last files-only restore
        changed put back as they were just before it, and the checkpoints as they were; a file changed
        since the restore is left as it is (a conflict), as a rewind leaves one the user changed."""
        from sidecar.errors import RESOURCE_NOT_FOUND, RpcError, agent_error

        undo = self._undo
        if undo is None or undo.id != params.get("undoId"):
            raise RpcError(RESOURCE_NOT_FOUND, "Nothing to undo: that restore was undone already, or a turn or "
                                               "another restore came after it")
        if session.running_prompt():
            raise agent_error("prompt_running", "A prompt is running in this session; cancel it before undoing")
        async with self._lock:
            restored, conflicts = await asyncio.to_thread(self._put_back, undo)
        conflicts += [{"path": p, "where": "editor", "reason": "its earlier text went back to the editor; undo it "
                                                               "there (Edit > Undo)"} for p in undo.in_editor]
        self._undo = None
        self.checkpoints = [Checkpoint.from_json(c) for c in undo.checkpoints]
        self._save()
        ledger = session.find_service(LEDGER)
        if ledger is not None:
            for p in restored:
                ledger.forget(Path(p))
        session.audit("rewind_undone", undoId=undo.id, toMessageId=undo.message_id,
                      **({"toolCallId": undo.tool_call} if undo.tool_call else {}), restored=restored,
                      conflicts=conflicts)
        if restored:
            session.add_notice(f"The user undid the restore: {', '.join(restored)} are back as they were before "
                               "it; read them again before editing.")
        return {"restored": restored, "conflicts": conflicts}

    def _put_back(self, undo: _Undo) -> tuple[list[str], list[dict[str, str]]]:
        restored: list[str] = []
        conflicts: list[dict[str, str]] = []
        for item in undo.files:
            try:
                if _current(item.path) != item.after:
                    conflicts.append({"path": str(item.path), "reason": "changed since the restore; left as it is"})
                    continue
                _put(item.path, item.before)
            except (OSError, ToolError) as exc:
                conflicts.append({"path": str(item.path), "reason": f"could not put it back: {exc}"})
                continue
            restored.append(str(item.path))
        return restored, conflicts

    async def _restore_editor(self, session: Any, index: int,
                              on_disk: set[str]) -> tuple[list[str], list[dict[str, str]]]:
        """Hand the editor back, with ``fs/write_text_file``, the text it held before the agent's first
        change through it in that turn or a later one, for each file whose editor text is still what the
        agent last handed over (compared with ``fs/read_text_file``, line endings loosely). Anything else
        is a conflict with ``where: "editor"`` and the reason; nothing is written then."""
        records: dict[str, tuple[str | None, str]] = {}
        for cp in self.checkpoints[index:]:
            for p, (before, after) in cp.editor.items():
                first = records.get(p)
                records[p] = (first[0] if first is not None else before, after)
        restored: list[str] = []
        conflicts: list[dict[str, str]] = []

        def conflict(p: str, reason: str) -> None:
            conflicts.append({"path": p, "where": "editor", "reason": reason})

        client = session.client
        served = client.fs_capability("readTextFile") and client.fs_capability("writeTextFile")
        for p, (before_key, after_key) in sorted(records.items()):
            if before_key is None:  # the agent created it in the editor
                if not Path(p).exists() and p not in on_disk:
                    conflict(p, "created by the agent in the editor and not saved; an editor cannot be asked to "
                                "close or delete a file, so it was left as it is: close it there without saving")
                continue  # saved: it is on disk, where the snapshots restore (remove) it or report it
            if not served:
                conflict(p, "changed by the agent in the editor, but this client does not offer fs/read_text_file "
                            "and fs/write_text_file, so its earlier text could not be handed back; left as it is")
                continue
            try:
                before, after = self._kept_text(before_key), self._kept_text(after_key)
            except (OSError, UnicodeDecodeError) as exc:
                conflict(p, f"its earlier text in the editor was not kept ({exc}); left as it is")
                continue
            try:
                now = await client.read_text_file(p)
            except ClientRequestError as exc:
                conflict(p, f"the editor could not be asked for its text ({exc}); left as it is")
                continue
            if _loosely(now) == _loosely(before):
                restored.append(p)  # already (the editor reloaded the restored file, or the user undid it)
                continue
            if _loosely(now) != _loosely(after):
                conflict(p, "changed in the editor since the agent last wrote it; left as it is")
                continue
            try:
                await client.write_text_file(p, before)
            except ClientRequestError as exc:
                if exc.kind == "timeout":
                    conflict(p, f"the editor did not confirm taking its earlier text back ({exc}); it may or may "
                                "not have landed: check the file in the editor")
                else:
                    conflict(p, f"the editor did not take its earlier text back ({exc}); left as it is")
                continue
            restored.append(p)
        return restored, conflicts

    def _plan(self, index: int, tool_call: str | None) -> _Plan | None:
        """Which files a restore to the point puts back (``agent``: changed by the agent's tool snapshots
        from there on) and which it leaves alone (``others``: changed by someone else meanwhile, or since
        the last snapshot: compared with a snapshot taken now); None when no snapshot holds the point."""
        ordered = [(i, kind, commit) for i, cp in enumerate(self.checkpoints) for kind, commit in cp.snapshots]
        if tool_call is None:
            base = next((p for p, (i, _, _) in enumerate(ordered) if i >= index), None)
            first = base  # the changes arriving at the turn's snapshot (between turns) are someone else's
        else:
            commit = self.checkpoints[index].tool_calls[tool_call]
            after = next((p for p, (i, kind, c) in enumerate(ordered) if i == index and c == commit), None)
            base = None if after is None or after == 0 else after - 1
            first = after
        if base is None or first is None:
            return None
        agent: set[str] = set()
        others: set[str] = set()
        for p in range(max(first, 1), len(ordered)):
            (agent if ordered[p][1] == "tool" else others).update(self.repo.changed(ordered[p - 1][2], ordered[p][2]))
        self._seq += 1
        now = self.repo.snapshot(f"refs/sidecar/{self._seq}", f"rewind {self._seq}")
        others.update(self.repo.changed(ordered[-1][2], now))
        return _Plan(ordered[base][2], agent, others)

    def _no_point(self, index: int, tool_call: str | None) -> list[dict[str, str]]:
        """Why a restore with no snapshot to go back to changes nothing: no call that may write ran from
        that message on (nothing to restore), or one did and its snapshot failed (reported)."""
        if tool_call is None and not any(cp.wrote or cp.written or cp.editor for cp in self.checkpoints[index:]):
            return []
        what = "tool call" if tool_call is not None else "message"
        return [{"path": str(self.repo.work_tree), "reason": f"no snapshot was taken before that {what}"}]

    def _restore_files(self, index: int, tool_call: str | None = None,
                       put: list[_Put] | None = None) -> tuple[list[str], list[dict[str, str]]]:
        """Restore the files; ``put`` gets each file's content before and after (for an undo)."""
        plan = self._plan(index, tool_call)
        if plan is None:
            return [], self._no_point(index, tool_call)
        restored: list[str] = []
        conflicts: list[dict[str, str]] = []
        root = self.repo.work_tree
        earlier = self.repo.entries(plan.base, sorted(plan.agent - plan.others))
        for rel in sorted(plan.agent):
            path = root / rel
            if rel in plan.others:
                conflicts.append({"path": str(path), "reason": "changed since the agent last wrote it; left as it is"})
                continue
            try:
                before, entry = _current(path), earlier.get(rel)
                _put(path, entry)
                if put is not None:
                    put.append(_Put(path, before, entry))
            except (OSError, ShadowError, ToolError) as exc:
                conflicts.append({"path": str(path), "reason": f"could not restore: {exc}"})
                continue
            restored.append(str(path))
        return restored, conflicts + self._unrestorable(index, plan)

    def _compare_files(self, index: int, tool_call: str | None) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        """Each file a restore would change: ``change`` (``modify``; ``delete``: the agent created it;
        ``create``: it is gone now), the checkpoint's text and the current one (absent for a side that has
        no file, and for a file that is not UTF-8 text: ``binary``)."""
        plan = self._plan(index, tool_call)
        if plan is None:
            return [], self._no_point(index, tool_call)
        files: list[dict[str, Any]] = []
        conflicts: list[dict[str, str]] = []
        root = self.repo.work_tree
        earlier = self.repo.entries(plan.base, sorted(plan.agent - plan.others))
        for rel in sorted(plan.agent):
            path = root / rel
            if rel in plan.others:
                conflicts.append({"path": str(path),
                                  "reason": "changed since the agent last wrote it; a restore leaves it as it is"})
                continue
            then = earlier.get(rel)
            try:
                now = _current(path)
            except OSError as exc:
                conflicts.append({"path": str(path), "reason": f"could not be read: {exc}"})
                continue
            if then == now:
                continue  # written back as it was: a restore changes nothing there
            item: dict[str, Any] = {"path": str(path),
                                    "change": "delete" if then is None else "create" if now is None else "modify"}
            texts = {"checkpoint": then, "current": now}
            try:
                decoded = {k: e[1].decode("utf-8") for k, e in texts.items() if e is not None}
            except UnicodeDecodeError:
                item["binary"] = True
            else:
                item.update(decoded)
            files.append(item)
        return files, conflicts + self._unrestorable(index, plan)

    def _unrestorable(self, index: int, plan: _Plan) -> list[dict[str, str]]:
        """What the agent's tools wrote from that turn on that no snapshot holds: reported, never left
        silently (per turn: the ``written`` list is not kept per tool call)."""
        root = self.repo.work_tree
        conflicts: list[dict[str, str]] = []
        in_editor = {p for cp in self.checkpoints[index:] for p in cp.editor}
        for written in dict.fromkeys(p for cp in self.checkpoints[index:] for p in cp.written):
            path = Path(written)
            written_rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else None
            if written in in_editor or (written_rel is not None
                                        and (written_rel in plan.agent or written_rel in plan.others)):
                continue
            reason = self._unsnapshotted_reason(path, written_rel)
            if reason is not None:
                conflicts.append({"path": written, "reason": reason})
        return conflicts

    def _unsnapshotted_reason(self, path: Path, rel: str | None) -> str | None:
        """Why a file the agent wrote is in no checkpoint (so the rewind cannot restore it); None when the
        snapshots do hold it (it was written back unchanged)."""
        left = "; left as the agent wrote it"
        if rel is None:
            return "outside the session's folder, which checkpoints do not cover" + left
        folder = path.parent
        root = self.repo.work_tree
        while folder != root and folder.is_relative_to(root):
            if (folder / ".git").exists():
                return f"inside the nested git repository {folder}, which checkpoints do not cover" + left
            folder = folder.parent
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                return f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, which checkpoints do not keep" + left
        except OSError:
            pass
        try:
            ignored = self.repo.git("check-ignore", "--no-index", "--", rel, check=False).strip() != b""
        except (OSError, subprocess.SubprocessError):
            ignored = False
        if ignored:
            return "ignored by .gitignore, so no checkpoint holds it" + left
        return None


@dataclass
class _Put:
    """A file a restore wrote: its content before and what the restore put there (None: no file)."""

    path: Path
    before: tuple[str, bytes] | None
    after: tuple[str, bytes] | None


@dataclass
class _Undo:
    id: str
    files: list[_Put]
    in_editor: list[str]  # handed back to the editor (fs/write_text_file): undone there, not by us
    checkpoints: list[dict[str, Any]]  # the checkpoints before the restore (it cut their later snapshots)
    message_id: str  # what the restore went back to: the message, and the tool call when it named one
    tool_call: str | None = None


@dataclass
class _Plan:
    base: str  # the snapshot a restore goes back to
    agent: set[str]  # paths (relative, posix) the agent's tools changed since
    others: set[str]  # paths someone else changed since (left alone)


def _current(path: Path) -> tuple[str, bytes] | None:
    """(git mode, bytes) of the file as it is now, as a snapshot would hold it; None when absent."""
    if path.is_symlink():
        return "120000", os.fsencode(os.readlink(path))
    if not path.is_file():
        return None
    mode = "100755" if path.stat().st_mode & 0o100 else "100644"
    return mode, path.read_bytes()


def _loosely(text: str) -> str:
    return text.replace("\r\n", "\n")


def _put(path: Path, entry: tuple[str, bytes] | None) -> None:
    """Make ``path`` what the snapshot held (``None``: remove it; folders are left, git does not track
    them)."""
    if entry is None:
        if path.is_symlink() or path.exists():
            path.unlink()
        return
    mode, data = entry
    if mode == "120000":
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        os.symlink(os.fsdecode(data), path)
        return
    atomic_write(path, data, 0o100755 if mode == "100755" else 0o100644, create_parents=True)


# Provided at session start (``sidecar.features``); the core's rewind and compare methods use it.
CHECKPOINTS = ServiceKey[Checkpoints]("checkpoints")


def start_checkpoints(session: Any) -> Checkpoints:
    """The session's checkpoints (reloaded from the data dir); old sessions' repositories pruned."""
    cps = Checkpoints(session)
    try:
        prune_old_repos(cps.dir.parent, MAX_REPO_AGE_S, keep=session.id)
    except OSError:
        pass
    return cps

"""The editor's files: Read, Edit and Write through ACP ``fs/read_text_file`` / ``fs/write_text_file``.

When the ACP client advertises ``clientCapabilities.fs.readTextFile``, Read takes a text file's content
from the editor, so the model sees the unsaved buffer the user sees; with ``fs.writeTextFile`` as well,
Edit and Write hand the new text to the editor instead of writing disk, so the change lands in the buffer
and on its undo stack (whether and when it is saved is the editor's business). ``fs.writeTextFile`` alone
changes nothing (an edit through the editor needs its text). Governance is unchanged: the path step,
permission rules and the review run first, exactly as for disk. What the model is told depends on the
offer (``unsaved_read_note``, ``not_saved_note``, ``refuse_disk_write_over_unsaved``; docs/files.md, "The
four offers").

Decisions (docs/files.md, "The editor's files"):

* Read asks for the whole text (no ``line``/``limit``) and slices locally: line numbers, the total line
  count, negative offsets and the staleness ledger all need the whole text, and a text file of
  reasonable size (disk size up to ``STREAM_THRESHOLD``) costs one message. What is not text — images,
  PDFs, notebooks, binary files — and files over ``STREAM_THRESHOLD`` are read from disk as before
  (``fs/read_text_file`` carries text only).
* The ledger records what the editor served (``client_fingerprint``); Edit/Write compare it with the
  editor's current text, read again through ``fs/read_text_file``, and again after the review, so a
  buffer that changed meanwhile voids the approval. A file Read from disk is written to disk.
* Line endings are the editor's: the new text keeps the line endings of the text the editor served.
* A failed request (a JSON-RPC error, no answer within ``CLIENT_FS_TIMEOUT``, the connection gone, an
  answer without text) is a ``ToolError`` for the model saying what happened and what to do next;
  nothing is written to disk instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from sidecar.errors import ClientRequestError, ToolError
from sidecar.tools.context import ToolContext
from sidecar.tools.files.common import ledger_of
from sidecar.workspace.ledger import (
    STREAM_THRESHOLD,
    StaleError,
    client_fingerprint,
    digest,
    holds_client_text,
    stat_fingerprint,
)
from sidecar.workspace.textfile import BinaryFileError, decode


def client_reads(ctx: ToolContext) -> bool:
    """Whether text files are read through the editor (``fs.readTextFile`` offered)."""
    return ctx.session.client.fs_capability("readTextFile")


def in_editor_only(ctx: ToolContext, path: Path) -> bool:
    """``path`` is not on disk but the agent knows it from the editor: it created it there (Write through
    the editor) and the editor has not saved it. Read, Edit and Write treat it as an existing file."""
    if path.exists() or not client_takes_edits(ctx):
        return False
    entry = ledger_of(ctx).get(path)
    return entry is not None and entry.fingerprint.source == "client"


def client_takes_edits(ctx: ToolContext) -> bool:
    """Whether Edit and Write go to the editor at all: it offers both ``fs.readTextFile`` and
    ``fs.writeTextFile``. Writing needs reading: an edit is matched against, and checked with, the text the
    editor holds; a client that only writes would have its unsaved text replaced unseen, so its files are
    written on disk as for a client without ``fs`` (docs/files.md)."""
    client = ctx.session.client
    return client.fs_capability("readTextFile") and client.fs_capability("writeTextFile")


def client_writes(ctx: ToolContext, path: Path) -> bool:
    """Whether Edit/Write of ``path`` go through the editor: it takes edits (``client_takes_edits``) and
    the file is new or the agent's view of it came from the editor (a file read from disk is written to
    disk)."""
    if not client_takes_edits(ctx):
        return False
    entry = ledger_of(ctx).get(path)
    if entry is not None:
        return entry.fingerprint.source == "client"
    return not path.exists()


async def read_from_client(ctx: ToolContext, path: Path, who: str) -> str:
    """The editor's text of ``path`` (``fs/read_text_file``, whole); a ToolError when it cannot answer."""
    try:
        return await ctx.session.client.read_text_file(str(path))
    except ClientRequestError as exc:
        raise ToolError(_failure("read", who, exc) + " Nothing was read. Try again; if it keeps failing, "
                        "ask the user to check the file in the editor.") from None


async def write_to_client(ctx: ToolContext, path: Path, who: str, text: str, before: str | None) -> None:
    """Hand ``text`` to the editor as the new content of ``path`` (``fs/write_text_file``) and record it
    in the ledger as what the agent knows of the file; a ToolError when the editor does not take it.
    ``before``: the editor's text it replaces, as served just before (None: a new file); the turn's
    checkpoint keeps it (``note_editor_change``), so a rewind can hand it back."""
    try:
        await ctx.session.client.write_text_file(str(path), text)
    except ClientRequestError as exc:
        if exc.kind == "timeout":  # it may have landed: recorded, a rewind compares before writing back
            ledger_of(ctx).note_editor_change(path, before, text)
            raise ToolError(f"The editor did not confirm writing {who} ({exc.method}: {exc.detail}), so the "
                            "change may or may not have landed. Read the file again to see its content "
                            "before trying again.") from None
        raise ToolError(_failure("write", who, exc) + " Nothing was changed. Read the file again, then redo "
                        "the change; if it keeps failing, ask the user.") from None
    content = text.encode("utf-8")
    ledger = ledger_of(ctx)
    ledger.note_editor_change(path, before, text)
    entry = ledger.record_write(path, client_fingerprint(content), content)
    disk = stat_fingerprint(path)
    entry.disk_seen = (disk.mtime_ns, disk.size) if disk is not None else None


def unsaved_read_note(ctx: ToolContext, who: str) -> str:
    """Read's note under a text the editor serves with changes that are not on disk: where Edit and Write
    land depends on whether the editor takes edits."""
    if client_takes_edits(ctx):
        return (f"Note: this is {who} as it is open in the editor, with changes that are not saved to disk. "
                "Edit and Write change it in the editor; commands you run (Bash) see the version on disk "
                "until it is saved.")
    return (f"Note: this is {who} as it is open in the editor, with changes that are not saved to disk. Edit "
            "and Write change the file on disk, not this text, and commands you run (Bash) see the version "
            "on disk: ask the user to save the file before you change it.")


def not_saved_note(path: Path, who: str, text: str) -> str:
    """After a write through the editor: a note when the disk does not hold ``text`` (the editor has not
    saved it), since commands (Bash) see the disk; "" when it does (an editor that saves at once)."""
    try:
        if _disk_holds(path, text):
            return ""
    except FileNotFoundError:
        return (f"\n\nNote: the editor has not saved {who} to disk yet; commands you run (Bash) do not see it "
                "until it is saved.")
    except OSError:
        pass  # unreadable: said as not saved
    return (f"\n\nNote: the editor has not saved {who} to disk yet; commands you run (Bash) see the version on "
            "disk until it is saved.")


async def refuse_disk_write_over_unsaved(ctx: ToolContext, path: Path, who: str, tool: str) -> None:
    """A client that serves files but takes no edits: Edit/Write of a file the agent saw in the editor go
    to disk, so they are refused while the editor holds changes that are not on disk (they would be
    overwritten there, or the editor's text silently differ from the file), as for a dirty LSP buffer."""
    if client_takes_edits(ctx) or not client_reads(ctx):
        return
    entry = ledger_of(ctx).get(path)
    if entry is None or entry.fingerprint.source != "client" or not path.is_file():
        return
    text = await read_from_client(ctx, path, who)
    try:
        if _disk_holds(path, text) is not False:  # held, or not known (too large to compare)
            return
    except OSError:
        return  # the disk path reports it
    raise ToolError(f"{who} has changes in the editor that are not saved to disk, and your {tool} would change "
                    "the file on disk (this editor does not take edits from the agent), so nothing was "
                    "written. Ask the user to save the file (or revert its changes) in the editor, then Read "
                    "it again and redo the change.")


def _disk_holds(path: Path, text: str) -> bool | None:
    """Whether the file on disk holds the editor's ``text`` (line endings loosely, as the ledger compares);
    None when the file is too large to compare. FileNotFoundError and other OSErrors reach the caller."""
    if os.stat(path).st_size > STREAM_THRESHOLD:
        return None
    return holds_client_text(client_fingerprint(text.encode("utf-8")), path.read_bytes())


def _failure(verb: str, who: str, exc: ClientRequestError) -> str:
    if exc.kind == "error":
        return f"The editor could not {verb} {who}: {exc.method} failed ({exc.detail})."
    if exc.kind == "gone":
        return f"The editor could not {verb} {who}: its connection closed."
    if exc.kind == "timeout":
        return f"The editor could not {verb} {who}: {exc.method} got {exc.detail}."
    return f"The editor could not {verb} {who}: {exc.method} gave {exc.detail}."


def client_staleness(ctx: ToolContext, path: Path, who: str, text: str) -> tuple[StaleError, str | None] | None:
    """Compare the editor's current ``text`` with what the agent saw of ``path``.

    None when it is what the agent saw; else the StaleError to raise and the text the agent saw, when it
    was kept (an Edit may then be rebased onto the change, ``sidecar.workspace.rebase``). Raises the
    "not read" error when the agent has not read the file."""
    ledger = ledger_of(ctx)
    entry = ledger.get(path)
    if entry is None:
        raise ToolError(f"{who} has not been read in this session. Read it first (Read tool), then make the "
                        "change.")
    content = text.encode("utf-8")
    if entry.fingerprint.size == len(content) and entry.fingerprint.digest == digest(content):
        return None
    stale = StaleError(f"{who} was modified since read (its text in the editor changed: the user, a formatter "
                       "or another process). Read it again, then redo the change against its current content.")
    seen = ledger.seen_content(path)
    try:
        return stale, decode(seen)[0] if seen is not None else None
    except BinaryFileError:
        return stale, None


async def require_unchanged_during_review(ctx: ToolContext, path: Path, who: str, text: str, tool: str) -> None:
    """The editor's text must still be ``text`` after the review: the approval was for that version."""
    if await read_from_client(ctx, path, who) != text:
        raise ToolError(f"{who} was changed in the editor while your {tool} was being reviewed, so nothing was "
                        "applied: the approval was for a version that no longer exists. Read the file again "
                        "and propose the change against its current content.")


def record_client_read(ctx: ToolContext, path: Path, key: str | None, text: str,
                       disk: tuple[int, int] | None) -> None:
    """The agent saw ``text`` (the editor's) of ``path``, range ``key`` (None: no line of it)."""
    content = text.encode("utf-8")
    entry = ledger_of(ctx).record_read(path, client_fingerprint(content), key, content)
    entry.disk_seen = disk

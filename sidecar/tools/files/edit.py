"""Edit: an exact string replacement, under optimistic concurrency (docs/contract.md §5.1, mechanism two).

The file must have been Read in this session and be unchanged since (ledger fingerprint); old_string
must occur exactly once unless replace_all. Encoding, BOM, CRLF and mode are kept. The user reviews
the change (sidecar.permissions.review) before anything is written; what lands is what they approved.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.base import TextBlock, ToolInput, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.files.buffer_edit import propose_buffer_edit
from sidecar.tools.files.client_files import (
    client_staleness,
    client_writes,
    in_editor_only,
    not_saved_note,
    read_from_client,
    refuse_disk_write_over_unsaved,
    require_unchanged_during_review,
    write_to_client,
)
from sidecar.tools.files.common import (
    Landing,
    ledger_of,
    read_bytes,
    refuse_if_dirty,
    resolved,
    shown,
    snippet,
    start_watching,
    still_unchanged,
)
from sidecar.tools.files.file_tool import FileTool, Proposal, creation
from sidecar.tools.lsp.diagnostics import diagnostics_snapshot, with_new_diagnostics
from sidecar.workspace.buffers import buffers_for
from sidecar.workspace.diffs import common_prefix, common_suffix
from sidecar.workspace.ledger import CONTENT_FILE_MAX, ReadLedger, StaleError, digest_soon, fingerprint_of
from sidecar.workspace.rebase import MARGIN, rebase_edit
from sidecar.workspace.textfile import (
    BinaryFileError,
    Encoding,
    LateWrite,
    TempFile,
    append_late,
    check_encodable,
    commit_temp,
    decode,
    discard_temp,
    encode,
    from_model,
    late_write,
    open_old,
    write_temp,
)

MAX_LISTED = 20


class EditInput(ToolInput):
    """Performs an exact string replacement in a file: old_string becomes new_string.

    - Read first: you must have Read the file in this session. If it changed since (the user, a
      formatter, a command you ran), Read it again; the edit is refused otherwise.
    - old_string must match the file exactly: the same characters, indentation (tabs or spaces, as
      many as after the tab of Read's line prefix), and line breaks. Copy it from the Read output
      without the line-number prefix: the spaces, number and tab before each line are never part of
      the file, so never part of old_string or new_string.
    - old_string must occur exactly once. If it occurs more often the edit is refused: include more
      surrounding lines to make it unique, or set replace_all to change every occurrence (renaming a
      variable or a string throughout the file).
    - Keep old_string small but unique: the lines that change plus one or two around them, not a
      whole function. Several changes to one file are several Edit calls (one after another; each
      needs the file as the previous edit left it).
    - new_string must differ from old_string; to delete text, make new_string empty or keep the
      surrounding lines only. The file's encoding, BOM and line endings are kept.
    - Prefer Edit over Write for any change to an existing file: it sends only the change, and the user
      reviews a small diff. Prefer editing existing files over creating new ones.
    """

    file_path: str = Field(description="The absolute path to the file to modify")
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(description="The text to replace it with (must be different from old_string)")
    replace_all: bool = Field(default=False, description="Replace all occurrences of old_string (default false)")


def line_numbers(text: str, needle: str, limit: int = MAX_LISTED) -> tuple[int, list[int]]:
    """How often ``needle`` occurs in ``text`` and the 1-based lines of the first ``limit`` occurrences."""
    count = text.count(needle)
    lines: list[int] = []
    pos = line = 0
    last = 0
    idx = text.find(needle)
    while idx >= 0 and len(lines) < limit:
        line += text.count("\n", last, idx)
        last = idx
        lines.append(line + 1)
        pos = idx + max(1, len(needle))
        idx = text.find(needle, pos)
    return count, lines


class EditTool(FileTool[EditInput]):
    name = "Edit"
    Input = EditInput
    verb = "Edit"

    async def validate(self, inp: EditInput, ctx: ToolContext) -> None:
        if inp.old_string == inp.new_string:
            raise ToolError("old_string and new_string are identical, so there is nothing to change. "
                            "Give the new text in new_string.")
        r = resolved(ctx, inp.file_path)
        if r.kind == "dir":
            raise ToolError(f"{inp.file_path} is a directory; Edit changes files.")
        if not r.exists and inp.old_string != "" and not in_editor_only(ctx, r.path):
            raise ToolError(f"File does not exist: {inp.file_path}. The current working directory is "
                            f"{ctx.cwd}. To create a file use Write.")

    async def propose(self, inp: EditInput, ctx: ToolContext) -> Proposal:
        path = resolved(ctx, inp.file_path).path
        who = shown(ctx, path)
        start_watching(ctx)
        if client_writes(ctx, path):  # the editor's text, through fs/read_text_file + fs/write_text_file
            return await _propose_in_editor(ctx, path, who, inp)
        await refuse_disk_write_over_unsaved(ctx, path, who, "Edit")
        if buffers_for(ctx.session).is_dirty(path) and ctx.session.client.can_edit_buffers():
            # into the editor's buffer, disk untouched
            return propose_buffer_edit(ctx, path, who, inp.old_string, inp.new_string, inp.replace_all)
        refuse_if_dirty(ctx, path)
        ledger = ledger_of(ctx)
        if not path.exists():  # old_string "" on a missing file: create it
            _refuse_vanished(inp)
            return creation(ctx, self.name, path, who, inp.new_string, in_editor=False,
                            done=lambda final: f"Created {who}.")
        data, st = read_bytes(path)
        # The digest of the bytes (for the staleness check) is computed in a thread while they are
        # decoded and searched; the staleness verdict still comes before any search error.
        hashing = digest_soon(data) if ledger.wants_digest(path, st) else None
        change: _Change | ToolError
        try:
            change = _replace(who, data, inp)
        except ToolError as exc:
            change = exc
        finally:
            data_digest = await hashing if hashing is not None else None
        outside = ""
        try:
            ledger.require_fresh(path, who, data, st, data_digest)
        except StaleError as stale:
            # Changed since read: land the edit anyway when the change is provably elsewhere.
            if isinstance(change, ToolError):
                raise stale from None
            outside = _rebase(ledger, path, who, data, st, data_digest, change, inp, stale)
        if isinstance(change, ToolError):
            raise change
        early: _Writing | None = None
        if change.splice is not None and ctx.session.mode in ("acceptEdits", "bypassPermissions"):
            # These modes apply edits without a question (unless a rule says otherwise), so the temp file is
            # written and fsynced from the old buffer while the new text is built and reviewed; it is
            # discarded if the review refuses or something else is to land.
            early = _start_writing(path, st, _spliced(data, change))
        try:
            change.materialise()
        except BaseException:
            if early is not None:
                await early.discard()
            raise
        approved = change

        async def land(landing: Landing) -> ToolOutput:
            try:
                # The file's errors before the change (so the result names the new ones): only once
                # approved, since asking a language server can run programs (docs/lsp.md "What a
                # repository can run").
                before = await diagnostics_snapshot(ctx, path)
            except BaseException:
                if early is not None:
                    await early.discard()
                raise
            summary = "\n\n".join(x for x in (outside, landing.summary) if x)
            return await with_new_diagnostics(ctx, path, before, await _land(
                ctx, path, who, st, approved, landing.final_text, summary, landing.editor_content, data,
                early))

        return Proposal(path, change.text, change.new_text, land,
                        release=early.discard if early is not None else None)


def _refuse_vanished(inp: EditInput) -> None:
    """A missing file may only be created (old_string ""); another one vanished since validate."""
    if inp.old_string != "":  # deleted, or its folder swapped
        raise ToolError(f"File does not exist: {inp.file_path} (it disappeared just now). Nothing was "
                        "written. Check the path, then call again.")


def _rebase(ledger: ReadLedger, path: Path, who: str, data: bytes, st: os.stat_result,
            data_digest: str | None, change: _Change, inp: EditInput, stale: StaleError) -> str:
    """Accept a stale file when the outside change and the edit are independent (workspace/rebase.py):
    returns what to tell the model about the outside change; raises ``stale`` (with the reason) if not."""
    base = ledger.seen_content(path)
    if base is None:
        raise stale
    try:
        base_text, base_enc = decode(base)
    except BinaryFileError:
        raise stale from None
    if base_enc != change.enc:
        raise ToolError(f"{stale} (Its encoding or line endings changed: {base_enc.describe()} → "
                        f"{change.enc.describe()}.)") from None
    old = from_model(inp.old_string, change.enc)
    rebased = rebase_edit(base_text, change.text, old, inp.replace_all, who)
    if rebased is None:
        raise ToolError(f"{stale} (The change is within {MARGIN} lines of the text you are replacing, or "
                        "changed how often old_string occurs, so your edit cannot be applied on top of it "
                        "safely.)") from None
    ledger.rebase_onto(path, data, st, data_digest)
    return _outside_note(who, rebased.shown, change.enc)


def _outside_note(who: str, shown: str, enc: Encoding) -> str:
    """What to tell the model about an outside change its edit was applied on top of ("" if none)."""
    if not shown:
        return ""
    shown_diff = shown.replace("\r\n", "\n") if enc.crlf else shown
    return (f"Note: {who} had been changed since you read it (by the user, a formatter or another "
            f"process), away from the lines you edited, so your edit was applied on top of that change. "
            f"The file now also has this change you did not make (line numbers of the version you "
            f"read → now):\n```diff\n{shown_diff}```")


async def _propose_in_editor(ctx: ToolContext, path: Path, who: str, inp: EditInput) -> Proposal:
    """Edit the editor's text of ``path``: matched against what ``fs/read_text_file`` serves now, checked
    against what the agent read (rebased onto a change elsewhere, as on disk), reviewed, checked again,
    then handed over with ``fs/write_text_file``. Disk is not written (docs/files.md)."""
    diagnose = ctx.session.has_client_capability("diagnostics")  # the editor's servers see its buffers
    if not path.exists() and not in_editor_only(ctx, path):  # old_string "" on a missing file: create it
        _refuse_vanished(inp)
        return creation(ctx, "Edit", path, who, inp.new_string, in_editor=True,
                        done=lambda final: f"Created {who}.")
    text = await read_from_client(ctx, path, who)
    stale = client_staleness(ctx, path, who, text)
    try:
        change = _replace(who, text.encode("utf-8"), inp)
    except ToolError:
        if stale is not None:  # the staleness verdict comes first, as on disk
            raise stale[0] from None
        raise
    outside = ""
    if stale is not None:
        error, base = stale
        if base is None:
            raise error
        rebased = rebase_edit(base, change.text, from_model(inp.old_string, change.enc), inp.replace_all, who)
        if rebased is None:
            raise ToolError(f"{error} (The change is within {MARGIN} lines of the text you are replacing, or "
                            "changed how often old_string occurs, so your edit cannot be applied on top of it "
                            "safely.)") from None
        outside = _outside_note(who, rebased.shown, change.enc)
    change.materialise()

    async def land(landing: Landing) -> ToolOutput:
        before = await diagnostics_snapshot(ctx, path) if diagnose else None  # only once approved
        await require_unchanged_during_review(ctx, path, who, text, "Edit")
        await write_to_client(ctx, path, who, landing.final_text, text)
        head = f"The file {who} has been updated"
        if change.replaced > 1:
            head += f" ({change.replaced} occurrences replaced)"
        summary = "\n\n".join(x for x in (outside, landing.summary) if x)
        out = ToolOutput(blocks=[TextBlock(f"{head}. Here's the result of running `cat -n` on a snippet of the "
                                           f"edited file:\n{_result_snippet(change, landing.final_text)}"
                                           + not_saved_note(path, who, landing.final_text) + _extra(summary))],
                         editor_content=landing.editor_content, metadata={"subject": str(path), "source": "editor"})
        return await with_new_diagnostics(ctx, path, before, out) if diagnose else out

    return Proposal(path, change.text, change.new_text, land)


@dataclass
class _Change:
    text: str  # the file's text (raw line endings)
    new_text: str
    enc: Encoding
    replaced: int
    # Where the new text differs: new_text[start:end] replaced text[start:old_end] (None: unknown).
    start: int | None
    end: int | None
    # The new bytes as (bytes before, replacement, bytes after) byte offsets into the file's bytes, when
    # characters and bytes line up (Latin-1, or ASCII text in UTF-8): then they are written from the old
    # buffer instead of encoding the whole new text.
    splice: tuple[int, str, int] | None = None
    # (old, new) while new_text is not built yet (see ``materialise``).
    pending: tuple[str, str] | None = None

    def materialise(self) -> None:
        if self.pending is not None:
            old, new = self.pending
            self.new_text = self.text.replace(old, new, 1)
            self.pending = None


class _Writing:
    """A temp file being written + fsynced in a thread, and the digest of its bytes in another."""

    def __init__(self, path: Path, st: os.stat_result, data: bytes | list[bytes | memoryview]) -> None:
        loop = asyncio.get_running_loop()
        self.data = data
        self.writing = loop.run_in_executor(None, write_temp, path, data, st.st_mode)
        self.hashing = digest_soon(data)

    async def result(self) -> tuple[TempFile, str]:
        try:
            tmp = await self.writing
        finally:
            new_digest = await self.hashing
        return tmp, new_digest

    async def discard(self) -> None:
        with contextlib.suppress(Exception):
            discard_temp(await self.writing)
        with contextlib.suppress(Exception):
            await self.hashing


def _start_writing(path: Path, st: os.stat_result, data: bytes | list[bytes | memoryview]) -> _Writing:
    return _Writing(path, st, data)


def _spliced(old_data: bytes, change: _Change) -> list[bytes | memoryview]:
    """The new bytes as pieces: the old buffer around the replacement (no copy of the file)."""
    assert change.splice is not None
    a, new, b = change.splice
    view = memoryview(old_data)
    return [view[:a], new.encode(change.enc.name), view[b:]]


def _replace(who: str, data: bytes, inp: EditInput) -> _Change:
    """The proposed text: one decode, one search (line numbers only for the error messages)."""
    try:
        text, enc = decode(data)
    except BinaryFileError:
        raise ToolError(f"{who} is a binary file; Edit changes text files only.") from None
    old = from_model(inp.old_string, enc)
    new = from_model(inp.new_string, enc)
    check_encodable(new, enc, who)  # before the question: a Latin-1 file cannot take U+2192
    if old == "":
        if text.strip():
            raise ToolError(f"old_string is empty, but {who} is not empty. Give the exact text to replace.")
        return _Change(text, new, enc, 1, None, None)
    idx = text.find(old)
    if idx < 0:
        hint = ""
        if enc.crlf is False and "\r\n" in text and "\n" in inp.old_string:
            hint = " The file mixes CRLF and LF line endings; match them exactly."
        raise ToolError(f"old_string was not found in {who} (0 matches). It must match the file "
                        "exactly, including whitespace and indentation. Read the file again and copy "
                        f"the text from it.{hint}")
    if inp.replace_all:
        count = text.count(old)
        if count > 1:
            return _Change(text, text.replace(old, new), enc, count, None, None)
    elif text.find(old, idx + len(old)) >= 0:
        count, where = line_numbers(text, old)
        listed = ", ".join(str(n) for n in where) + (" …" if count > len(where) else "")
        raise ToolError(f"old_string occurs {count} times in {who} (lines {listed}); it must occur "
                        "exactly once. Include more surrounding lines to make it unique, or set "
                        "replace_all to true to change every occurrence.")
    if enc.name == "latin-1" or (enc.name == "utf-8" and text.isascii()):  # isascii is O(1) on str
        b = len(enc.bom) + idx
        # The new text is built later (``materialise``), once the write of these bytes has started.
        return _Change(text, "", enc, 1, idx, idx + len(new), (b, new, b + len(old)), (old, new))
    return _Change(text, text.replace(old, new, 1), enc, 1, idx, idx + len(new))


async def _land(ctx: ToolContext, path: Path, who: str, st: os.stat_result, change: _Change, final: str,
                summary: str, editor_content: list[dict[str, Any]], old_data: bytes,
                early: _Writing | None = None) -> ToolOutput:
    def stale() -> ToolError:
        return ToolError(f"{who} was modified since read (it changed while this edit was being prepared). "
                         "Nothing was written. Read it again, then redo the change.")

    enc = change.enc
    if early is not None and final is not change.new_text:  # the user changed it: those bytes are void
        await early.discard()
        early = None
    try:
        if not still_unchanged(path, st):
            raise stale()
        refuse_if_dirty(ctx, path)
    except BaseException:
        if early is not None:
            await early.discard()
        raise
    # The temp file is written and fsynced in a thread while the new bytes are hashed in another and the
    # result snippet is made here; then the stat is checked once more and the temp file renamed in place.
    # When the text landing is the proposal and characters line up with bytes, the new bytes are written
    # as pieces of the old buffer (no encode of the whole text).
    if early is None:
        early = _start_writing(path, st, _spliced(old_data, change) if final is change.new_text
                               and change.splice is not None else encode(final, enc))
    pieces = early.data
    loop = asyncio.get_running_loop()
    try:
        shown_snippet = _result_snippet(change, final)
    except BaseException:
        await early.discard()
        raise
    tmp, new_digest = await early.result()
    # Held across the rename: a write another process makes to the old inode after this check (an
    # appending log, an editor's save) is seen there, and kept or reported below.
    old_fd = open_old(path, st)
    if not still_unchanged(path, st):
        discard_temp(tmp)
        if old_fd is not None:
            os.close(old_fd)
        raise stale()
    ledger = ledger_of(ctx)
    with ledger.landing(path):  # the watcher may see the rename before record_write below
        try:
            written = await loop.run_in_executor(None, commit_temp, tmp, path)
        except BaseException:
            if old_fd is not None:
                os.close(old_fd)
            raise
        late = late_write(old_fd, st, old_data) if old_fd is not None else None
        if late is not None:
            note = _keep_late_write(ctx, path, who, late)
            summary = f"{summary}\n\n{note}" if summary else note
        kept: bytes | None = None
        if isinstance(pieces, bytes):
            kept = pieces if len(pieces) <= CONTENT_FILE_MAX else None
        elif sum(len(p) for p in pieces) <= CONTENT_FILE_MAX:  # kept for a later rebase (ledger budget)
            kept = b"".join(pieces)
        ledger.record_write(path, fingerprint_of(path, b"", written, data_digest=new_digest), kept)
    head = f"The file {who} has been updated"
    if change.replaced > 1:
        head += f" ({change.replaced} occurrences replaced)"
    text = (f"{head}. Here's the result of running `cat -n` on a snippet of the edited file:\n"
            f"{shown_snippet}" + _extra(summary))
    return ToolOutput(blocks=[TextBlock(text)], editor_content=editor_content,
                      metadata={"subject": str(path), "encoding": enc.describe()})


def _keep_late_write(ctx: ToolContext, path: Path, who: str, late: LateWrite) -> str:
    """Another process wrote to the file between the last check and the rename: an append is added to the
    new file; any other change is saved beside the session's tool output, and the model told where."""
    if late.tail is not None:
        try:
            append_late(path, late.tail)
            return (f"Another process appended {len(late.tail)} bytes to {who} while this edit was being "
                    "saved; they were kept at the end of the file. Read it before editing it again.")
        except OSError as exc:
            data, reason = late.tail, f" (its appended bytes could not be added back: {exc.strerror})"
    else:
        data, reason = late.content or b"", ""
    saved = ctx.session.store.tool_output_dir(ctx.session.id) / f"{path.name}.{uuid.uuid4().hex[:8]}.concurrent"
    saved.write_bytes(data)
    return (f"Another process changed {who} while this edit was being saved{reason}; its version is not in "
            f"the file now and was saved to {saved}. Compare it with the file and tell the user.")


def _result_snippet(change: _Change, final: str) -> str:
    """``cat -n`` lines around what changed (model line endings)."""
    enc = change.enc
    if final is change.new_text and change.start is not None and change.end is not None and not enc.crlf:
        return snippet(final, change.start, change.end)  # the place is known: no full compare
    model_final = final.replace("\r\n", "\n") if enc.crlf else final
    model_old = change.text.replace("\r\n", "\n") if enc.crlf else change.text
    a = common_prefix(model_old, model_final)
    b = len(model_final) - common_suffix(model_old, model_final, min(len(model_old), len(model_final)) - a)
    return snippet(model_final, a, max(a, b))


def _extra(summary: str) -> str:
    return f"\n\n{summary}" if summary else ""

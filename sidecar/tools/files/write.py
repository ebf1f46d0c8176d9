"""Write: create a file, or replace one the agent has Read and that is unchanged since.

Atomic (temp file + fsync + rename), the mode of an existing file kept, parents created for new files
only after the user approved. An existing file keeps its encoding and BOM; a CRLF file gets CRLF.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.base import TextBlock, ToolInput, ToolOutput
from sidecar.tools.context import ToolContext
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
    start_watching,
    still_unchanged,
)
from sidecar.tools.files.file_tool import FileTool, Proposal, creation
from sidecar.tools.lsp.diagnostics import diagnostics_snapshot, with_new_diagnostics
from sidecar.workspace.diffs import make_diff
from sidecar.workspace.ledger import fingerprint_of
from sidecar.workspace.textfile import (
    BinaryFileError,
    Encoding,
    atomic_write,
    check_encodable,
    decode,
    encode,
    from_model,
    is_crlf,
)


class WriteInput(ToolInput):
    """Writes a file to the local filesystem, creating it (and its parent folders) or replacing it whole.

    - For a change to an existing file use Edit instead: it sends only the change, the user reviews a
      small diff, and nothing else in the file can be lost by accident. Use Write for new files, or when
      almost all of a file changes.
    - To replace an existing file you must have Read it in this session, and it must be unchanged since;
      otherwise the write is refused: Read it first.
    - file_path must be absolute. The content is written as given (no line-number prefixes); the file
      keeps its mode.
    - Do not create files the task does not need. Never create documentation (*.md, README) files unless
      the user asked for them.
    """

    file_path: str = Field(description="The absolute path to the file to write (must be absolute, not relative)")
    content: str = Field(description="The content to write to the file")


class WriteTool(FileTool[WriteInput]):
    name = "Write"
    Input = WriteInput
    verb = "Write"

    async def validate(self, inp: WriteInput, ctx: ToolContext) -> None:
        r = resolved(ctx, inp.file_path)
        if r.kind == "dir":
            raise ToolError(f"{inp.file_path} is a directory; give a file path.")
        if r.kind == "other":
            raise ToolError(f"{inp.file_path} is not a regular file; it cannot be written.")

    async def propose(self, inp: WriteInput, ctx: ToolContext) -> Proposal:
        path = resolved(ctx, inp.file_path).path
        who = shown(ctx, path)
        start_watching(ctx)
        if client_writes(ctx, path):  # the editor's text, through fs/read_text_file + fs/write_text_file
            return await _propose_in_editor(ctx, path, who, inp)
        await refuse_disk_write_over_unsaved(ctx, path, who, "Write")
        refuse_if_dirty(ctx, path)
        ledger = ledger_of(ctx)
        if not path.exists():
            return creation(ctx, self.name, path, who, inp.content, in_editor=False, done=_created(path))
        data, st = read_bytes(path)
        ledger.require_fresh(path, who, data, st)
        try:
            old_text, enc = decode(data)
        except BinaryFileError:
            old_text, enc = None, Encoding("utf-8")
        new_text = from_model(inp.content, enc) if "\r\n" not in inp.content else inp.content
        check_encodable(new_text, enc, who)  # before the question: the file keeps its encoding

        async def land(landing: Landing) -> ToolOutput:
            # The file's errors before the change (so the result names the new ones): only once approved,
            # since asking a language server can run programs (docs/lsp.md "What a repository can run").
            before = await diagnostics_snapshot(ctx, path)
            if not still_unchanged(path, st):
                raise ToolError(f"{who} was modified since read (it changed while this Write was being "
                                "prepared). Nothing was written. Read it again, then redo the change.")
            refuse_if_dirty(ctx, path)
            out = encode(landing.final_text, enc)
            written = atomic_write(path, out, st.st_mode)
            ledger.record_write(path, fingerprint_of(path, out, written), out)
            d = make_diff(old_text, landing.final_text, who)
            text = (f"The file {who} has been overwritten ({d.added} lines added, {d.removed} removed"
                    + (f"; kept {enc.describe()}" if enc.name != "utf-8" or enc.bom or enc.crlf else "") + ").")
            return await with_new_diagnostics(ctx, path, before, ToolOutput(
                blocks=[TextBlock(text + (f"\n\n{landing.summary}" if landing.summary else ""))],
                editor_content=landing.editor_content, metadata={"subject": str(path)}))

        return Proposal(path, old_text, new_text, land)


def _created(path: Path) -> Callable[[str], str]:
    def done(final: str) -> str:
        lines = final.count("\n") + (0 if final.endswith("\n") else 1)
        return f"File created successfully at: {path} ({lines} lines)."
    return done


async def _propose_in_editor(ctx: ToolContext, path: Path, who: str, inp: WriteInput) -> Proposal:
    """Replace (or create) the editor's text of ``path`` with ``fs/write_text_file``: an existing file's
    current text (``fs/read_text_file``) must be what the agent read, before and after the review; the
    new text takes its line endings. Disk is not written (docs/files.md)."""
    diagnose = ctx.session.has_client_capability("diagnostics")
    if not path.exists() and not in_editor_only(ctx, path):
        return creation(ctx, "Write", path, who, inp.content, in_editor=True, done=_created(path))
    old_text = await read_from_client(ctx, path, who)
    stale = client_staleness(ctx, path, who, old_text)
    if stale is not None:
        raise stale[0]
    enc = Encoding("utf-8", crlf=is_crlf(old_text))
    new_text = from_model(inp.content, enc) if "\r\n" not in inp.content else inp.content

    async def land(landing: Landing) -> ToolOutput:
        before = await diagnostics_snapshot(ctx, path) if diagnose else None  # only once approved
        await require_unchanged_during_review(ctx, path, who, old_text, "Write")
        await write_to_client(ctx, path, who, landing.final_text, old_text)
        d = make_diff(old_text, landing.final_text, who)
        text = (f"The file {who} has been overwritten ({d.added} lines added, {d.removed} removed"
                + (f"; kept {enc.describe()}" if enc.crlf else "") + ")."
                + not_saved_note(path, who, landing.final_text))
        out = ToolOutput(blocks=[TextBlock(text + (f"\n\n{landing.summary}" if landing.summary else ""))],
                         editor_content=landing.editor_content, metadata={"subject": str(path), "source": "editor"})
        return await with_new_diagnostics(ctx, path, before, out) if diagnose else out

    return Proposal(path, old_text, new_text, land)

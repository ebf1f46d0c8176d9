"""Edit into an open editor buffer that holds unsaved changes (issue 19, LSP transport).

The user's unsaved work must not be overwritten on disk, and refusing interrupts them; so when the
editor applies edits to its buffers (``workspace/applyEdit``), Edit changes the buffer instead: the
match and the review diff are against the buffer's text, the edit carries the buffer's version (the
editor refuses it if the buffer moved on), it lands on the editor's undo stack, and disk is untouched
until the user saves. The unsaved changes must be independent of the edit, as for a stale file on disk
(``workspace/rebase.py``: compared with what the agent last read), and the model is shown them. If the
buffer changes while the user reviews, the approval is void.
"""

from __future__ import annotations

from pathlib import Path

from sidecar.client_messages import Position, Range, TextEdit
from sidecar.errors import ClientRequestError, ToolError
from sidecar.tools.base import TextBlock, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.files.common import Landing, ledger_of, snippet
from sidecar.tools.files.file_tool import Proposal
from sidecar.workspace.buffers import buffers_for
from sidecar.workspace.diffs import common_prefix, common_suffix
from sidecar.workspace.rebase import MARGIN, rebase_edit
from sidecar.workspace.textfile import BinaryFileError, Encoding, decode, from_model, is_crlf


def lsp_position(text: str, offset: int) -> Position:
    """LSP position (0-based line, UTF-16 code units) of a character offset."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return Position(line=line, character=len(text[start:offset].encode("utf-16-le")) // 2)


def propose_buffer_edit(ctx: ToolContext, path: Path, who: str, old_string: str, new_string: str,
                        replace_all: bool) -> Proposal:
    """The proposal of an edit to ``path``'s open, unsaved buffer; landing applies it with
    ``workspace/applyEdit`` at the buffer's version."""
    buffers = buffers_for(ctx.session)
    buf = buffers.get(path)
    if buf is None:
        raise ToolError(f"{who} is no longer open in the editor. Read it again, then redo the change.")
    ledger = ledger_of(ctx)
    if ledger.get(path) is None:
        raise ToolError(f"{who} has not been read in this session. Read it first (Read tool), then make the change.")
    text, version = buf.text, buf.version
    enc = Encoding("utf-8", crlf=is_crlf(text))
    old, new = from_model(old_string, enc), from_model(new_string, enc)
    count = text.count(old) if old else 0
    if count == 0:
        raise ToolError(f"old_string was not found in the editor's unsaved version of {who} (0 matches). The "
                        "buffer has changes not on disk; Read shows the disk version, so the text may differ.")
    if count > 1 and not replace_all:
        raise ToolError(f"old_string occurs {count} times in the editor's unsaved version of {who}; it must "
                        "occur exactly once. Include more surrounding lines, or set replace_all.")
    note = ""
    seen = ledger.seen_content(path)
    try:
        base = decode(seen)[0] if seen is not None else None
    except BinaryFileError:
        base = None
    if base != text:
        rebased = rebase_edit(base, text, old, replace_all, who) if base is not None else None
        if rebased is None:
            raise ToolError(f"{who} has unsaved changes in the editor within {MARGIN} lines of the text you "
                            "are replacing (or that change how often it occurs), so the edit was not applied. "
                            "Ask the user to save (or revert) the file, then Read it again and redo the change.")
        if rebased.shown:
            shown_diff = rebased.shown.replace("\r\n", "\n")
            note = (f"Note: the editor holds unsaved changes to {who} that you had not seen (away from your "
                    f"edit); your edit was applied on top of them in the editor:\n```diff\n{shown_diff}```")
    new_text = text.replace(old, new) if replace_all else text.replace(old, new, 1)

    async def land(landing: Landing) -> ToolOutput:
        final = landing.final_text
        now = buffers.get(path)
        if now is None or now.version != version or now.text != text:
            raise ToolError(f"{who} was changed in the editor while your edit was being reviewed, so nothing was "
                            "applied: the approval was for a version of the buffer that no longer exists. Read "
                            "the file again and propose the change against its current content.")
        a = common_prefix(text, final)
        tail = common_suffix(text, final, min(len(text), len(final)) - a)
        edit = TextEdit(range=Range(start=lsp_position(text, a), end=lsp_position(text, len(text) - tail)),
                        newText=final[a:len(final) - tail])
        buffers.expect(buf.uri, final)
        try:
            result = await ctx.session.client.apply_buffer_edit({
                "label": f"Sidecar: Edit {who}",
                "edit": {"documentChanges": [{"textDocument": {"uri": buf.uri, "version": version}, "edits": [edit]}]},
            })
        except ClientRequestError as exc:
            buffers.expect(buf.uri, "")
            raise ToolError(f"The editor did not apply the edit to {who} ({exc.describe()}); nothing changed. Read "
                            "the file again and redo the change.") from None
        if not result["applied"]:
            buffers.expect(buf.uri, "")
            reason = result.get("failureReason")
            raise ToolError(f"The editor did not apply the edit to {who}" + (f" ({reason})" if reason else "")
                            + "; nothing changed. Read the file again and redo the change.")
        model_final = final.replace("\r\n", "\n") if enc.crlf else final
        model_a = len(final[:a].replace("\r\n", "\n")) if enc.crlf else a
        body = (f"The file {who} has been updated in the editor's open buffer, which has unsaved changes; the "
                "file on disk is unchanged until the user saves it. Here's the result of running `cat -n` on a "
                f"snippet of the buffer:\n{snippet(model_final, model_a, model_a + len(edit['newText']))}")
        extra = "\n\n".join(x for x in (note, landing.summary) if x)
        return ToolOutput(blocks=[TextBlock(body + (f"\n\n{extra}" if extra else ""))],
                          editor_content=landing.editor_content,
                          metadata={"subject": str(path), "buffer": True, "version": version})

    return Proposal(path, text, new_text, land)

"""The base of the tools that change one file (Edit, Write, NotebookEdit), governed in the pipeline.

``prepare`` works out the proposal (the file's text now, the proposed text, how it will land) without
writing; ``check_permission`` reviews its diff (``common.review``: the gate's decision, and the user's
answer when asked); ``run`` lands only what the review approved. ``creation`` is the proposal of a new
file, for every tool that can create one, on disk or through the editor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from sidecar.errors import ToolError
from sidecar.tools.base import InputT, Location, TextBlock, Tool, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.files.client_files import not_saved_note, write_to_client
from sidecar.tools.files.common import Landing, ledger_of, review
from sidecar.tools.lsp.diagnostics import with_new_diagnostics
from sidecar.workspace.ledger import fingerprint_of
from sidecar.workspace.textfile import atomic_write


@dataclass
class Proposal:
    """What a file tool will do, worked out before anyone is asked: ``path`` goes from ``old_text`` (None:
    a new file) to ``new_text``; ``land`` carries out the approved ``Landing`` (which may differ: hunks,
    the user's own version); ``release`` gives back what was made early (a temp file) when it never lands."""

    path: Path
    old_text: str | None
    new_text: str
    land: Callable[[Landing], Awaitable[ToolOutput]]
    release: Callable[[], Awaitable[None]] | None = None
    # Set by the review: what may land.
    landing: Landing | None = None


class FileTool(Tool[InputT]):
    """A tool that changes the one file named by its ``path_field``, after the review of the diff."""

    kind: ClassVar[ToolKind] = "edit"
    path_field: ClassVar[str] = "file_path"
    # The card title's verb ("Edit", "Write", "Edit notebook").
    verb: ClassVar[str]

    def title(self, raw_input: dict[str, Any]) -> str:
        return f"{self.verb} {raw_input.get(self.path_field) or ''}".strip()

    def locations(self, inp: InputT) -> list[Location]:
        return [Location(str(getattr(inp, self.path_field)))]

    async def propose(self, inp: InputT, ctx: ToolContext) -> Proposal:
        """The proposal for this call (raises ToolError when the change cannot be made)."""
        raise NotImplementedError

    async def prepare(self, inp: InputT, ctx: ToolContext) -> None:
        ctx.prepared = await self.propose(inp, ctx)

    async def check_permission(self, inp: InputT, ctx: ToolContext) -> None:
        """The review of the proposal's diff: the question carries it, so it is asked once it exists."""
        proposal = ctx.prepared
        if not isinstance(proposal, Proposal):
            raise ToolError(f"{self.name} was not prepared; nothing was written. Call it again.")
        proposal.landing = await review(ctx, self.name, proposal.path, proposal.old_text, proposal.new_text,
                                        inp.model_dump())

    async def abandon(self, inp: InputT, ctx: ToolContext) -> None:
        proposal = ctx.prepared
        if isinstance(proposal, Proposal) and proposal.release is not None:
            await proposal.release()

    async def run(self, inp: InputT, ctx: ToolContext) -> ToolOutput:
        proposal = ctx.prepared
        if not isinstance(proposal, Proposal) or proposal.landing is None:
            # Called without the dispatcher's steps: they run here, so nothing lands unreviewed.
            await self.prepare(inp, ctx)
            try:
                await self.check_permission(inp, ctx)
            except BaseException:
                await self.abandon(inp, ctx)
                raise
            proposal = ctx.prepared
            assert isinstance(proposal, Proposal) and proposal.landing is not None
        return await proposal.land(proposal.landing)


def creation(ctx: ToolContext, tool_name: str, path: Path, who: str, text: str, *, in_editor: bool,
             done: Callable[[str], str]) -> Proposal:
    """The proposal of a new file holding ``text``: on disk (parents made only once approved, never over a
    file someone else created meanwhile) or through the editor (``fs/write_text_file``). ``done(final)``
    is the tool's first sentence of its result."""

    async def land(landing: Landing) -> ToolOutput:
        final, summary = landing.final_text, landing.summary
        extra = f"\n\n{summary}" if summary else ""
        if path.exists():
            raise ToolError(f"{who} was created by someone else while your {tool_name} was being reviewed. "
                            "Nothing was written. Read it, then decide how to change it.")
        if in_editor:
            await write_to_client(ctx, path, who, final, None)
            return ToolOutput(blocks=[TextBlock(done(final) + not_saved_note(path, who, final) + extra)],
                              editor_content=landing.editor_content,
                              metadata={"subject": str(path), "source": "editor"})
        data = final.encode("utf-8")
        try:
            written = atomic_write(path, data, create_parents=True, create_only=True)
        except FileExistsError:
            raise ToolError(f"{who} was created by someone else while your {tool_name} was being written. "
                            "Nothing was overwritten. Read it, then decide how to change it.") from None
        ledger_of(ctx).record_write(path, fingerprint_of(path, data, written), data)
        return await with_new_diagnostics(ctx, path, None, ToolOutput(
            blocks=[TextBlock(done(final) + extra)], editor_content=landing.editor_content,
            metadata={"subject": str(path)}))

    return Proposal(path, None, text, land)

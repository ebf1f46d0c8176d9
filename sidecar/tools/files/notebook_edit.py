"""NotebookEdit: replace, insert or delete one Jupyter cell (nbformat), read-before-edit like Edit."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.base import TextBlock, ToolInput, ToolOutput
from sidecar.tools.context import ToolContext
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
from sidecar.tools.files.file_tool import FileTool, Proposal
from sidecar.workspace.ledger import fingerprint_of
from sidecar.workspace.textfile import atomic_write


class NotebookEditInput(ToolInput):
    """Replaces, inserts or deletes one cell of a Jupyter notebook (.ipynb). Read the notebook first:
    Read shows every cell with its id.

    - edit_mode "replace" (default) sets the cell's source (and type, if cell_type is given); a replaced
      code cell loses its old outputs.
    - edit_mode "insert" adds a new cell after the cell with cell_id (at the start when cell_id is
      omitted); cell_type is required.
    - edit_mode "delete" removes the cell with cell_id.
    """

    notebook_path: str = Field(description="The absolute path to the Jupyter notebook file to edit")
    cell_id: str | None = Field(default=None, description="The ID of the cell to edit. When inserting, the new "
                                "cell goes after this cell (or at the beginning if not given).")
    new_source: str = Field(description="The new source for the cell")
    cell_type: Literal["code", "markdown"] | None = Field(default=None, description="The type of the cell. "
                                                          "Required for edit_mode=insert.")
    edit_mode: Literal["replace", "insert", "delete"] | None = Field(default=None, description="The type of "
                                                                     "edit to make (replace, insert, delete). "
                                                                     "Defaults to replace.")


class NotebookEditTool(FileTool[NotebookEditInput]):
    name = "NotebookEdit"
    Input = NotebookEditInput
    verb = "Edit notebook"
    path_field = "notebook_path"

    async def validate(self, inp: NotebookEditInput, ctx: ToolContext) -> None:
        r = resolved(ctx, inp.notebook_path, field="notebook_path")
        if r.path.suffix.lower() != ".ipynb":
            raise ToolError(f"{inp.notebook_path} is not a .ipynb notebook; use Edit for other files.")
        if not r.exists:
            raise ToolError(f"Notebook does not exist: {inp.notebook_path}. Create it with Write first.")
        mode = inp.edit_mode or "replace"
        if mode == "insert" and inp.cell_type is None:
            raise ToolError('cell_type is required when edit_mode is "insert" ("code" or "markdown").')
        if mode in ("replace", "delete") and inp.cell_id is None:
            raise ToolError(f'cell_id is required when edit_mode is "{mode}". Read the notebook to see cell ids.')

    async def propose(self, inp: NotebookEditInput, ctx: ToolContext) -> Proposal:
        import nbformat

        path = resolved(ctx, inp.notebook_path, field="notebook_path").path
        who = shown(ctx, path)
        start_watching(ctx)
        refuse_if_dirty(ctx, path)
        data, st = read_bytes(path)
        ledger_of(ctx).require_fresh(path, who, data, st)
        old_text = data.decode("utf-8")
        try:
            nb = nbformat.reads(old_text, as_version=nbformat.NO_CONVERT)  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise ToolError(f"{who} is not a valid notebook ({exc}); fix it with Edit or Write.") from None
        cells = nb.cells
        mode = inp.edit_mode or "replace"
        idx = _find_cell(cells, inp.cell_id) if inp.cell_id is not None else -1
        if inp.cell_id is not None and idx < 0:
            ids = ", ".join(str(c.get("id") or f"cell-{i}") for i, c in enumerate(cells[:30]))
            raise ToolError(f"No cell with id {inp.cell_id!r} in {who}. Cell ids: {ids}.")
        if mode == "delete":
            del cells[idx]
            done = f"Deleted cell {inp.cell_id}"
        elif mode == "insert":
            cell_type = inp.cell_type or "code"
            maker = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
            cell = maker(source=inp.new_source)  # type: ignore[no-untyped-call]
            if nb.nbformat == 4 and nb.nbformat_minor < 5:
                cell.pop("id", None)
            cells.insert(idx + 1, cell)
            done = f"Inserted {cell_type} cell" + (f" {cell.get('id')}" if cell.get("id") else "") + (
                f" after {inp.cell_id}" if inp.cell_id else " at the start")
        else:
            cell = cells[idx]
            cell.source = inp.new_source
            if inp.cell_type and inp.cell_type != cell.cell_type:
                cell.cell_type = inp.cell_type
                if inp.cell_type == "markdown":
                    cell.pop("outputs", None)
                    cell.pop("execution_count", None)
                else:
                    cell.outputs, cell.execution_count = [], None
            elif cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
            done = f"Updated cell {inp.cell_id}"
        indent = _indent_of(old_text)
        new_text = json.dumps(nb, indent=indent, ensure_ascii=False, sort_keys=True) + (
            "\n" if old_text.endswith("\n") else "")

        async def land(landing: Landing) -> ToolOutput:
            if not still_unchanged(path, st):
                raise ToolError(f"{who} was modified since read. Nothing was written. Read it again, then redo "
                                "the change.")
            refuse_if_dirty(ctx, path)
            out = landing.final_text.encode("utf-8")
            written = atomic_write(path, out, st.st_mode)
            ledger_of(ctx).record_write(path, fingerprint_of(path, out, written))
            text = f"{done} in {who}." + (f"\n\n{landing.summary}" if landing.summary else "")
            return ToolOutput(blocks=[TextBlock(text)], editor_content=landing.editor_content,
                              metadata={"subject": str(path)})

        return Proposal(path, old_text, new_text, land)


def _find_cell(cells: list[Any], cell_id: str) -> int:
    for i, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return i
    m = re.fullmatch(r"(?:cell-)?(\d+)", cell_id)
    if m and int(m.group(1)) < len(cells):
        return int(m.group(1))
    return -1


def _indent_of(text: str) -> int:
    m = re.search(r"\n( +)\"", text)
    return len(m.group(1)) if m else 1

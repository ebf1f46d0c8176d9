"""File tools: Read, Write, Edit, Glob, Grep, NotebookEdit (docs/files.md)."""

from __future__ import annotations

from typing import Any

from sidecar.tools.base import Tool


def file_tools() -> list[Tool[Any]]:
    from sidecar.tools.files.edit import EditTool
    from sidecar.tools.files.glob import GlobTool
    from sidecar.tools.files.grep import GrepTool
    from sidecar.tools.files.notebook_edit import NotebookEditTool
    from sidecar.tools.files.read import ReadTool
    from sidecar.tools.files.write import WriteTool

    return [ReadTool(), WriteTool(), EditTool(), GlobTool(), GrepTool(), NotebookEditTool()]

"""What the file tools share: the path step (canonicalise + Read permission), the ledger, the edit review.

Every file tool resolves its path here, so ``sidecar.workspace.paths`` is the only canonicaliser and
every read of a path outside the roots goes through the permission gate.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.errors import ToolError
from sidecar.permissions.request import PermissionRequest
from sidecar.tools.context import ToolContext
from sidecar.workspace.buffers import buffers_for
from sidecar.workspace.ledger import LEDGER, ReadLedger
from sidecar.workspace.paths import ResolvedPath, display_path, resolve_path
from sidecar.workspace.textfile import open_dir_nofollow
from sidecar.workspace.watcher import ensure_watcher


def ledger_of(ctx: ToolContext) -> ReadLedger:
    return ctx.session.service(LEDGER)


def resolved(ctx: ToolContext, raw: str, field: str = "file_path") -> ResolvedPath:
    """Canonicalise once per call (validate, check_permission and run share the result)."""
    cache: dict[str, ResolvedPath] = ctx.resolved_paths
    if raw not in cache:
        cache[raw] = resolve_path(raw, ctx.session, field=field)
    return cache[raw]


def shown(ctx: ToolContext, path: Path) -> str:
    return display_path(path, ctx.session)


async def require_read(ctx: ToolContext, tool_name: str, path: Path, raw_input: dict[str, Any]) -> None:
    """Read permission: free inside the roots, asks outside them (unless a rule allows)."""
    await ctx.permissions.require(PermissionRequest(
        tool_name=tool_name, access="read", title=f"{tool_name} {path}", raw_input=raw_input,
        paths=[path], read_only=True, suggested_rule=f"{tool_name}({path})" if tool_name == "Read" else None,
    ), ctx)


def start_watching(ctx: ToolContext) -> None:
    try:
        ensure_watcher(ctx.session)
    except RuntimeError:  # no running loop (sync tests); the ledger still guards writes
        pass


def refuse_if_dirty(ctx: ToolContext, path: Path) -> None:
    if buffers_for(ctx.session).is_dirty(path):
        raise ToolError(f"{shown(ctx, path)} has unsaved changes in the editor, so it will not be "
                        "written on disk behind the user's back. Ask the user to save (or revert) the file, "
                        "then Read it again and redo the change.")


@dataclass
class Landing:
    """What the review decided should land on disk."""

    final_text: str
    summary: str  # "" when it landed as proposed; else what differs, for the model
    editor_content: list[dict[str, Any]]


async def review(ctx: ToolContext, tool_name: str, path: Path, old_text: str | None, new_text: str,
                 raw_input: dict[str, Any]) -> Landing:
    """Show the change to the user per mode (sidecar.permissions.review) and return what should land.

    Raises ToolError when nothing may be written (rejected, cancelled, denied, or void).
    """
    from sidecar.permissions.review import review_edit

    verb = "Create" if old_text is None else ("Write" if tool_name == "Write" else "Edit")
    outcome = await review_edit(ctx, path, old_text, new_text, tool_name=tool_name,
                                title=f"{verb} {shown(ctx, path)}", raw_input=raw_input)
    final = outcome.final_text
    if final is None:  # review_edit raises unless something may be written; never land nothing silently
        raise ToolError(f"The review of {shown(ctx, path)} ended without a text to write; nothing was written. "
                        "Call the tool again.")
    content = outcome.editor_content or [{"type": "diff", "path": str(path), "oldText": old_text,
                                          "newText": final}]
    return Landing(final, outcome.summary_for_model, content)


def read_bytes(path: Path) -> tuple[bytes, os.stat_result]:
    """The file's bytes and the stat taken on the same open descriptor (never opens special files:
    the path was checked by ``resolve_path``; O_NONBLOCK guards the race where it was swapped)."""
    fd, st = open_regular(path)
    try:
        # One allocation of the file's size (FileIO.readall sizes it from fstat), read straight into it.
        with io.FileIO(fd, closefd=False) as f:
            return f.readall(), st
    finally:
        os.close(fd)


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file ``path`` and its stat, as ``read_bytes`` opens it (the
    caller closes it)."""
    try:
        dir_fd = open_dir_nofollow(path.parent)
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                         dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    except FileNotFoundError:
        raise ToolError(f"{path} was deleted (or its folder moved) just now. Check the path, then call "
                        "again.") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolError(f"{path} (or a folder on its path) was replaced by a symbolic link just now; "
                            "it was not read. Check the path, then call again.") from None
        raise ToolError(f"Cannot open {path}: {exc.strerror or exc}.") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{path} is not a regular file; it cannot be read or edited by this tool.")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def still_unchanged(path: Path, st: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    return now.st_mtime_ns == st.st_mtime_ns and now.st_size == st.st_size


def snippet(text: str, start: int, end: int, context: int = 4) -> str:
    """``cat -n`` lines around char range [start, end) of ``text`` (\\n-separated), cheap on huge texts."""
    a = start
    for _ in range(context + 1):
        a = text.rfind("\n", 0, a) if a > 0 else -1
        if a < 0:
            break
    a = a + 1 if a >= 0 else 0
    b = end
    for _ in range(context + 1):
        nb = text.find("\n", b)
        if nb < 0:
            b = len(text)
            break
        b = nb + 1
    first = text.count("\n", 0, a) + 1
    lines = text[a:b].split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "\n".join(f"{first + i:>6}\t{line[:2000]}" for i, line in enumerate(lines))

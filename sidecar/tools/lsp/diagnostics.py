"""The errors an edit introduced, appended to the Edit/Write/NotebookEdit result (as Claude Code does).

The file tools call, around their write::

    before = await diagnostics_snapshot(ctx, path)      # before writing
    ...write...
    text = await diagnostics_after_edit(ctx, path, before)   # "" when nothing new
    result += text

Source: the editor's ``_sidecar/diagnostics`` when the client advertises ``diagnostics``, else the
headless language server's ``publishDiagnostics`` for the new text (after a short settle). Never
raises: a missing server or a slow one only means no diagnostics are appended.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from sidecar.errors import ClientRequestError, ToolError
from sidecar.tools.base import TextBlock, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.lsp.lsp import redact_literals
from sidecar.workspace.paths import display_path

log = logging.getLogger(__name__)

# servers (headless language servers) is imported where it is used: it imports pygls and lsprotocol (seconds).

# Waiting for the server's first analysis of a file (cold start included) and for a re-analysis.
FIRST_TIMEOUT = 15.0
AFTER_EDIT_TIMEOUT = 10.0
# Quiet time after a publish before the diagnostics count as settled.
SETTLE = 0.15
# The editor's language servers re-analyse on their own schedule: wait this long before asking.
EDITOR_SETTLE = 0.5
MAX_SHOWN = 20
# Files larger than this get no headless diagnostics after an edit (sending them costs more than it tells).
MAX_HEADLESS_BYTES = 1 << 20
ERROR = 1

Diagnostics = list[dict[str, Any]]


async def diagnostics_snapshot(ctx: ToolContext, path: Path | str) -> Diagnostics | None:
    """The diagnostics ``path`` has now (call before writing), or None when no source can tell."""
    try:
        return await _current(ctx, Path(path), time_limit=FIRST_TIMEOUT, settle=0.0)
    except Exception:  # diagnostics must never fail an edit
        log.debug("diagnostics snapshot failed for %s", path, exc_info=True)
        return None


async def diagnostics_after_edit(ctx: ToolContext, path: Path | str, before: Diagnostics | None) -> str:
    """Text to append to the tool result: the errors present after the edit that were not there before.

    Empty when there are none or when no language server could tell. Errors are compared by message,
    code and source (not by range: an edit moves the lines below it), as a multiset.
    """
    path = Path(path)
    try:
        if ctx.session.has_client_capability("diagnostics"):
            await asyncio.sleep(EDITOR_SETTLE)
        after = await _current(ctx, path, time_limit=AFTER_EDIT_TIMEOUT, settle=SETTLE)
    except Exception:
        log.debug("diagnostics after edit failed for %s", path, exc_info=True)
        return ""
    if after is None:
        return ""
    new = new_errors(before or [], after)
    if not new:
        return ""
    shown = display_path(path, ctx.session)
    n = len(new)
    head = (f"The edit introduced {n} new error{'s' if n != 1 else ''} in {shown}:" if before is not None
            else f"{shown} has {n} error{'s' if n != 1 else ''} after the edit:")
    # A message can show a value from another file (`Type "Literal['…']" is not assignable`), one the model
    # may not Read: string values this file does not spell are shown as … (docs/lsp.md).
    try:
        known = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        known = ""
    rows = [redact_literals(format_diagnostic(shown, d), known) for d in new[:MAX_SHOWN]]
    if n > MAX_SHOWN:
        rows.append(f"… and {n - MAX_SHOWN} more")
    return "\n\n<new-diagnostics>\n" + head + "\n" + "\n".join(rows) + "\n</new-diagnostics>"


def new_errors(before: Diagnostics, after: Diagnostics) -> Diagnostics:
    seen = Counter(_key(d) for d in before if _is_error(d))
    out: Diagnostics = []
    for d in after:
        if not _is_error(d):
            continue
        key = _key(d)
        if seen[key] > 0:
            seen[key] -= 1
        else:
            out.append(d)
    return out


def format_diagnostic(shown: str, d: dict[str, Any]) -> str:
    start = (d.get("range") or {}).get("start") or {}
    where = f"{shown}:{int(start.get('line', 0)) + 1}:{int(start.get('character', 0)) + 1}"
    code = d.get("code")
    source = d.get("source")
    tag = f" ({source}{' ' + str(code) if code is not None else ''})" if source or code is not None else ""
    message = " ".join(str(d.get("message", "")).split())
    return f"  {where}: error: {message}{tag}"


def _is_error(d: Any) -> bool:
    # A missing severity is an error, per the LSP spec's advice to clients.
    return isinstance(d, dict) and d.get("severity", ERROR) == ERROR


def _key(d: dict[str, Any]) -> tuple[str, str, str]:
    return (" ".join(str(d.get("message", "")).split()), str(d.get("code", "")), str(d.get("source", "")))


async def _current(ctx: ToolContext, path: Path, time_limit: float, settle: float) -> Diagnostics | None:
    if ctx.session.has_client_capability("diagnostics"):
        return await _from_editor(ctx, path)
    return await _from_headless(ctx, path, time_limit, settle)


async def _from_editor(ctx: ToolContext, path: Path) -> Diagnostics | None:
    uri = path.as_uri()
    try:
        answer = await ctx.session.client.diagnostics([uri])
    except ClientRequestError as exc:  # no source can tell: the edit goes on without diagnostics
        log.debug("the editor's diagnostics failed: %s", exc)
        return None
    for item in answer["items"]:
        if _same_file(item["uri"], path):
            return list(item["diagnostics"])
    return []


async def _from_headless(ctx: ToolContext, path: Path, time_limit: float,
                         settle: float) -> Diagnostics | None:
    try:  # a huge file would be sent whole to the server and keep the edit waiting: not worth it
        if os.path.getsize(path) > MAX_HEADLESS_BYTES:
            return None
    except OSError:
        return None
    from sidecar.tools.lsp.servers import ServerDied  # lazy: see the note at the top
    from sidecar.tools.lsp.service import language_servers

    servers = language_servers(ctx.session)
    if servers.spec_for(path) is None or not _is_file(path):
        return None
    try:
        server = await servers.server_for(path)
        uri = path.as_uri()
        version = await server.sync(path)
        return await server.wait_diagnostics(uri, version, time_limit, settle)
    except (ToolError, ServerDied):
        return None


def _is_file(path: Path) -> bool:
    return os.path.isfile(path)


def _same_file(uri: str, path: Path) -> bool:
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return False
    return os.path.realpath(unquote(parts.path)) == str(path)


async def with_new_diagnostics(ctx: ToolContext, path: Path | str, before: Diagnostics | None,
                               output: ToolOutput) -> ToolOutput:
    """``output`` with the edit's new errors appended to its last text block (for Edit/Write)."""
    extra = await diagnostics_after_edit(ctx, path, before)
    if extra:
        last = next((b for b in reversed(output.blocks) if isinstance(b, TextBlock)), None)
        if last is None:
            output.blocks.append(TextBlock(extra.lstrip("\n")))
        else:
            last.text += extra
        output.metadata["new_diagnostics"] = extra.count("\n  ")
    return output

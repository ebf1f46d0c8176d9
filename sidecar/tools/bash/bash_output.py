"""BashOutput: the new output of a background shell since the last look, optionally filtered."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.bash import runner
from sidecar.tools.bash.shells import shells_of
from sidecar.tools.context import ToolContext


class BashOutputInput(ToolInput):
    """Read the output a background shell (started with Bash `run_in_background`) produced since you last
    read it, and whether it is still running (with its exit code once it ended).

    - Use it to check on servers, watchers and long builds instead of waiting with `sleep`.
    - `filter` (a regular expression) keeps only matching lines; lines that do not match are consumed
      and not shown again, so use a filter only when you are sure you will not need the rest.
    - The shell id comes from the Bash result; ids of shells that ended stay readable for this session.
    """

    bash_id: str = Field(description="The ID of the background shell, e.g. bash_1")
    filter: str | None = Field(
        default=None, description="Optional regular expression; only matching lines are returned"
    )


class BashOutput(Tool[BashOutputInput]):
    name: ClassVar[str] = "BashOutput"
    kind: ClassVar[ToolKind] = "execute"
    Input: ClassVar[type[ToolInput]] = BashOutputInput

    def title(self, raw_input: dict[str, Any]) -> str:
        return f"Output of {raw_input.get('bash_id') or 'background shell'}"

    def is_read_only(self, inp: BashOutputInput) -> bool:
        return True

    async def check_permission(self, inp: BashOutputInput, ctx: ToolContext) -> None:
        return None  # reads what an already-approved command wrote

    async def validate(self, inp: BashOutputInput, ctx: ToolContext) -> None:
        if inp.filter is not None:
            try:
                re.compile(inp.filter)
            except re.error as exc:
                raise ToolError(
                    f"filter is not a valid regular expression ({exc}); fix it or omit it."
                ) from exc

    async def run(self, inp: BashOutputInput, ctx: ToolContext) -> ToolOutput:
        shells = shells_of(ctx.session)
        shell = shells.shells.get(inp.bash_id)
        if shell is None:
            known = ", ".join(shells.shells) or "none"
            raise ToolError(
                f"No background shell {inp.bash_id!r} (known: {known}). Start one with Bash "
                "run_in_background."
            )
        path = shell.running.output_path
        size = path.stat().st_size if path.exists() else shell.offset
        # While it runs, only complete lines; a partial last line waits for the next look.
        end = _last_newline(path, shell.offset, size) if shell.running.running else size
        text = _read_range(path, shell.offset, end)
        if inp.filter:
            pattern = re.compile(inp.filter)
            text = "\n".join(line for line in text.splitlines() if pattern.search(line))
        if len(text) > runner.MAX_OUTPUT_CHARS:
            keep = runner.MAX_OUTPUT_CHARS
            text = (
                text[: keep * 2 // 3]
                + f"\n[... output cut; the whole log is {path} ...]\n"
                + text[-(keep // 3) :]
            )
        shell.offset = end
        r = shell.running
        if r.running:
            status = f"Status: running ({r.duration:.1f} s so far)."
        elif r.killed:
            status = f"Status: killed (exit code {r.exit_code})."
        else:
            status = f"Status: completed with exit code {r.exit_code} after {r.duration:.1f} s."
        body = text.rstrip("\n") if text.strip() else "(no new output)"
        return ToolOutput.text(
            f"{body}\n{status}",
            bound_output=False,
            metadata={"subject": inp.bash_id, "running": r.running, "exit_code": r.exit_code},
        )


def _last_newline(path: Path, start: int, size: int) -> int:
    if size <= start:
        return start
    with open(path, "rb") as f:
        back = min(size - start, 1 << 16)
        f.seek(size - back)
        chunk = f.read(back)
    idx = chunk.rfind(b"\n")
    if idx == -1:
        return size if back >= (1 << 16) else start  # one huge line: show it anyway
    return size - back + idx + 1


_READ_CAP = 8 << 20


def _read_range(path: Path, start: int, end: int) -> str:
    if end <= start:
        return ""
    skipped = max(0, end - start - _READ_CAP)
    with open(path, "rb") as f:
        f.seek(start + skipped)
        text = runner.strip_ansi(f.read(end - start - skipped).decode("utf-8", errors="replace"))
    return (f"[... {skipped:,} bytes skipped; the whole log is {path} ...]\n" if skipped else "") + text

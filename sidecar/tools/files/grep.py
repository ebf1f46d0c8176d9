"""Grep: ripgrep underneath, Claude Code's fields, output read as a stream and bounded."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from sidecar.errors import ToolError
from sidecar.tools.base import TextBlock, Tool, ToolInput, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.files.common import require_read, resolved
from sidecar.tools.files.glob import newest_first, rg_binary

MAX_OUTPUT_CHARS = 30_000
MAX_COLUMNS = 500


class GrepInput(ToolInput):
    """Search file contents with a regular expression, built on ripgrep. Use it for every content search;
    never run `grep` or `rg` through Bash: Grep is faster, respects .gitignore and the user's read
    permissions, and its results are bounded.

    - pattern is a ripgrep (Rust) regex: "log.*Error", "def\\s+\\w+_handler", "TODO|FIXME". Escape regex
      characters you mean literally: `\\.`, `\\(`, `\\[`, and braces (`interface\\{\\}` finds `interface{}`).
      A pattern matches within one line; set multiline: true for patterns that span lines (then `.`
      matches newlines too).
    - Narrow the files with glob ("*.py", "**/*.{ts,tsx}", "!**/vendor/**") or type ("py", "js", "rust",
      "go"; faster than glob for standard languages), and path (a folder or one file; default: the
      working directory). -i makes the search case-insensitive.
    - output_mode:
      - "files_with_matches" (default): only the paths of matching files, newest first. Use it to find
        where something is.
      - "content": the matching lines as path:line:text (-n line numbers are on by default). Show lines
        around each match with -A (after), -B (before), or -C / context (both sides): context: 2 gives
        the two lines before and after every match, with "--" between separate groups.
      - "count": the number of matches per file.
    - Context, -n and line output only apply in "content" mode.
    - Long results: head_limit keeps the first N lines (content) or files (files_with_matches); offset
      skips the first N, so offset=N with the same head_limit shows the next page. A cut result says so.
    - Start broad with files_with_matches, then read or grep the files that matter with content and
      context. Independent searches: several Grep calls in one message.
    - For an open-ended search that needs several rounds of searching and reading, use a Task
      sub-agent (Explore) instead.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(description="The regular expression pattern to search for in file contents")
    path: str | None = Field(default=None, description="File or directory to search in (rg PATH). Defaults to "
                             "the current working directory.")
    glob: str | None = Field(default=None, description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") '
                             "- maps to rg --glob")
    type: str | None = Field(default=None, description="File type to search (rg --type), e.g. js, py, rust, go. "
                             "More efficient than glob for standard file types.")
    output_mode: Literal["content", "files_with_matches", "count"] | None = Field(
        default=None, description='"content" shows matching lines, "files_with_matches" (default) shows file '
        'paths, "count" shows match counts')
    case_insensitive: bool | None = Field(default=None, alias="-i", description="Case insensitive search (rg -i)")
    line_numbers: bool | None = Field(default=None, alias="-n", description='Show line numbers in output (rg -n). '
                                      'Requires output_mode "content". Defaults to true.')
    after: int | None = Field(default=None, ge=0, alias="-A", description="Lines to show after each match (rg -A). "
                              'Requires output_mode "content".')
    before: int | None = Field(default=None, ge=0, alias="-B", description="Lines to show before each match "
                               '(rg -B). Requires output_mode "content".')
    context_c: int | None = Field(default=None, ge=0, alias="-C", description="Lines to show before and after "
                                  'each match (rg -C). Requires output_mode "content".')
    context: int | None = Field(default=None, ge=0, description='Same as -C: lines to show before and after each '
                                'match. Requires output_mode "content".')
    multiline: bool | None = Field(default=None, description="Enable multiline mode where . matches newlines and "
                                   "patterns can span lines (rg -U --multiline-dotall). Default: false.")
    head_limit: int | None = Field(default=None, ge=0, description="Limit output to the first N lines/entries "
                                   "(after offset).")
    offset: int | None = Field(default=None, ge=0, description="Skip the first N lines/entries before applying "
                               "head_limit.")


def rg_args(inp: GrepInput, target: str) -> list[str]:
    mode = inp.output_mode or "files_with_matches"
    args = [rg_binary(), "--no-config", "--hidden", "--no-require-git", "--glob", "!.git",
            "--max-columns", str(MAX_COLUMNS), "--max-columns-preview", "--color", "never"]
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count":
        args.append("--count-matches")
    else:
        args.append("--no-heading")
        if inp.line_numbers is not False:
            args.append("--line-number")
        around = inp.context_c if inp.context_c is not None else inp.context
        if around is not None:
            args += ["-C", str(around)]
        if inp.before is not None:
            args += ["-B", str(inp.before)]
        if inp.after is not None:
            args += ["-A", str(inp.after)]
    if inp.case_insensitive:
        args.append("-i")
    if inp.multiline:
        args += ["-U", "--multiline-dotall"]
    if inp.type:
        args += ["--type", inp.type]
    if inp.glob:
        for g in inp.glob.split() if "{" not in inp.glob else [inp.glob]:
            args += ["--glob", g]
    args += ["-e", inp.pattern, "--", target]
    return args


class GrepTool(Tool[GrepInput]):
    name = "Grep"
    kind = "search"
    Input = GrepInput

    def title(self, raw_input: dict[str, Any]) -> str:
        where = f" in {raw_input['path']}" if raw_input.get("path") else ""
        return f"Grep \"{raw_input.get('pattern') or ''}\"{where}"

    def is_read_only(self, inp: GrepInput) -> bool:
        return True

    async def validate(self, inp: GrepInput, ctx: ToolContext) -> None:
        r = resolved(ctx, inp.path or str(ctx.cwd), field="path")
        if not r.exists:
            raise ToolError(f"path {inp.path} does not exist. The current working directory is {ctx.cwd}.")

    async def check_permission(self, inp: GrepInput, ctx: ToolContext) -> None:
        r = resolved(ctx, inp.path or str(ctx.cwd), field="path")
        await require_read(ctx, self.name, r.path, inp.model_dump(by_alias=True, exclude_none=True))

    async def run(self, inp: GrepInput, ctx: ToolContext) -> ToolOutput:
        r = resolved(ctx, inp.path or str(ctx.cwd), field="path")
        mode = inp.output_mode or "files_with_matches"
        skip = inp.offset or 0
        limit = inp.head_limit if inp.head_limit else None
        args = rg_args(inp, str(r.path))
        # Files a Read deny rule names never come back (a single file target was checked by the gate).
        denied = ctx.permissions.read_denied() if r.kind == "dir" else None
        keep = None
        if denied is not None:
            keep = result_filter(denied, mode, inp.line_numbers is not False)
            if mode != "files_with_matches":
                args[1:1] = ["--null", "--line-number"]
        lines, mtimes, more, err = await _run_rg(args, skip, limit, mode == "files_with_matches", keep)
        if keep is not None and mode == "content":
            lines = _tidy_separators(lines)
        if err is not None:
            raise ToolError(f"Grep failed: {err}. Fix the pattern or arguments (ripgrep regex syntax).")
        if mode == "files_with_matches":
            total = len(lines)
            page = newest_first(lines, mtimes or [], total)[skip:]
            more = limit is not None and len(page) > limit
            if limit is not None:
                page = page[:limit]
            lines = page
            if not lines:
                return ToolOutput.text("No files found", metadata={"count": 0})
            body = f"Found {total} file{'s' if total != 1 else ''}\n" + "\n".join(lines)
        else:
            if not lines:
                return ToolOutput.text("No matches found", metadata={"count": 0})
            body = "\n".join(lines)
            if mode == "count":
                total = 0
                for line in lines:
                    with contextlib.suppress(ValueError):
                        total += int(line.rsplit(":", 1)[1])
                body += f"\n\nFound {total} total occurrences across {len(lines)} files."
        body, cut = _bound(body)
        if more or cut:
            nxt = skip + len(lines)
            body += (f"\n\n(Results are cut. Use offset={nxt} to see more, or narrow the search with path, "
                     "glob or type.)")
        return ToolOutput(blocks=[TextBlock(body)], bound_output=False,
                          metadata={"truncated": bool(more or cut), "subject": str(r.path), "mode": mode})


LineFilter = Callable[[str], "str | None"]


def result_filter(denied: Callable[[Path], bool], mode: str, numbers: bool) -> LineFilter:
    """Drops ripgrep output lines of denied files. In content/count mode rg runs with ``--null`` and
    ``--line-number`` (the path ends at a NUL; the number's ``:``/``-`` tells a match from context), and
    the line is rebuilt as rg prints it without them."""
    if mode == "files_with_matches":
        return lambda line: None if denied(Path(line)) else line

    def keep(line: str) -> str | None:
        path, nul, rest = line.partition("\0")
        if not nul:
            return line  # "--" between context groups
        if denied(Path(path)):
            return None
        if mode == "count":
            return f"{path}:{rest}"
        m = _NUMBER.match(rest)
        if m is None:
            return f"{path}:{rest}"
        sep = m.group(2)
        return f"{path}{sep}{rest}" if numbers else f"{path}{sep}{rest[m.end():]}"

    return keep


_NUMBER = re.compile(r"(\d+)([:-])")


def _tidy_separators(lines: list[str]) -> list[str]:
    """No leading, trailing or doubled ``--`` once lines of denied files are gone."""
    out: list[str] = []
    for line in lines:
        if line == "--" and (not out or out[-1] == "--"):
            continue
        out.append(line)
    while out and out[-1] == "--":
        out.pop()
    return out


async def _run_rg(args: list[str], skip: int, limit: int | None, collect_all: bool,
                  keep: LineFilter | None = None) -> tuple[list[str], list[int] | None, bool, str | None]:
    """Run rg and read its output in a thread (blocking 256 KiB reads, split there, no event-loop wakeup
    per pipe write); stop it once the page (offset+limit, char budget) is full. ``collect_all``
    (files_with_matches) keeps every path and stats it as it arrives, so the mtimes for the newest-first
    sort are taken while rg is still searching."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        out, mtimes, more, stopped, code, err = await asyncio.to_thread(
            _collect, args, procs, skip, limit, collect_all, keep)
    except BaseException:  # cancelled: do not leave rg running (the thread then sees EOF and ends)
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        raise
    if not stopped and code not in (0, 1):
        return [], None, False, err or f"ripgrep exited with status {code}"
    return out, mtimes, more, None


def _collect(args: list[str], procs: list[subprocess.Popen[bytes]], skip: int, limit: int | None,
             collect_all: bool, keep: LineFilter | None = None
             ) -> tuple[list[str], list[int] | None, bool, bool, int, str]:
    with tempfile.TemporaryFile() as errf:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=errf, stdin=subprocess.DEVNULL, bufsize=0)
        procs.append(proc)
        out, mtimes, more, stopped = _read_rg(proc, skip, limit, collect_all, keep)
        errf.seek(0)
        err = errf.read().decode(errors="replace").strip()
    return out, mtimes, more, stopped, proc.returncode, err


def _read_rg(proc: subprocess.Popen[bytes], skip: int, limit: int | None, collect_all: bool,
             keep: LineFilter | None = None) -> tuple[list[str], list[int] | None, bool, bool]:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    read = os.read
    stat = os.stat
    out: list[str] = []
    mtimes: list[int] | None = [] if collect_all else None
    seen = 0
    chars = 0
    more = False
    stopped = False
    pending = b""
    try:
        while not stopped:
            chunk = read(fd, 1 << 18)
            if not chunk:
                raws = [pending] if pending else []
            else:
                *raws, pending = (pending + chunk).split(b"\n")
            if mtimes is not None:
                for raw in raws:
                    line = raw.decode("utf-8", errors="replace")
                    if keep is not None and keep(line) is None:
                        continue
                    out.append(line)
                    try:
                        mtimes.append(stat(raw).st_mtime_ns)
                    except OSError:
                        mtimes.append(0)
            else:
                for raw in raws:
                    kept: str | None = None
                    if keep is not None:
                        kept = keep(raw.decode("utf-8", errors="replace"))
                        if kept is None:
                            continue
                    seen += 1
                    if seen <= skip:
                        continue
                    if (limit is not None and len(out) >= limit) or chars > MAX_OUTPUT_CHARS:
                        more = True
                        stopped = True
                        break
                    line = kept if kept is not None else raw.decode("utf-8", errors="replace")
                    out.append(line)
                    chars += len(line) + 1
            if not chunk:
                break
    finally:
        if stopped and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        proc.stdout.close()
        proc.wait()
    return out, mtimes, more, stopped


def _bound(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text, False
    cut = text.rfind("\n", 0, MAX_OUTPUT_CHARS)
    return text[: cut if cut > 0 else MAX_OUTPUT_CHARS], True

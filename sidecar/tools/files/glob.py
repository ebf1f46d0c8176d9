"""Glob: file paths matching a pattern, gitignore-aware (ripgrep's walker), newest first, capped."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.base import TextBlock, Tool, ToolInput, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.files.common import require_read, resolved

MAX_RESULTS = 100
_GLOB_CHARS = set("*?[{")


def rg_binary() -> str:
    """ripgrep from the venv (the `ripgrep` wheel) or PATH. Looked up again only when the one found last
    is gone (every Glob and Grep asks: a path join and a stat each time, a PATH walk without the venv's)."""
    global _rg_found
    if _rg_found is not None and os.path.exists(_rg_found):
        return _rg_found
    here = Path(sys.executable).parent / "rg"
    found = str(here) if here.exists() else shutil.which("rg")
    if found is None:
        raise ToolError("ripgrep (rg) is not installed; the search tools need it. Use Bash `find` instead.")
    _rg_found = found
    return found


_rg_found: str | None = None


class GlobInput(ToolInput):
    """Fast file name matching for a codebase of any size. Returns matching file paths, newest first
    (most recently modified), at most 100; files ignored by .gitignore are left out.

    - Patterns: `*` matches within one folder level, `**` across levels, `{a,b}` alternatives:
      "src/**/*.{ts,tsx}", "**/test_*.py", "docs/*.md". A pattern without a slash ("*.toml") matches
      that file name in every folder below the search folder.
    - `path` is the folder to search (absolute); leave it out to search the working directory.
    - Use Glob to find files by name or extension. To search inside files use Grep; to list a single
      folder Bash `ls` is fine.
    - Several searches that do not depend on each other: send them as separate calls in one message.
    - For an open-ended hunt that may take many rounds of Glob and Grep, start a Task sub-agent
      (Explore) instead, to keep your own context small.
    """

    pattern: str = Field(description="The glob pattern to match files against")
    path: str | None = Field(default=None, description="The directory to search in. If not specified, the current "
                             "working directory is used. Omit it for the default; never pass \"undefined\" or "
                             "\"null\". Must be an absolute directory path if given.")


def split_absolute(pattern: str) -> tuple[str | None, str]:
    """'/abs/dir/**/*.py' → ('/abs/dir', '**/*.py')."""
    if not pattern.startswith("/"):
        return None, pattern
    parts = pattern.split("/")
    base: list[str] = []
    for i, part in enumerate(parts):
        if any(c in _GLOB_CHARS for c in part):
            return "/".join(base) or "/", "/".join(parts[i:])
        base.append(part)
    return "/".join(base[:-1]) or "/", base[-1]


class GlobTool(Tool[GlobInput]):
    name = "Glob"
    kind = "search"
    Input = GlobInput

    def title(self, raw_input: dict[str, Any]) -> str:
        where = f" in {raw_input['path']}" if raw_input.get("path") else ""
        return f"Glob {raw_input.get('pattern') or ''}{where}".strip()

    def is_read_only(self, inp: GlobInput) -> bool:
        return True

    def _base(self, inp: GlobInput, ctx: ToolContext) -> tuple[Path, str]:
        base_raw, pattern = split_absolute(inp.pattern)
        raw = inp.path if inp.path not in (None, "", "undefined", "null") else None
        if base_raw is not None and raw is None:
            raw = base_raw
        r = resolved(ctx, raw or str(ctx.cwd), field="path")
        if r.kind != "dir":
            raise ToolError(f"path {raw} is not an existing directory. Give a directory to search in.")
        return r.path, pattern

    async def validate(self, inp: GlobInput, ctx: ToolContext) -> None:
        self._base(inp, ctx)

    async def check_permission(self, inp: GlobInput, ctx: ToolContext) -> None:
        base, _ = self._base(inp, ctx)
        await require_read(ctx, self.name, base, inp.model_dump(exclude_none=True))

    async def run(self, inp: GlobInput, ctx: ToolContext) -> ToolOutput:
        base, pattern = self._base(inp, ctx)
        paths, total = await rg_files(base, pattern, MAX_RESULTS, ctx.permissions.read_denied())
        if not paths:
            return ToolOutput.text("No files found", metadata={"count": 0, "truncated": False})
        text = "\n".join(paths)
        if total > MAX_RESULTS:
            text += (f"\n(Results are truncated: showing the {MAX_RESULTS} most recently modified of {total} "
                     "files. Use a more specific pattern or path.)")
        return ToolOutput(blocks=[TextBlock(text)],
                          metadata={"count": total, "truncated": total > MAX_RESULTS, "subject": str(base)})


async def rg_files(base: Path, pattern: str, cap: int,
                   denied: Callable[[Path], bool] | None = None) -> tuple[list[str], int]:
    """The ``cap`` newest files under ``base`` matching ``pattern``, and how many matched in all.

    ripgrep sorts by modification time itself (``--sortr=modified``: the stats in Rust, no per-file
    ``os.stat`` from Python); ties keep ripgrep's walk order. A sorting ripgrep walks on one thread, so
    when ``base`` has two or more folders the walk is split in two at a top-level entry (``split_walk``)
    and two ripgreps run at once, each leaving out the other's top-level entries; their heads are merged
    by mtime, the first half first on ties, which is the order one ripgrep gives (its walk is depth-first
    in directory order, so the whole first half comes before the second). Only when a core is spare
    (``spare_core``): on a busy machine one ripgrep costs less. ``denied`` (Read deny rules)
    drops files from the names and from the count.
    """
    args = [rg_binary(), "--files", "--hidden", "--no-require-git", "--no-config", "--glob", "!.git",
            "--glob", pattern]
    halves = split_walk(base) if spare_core() else [[]]
    procs = [await asyncio.create_subprocess_exec(*args, *excluded, "--sortr=modified", "--null", cwd=base,
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                  stdin=asyncio.subprocess.DEVNULL)
             for excluded in halves]
    outs = await asyncio.gather(*(proc.communicate() for proc in procs))
    for proc, (_, err) in zip(procs, outs, strict=True):
        if proc.returncode not in (0, 1):
            raise ToolError(f"Glob failed: {err.decode(errors='replace').strip()}. Check the pattern.")
    prefix = str(base).rstrip("/") + "/"
    heads = [_head(out, prefix, cap, denied) for out, _ in outs]
    total = sum(n for _, n in heads)
    if len(heads) == 1:
        return heads[0][0], total
    return _merge_newest(heads[0][0], heads[1][0], cap), total


def _head(out: bytes, prefix: str, cap: int, denied: Callable[[Path], bool] | None) -> tuple[list[str], int]:
    """The first ``cap`` names of one ripgrep's NUL-separated output (absolute), and how many it listed."""
    if denied is not None:
        names = [prefix + n.decode("utf-8", errors="surrogateescape").removeprefix("./")
                 for n in out.split(b"\0") if n]
        kept = [n for n in names if not denied(Path(n))]
        return kept[:cap], len(kept)
    total = out.count(b"\0")
    head: list[bytes] = []
    pos = 0
    while len(head) < cap:
        nul = out.find(b"\0", pos)
        if nul < 0:
            break
        head.append(out[pos:nul])
        pos = nul + 1
    return [prefix + n.decode("utf-8", errors="surrogateescape").removeprefix("./") for n in head], total


def _merge_newest(first: list[str], second: list[str], cap: int) -> list[str]:
    """Merge two newest-first lists into the ``cap`` newest; on equal mtimes ``first`` goes first, and a
    file that cannot be stat'ed now goes after every one that can (ripgrep's rule). Only the names the
    merge compares are stat'ed (at most ``cap`` + 2)."""
    def key(path: str) -> tuple[int, int]:
        try:
            return 0, -os.stat(path).st_mtime_ns
        except OSError:
            return 1, 0

    merged: list[str] = []
    i = j = 0
    ki = key(first[0]) if first else None
    kj = key(second[0]) if second else None
    while len(merged) < cap and (ki is not None or kj is not None):
        if kj is None or (ki is not None and ki <= kj):
            merged.append(first[i])
            i += 1
            ki = key(first[i]) if i < len(first) else None
        else:
            merged.append(second[j])
            j += 1
            kj = key(second[j]) if j < len(second) else None
    return merged


def spare_core() -> bool:
    """Whether a second ripgrep would get a core of its own: two or more cores for this process and, right
    now, fewer other runnable tasks than cores - 1. On a busy machine the two halves would share the cores
    the other work leaves, and the split costs more CPU (a second ripgrep start) than it saves.

    "Right now" is Linux's count of runnable tasks (``/proc/loadavg``, fourth field, this thread included):
    the 1-minute load average lags by a minute, so right after a burst of work it kept the split off on an
    idle machine (a quiet bench run measured 1.37x instead of 1.04x). Elsewhere the load average it is."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            others = int(f.read().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0] < cores - 0.5
        except OSError:
            return False
    return others < cores - 1


_SPLIT_MAX_ENTRIES = 512
_GLOB_ESCAPE = str.maketrans({c: "\\" + c for c in "\\*?[]{}"})


def split_walk(base: Path) -> list[list[str]]:
    """ripgrep arguments for the two halves of a walk of ``base``, or ``[[]]`` for one walk.

    The top-level entries in directory order (the order ripgrep's walk visits them) are cut before the
    middle folder; each half gets ``--glob !/NAME`` for every entry of the other half. One walk when
    there are fewer than two folders (nothing to share), more than ``_SPLIT_MAX_ENTRIES`` entries (the
    exclusion globs would cost more than they save), or a name a glob cannot spell exactly (not
    printable or not UTF-8, or trailing white space, which ignore-file syntax trims).
    """
    try:
        with os.scandir(base) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return [[]]
    if len(entries) > _SPLIT_MAX_ENTRIES:
        return [[]]
    folders = [i for i, (name, is_dir) in enumerate(entries) if is_dir and name != ".git"]
    if len(folders) < 2:
        return [[]]
    globs: list[str] = []
    for name, _ in entries:
        if not name.isprintable() or name != name.rstrip() or not _utf8(name):
            return [[]]
        globs.append("!/" + name.translate(_GLOB_ESCAPE))
    cut = folders[len(folders) // 2]
    return [[a for g in globs[cut:] for a in ("--glob", g)], [a for g in globs[:cut] for a in ("--glob", g)]]


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def newest_first(paths: list[str], mtimes: list[int], cap: int) -> list[str]:
    """Sort ``paths`` by their ``mtimes`` (ns, same order), newest first (ties by path), and keep ``cap``."""
    keyed = sorted(zip([-m for m in mtimes], paths, strict=True))
    return [p for _, p in keyed[:cap]]

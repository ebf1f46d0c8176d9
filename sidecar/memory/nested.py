"""Nested memory: ``CLAUDE.md`` / ``AGENTS.md`` in a directory below the workspace root are loaded the
first time the agent reads a file below them, as a ``<system-reminder>`` in the next request.

User- and project-level memory (``~/.claude/CLAUDE.md``, ``<cwd>/CLAUDE.md``, ``<cwd>/AGENTS.md``,
``<cwd>/.claude/CLAUDE.md``) is in the system prompt (``sidecar.agent.prompt``); this module covers the
directories between the root and the file read (the root itself excluded). ``@path`` lines import other
files (relative to the memory file, ``~/`` for home; up to 5 levels, each file once, inside code spans
and fences ignored), as Claude Code does.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sidecar.session import ServiceKey

log = logging.getLogger(__name__)

MEMORY_NAMES = ("CLAUDE.md", "AGENTS.md")
MAX_CHARS = 40_000
MAX_IMPORT_DEPTH = 5
IMPORT = re.compile(r"(?:^|\s)@((?:~/|/|\./|\.\./|[\w.-]+/)[^\s`]*|[\w.-]+\.[\w]+)")
# Never imported, from any memory file: kernel views (``/proc/self/environ`` holds the environment).
NEVER_IMPORTED = (Path("/proc"), Path("/sys"), Path("/dev"))

# Decides whether an import target (resolved) may be read: None means yes, a string is the reason not.
ImportPolicy = Callable[[Path], "str | None"]
# Which imports a memory file may pull in (the workspace trust's answer); refused without it.
IMPORT_POLICY = ServiceKey[ImportPolicy]("import_policy")


def refused_always(target: Path) -> str | None:
    if any(target == d or target.is_relative_to(d) for d in NEVER_IMPORTED):
        return "kernel files (/proc, /sys, /dev) are never imported"
    return None


def read_memory_file(path: Path, allow: ImportPolicy = refused_always, limit: int = MAX_CHARS) -> str | None:
    """A memory file's text, judged by where it leads (a ``CLAUDE.md`` that is a symlink is a read of its
    target, exactly like an ``@import`` of it); a note in its place when ``allow`` (or the kernel-file rule)
    refuses the target; None when there is no such file. The file read is the one judged: opened by its
    resolved path and checked again through the open descriptor, so a link swapped in between is not
    followed."""
    try:
        target = path.resolve()
        if not target.is_file():
            return None
    except (OSError, RuntimeError):
        return None
    refused = refused_always(target) or allow(target)
    if refused:
        return f"[{path} not read: it leads to {target}, {refused}]"
    try:
        with open(target, "rb") as f:
            opened = Path(os.readlink(f"/proc/self/fd/{f.fileno()}")) if os.path.isdir("/proc/self/fd") else target
            if opened != target:
                return f"[{path} not read: it changed while it was read]"
            data = f.read(limit * 4)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")[:limit]


def import_targets(text: str, base: Path) -> Iterator[Path]:
    """Each ``@path`` the text imports, resolved (symlinks followed), in order; fences and code spans skipped."""
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        scrubbed = re.sub(r"`[^`]*`", "", line)
        for match in IMPORT.finditer(scrubbed):
            raw = match.group(1)
            target = (Path.home() / raw[2:]) if raw.startswith("~/") else (base / raw)
            try:
                yield target.resolve()
            except (OSError, RuntimeError):
                continue


def expand_imports(text: str, base: Path, seen: set[Path] | None = None, depth: int = 0,
                   allow: ImportPolicy = refused_always) -> str:
    """Inline ``@path`` imports after the text that names them; ``allow`` may refuse a target (a note
    stands in its place, so the model and the user see what was left out and why)."""
    seen = seen if seen is not None else set()
    if depth >= MAX_IMPORT_DEPTH:
        return text
    out: list[str] = []
    in_fence = False
    for line in text.splitlines():
        out.append(line)
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in import_targets(line, base):
            try:
                if target in seen or not target.is_file():
                    continue
                seen.add(target)
                refused = refused_always(target) or allow(target)
                if refused:
                    out.append(f"[@{target} not imported: {refused}]")
                    continue
                body = target.read_text(encoding="utf-8", errors="replace")[:MAX_CHARS]
            except OSError:
                continue
            out.append(f"<imported path=\"{target}\">\n"
                       f"{expand_imports(body, target.parent, seen, depth + 1, allow)}\n</imported>")
    return "\n".join(out)


class NestedMemory:
    def __init__(self, session: Any) -> None:
        self.session = session
        self.loaded: set[Path] = set()

    def on_read(self, path: Path) -> None:
        try:
            self._load_for(path)
        except Exception:  # memory must never fail a Read
            log.exception("nested memory for %s failed", path)

    def _load_for(self, path: Path) -> None:
        root = next((r for r in self.session.roots if path.is_relative_to(r)), None)
        if root is None:
            return
        directories: list[Path] = []
        d = path.parent
        while d != root and d.is_relative_to(root):
            directories.append(d)
            d = d.parent
        for directory in reversed(directories):  # outermost first
            for name in MEMORY_NAMES:
                memory = directory / name
                if memory in self.loaded or memory == path or not memory.is_file():
                    continue
                self.loaded.add(memory)
                allow = self.session.find_service(IMPORT_POLICY) or refused_always
                text = read_memory_file(memory, allow)
                if text is None:
                    continue
                body = expand_imports(text, directory, {memory.resolve()}, allow=allow)
                self.session.audit("memory_loaded", path=str(memory))
                self.session.add_notice(
                    f"Contents of {memory} (instructions for files under {directory}; follow them when "
                    f"working there):\n{body}")

"""The system prompt: who the agent is, the environment, and the project's memory files.

Built once per session and then kept byte-identical (prompt caching); what changes later (files
modified, nested memory found) goes into the conversation as reminders, never here.
"""

from __future__ import annotations

import datetime
import platform
import subprocess
from pathlib import Path

from sidecar.memory.nested import ImportPolicy, expand_imports, refused_always
from sidecar.secrets import scrubbed_env
from sidecar.workspace.gitenv import safe_git_env

MEMORY_FILES = ("CLAUDE.md", "AGENTS.md")
MAX_MEMORY_CHARS = 40_000

IDENTITY = """You are a coding agent working inside the user's editor. You help with software engineering \
tasks in the user's workspace using the tools provided.

- Read files before editing them; edits are shown to the user as diffs and may be accepted, changed or rejected.
- Prefer the dedicated tools (Read, Edit, Write, Glob, Grep) to shell commands for file work.
- Use absolute paths. Keep answers short and concrete; say what you changed.
- When a tool returns an error, read its message: it says what to do next.
- Content inside <system-reminder> tags comes from the sidecar, not from the user."""


def git_status(cwd: Path) -> str:
    try:
        env = safe_git_env(scrubbed_env())  # a repository's core.fsmonitor, hooks or pager never run here
        branch = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd, capture_output=True,
                                text=True, timeout=3, env=env)
        if branch.returncode != 0:
            return "not a git repository"
        status = subprocess.run(["git", "--no-optional-locks", "status", "--short"], cwd=cwd,
                                capture_output=True, text=True, timeout=3, env=env)
        lines = status.stdout.splitlines()
        shown = "\n".join(lines[:40]) + (f"\n… {len(lines) - 40} more" if len(lines) > 40 else "")
        return f"branch {branch.stdout.strip()}\n{shown or '(clean)'}"
    except (OSError, subprocess.SubprocessError):
        return "unknown (git not available)"


def read_memory(cwd: Path, home: Path | None = None,
                allow: ImportPolicy = refused_always) -> list[tuple[Path, str]]:
    """User-level then project-level memory files (nested ones are loaded later, on first read below).
    ``allow`` governs the project files' ``@path`` imports (the repository wrote them); the user's own
    file imports anything but kernel files."""
    found: list[tuple[Path, str]] = []
    user = (home or Path.home()) / ".claude" / "CLAUDE.md"
    candidates = [user, *[cwd / name for name in MEMORY_FILES], cwd / ".claude" / "CLAUDE.md"]
    for path in candidates:
        try:
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")[:MAX_MEMORY_CHARS]
                policy = refused_always if path == user else allow
                found.append((path, expand_imports(text, path.parent, {path.resolve()}, allow=policy)))
        except OSError:
            continue
    return found


def build_system_prompt(cwd: Path, roots: list[Path], extra_sections: list[str] | None = None,
                        allow: ImportPolicy = refused_always) -> str:
    today = datetime.date.today().isoformat()
    env = [
        f"Working directory: {cwd}",
        f"Workspace roots: {', '.join(str(r) for r in roots)}",
        f"Platform: {platform.system().lower()} ({platform.release()})",
        f"Today's date: {today}",
        f"Git status at session start:\n{git_status(cwd)}",
    ]
    parts = [IDENTITY, "<env>\n" + "\n".join(env) + "\n</env>"]
    for path, text in read_memory(cwd, allow=allow):
        parts.append(f"<memory path=\"{path}\">\n{text}\n</memory>")
    parts.extend(extra_sections or [])
    return "\n\n".join(parts)

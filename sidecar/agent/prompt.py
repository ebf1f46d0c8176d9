"""The system prompt: who the agent is, the environment, and the project's memory files.

Built once per session and then kept byte-identical (prompt caching); what changes later (files
modified, nested memory found) goes into the conversation as reminders, never here.
"""

from __future__ import annotations

import datetime
import platform
import subprocess
from pathlib import Path

from sidecar.memory.nested import ImportPolicy, expand_imports, read_memory_file, refused_always
from sidecar.secrets import scrubbed_env
from sidecar.shell.gitdir import left_out_outside
from sidecar.workspace.gitenv import filter_overrides, repo_programs, safe_git_env

MEMORY_FILES = ("CLAUDE.md", "AGENTS.md")
MAX_MEMORY_CHARS = 40_000

IDENTITY = """You are a coding agent working inside the user's editor. You help with software engineering \
tasks in the user's workspace using the tools provided.

# Doing the work
- Understand before changing: read the relevant code, search for its callers and conventions, then change \
it in the style already used there. Never propose changes to code you have not read.
- Do what was asked, completely, and no more: no unrequested features, refactors, files or documentation.
- Check your work when the project lets you: run the tests, the type checker or the linter it uses (find the \
commands in its README, package files or CLAUDE.md); say so when you could not.
- Edits are shown to the user as diffs and may be accepted, changed or rejected; a rejected edit means the \
user wants something else: ask or adjust, do not retry the same edit.
- Never commit, push or publish unless the user asked. Never expose secrets (keys, tokens, .env contents).

# Using the tools
- Prefer the dedicated tools to shell commands: Read (not cat/head/tail), Glob (not find/ls), Grep (not \
grep/rg), Edit and Write (not sed/awk/echo redirection). Use Bash for builds, tests, git and other programs.
- Calls that do not depend on each other go in one message: several Read, Grep, Glob or read-only Bash calls \
are run together. Calls that depend on an earlier result go one after another.
- Use Task sub-agents for open-ended exploration over many files and for independent pieces of work; for one \
known file or symbol use Read, Grep or Glob directly.
- Use TodoWrite to plan and track work of three or more steps; keep it current as you go.
- Use AskUserQuestion only when the choice is the user's and the code cannot settle it.
- Use absolute paths. When a tool returns an error, read its message: it says what to do next. A call the \
user denied is not to be retried as is: change the approach or ask.
- When ToolSearch is offered, the tools its description lists are deferred: call it to load one before use.

# Communicating
- Keep answers short and concrete. Say what you changed and what is left; refer to code as path:line.
- Content inside <system-reminder> tags comes from the sidecar, not from the user."""


def git_status(cwd: Path, roots: list[Path] | None = None, allow: ImportPolicy = refused_always) -> str:
    """``git status`` at ``cwd`` for the system prompt. When git there is pointed outside ``roots`` (a
    ``.git`` file naming another repository, ``core.worktree``, ``GIT_DIR`` …: ``shell.gitdir``) and
    ``allow`` refuses such a place (an untrusted workspace), the status is left out: it would list that
    other repository's files."""
    left_out = left_out_outside(cwd, roots or [cwd], allow)
    if left_out is not None:
        return f"left out: {left_out}"
    try:
        env = safe_git_env(scrubbed_env())  # a repository's core.fsmonitor, hooks or pager never run here
        branch = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd, capture_output=True,
                                text=True, timeout=3, env=env)
        if branch.returncode != 0:
            return "not a git repository"
        # A repository's own filter drivers could run on status (racily clean files): blanked here.
        blank = filter_overrides(repo_programs(cwd))
        status = subprocess.run(["git", *blank, "--no-optional-locks", "status", "--short"], cwd=cwd,
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
            policy = refused_always if path == user else allow
            text = read_memory_file(path, policy, MAX_MEMORY_CHARS)  # a symlink: judged where it leads
            if text is not None:
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
        f"Git status at session start:\n{git_status(cwd, roots, allow)}",
    ]
    parts = [IDENTITY, "<env>\n" + "\n".join(env) + "\n</env>"]
    for path, text in read_memory(cwd, allow=allow):
        parts.append(f"<memory path=\"{path}\">\n{text}\n</memory>")
    parts.extend(extra_sections or [])
    return "\n\n".join(parts)

"""The platform's sandbox for shell commands, behind one small interface (docs/contract.md §8).

Linux: bubblewrap (Debian ``bubblewrap``) when ``bwrap`` is on PATH and works here: the whole file
system read-only, the workspace roots and a per-session temp dir writable, a fresh ``/dev`` and
``/proc``, its own PID namespace (killing ``bwrap`` ends every process inside), and no network unless
allowed. Elsewhere, or when bubblewrap is missing: no sandbox, and the Bash tool says so once.
macOS (``sandbox-exec``) can be added here without touching the tools.

The agent's own configuration stays read-only inside the writable roots (``guarded_paths``):
``.claude/``, ``.vscode/``, ``.idea/``, ``.mcp.json``, ``CLAUDE.md``, ``AGENTS.md`` (at a root and
nested), and the parts of every git directory that make git run programs (``config``, ``hooks/``) —
for ``.git`` and for any directory that looks like one (``HEAD`` plus ``objects/`` or ``refs/``).
Where a guarded name is absent at a root, an empty placeholder directory is created and bound
read-only, so a command cannot create it either; ``SandboxPolicy.cleanup`` removes the placeholders (still empty) once
the sandbox has ended.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from sidecar.store import data_dir

# Read-only inside every writable root, wherever they appear (a root or below it).
GUARDED_DIRS = (".claude", ".vscode", ".idea")
GUARDED_FILES = (".mcp.json", "CLAUDE.md", "AGENTS.md")
# In a git directory: what makes git run a program.
GIT_DIR_GUARDED = ("config", "hooks")
# Directories not searched for nested guarded names (big, generated, never configuration).
_SCAN_SKIP = frozenset({"node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
                        ".ruff_cache", ".pytest_cache", "target", "dist", "build", ".next", ".cache"})
SCAN_MAX_DEPTH = 6
SCAN_MAX_ENTRIES = 50_000


@dataclass
class SandboxPolicy:
    writable: list[Path] = field(default_factory=list)
    network: bool = False
    # Bound read-only over the writable paths (existing files and directories).
    read_only: list[Path] = field(default_factory=list)
    # Created by ``guard`` for absent guarded names; removed again by ``cleanup``.
    placeholders: list[Path] = field(default_factory=list)
    # Where the placeholders are written down until ``cleanup``, for a sidecar killed meanwhile.
    record: Path | None = None

    def guard(self, roots: list[Path]) -> None:
        """Protect the agent's configuration inside ``roots`` (see the module docstring)."""
        existing, absent = guarded_paths(roots)
        self.read_only += existing
        made = [path for path in absent if _make_placeholder(path)]
        self.placeholders += made
        self.read_only += made
        if made:
            self.record = _record_placeholders(made)

    def cleanup(self) -> None:
        """Remove the placeholders that are still empty (call when the sandbox has ended)."""
        _remove_placeholders(self.placeholders)
        self.placeholders = []
        if self.record is not None:
            with contextlib.suppress(OSError):
                self.record.unlink()
            self.record = None


_record_numbers = itertools.count()


def _records_dir() -> Path:
    return data_dir() / "sandbox-placeholders"


def _record_placeholders(paths: list[Path]) -> Path | None:
    """``<data dir>/sandbox-placeholders/<pid>-<n>.json`` lists them until ``cleanup`` removes it."""
    record = _records_dir() / f"{os.getpid()}-{next(_record_numbers)}.json"
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps([str(p) for p in paths]))
    except OSError:
        return None
    return record


def _remove_placeholders(paths: list[Path]) -> list[Path]:
    removed = []
    for path in paths:
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # fails when someone put something in it outside the sandbox
                removed.append(path)
    return removed


def remove_stale_placeholders() -> list[Path]:
    """The placeholders of a sidecar that died during a command (its process is gone) are removed when
    still empty directories; a live process's are left alone (its command may be running)."""
    removed: list[Path] = []
    try:
        records = list(_records_dir().glob("*.json"))
    except OSError:
        return removed
    for record in records:
        pid = record.name.split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            listed = json.loads(record.read_text())
        except (OSError, ValueError):
            listed = []
        if isinstance(listed, list):
            removed += _remove_placeholders([Path(p) for p in listed if isinstance(p, str)])
        with contextlib.suppress(OSError):
            record.unlink()
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is gone for this purpose
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def looks_like_git_dir(path: Path) -> bool:
    """What git accepts as a repository directory: ``HEAD`` and ``objects/`` or ``refs/`` (or a config)."""
    try:
        if not (path / "HEAD").is_file():
            return False
        return (path / "objects").is_dir() or (path / "refs").is_dir() or (path / "config").is_file()
    except OSError:
        return False


def _git_dir_parts(git_dir: Path) -> list[Path]:
    out = [git_dir / name for name in GIT_DIR_GUARDED if (git_dir / name).exists()]
    modules = git_dir / "modules"  # submodules' git directories
    if modules.is_dir():
        with contextlib.suppress(OSError):
            for sub in modules.iterdir():
                if sub.is_dir() and looks_like_git_dir(sub):
                    out += _git_dir_parts(sub)
    return out


def _gitfile_target(path: Path) -> Path | None:
    """The directory a ``.git`` file (worktree, submodule) points to."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    return (path.parent / target).resolve() if not target.is_absolute() else target.resolve()


def guarded_paths(roots: list[Path]) -> tuple[list[Path], list[Path]]:
    """(existing guarded paths, absent names at the roots that get a placeholder)."""
    existing: list[Path] = []
    absent: list[Path] = []
    roots = [r for r in roots if r.is_dir()]
    for root in roots:
        for name in (*GUARDED_DIRS, *GUARDED_FILES):
            p = root / name
            if not os.path.lexists(p):
                absent.append(p)
        _scan(root, existing)
    # Worktrees and submodules keep their git directory elsewhere: guard it when it is writable here.
    extra: list[Path] = []
    for p in existing:
        if p.name == ".git" and p.is_file():
            target = _gitfile_target(p)
            if target is None:
                continue
            extra += _git_dir_parts(target)
            common = target / "commondir"
            if common.is_file():
                with contextlib.suppress(OSError):
                    extra += _git_dir_parts((target / common.read_text().strip()).resolve())
    existing += [p for p in extra if any(p.is_relative_to(r) for r in roots)]
    return _dedupe(existing), absent


def _scan(root: Path, out: list[Path]) -> None:
    """Guarded names below ``root`` (bounded walk: depth, entry count, generated folders skipped)."""
    budget = SCAN_MAX_ENTRIES
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack and budget > 0:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        budget -= len(entries)
        if depth > 0 and any(e.name == "HEAD" for e in entries) and looks_like_git_dir(Path(folder)):
            out += _git_dir_parts(Path(folder))
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if entry.name == ".git":
                if is_dir:
                    out.extend(_git_dir_parts(path))
                else:
                    out.append(path)
            elif entry.name in GUARDED_DIRS or entry.name in GUARDED_FILES:
                out.append(path)
            elif is_dir and depth < SCAN_MAX_DEPTH and entry.name not in _SCAN_SKIP:
                stack.append((path, depth + 1))


def _dedupe(paths: list[Path]) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for p in paths:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def _make_placeholder(path: Path) -> bool:
    """An empty directory, for files too: git neither lists nor adds an empty directory (an empty
    ``CLAUDE.md`` file showed up in ``git status`` and ``git add -A``), and writing to a directory
    fails just as well (``Is a directory``)."""
    try:
        path.mkdir(mode=0o755)
    except OSError:
        return False
    return True


@lru_cache(maxsize=1)
def bubblewrap() -> str | None:
    """The path of a working ``bwrap``, or None (checked once per process)."""
    if not sys.platform.startswith("linux"):
        return None
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        probe = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return path if probe.returncode == 0 else None


def available() -> bool:
    return bubblewrap() is not None


def unavailable_reason() -> str:
    if not sys.platform.startswith("linux"):
        return f"no sandbox is implemented for {sys.platform} yet"
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    return "bubblewrap is installed but cannot create a sandbox here (user namespaces disabled?)"


def wrap(argv: list[str], policy: SandboxPolicy, cwd: Path) -> list[str]:
    """``argv`` run inside the sandbox; ``argv`` unchanged when there is none."""
    prefix = sandbox_args(policy)
    if not prefix:
        return argv
    return [*prefix, "--chdir", str(cwd), "--", *argv]


def sandbox_args(policy: SandboxPolicy) -> list[str]:
    """The ``bwrap`` command line that makes the sandbox of ``policy``, up to its working directory and
    the command ([] when there is no sandbox). Two sandboxes with the same arguments are the same
    sandbox: a spare one started ahead is used only for a command whose arguments these are
    (``runner.SpareSandbox``)."""
    bwrap = bubblewrap()
    if bwrap is None:
        return []
    out = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--die-with-parent",
    ]
    for path in policy.writable:
        if path.exists():
            out += ["--bind", str(path), str(path)]
    # After the writable binds, so these win. A symlink is bound where it points.
    for path in policy.read_only:
        if path.exists():
            real = str(path.resolve())
            out += ["--ro-bind", real, real]
    if not policy.network:
        out.append("--unshare-net")
    return out

"""Where git really points from a folder (issue 27, "Git where it really points").

A repository that arrives as an archive with its ``.git`` can point git elsewhere: a ``.git`` *file*
(``gitdir: /home/u/other/.git``), ``core.worktree`` in its config (directly or through an include), a
``commondir`` file, ``objects/info/alternates``; the environment can too (``GIT_DIR``, ``GIT_WORK_TREE``,
``GIT_COMMON_DIR``, ``GIT_OBJECT_DIRECTORY``, ``GIT_ALTERNATE_OBJECT_DIRECTORIES``, ``GIT_INDEX_FILE``).
Then ``git diff``, ``git log -p`` or ``git show HEAD:f`` show another repository's or folder's content.

``outside_places(folder, roots)`` resolves these the way git does and lists the ones that lead outside
the roots: a git command there is not read-only (it asks), and the system prompt's ``git status`` waits
for trust. The ordinary layout — ``<top>/.git`` a directory, the work tree ``<top>`` — is not a
redirection, whether ``<top>`` is inside the roots or above them (a monorepo package; the classifier
judges that case by its top level). Two redirections are git's own and are recognised by their back-link,
which a cloned repository cannot forge because it lives outside it: a linked worktree (its ``.git`` file
names ``<repo>/.git/worktrees/<name>``, whose ``gitdir`` file names this ``.git`` file back) and a
submodule (its git dir's ``core.worktree`` names this folder back).

The configuration reader is deliberately small: ``core.worktree`` and ``include``/``includeIf`` paths,
git's quoting and continuation lines; a file it cannot read counts as pointing outside.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

ENV_PLACES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_INDEX_FILE")
_MAX_INCLUDES = 10
_MAX_CONFIG = 1 << 20


def _inside(p: Path, roots: list[Path]) -> bool:
    return any(p == r or p.is_relative_to(r) for r in roots)


def _real(base: Path, value: str) -> Path:
    p = Path(os.path.expanduser(value))
    return Path(os.path.realpath(p if p.is_absolute() else base / p))


def _read(path: Path, limit: int = _MAX_CONFIG) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


class _Unreadable(Exception):
    pass


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(=\s*(.*))?$")


def _value(text: str) -> str:
    """A git config value: quotes removed, escapes read, an unquoted ``#``/``;`` starts a comment."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 >= len(text):
                raise _Unreadable
            nxt = text[i + 1]
            out.append({"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}.get(nxt, ""))
            if nxt not in 'ntb"\\':
                raise _Unreadable
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    if quoted:
        raise _Unreadable
    return "".join(out).strip()


def config_entries(text: str) -> list[tuple[str, str]]:
    """``(section.key, value)`` for each setting (section and key lower-case; a subsection kept as
    written: ``includeif.gitdir:x.path``). Raises ``_Unreadable`` on what it cannot read."""
    lines = text.replace("\r\n", "\n").split("\n")
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith("\\") and not joined[-1].endswith("\\\\"):
            joined[-1] = joined[-1][:-1] + line
        else:
            joined.append(line)
    section = None
    out: list[tuple[str, str]] = []
    for line in joined:
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            m = _SECTION.match(line)
            if m is None:
                raise _Unreadable
            name, sub, rest = m.group(1).lower(), m.group(2), m.group(3)
            section = f"{name}.{sub}" if sub is not None else name
            if "." in name and sub is None:  # [section.sub]: the deprecated form
                first, _, second = name.partition(".")
                section = f"{first}.{second}"
            line = rest
            if not line.strip() or line.strip()[0] in "#;":
                continue
        if section is None:
            raise _Unreadable
        m = _KEY.match(line)
        if m is None:
            raise _Unreadable
        key = m.group(1).lower()
        value = _value(m.group(3) or "") if m.group(2) else "true"
        out.append((f"{section}.{key}", value))
    return out


def _config_places(config: Path, depth: int = 0) -> tuple[list[str], list[Path]]:
    """The ``core.worktree`` values of a config file and of the files it includes (every include, its
    condition aside: it could hold), and the included files."""
    text = _read(config)
    if text is None:
        return [], []
    try:
        entries = config_entries(text)
    except _Unreadable as exc:
        raise _Unreadable(str(config)) from exc
    worktrees: list[str] = []
    included: list[Path] = []
    for key, value in entries:
        if key == "core.worktree":
            worktrees.append(value)
        elif key.startswith(("include.", "includeif.")) and key.endswith(".path"):
            if depth >= _MAX_INCLUDES:
                raise _Unreadable(str(config))
            target = _real(config.parent, value)
            included.append(target)
            more_trees, more_files = _config_places(target, depth + 1)
            worktrees += more_trees
            included += more_files
    return worktrees, included


def _gitfile(dotgit: Path) -> str | None:
    text = _read(dotgit, 4096)
    if text is None:
        return None
    first = text.split("\n", 1)[0].rstrip("\r")
    return first[len("gitdir: "):] if first.startswith("gitdir: ") else None


def _discover(folder: Path) -> tuple[Path, Path] | None:
    """(the folder holding ``.git``, the ``.git`` path) git finds from ``folder``."""
    for candidate in (folder, *folder.parents):
        dotgit = candidate / ".git"
        if os.path.lexists(dotgit):
            return candidate, dotgit
    return None


def left_out_outside(folder: Path, roots: list[Path], allow: Callable[[Path], str | None] | None) -> str | None:
    """Why what git shows from ``folder`` (the system prompt's ``git status``, an @git mention) is left out:
    git there points outside ``roots`` and ``allow`` (the workspace trust's import policy; None: not
    trusted) refuses such a place. None when it may be shown."""
    for what, place in outside_places(folder, roots or [folder]):
        if allow is None or allow(place) is not None:
            return (f"git here is pointed outside the workspace ({what}: {place}); it is shown once the "
                    "workspace is trusted")
    return None


def outside_places(folder: Path, roots: list[Path],
                   env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """Each place git would use from ``folder`` that leads outside ``roots`` (what names it, where it
    leads), beyond the ordinary layout; ``[]`` when none (or no repository). A configuration file that
    cannot be read is listed as itself."""
    env = os.environ if env is None else env
    roots = [Path(os.path.realpath(r)) for r in roots]
    found: list[tuple[str, Path]] = []

    def check(what: str, path: Path) -> None:
        if not _inside(path, roots) and (what, path) not in found:
            found.append((what, path))

    folder = Path(os.path.realpath(folder))
    for name in ENV_PLACES:
        if env.get(name):
            check(f"{name} in the environment", _real(folder, env[name]))
    for value in (env.get("GIT_ALTERNATE_OBJECT_DIRECTORIES") or "").split(":"):
        if value:
            check("GIT_ALTERNATE_OBJECT_DIRECTORIES in the environment", _real(folder, value))
    git_dir: Path | None = Path(os.path.realpath(folder / env["GIT_DIR"])) if env.get("GIT_DIR") else None
    top: Path | None = None
    linked = False  # git's own worktree or submodule link (back-linked)
    if git_dir is None:
        discovered = _discover(folder)
        if discovered is None:
            return found
        top, dotgit = discovered
        if os.path.isfile(dotgit) or os.path.islink(dotgit):
            named = _gitfile(dotgit) if os.path.isfile(dotgit) and not os.path.islink(dotgit) else None
            git_dir = _real(top, named) if named is not None else Path(os.path.realpath(dotgit))
            back = _read(git_dir / "gitdir", 4096)
            linked = (back is not None and _real(git_dir, back.strip()) == Path(os.path.realpath(dotgit))) or (
                _submodule_of(git_dir, top))
            if not linked:
                check("the .git file (or link) names the git directory", git_dir)
        else:
            git_dir = dotgit
    common = git_dir
    commondir = _read(git_dir / "commondir", 4096)
    if commondir is not None and commondir.strip():
        common = _real(git_dir, commondir.strip())
        if not linked:
            check("commondir names the shared git directory", common)
    try:
        worktrees: list[str] = []
        for config in (common / "config", git_dir / "config.worktree"):
            trees, included = _config_places(config)
            worktrees += trees
            for path in included:
                check(f"{config} includes", path)
        for value in worktrees:
            tree = _real(git_dir, value)
            if not (linked and top is not None and tree == Path(os.path.realpath(top))):
                check("core.worktree names the work tree", tree)
    except _Unreadable as exc:
        found.append(("a git configuration file that could not be read here", Path(str(exc))))
    alternates = _read(common / "objects" / "info" / "alternates", 65536)
    for line in (alternates or "").splitlines():
        if line.strip() and not line.startswith("#"):
            check("objects/info/alternates names another object store", _real(common / "objects", line.strip()))
    return found


def _submodule_of(git_dir: Path, top: Path) -> bool:
    """Whether ``git_dir`` is the git dir git made for the submodule at ``top``: its ``core.worktree``
    names ``top``."""
    try:
        trees, _ = _config_places(git_dir / "config")
    except _Unreadable:
        return False
    return any(_real(git_dir, t) == Path(os.path.realpath(top)) for t in trees)

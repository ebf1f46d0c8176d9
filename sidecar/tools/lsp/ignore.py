"""Is a result file gitignored? ``.gitignore`` files read with pathspec, cached by mtime.

Faster than ``git check-ignore`` (no process per query) and it also works in a workspace that is not a
git repository yet. Patterns are applied as git does: from the repository top (or the workspace root
when there is no repository) down to the file's folder, ``.git/info/exclude`` first, deeper files
overriding shallower ones, the last matching pattern deciding.
"""

from __future__ import annotations

from pathlib import Path

import pathspec


class IgnoreMatcher:
    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self._specs: dict[Path, tuple[int, pathspec.GitIgnoreSpec | None]] = {}
        self._tops: dict[Path, Path | None] = {}

    def is_ignored(self, path: Path) -> bool:
        base = self._top(path.parent)
        if base is None:
            return False
        verdict: bool | None = None
        exclude = self._spec(base / ".git" / "info" / "exclude")
        if exclude is not None:
            verdict = _check(exclude, path.relative_to(base), verdict)
        folders = [base, *[base.joinpath(*path.parent.relative_to(base).parts[:i + 1])
                           for i in range(len(path.parent.relative_to(base).parts))]]
        for folder in folders:
            spec = self._spec(folder / ".gitignore")
            if spec is not None:
                verdict = _check(spec, path.relative_to(folder), verdict)
        return bool(verdict)

    def _top(self, folder: Path) -> Path | None:
        """The git repository top above ``folder``, else the workspace root holding it, else None."""
        if folder in self._tops:
            return self._tops[folder]
        top: Path | None = None
        for candidate in (folder, *folder.parents):
            if (candidate / ".git").exists():
                top = candidate
                break
        if top is None:
            top = next((r for r in self.roots if folder == r or folder.is_relative_to(r)), None)
        self._tops[folder] = top
        return top

    def _spec(self, file: Path) -> pathspec.GitIgnoreSpec | None:
        try:
            mtime = file.stat().st_mtime_ns
        except OSError:
            return None
        cached = self._specs.get(file)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None
        spec = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        self._specs[file] = (mtime, spec)
        return spec


def _check(spec: pathspec.GitIgnoreSpec, rel: Path, verdict: bool | None) -> bool | None:
    result = spec.check_file(rel.as_posix())
    return verdict if result.include is None else bool(result.include)

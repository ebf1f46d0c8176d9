"""Unified diffs and hunks for a proposed change: the ONE diff module (editor review and tool results).

API (all text is ``str``; lines are split on ``\\n`` only, each keeping its ending, so CRLF survives)::

    d = make_diff(old_text, new_text, path)     # old_text None = a new file
    d.unified                                   # unified diff text ("" when nothing changed)
    d.hunks                                     # [Hunk]; Hunk.to_dict() -> {index, oldStart, oldLines,
                                                #                            newStart, newLines}
    d.hunk_dicts()                              # the list above, ready for `_sidecar/review_edit`
    apply_hunks(old_text, new_text, [0, 2])     # old_text with only hunks 0 and 2 of the change applied
    d.added, d.removed                          # counts of + and - lines

Hunk numbers follow the unified-diff ``@@ -oldStart,oldLines +newStart,newLines @@`` header exactly
(1-based; when a side has 0 lines its start is the line *before* the hunk, as in GNU diff). Hunks are
grouped as ``diff -U3`` groups them (changes closer than 2×context lines share a hunk), and
``apply_hunks`` recomputes the same grouping, so an index the client returns always means the hunk
it was shown.

Cost is proportional to the changed region, not the file: the common prefix and suffix are found by
comparing 64 KiB blocks (C ``memcmp``), and only the middle (plus ``context`` lines either side) is
split into lines and handed to ``difflib``. An Edit on a 1,000,000-line file diffs a handful of lines.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sidecar import client_messages
from sidecar.textspan import common_prefix as common_prefix
from sidecar.textspan import common_suffix as common_suffix

CONTEXT = 3
_NO_EOL = "\\ No newline at end of file\n"


@dataclass(frozen=True)
class Hunk:
    index: int
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    # Window-relative line slices (private to this module).
    _i1: int = field(repr=False, compare=False, default=0)
    _i2: int = field(repr=False, compare=False, default=0)
    _j1: int = field(repr=False, compare=False, default=0)
    _j2: int = field(repr=False, compare=False, default=0)

    def to_dict(self) -> client_messages.Hunk:
        return {"index": self.index, "oldStart": self.old_start, "oldLines": self.old_lines,
                "newStart": self.new_start, "newLines": self.new_lines}

    def header(self) -> str:
        return f"@@ -{_range(self.old_start, self.old_lines)} +{_range(self.new_start, self.new_lines)} @@\n"


@dataclass
class Diff:
    path: str
    unified: str
    hunks: list[Hunk]
    added: int
    removed: int

    def hunk_dicts(self) -> list[client_messages.Hunk]:
        return [h.to_dict() for h in self.hunks]

    @property
    def changed(self) -> bool:
        return bool(self.hunks)


def make_diff(old_text: str | None, new_text: str, path: str, context: int = CONTEXT) -> Diff:
    """The unified diff and hunk list turning ``old_text`` (None: file does not exist) into ``new_text``."""
    old = old_text or ""
    win = _Window(old, new_text, context)
    hunks = win.hunks()
    out: list[str] = []
    added = removed = 0
    if hunks:
        out.append(f"--- {'/dev/null' if old_text is None else 'a/' + path.lstrip('/')}\n")
        out.append(f"+++ b/{path.lstrip('/')}\n")
    for group, hunk in zip(win.groups, hunks, strict=True):
        out.append(hunk.header())
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_emit(" ", win.a[i1:i2]))
                continue
            if tag in ("replace", "delete"):
                out.extend(_emit("-", win.a[i1:i2]))
                removed += i2 - i1
            if tag in ("replace", "insert"):
                out.extend(_emit("+", win.b[j1:j2]))
                added += j2 - j1
    return Diff(path=path, unified="".join(out), hunks=hunks, added=added, removed=removed)


def apply_hunks(old_text: str | None, new_text: str, accepted: Iterable[int], context: int = CONTEXT) -> str:
    """``old_text`` with only the ``accepted`` hunks (indices from ``make_diff``) of the change applied."""
    old = old_text or ""
    keep = set(accepted)
    win = _Window(old, new_text, context)
    hunks = win.hunks()
    if keep >= {h.index for h in hunks}:
        return new_text
    parts: list[str] = [old[: win.a_off]]
    pos = 0
    for h in hunks:
        parts.extend(win.a[pos:h._i1])
        parts.extend(win.b[h._j1:h._j2] if h.index in keep else win.a[h._i1:h._i2])
        pos = h._i2
    parts.extend(win.a[pos:])
    parts.append(old[win.a_end:])
    return "".join(parts)


# ---- internals ------------------------------------------------------------------------------

class _Window:
    """The differing middle of two texts, widened by ``context`` lines, split into lines."""

    def __init__(self, a_text: str, b_text: str, context: int) -> None:
        self.context = context
        if a_text == b_text:
            self.a_off = self.a_end = len(a_text)
            self.line0 = a_text.count("\n")
            self.a: list[str] = []
            self.b: list[str] = []
            self.groups: list[list[tuple[str, int, int, int, int]]] = []
            return
        pre = common_prefix(a_text, b_text)
        start = a_text.rfind("\n", 0, pre) + 1  # start of the line holding the first difference
        suf = common_suffix(a_text, b_text, max_len=min(len(a_text), len(b_text)) - start)
        a_cut, b_cut = len(a_text) - suf, len(b_text) - suf
        if suf and not (_line_start(a_text, a_cut) and _line_start(b_text, b_cut)):
            nl = a_text.find("\n", a_cut)
            a_cut, b_cut = (len(a_text), len(b_text)) if nl < 0 else (nl + 1, b_cut + nl + 1 - a_cut)
        # Widen by `context` lines each side (they are equal in both texts).
        for _ in range(context):
            if start == 0:
                break
            start = a_text.rfind("\n", 0, start - 1) + 1
        a_end, b_end = a_cut, b_cut
        for _ in range(context):
            nl = a_text.find("\n", a_end)
            if nl < 0:
                a_end, b_end = len(a_text), len(b_text)
                break
            b_end += nl + 1 - a_end
            a_end = nl + 1
        self.a_off, self.a_end = start, a_end
        self.line0 = a_text.count("\n", 0, start)
        self.a = _lines(a_text[start:a_end])
        self.b = _lines(b_text[start:b_end])
        sm = difflib.SequenceMatcher(None, self.a, self.b, autojunk=False)
        self.groups = [g for g in sm.get_grouped_opcodes(context) if any(op[0] != "equal" for op in g)]

    def hunks(self) -> list[Hunk]:
        out = []
        for index, group in enumerate(self.groups):
            i1, i2 = group[0][1], group[-1][2]
            j1, j2 = group[0][3], group[-1][4]
            old_n, new_n = i2 - i1, j2 - j1
            old_start = self.line0 + i1 + (1 if old_n else 0)
            new_start = self.line0 + j1 + (1 if new_n else 0)
            out.append(Hunk(index, old_start, old_n, new_start, new_n, i1, i2, j1, j2))
        return out


def _lines(text: str) -> list[str]:
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _emit(prefix: str, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(prefix + line)
        else:
            out.append(prefix + line + "\n" + _NO_EOL)
    return out


def _range(start: int, n: int) -> str:
    return str(start) if n == 1 else f"{start},{n}"


def _line_start(text: str, pos: int) -> bool:
    return pos == 0 or text[pos - 1] == "\n"


def diff_summary(diff: Diff) -> dict[str, Any]:
    """Counts for result metadata."""
    return {"hunks": len(diff.hunks), "added": diff.added, "removed": diff.removed}

"""Safe rebase of a stale edit: apply it on top of an outside change only when the two are independent.

The agent read version ``base`` of a file; someone else (a formatter, the user, a Bash command) turned
it into ``current``; the agent now asks to replace ``old`` by ``new``. ``rebase_edit`` decides:

- ``base`` and ``current`` must have the same encoding, BOM and line-ending convention;
- ``old`` must occur in ``base`` exactly as often as in ``current`` (once, or n times with
  ``replace_all``), so the occurrence the agent meant is the one that will change;
- no line changed between ``base`` and ``current`` may lie within ``MARGIN`` lines of any line the
  occurrences span in ``base`` (an insertion counts as touching the lines either side of it).

Then the result is the three-way merge: ``current`` with the same replacement, which equals ``base``
with both the outside change and the edit applied (the regions are disjoint). Otherwise ``None``: the
caller refuses as for any stale file. The changed lines come from the hunks of ``make_diff(base,
current, context=0)`` (``workspace/diffs.py``: difflib's opcodes over the differing window only); the
model is shown that outside change as a short unified diff (``outside_diff``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sidecar.workspace.diffs import Diff, make_diff

MARGIN = 3
SHOWN_LINES = 40
SHOWN_CHARS = 4000


@dataclass(frozen=True)
class Rebased:
    """The outside change was independent of the edit."""

    outside: Diff  # base → current (context 0)
    shown: str  # a short unified diff of the outside change for the model ("" when there was none)


def _line_spans(text: str, needle: str, every: bool) -> list[tuple[int, int]]:
    """1-based inclusive line spans of the occurrences of ``needle`` (the first only unless ``every``)."""
    spans: list[tuple[int, int]] = []
    pos, line, last = text.find(needle), 1, 0
    while pos >= 0:
        line += text.count("\n", last, pos)
        last = pos
        end_line = line + text.count("\n", pos, pos + max(len(needle) - 1, 0))
        spans.append((line, end_line))
        if not every:
            break
        pos = text.find(needle, pos + max(1, len(needle)))
    return spans


def _touches(diff: Diff, span: tuple[int, int], margin: int) -> bool:
    lo, hi = span[0] - margin, span[1] + margin
    for h in diff.hunks:
        if h.old_lines:
            first, last = h.old_start, h.old_start + h.old_lines - 1
        else:  # an insertion after line old_start: it touches that line and the next
            first, last = h.old_start, h.old_start + 1
        if first <= hi and last >= lo:
            return True
    return False


def rebase_edit(base: str, current: str, old: str, replace_all: bool, path: str,
                margin: int = MARGIN) -> Rebased | None:
    """Whether replacing ``old`` in ``current`` is independent of the change ``base`` → ``current``."""
    if not old:
        return None
    n_base, n_current = base.count(old), current.count(old)
    if n_base != n_current or n_base == 0 or (n_base > 1 and not replace_all):
        return None
    outside = make_diff(base, current, path, context=0)
    for span in _line_spans(base, old, replace_all):
        if _touches(outside, span, margin):
            return None
    return Rebased(outside, short_diff(base, current, path) if outside.changed else "")


def short_diff(base: str, current: str, path: str) -> str:
    """The change ``base`` → ``current`` as a unified diff with one line of context, cut to size."""
    lines = make_diff(base, current, path, context=1).unified.splitlines(keepends=True)
    cut = lines[:SHOWN_LINES]
    text = "".join(cut)
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS].rsplit("\n", 1)[0] + "\n"
    if len(cut) < len(lines) or len(text) < len("".join(cut)):
        text += f"… (the outside change is longer: {len(lines)} diff lines; Read the file to see it all)\n"
    return text

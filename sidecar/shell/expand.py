"""Bash's brace and pathname expansion of one word, done here the way bash does it at run time.

Issue 27: file names a repository ships (``-R``, ``@list``, ``--from-file=x``) become options when a glob
expands to them, and a brace builds options the same way (``grep {-R,tree}``). The classifier therefore
judges a word *after* expansion: ``expand_word`` gives the words bash would produce from it now, against
the real directory, and the Bash tool runs exactly those words (``Analysis.run_command``).

Only what can be done exactly is done: a word with a ``$``, a backtick, an unusual bracket expression
(``[^…]``, ``[[:alpha:]]``), extglob syntax or too many results gives None (the caller keeps treating it as
a run-time word). Bash's defaults are followed: no ``nullglob``/``failglob`` (a pattern that matches
nothing stays as written, quotes removed), no ``dotglob`` (``*`` skips names starting with a dot; a
pattern component starting with ``.`` matches them, never ``.`` and ``..``), matches sorted. Sorting is by
code point (the C locale); bash sorts by the locale's collation, so the *order* of matches can differ
from an interactive shell in other locales — the run uses the order judged here either way.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
from pathlib import Path

MAX_WORDS = 4096

# One character of a word: (character, quoted). Quoted characters are never brace or glob syntax.
_Chars = list[tuple[str, bool]]


def _chars(raw: str) -> _Chars | None:
    """The word's characters after quote removal, each marked quoted or not; None for ``$`` or backticks
    (the word is only known at run time) or a quote bash would not close."""
    out: _Chars = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 >= n:
                return None
            out.append((raw[i + 1], True))
            i += 2
        elif c == "'":
            j = raw.find("'", i + 1)
            if j < 0:
                return None
            out.extend((ch, True) for ch in raw[i + 1 : j])
            i = j + 1
        elif c == '"':
            j = i + 1
            while j < n and raw[j] != '"':
                if raw[j] in "$`":
                    return None
                if raw[j] == "\\" and j + 1 < n and raw[j + 1] in '"\\$`\n':
                    out.append((raw[j + 1], True))
                    j += 2
                    continue
                out.append((raw[j], True))
                j += 1
            if j >= n:
                return None
            i = j + 1
        elif c in "$`":
            return None
        else:
            out.append((c, False))
            i += 1
    return out


def _closing(chars: _Chars, start: int) -> tuple[int, list[int]] | None:
    """The unquoted ``}`` closing the ``{`` at ``start`` and the top-level commas between them."""
    depth, commas = 0, list[int]()
    for k in range(start, len(chars)):
        c, quoted = chars[k]
        if quoted:
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return k, commas
        elif c == "," and depth == 1:
            commas.append(k)
    return None


_SEQ = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


def _sequence(body: str) -> list[str] | None:
    m = _SEQ.fullmatch(body)
    if m is None:
        return None
    a, b, step_text = m.group(1), m.group(2), m.group(3)
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        lo, hi = int(a), int(b)
        values = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        if len(values) > MAX_WORDS:
            return None
        width = max(len(a), len(b)) if (a.lstrip("-").startswith("0") and len(a.lstrip("-")) > 1) or (
            b.lstrip("-").startswith("0") and len(b.lstrip("-")) > 1) else 0
        return [str(v).zfill(width) if width and v >= 0 else (f"-{str(-v).zfill(width - 1)}" if width else str(v))
                for v in values]
    if a.isalpha() and b.isalpha():
        lo, hi = ord(a), ord(b)
        codes = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        return [chr(v) for v in codes]
    return None


def _braces(chars: _Chars) -> list[_Chars] | None:
    """Bash's brace expansion (comma lists, nested, and ``{a..b[..step]}`` sequences), left to right;
    None when there would be more than ``MAX_WORDS`` words."""
    for k, (c, quoted) in enumerate(chars):
        if c != "{" or quoted:
            continue
        found = _closing(chars, k)
        if found is None:
            continue
        end, commas = found
        prefix, suffix = chars[:k], chars[end + 1 :]
        alternatives: list[_Chars]
        if commas:
            bounds = [k, *commas, end]
            alternatives = [chars[s + 1 : e] for s, e in itertools.pairwise(bounds)]
        else:
            body = chars[k + 1 : end]
            if any(q for _, q in body):
                continue
            seq = _sequence("".join(ch for ch, _ in body))
            if seq is None:
                continue  # `{x}`, `{}`: no expansion here, look further right
            alternatives = [[(ch, True) for ch in s] for s in seq]
        out: list[_Chars] = []
        for alt in alternatives:
            expanded = _braces(alt + suffix) if commas else [alt + s for s in (_braces(suffix) or [])]
            if expanded is None:
                return None
            out.extend(prefix + e for e in expanded)
            if len(out) > MAX_WORDS:
                return None
        return out
    return [chars]


_GLOB = "*?["
_BRACKET = re.compile(r"\[!?\]?[A-Za-z0-9_.,+@%=~ -]*\]")


def _is_glob(chars: _Chars) -> bool:
    return any(c in _GLOB and not q for c, q in chars)


def _pattern(chars: _Chars) -> str | None:
    """The word as an ``fnmatch`` pattern (quoted glob characters escaped), or None for bracket
    expressions or extglob forms whose meaning fnmatch does not share with bash."""
    out: list[str] = []
    k = 0
    while k < len(chars):
        c, q = chars[k]
        if q:
            out.append(f"[{c}]" if c in "*?[]" else c)
        elif c == "[":
            rest = "".join(ch if not qq else "\0" for ch, qq in chars[k:])
            m = _BRACKET.match(rest)
            if m is None:
                return None
            out.append(m.group(0))
            k += len(m.group(0))
            continue
        elif c in "*?" and k + 1 < len(chars) and chars[k + 1] == ("(", False):
            return None  # extglob-looking
        else:
            out.append(c)
        k += 1
    return "".join(out)


def _glob(pattern: str, cwd: Path) -> list[str] | None:
    """Pathname expansion of ``pattern`` (relative to ``cwd``) component by component, as bash does."""
    absolute = pattern.startswith("/")
    parts = [p for p in pattern.split("/")]
    if absolute:
        bases, parts = ["/"], parts[1:]
    else:
        bases = [""]
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        if part == "" and not last:
            bases = [b + "/" if b and not b.endswith("/") else b for b in bases]
            continue
        if not any(ch in part for ch in _GLOB):
            bases = [os.path.join(b, part) if b else part for b in bases]
            continue
        hidden = part.startswith(".") or part.startswith("[.]")
        matched: list[str] = []
        for b in bases:
            folder = cwd / b if not absolute else Path(b or "/")
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in sorted(names):
                if name.startswith(".") and not hidden:
                    continue
                if fnmatch.fnmatchcase(name, part):
                    path = os.path.join(b, name) if b else name
                    if last or os.path.isdir(cwd / path if not absolute else path):
                        matched.append(path)
            if len(matched) > MAX_WORDS:
                return None
        bases = matched
        if not bases:
            return []
    if pattern.endswith("/"):
        bases = [b if b.endswith("/") else b + "/" for b in bases]
    return bases


def expand_word(raw: str, cwd: Path, home: Path | None = None) -> list[str] | None:
    """The words bash makes of ``raw`` (as written, quotes and all) by brace, tilde and pathname
    expansion in ``cwd`` now; None when that cannot be known here."""
    chars = _chars(raw)
    if chars is None:
        return None
    alternatives = _braces(chars)
    if alternatives is None:
        return None
    out: list[str] = []
    for alt in alternatives:
        text = "".join(c for c, _ in alt)
        if alt[:1] == [("~", False)]:
            user_end = next((k for k, (c, _) in enumerate(alt) if c == "/"), len(alt))
            if user_end != 1:
                return None  # ~user: left to the caller
            home_text = str(home if home is not None else Path(os.path.expanduser("~")))
            alt = [(ch, True) for ch in home_text] + alt[1:]
            text = "".join(c for c, _ in alt)
        if not _is_glob(alt):
            out.append(text)
            continue
        pattern = _pattern(alt)
        if pattern is None:
            return None
        if any(part.startswith((".", "[.]")) and (fnmatch.fnmatchcase("..", part) or fnmatch.fnmatchcase(".", part))
               for part in pattern.split("/")):
            return None  # bash before 5.2 matches `.` and `..` with `.*` (no globskipdots): not known here
        matches = _glob(pattern, cwd)
        if matches is None:
            return None
        out.extend(matches or [text])
        if len(out) > MAX_WORDS:
            return None
    return out


def has_glob(raw: str) -> bool:
    """Whether the word has an unquoted glob character (its expansion depends on the directory)."""
    chars = _chars(raw)
    return chars is None or _is_glob(chars)

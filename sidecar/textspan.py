"""Where two strings start and stop differing, in time proportional to the shared part's size in C.

The common prefix and suffix are found by comparing 64 KiB slices (C ``memcmp``) and bisecting the
first block that differs, never a Python loop per character or per line. Used by the diffs
(``workspace/diffs.py``), Edit's result snippet and the session log's diff excerpt (``session.py``),
which is why it sits in the bottom layer.
"""

from __future__ import annotations

_BLOCK = 1 << 16


def common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings (block-wise memcmp)."""
    n = min(len(a), len(b))
    i = 0
    while i + _BLOCK <= n and a[i:i + _BLOCK] == b[i:i + _BLOCK]:
        i += _BLOCK
    # a[:i] == b[:i]; bisect the last block with slice compares (C memcmp) instead of a char loop.
    lo, hi = i, min(i + _BLOCK, n)
    if a[lo:hi] == b[lo:hi]:
        return hi
    while hi - lo > 1:  # a[:lo] equal, a[:hi] not
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def common_suffix(a: str, b: str, max_len: int) -> int:
    """Length of the common suffix, at most ``max_len`` (pass ``min(len) - prefix`` to avoid overlap)."""
    la, lb = len(a), len(b)
    n = max(0, max_len)
    s = 0
    while s + _BLOCK <= n and a[la - s - _BLOCK:la - s] == b[lb - s - _BLOCK:lb - s]:
        s += _BLOCK
    lo, hi = s, min(s + _BLOCK, n)  # suffix of length lo equal; of length hi maybe not
    if a[la - hi:la - lo] == b[lb - hi:lb - lo]:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
            lo = mid
        else:
            hi = mid
    return lo

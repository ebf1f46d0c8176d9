"""Read: a bounded observation of one file (docs/contract.md §5.1, mechanism one).

Text comes back ``cat -n`` style; images as image blocks; PDFs as text by page; notebooks as cells
with outputs. Files over ``STREAM_THRESHOLD`` are streamed: a late range is found through a newline
checkpoint index (holes of sparse files skipped with SEEK_DATA), never by loading the file.
"""

from __future__ import annotations

import base64
import bisect
import io
import json
import os
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.base import ImageBlock, Location, TextBlock, Tool, ToolInput, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.files.client_files import (
    client_reads,
    in_editor_only,
    read_from_client,
    record_client_read,
    unsaved_read_note,
)
from sidecar.tools.files.common import (
    ledger_of,
    open_regular,
    read_bytes,
    require_read,
    resolved,
    shown,
    start_watching,
)
from sidecar.workspace.buffers import buffers_for
from sidecar.workspace.ledger import (
    CONTENT_FILE_MAX,
    SAMPLE,
    STREAM_THRESHOLD,
    Fingerprint,
    LedgerEntry,
    client_fingerprint,
    digest,
    digest_parts,
)
from sidecar.workspace.textfile import BinaryFileError, Encoding, decode, sniff_binary

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
# The numbered text one Read returns at most (~25,000 tokens, Claude Code's cap on a Read). A range over
# it shows the lines that fit, nearest its start (nearest its end for a negative offset), and a note with
# the offset that reads on: a 4 MB file read whole would be ~1.2 M tokens, a request the API refuses, and
# every later request of the conversation would carry it.
READ_MAX_CHARS = 100_000
# A cut line grows by its marker ("… [line cut: N characters in all]"): at most this many characters.
CUT_MARKER_MAX = 48
MAX_PDF_PAGES_PER_CALL = 20
PDF_PAGES_REQUIRED_OVER = 10
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}
IMAGE_MAX_SIDE = 1568  # the API's own downscale target
IMAGE_MAX_BYTES = 3_750_000  # base64 of it stays under the API's 5 MB image limit
MAX_IMAGE_FILE = 50 * 1024 * 1024
MAX_PDF_FILE = 100 * 1024 * 1024
CHUNK = 1 << 20
TAIL_BLOCK = 1 << 16
TAIL_MAX_BYTES = 8 * 1024 * 1024


class ReadInput(ToolInput):
    """Reads a file from the local filesystem. Use it to look at any file before you change it: Edit and
    Write refuse a file you have not Read in this session (or that changed since you read it).

    - file_path must be an absolute path. If the user gives a path to a file, including a screenshot
      or other image, Read it.
    - By default up to 2000 lines from the start are returned. For long files pass offset (the 1-based
      line to start at) and limit (how many lines); a negative offset counts from the end (-100 = the
      last 100 lines, e.g. of a log). Lines longer than 2000 characters are cut. Prefer reading the
      whole file when it is of reasonable size. A file over 2 MB is not counted to answer a range: its
      note says it goes on instead of how many lines it has, and its last lines are numbered from the
      end (-1 = the last line; usable as offset) unless its lines were counted already.
    - One Read returns at most 100,000 characters. For a range over that you get the lines that fit
      (the last ones for a negative offset) and a note with the offset to read on; Grep finds a part
      of a large file faster than paging through it.
    - Output is numbered like `cat -n`: spaces, the line number, a tab, then the line. The number and the
      tab are not part of the file; everything after the tab is the line exactly (its indentation
      included). Never put the number prefix into Edit's old_string or new_string.
    - Images (PNG, JPG, GIF, WEBP) are shown to you as images. PDFs are read as text by page; a PDF over
      10 pages needs `pages` (e.g. "1-5"), at most 20 pages per call. Jupyter notebooks (.ipynb) come back
      as cells with their ids and outputs.
    - To look at several files, send several Read calls in one message: they run together.
    - Reading the same range of an unchanged file again returns a short "unchanged" note: use what you
      read before. A file that exists but is empty says so. Directories cannot be read: use Glob, or
      Bash `ls` for one directory.
    """

    file_path: str = Field(description="The absolute path to the file to read")
    offset: int | None = Field(default=None, description="The line number to start reading from (1-based). "
                               "Only provide if the file is too large to read at once. A negative offset counts "
                               "from the end: -2000 reads the last 2000 lines (fast even on huge files).")
    limit: int | None = Field(default=None, gt=0, description="The number of lines to read. Only provide if the "
                              "file is too large to read at once")
    pages: str | None = Field(default=None, description='Page range for PDF files, e.g. "1-5", "3" or "10-20". '
                              "At most 20 pages per request.")


class ReadTool(Tool[ReadInput]):
    name = "Read"
    kind = "read"
    Input = ReadInput

    def title(self, raw_input: dict[str, Any]) -> str:
        path = raw_input.get("file_path") or ""
        extra = ""
        if raw_input.get("offset") or raw_input.get("limit"):
            extra = f" (from line {raw_input.get('offset') or 1})"
        return f"Read {path}{extra}".strip()

    def locations(self, inp: ReadInput) -> list[Location]:
        return [Location(inp.file_path, inp.offset or None)]

    def is_read_only(self, inp: ReadInput) -> bool:
        return True

    async def validate(self, inp: ReadInput, ctx: ToolContext) -> None:
        r = resolved(ctx, inp.file_path)
        if r.kind == "dir":
            raise ToolError(f"{inp.file_path} is a directory, not a file. Use Glob to list files in it "
                            "(or Bash `ls`).")
        if not r.exists and not (in_editor_only(ctx, r.path) and _is_text(r.path)):
            raise ToolError(f"File does not exist: {inp.file_path}. The current working directory is "
                            f"{ctx.cwd}. Check the path (Glob can find it) and call again.")
        if inp.pages is not None and r.path.suffix.lower() != ".pdf":
            raise ToolError("pages applies to PDF files only; use offset and limit for text files.")

    async def check_permission(self, inp: ReadInput, ctx: ToolContext) -> None:
        r = resolved(ctx, inp.file_path)
        await require_read(ctx, self.name, r.path, inp.model_dump(exclude_none=True))

    async def run(self, inp: ReadInput, ctx: ToolContext) -> ToolOutput:
        # Validated by the dispatcher just before (its only caller), on the same resolved path: not again.
        r = resolved(ctx, inp.file_path)
        path = r.path
        start_watching(ctx)
        suffix = path.suffix.lower()
        if suffix in IMAGE_TYPES:
            out = _read_image(path, ctx, IMAGE_TYPES[suffix])
        elif suffix == ".pdf":
            out = _read_pdf(path, ctx, inp.pages)
        elif suffix == ".ipynb":
            out = _read_notebook(path, ctx, inp)
        else:
            served = await _read_editor_text(path, ctx, inp) if client_reads(ctx) else None
            out = served if served is not None else _read_text(path, ctx, inp)
        out.metadata.setdefault("subject", str(path))
        if out.metadata.get("source") == "editor":
            return out
        if buffers_for(ctx.session).is_dirty(path) and not out.is_error:
            out.blocks.append(TextBlock("\nNote: this file has unsaved changes in the editor; the text above is "
                                        "the version saved on disk. Ask the user to save before editing it."))
        return out


# ---- text -----------------------------------------------------------------------------------

def _remember_bound(ctx: ToolContext, path: Path, key: str, out: ToolOutput) -> ToolOutput:
    """A Read over the bound: the ledger keeps what it showed of range ``key`` (for ``_unchanged``)."""
    entry = ledger_of(ctx).get(path)
    if out.metadata.get("bounded") and entry is not None:
        first, last = out.metadata["range"]
        entry.shown[key] = (first, last, out.metadata["asked"][0])
    return out


def _range_key(inp: ReadInput) -> tuple[int, int, str]:
    """(start, limit, ledger key); a negative ``start`` counts from the end (-1 = the last line)."""
    limit = inp.limit or DEFAULT_LIMIT
    if inp.offset is not None and inp.offset < 0:
        return inp.offset, limit, f"tail:{-inp.offset}+{limit}"
    start = max(1, inp.offset or 1)
    return start, limit, f"lines:{start}+{limit}"


def _past_end(ctx: ToolContext, path: Path, start: int, total: int) -> ToolOutput:
    """A range that starts after the file's last line: nothing shown (``past_end``; its Read records no
    range, so the same Read again says this again)."""
    return ToolOutput.text(f"{shown(ctx, path)} has {total} lines; offset {start} is past the end. "
                           f"Use an offset between 1 and {total}.",
                           metadata={"range": [start, start], "past_end": True})


def _shown_key(out: ToolOutput, key: str) -> str | None:
    """The range ``key`` a Read's output ``out`` showed lines of, for the ledger; None when it showed none
    (past the end, an empty file), so its repeat is answered as it was, never "unchanged"."""
    return None if out.metadata.get("empty") or out.metadata.get("past_end") else key


def _unchanged(path: Path, ctx: ToolContext, start: int, limit: int, key: str) -> ToolOutput:
    end = start + limit - 1
    entry = ledger_of(ctx).get(path)
    cut = entry.shown.get(key) if entry is not None else None
    if cut is not None:  # that Read was over the bound: say what it showed, and how to read on
        first, last, asked = cut
        on = (f"offset={asked} with limit={first - asked} for the lines before them" if first > asked
              else f"offset={last + 1} for the lines after them")
        return ToolOutput.text(
            f"File unchanged since last read: lines {first}{' to ' if first < 0 else '-'}{last} of {shown(ctx, path)} "
            "(what your earlier "
            f"Read showed of this range; the rest is over Read's {READ_MAX_CHARS:,}-character bound) are exactly "
            f"as it returned them. Use that earlier result instead of reading again, and {on}.",
            metadata={"unchanged": True, "range": [first, last]})
    if start < 0:  # numbered from the end: the range stops at the last line (-1), or ``limit`` lines on
        last = min(end, -1)
        lines = (f"the last {-start} lines" if last == -1
                 else f"lines {start} to {last} (counted from the end: -1 is the last line)")
        return ToolOutput.text(
            f"File unchanged since last read: {lines} of {shown(ctx, path)} are exactly as your earlier Read "
            "returned them. Use that earlier result instead of reading again.",
            metadata={"unchanged": True, "range": [start, last]})
    return ToolOutput.text(
        f"File unchanged since last read: lines {start}-{end} of {shown(ctx, path)} are exactly as your "
        "earlier Read returned them. Use that earlier result instead of reading again.",
        metadata={"unchanged": True, "range": [start, end]})


def _counted_from_start(text: str, start: int, limit: int) -> tuple[int, int]:
    """A range counted from the end (``start`` < 0) of a file whose ``text`` is at hand, as line numbers
    from its start: (first line, count), as ``_text_output`` numbered it when it was read."""
    total = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    first = max(1, total + start + 1)
    return first, max(0, min(limit, total - first + 1))


def _numbered(first: int, lines: list[str], checked: bool = False, end: str = "") -> str | None:
    """``lines`` numbered from ``first`` as ``_format_line`` would, in one C-level formatting pass (the
    per-line f-string cost ~0.6 µs a line, most of a 2,000-line Read); None when a line holds a CR or is
    too long, which ``_format_line`` must handle (``checked``: the caller knows there is none). ``end`` is
    appended in the same join (a note after the lines: no second copy of the text)."""
    if not lines:
        return end
    if not checked and (max(map(len, lines)) > MAX_LINE_CHARS or "\r" in "".join(lines)):
        return None
    n = len(lines)
    # The numbers in one formatting pass, then one join of [number, tab, line, newline] * n.
    parts = ["", "\t", "", "\n"] * n
    parts[0::4] = ("%6d\n" * n % tuple(range(first, first + n))).split("\n")[:n]
    parts[2::4] = lines
    parts[-1] = end  # no newline after the last line
    return "".join(parts)


def _format_line(n: int, line: str) -> str:
    if line.endswith("\r"):
        line = line[:-1]
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + f"… [line cut: {len(line)} characters in all]"
    return f"{n:>6}\t{line}"


# ---- the output bound (READ_MAX_CHARS) ----------------------------------------------------------

def _number_chars(first: int, n: int) -> int:
    """Characters of the numbers ``_format_line`` prints for lines ``first``…``first+n-1`` (at least six
    each; negative numbers, a streamed tail's, have their sign), counted by runs of one width."""
    chars = 0
    k, last = first, first + n - 1
    while k <= last:
        digits = len(str(abs(k)))
        run_end = 10 ** digits - 1 if k >= 0 else -(10 ** (digits - 1))  # the last number of this width
        top = min(last, run_end)
        chars += max(6, len(str(k))) * (top - k + 1)
        k = top + 1
    return chars


def _cost_at_most(chars: int, first: int, n: int) -> int:
    """An upper bound on the numbered text of ``n`` lines from ``first`` whose content is ``chars``
    characters (or UTF-8 bytes, never fewer): a number and a tab per line, a newline between lines, and
    a cut marker per line over ``MAX_LINE_CHARS`` (there are at most ``chars // (MAX_LINE_CHARS + 1)``)."""
    return chars + _number_chars(first, n) + 2 * n - 1 + CUT_MARKER_MAX * (chars // (MAX_LINE_CHARS + 1))


def _shown_len(line: str) -> int:
    """The characters ``_format_line`` shows of ``line`` after its number and tab."""
    n = len(line) - line.endswith("\r")
    return n if n <= MAX_LINE_CHARS else MAX_LINE_CHARS + len(f"… [line cut: {n} characters in all]")


def _fit(lengths: list[int], first: int, from_end: bool) -> int:
    """How many of the lines numbered from ``first`` whose shown lengths are ``lengths`` fit
    ``READ_MAX_CHARS`` once numbered: taken from the start, or from the end (``from_end``). At least one
    (a line is cut at ``MAX_LINE_CHARS``, far under the bound)."""
    m = len(lengths)
    sums = list(accumulate(reversed(lengths) if from_end else lengths, initial=0))
    last = first + m - 1

    def cost(j: int) -> int:
        return sums[j] + _number_chars(last - j + 1 if from_end else first, j) + 2 * j - 1 if j else 0

    return max(1, bisect.bisect_right(range(m + 1), READ_MAX_CHARS, key=cost) - 1)


def _fit_formatted(texts: list[str], from_end: bool) -> int:
    """How many of the formatted lines ``texts`` (joined by newlines) fit ``READ_MAX_CHARS``, from the start
    or from the end; at least one."""
    sums = list(accumulate(map(len, reversed(texts) if from_end else texts), initial=0))
    return max(1, bisect.bisect_right(range(len(texts) + 1), READ_MAX_CHARS,
                                      key=lambda j: sums[j] + j - 1 if j else 0) - 1)


# Each numbered line costs at least eight characters (six for its number, a tab, a newline): no more
# lines than this can fit, whatever their text.
MAX_BOUND_LINES = (READ_MAX_CHARS + 1) // 8


def _within_bound(chosen: list[str], start: int, from_end: bool) -> tuple[list[str], int]:
    """The lines of ``chosen`` (numbered from ``start``) that fit ``READ_MAX_CHARS``: all of them, or the
    leading ones (the trailing ones ``from_end``), and the first one's number. Only the lines that can
    fit are measured."""
    n = len(chosen)
    if not n or _cost_at_most(sum(map(len, chosen)), start, n) <= READ_MAX_CHARS:
        return chosen, start
    m = min(n, MAX_BOUND_LINES)
    candidates = chosen[n - m:] if from_end else chosen[:m]
    first = start + n - m if from_end else start
    plain = max(map(len, candidates)) <= MAX_LINE_CHARS and "\r" not in "".join(candidates)
    k = _fit(list(map(len, candidates)) if plain else [_shown_len(line) for line in candidates], first, from_end)
    return (candidates[m - k:], first + m - k) if from_end else (candidates[:k], start)


def _bound_note(start: int, end: int, asked_start: int) -> str:
    """What a Read cut by the bound says instead of its range note: what it showed and how to go on."""
    if start > asked_start:  # the range's last lines were kept (a negative offset)
        return (f"the earlier lines of this range are over Read's {READ_MAX_CHARS:,}-character bound. Use "
                f"offset={asked_start} with limit={start - asked_start} to read them, or Grep to find what "
                "you need.)")
    return (f"the rest of this range is over Read's {READ_MAX_CHARS:,}-character bound. Use offset={end + 1} "
            "to read on, or Grep to find what you need.)")


def _read_text(path: Path, ctx: ToolContext, inp: ReadInput) -> ToolOutput:
    start, limit, key = _range_key(inp)
    ledger = ledger_of(ctx)
    st = os.stat(path)
    if st.st_size > STREAM_THRESHOLD:
        return _read_streamed(path, ctx, inp, st)
    if st.st_size > CONTENT_FILE_MAX:
        large = _read_large_range(path, ctx, start, limit, key)
        if large is not None:
            return large
    data, st = read_bytes(path)
    # The stat of the read's own descriptor: its ctime and inode are the file's as read, so a later
    # range Read of a large file compares them too (a same-size rewrite with the mtime set back).
    fp = Fingerprint(st.st_mtime_ns, st.st_size, digest(data), True, ctime_ns=st.st_ctime_ns, ino=st.st_ino)
    if ledger.is_unchanged_read(path, key, fp):
        if start < 0:  # a small file: said in the line numbers its Read showed
            start, limit = _counted_from_start(_decode_text(path, ctx, data)[0], start, limit)
        return _unchanged(path, ctx, start, limit, key)
    text, enc = _decode_text(path, ctx, data)
    out = _text_output(path, ctx, text, enc, start, limit)
    ledger.record_read(path, fp, _shown_key(out, key), data)
    return _remember_bound(ctx, path, key, out)


SCAN_BLOCK = 1 << 18  # a large file is scanned this many bytes at a time, through one reused buffer
_BOM_STARTS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


class _Scan(NamedTuple):
    newlines: int  # the newlines counted: all of the file's when ``complete``
    # (newlines before, byte offset) at the start of every SCAN_BLOCK counted
    blocks: list[tuple[int, int]]
    trailing: bool  # the last byte is a newline (when ``complete``)
    crlf: bool  # every newline counted is a CRLF
    stamp: tuple[int, int, int, int]  # (st_ino, st_size, st_mtime_ns, st_ctime_ns) of the file scanned
    complete: bool = True  # the whole file was counted (else up to ``scanned``, the lines a range needed)
    scanned: int = 0  # the bytes counted

    def covers(self, span: tuple[int, int] | None) -> bool:
        """Whether it holds the lines of ``span`` (``_scan_lines``; None, a range from the end: the whole
        count)."""
        return self.complete or (span is not None and self.newlines >= span[1])


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What a scan of the file stays valid for: its inode, size, mtime and ctime (which no ``touch`` can
    set back)."""
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _scan_lines(fd: int, size: int, stamp: tuple[int, int, int, int],
                span: tuple[int, int] | None = None) -> _Scan | None:
    """Count the newlines of the file on ``fd``, ``SCAN_BLOCK`` at a time into one buffer (no allocation
    of the file's size: each fresh page of one costs a fault), keeping where each block starts; None when
    it starts with a BOM or looks binary (the whole-file path decodes or refuses it). ``span``: the
    range's first line and the one after it (0-based): stop once the newline ending its last line is
    counted, or the blocks a bounded range can show are (``BOUND_BLOCKS`` from its first line's): a range
    from the start touches the blocks up to its end, as ``head`` does.
    Nothing is decoded here: the range is, strictly, when it is shown (a file that is not UTF-8 there
    goes to the whole-file path)."""
    buf = bytearray(min(size, SCAN_BLOCK))
    view = memoryview(buf)
    index: list[tuple[int, int]] = []
    newlines = pairs = 0
    pos = 0
    last: bytes | bytearray = b""
    reached = -1  # the block where the range's first line is (with ``span``)
    try:
        while pos < size:
            got = os.preadv(fd, [view[:size - pos]], pos)
            if got <= 0:
                return None  # shrank since the stat: the whole-file path reads what is there
            block: bytes | bytearray = buf if got == len(buf) else bytes(view[:got])
            if pos == 0 and (block.startswith(_BOM_STARTS) or sniff_binary(bytes(block[:8192]))):
                return None
            index.append((newlines, pos))
            newlines += block.count(b"\n")
            if b"\r" in block or last == b"\r":
                pairs += block.count(b"\r\n") + (last == b"\r" and block[:1] == b"\n")
            last = block[-1:]
            pos += got
            if span is not None and pos < size:
                if reached < 0 and newlines >= span[0]:
                    reached = len(index) - 1
                if newlines >= span[1] or (reached >= 0 and len(index) - reached > BOUND_BLOCKS):
                    return _Scan(newlines, index, False, newlines > 0 and pairs == newlines, stamp, False, pos)
    finally:
        view.release()
    return _Scan(newlines, index, last == b"\n", newlines > 0 and pairs == newlines, stamp, True, pos)


def _read_large_range(path: Path, ctx: ToolContext, start: int, limit: int, key: str) -> ToolOutput | None:
    """A range of a large UTF-8 file (over ``CONTENT_FILE_MAX``, so never kept for rebasing), touching
    only the lines it returns: the file's newlines are counted block by block (``_scan_lines``, a block
    index kept) up to the range's end — all of them for a range from the end, whose numbers need the
    count — then only the blocks holding the range are read, its ends found by counting newlines
    (``_line_start``), and it is decoded (strictly: None when it is not UTF-8 there, and the whole-file
    path decodes the file) and numbered in C-level formatting passes (``_numbered_bytes``). A range from
    the start of an uncounted file says the file goes on instead of its line count. The fingerprint is
    the stat (``full=False``: a partial digest is never compared, so none is computed). Same text as
    ``_text_output`` but for that note (a "\n" byte is never inside a UTF-8 sequence;
    tests/files/test_read.py compares them). Before: the whole 4 MB was read, split and joined: ~8x
    ``head`` for 2,000 lines, ~18x ``cat -n`` for all of them; then counted and UTF-8-checked whole:
    ~5x ``head``."""
    fd, st = open_regular(path)
    try:
        fp = Fingerprint.of_stat(st)
        ledger = ledger_of(ctx)
        # A file read page by page (offset=2001, 4001, …) is scanned once while it stays the same file.
        entry = ledger.get(path)
        known = entry.scan if entry is not None and not entry.stale else None
        span = None if start < 0 else (start - 1, start - 1 + limit)  # 0-based: first line, the one after
        counted = isinstance(known, _Scan) and known.stamp == _stamp(st) and known.covers(span)
        if start < 0 and not counted:
            # Read from the end like ``tail`` and numbered from the end, as a huge file's end is: numbers
            # from the start would mean counting the whole file (~3-5 ms of 4 MB, more than ``tail``'s run).
            from_tail = _read_large_tail(path, ctx, fd, st, -start, limit, key)
            if from_tail is not None:
                return from_tail
        scan = known if counted and isinstance(known, _Scan) else _scan_lines(fd, st.st_size, _stamp(st), span)
        if scan is None or scan.newlines == 0:
            return None
        newlines = scan.newlines
        # Uncounted (None): the file goes on after the range.
        total = newlines + (0 if scan.trailing else 1) if scan.complete else None
        from_end = start < 0
        if from_end and ledger.is_unchanged_read(path, key, fp):
            # Said of the range as asked: an earlier read of it may have numbered it from the end.
            return _unchanged(path, ctx, start, limit, key)
        if total is not None:
            if start < 0:
                start = max(1, total + start + 1)
            if start > total:
                ledger.record_read(path, fp, None).scan = scan  # the count made: the next page needs none
                return _past_end(ctx, path, start, total)
        if ledger.is_unchanged_read(path, key, fp):
            return _unchanged(path, ctx, start, min(limit, total - start + 1) if total is not None else limit, key)
        count = limit if total is None else min(limit, total - start + 1)
        first, after_line = start - 1, start - 1 + count  # 0-based: the range's first line, the one after it
        # The blocks from the one the first line starts in (after newline number ``first``) to the one
        # holding newline number ``after_line`` (the range's last "\n").
        lo = max(0, bisect.bisect_left(scan.blocks, (first, 0)) - 1) if first else 0
        hi = bisect.bisect_left(scan.blocks, (after_line, 0))
        # Only the lines within BOUND_BLOCKS of the range's start (its end, from_end) can fit the bound:
        # a longer range is not read past them.
        if hi - lo > BOUND_BLOCKS:
            lo, hi = (hi - BOUND_BLOCKS, hi) if from_end else (lo, lo + BOUND_BLOCKS)
        before, offset = scan.blocks[lo]
        end = scan.blocks[hi][1] if hi < len(scan.blocks) else scan.scanned
        region = os.pread(fd, end - offset, offset)
    finally:
        os.close(fd)
    held = (scan.blocks[hi][0] if hi < len(scan.blocks) else newlines) - before
    if len(region) != end - offset or region.count(b"\n") != held:
        return None  # changed since it was scanned: the whole-file path reads it again
    # The range in the region: ``begin`` where its first line starts (None: before the region), ``stop``
    # where its last line ends, without its "\n" (None: after the region).
    begin = _line_start(region, first - before) if first > before or offset == 0 else None
    stop = None
    if after_line - before <= held or (hi >= len(scan.blocks) and scan.complete):
        after = _line_start(region, after_line - before, known=(0, 0) if begin is None else (first - before, begin))
        stop = after - 1 if after > (begin or 0) and region[after - 1] == 10 else after
    try:
        if begin is not None and stop is not None and _cost_at_most(stop - begin, start, count) <= READ_MAX_CHARS:
            shown_start, shown_count, lo_byte, hi_byte = start, count, begin, stop
        else:
            cut = _bounded_bytes(region, begin, stop, start, start + count - 1, from_end)
            if cut is None:  # lines over MAX_LINE_CHARS near the cut: the whole-file path measures them
                return None
            lo_byte, hi_byte, shown_start, shown_count = cut
        body = _numbered_bytes(shown_start, region, lo_byte, hi_byte)
        lines = region[lo_byte:hi_byte].decode("utf-8").split("\n") if body is None else []
    except UnicodeDecodeError:  # not UTF-8 here (or rewritten since the scan): the whole-file path decodes it
        return None
    ledger.record_read(path, fp, key).scan = scan
    enc = Encoding("utf-8", b"", scan.crlf)
    return _remember_bound(ctx, path, key, _lines_output(lines, enc, shown_start, total, body=body, count=shown_count,
                                                         asked=(start, start + count - 1), size=st.st_size))


def _read_large_tail(path: Path, ctx: ToolContext, fd: int, st: os.stat_result, count: int, limit: int,
                     key: str) -> ToolOutput | None:
    """The last ``count`` lines of a large file read from the end (``_read_tail``), when it is neither
    binary nor starts with a BOM and those lines are plain UTF-8; else None (it is counted instead)."""
    head = os.pread(fd, SAMPLE, 0)
    if head.startswith(_BOM_STARTS) or sniff_binary(head[:8192]):
        return None
    if ledger_of(ctx).is_unchanged_read(path, key, Fingerprint.of_stat(st)):
        return _unchanged(path, ctx, -count, limit, key)
    tail = os.pread(fd, SAMPLE, max(0, st.st_size - SAMPLE))
    return _read_tail(path, ctx, fd, st, head, tail, count, limit, key, strict=True)


# A window of this many bytes after a range's start (before its end) holds every line of it that can fit
# READ_MAX_CHARS when the window is ASCII (a character per byte, and each line's number costs more than
# the "\n" it replaces); four times as many when it is not (UTF-8 has at most four bytes a character).
# Lines over MAX_LINE_CHARS show fewer characters than they hold, so they are measured by the whole-file
# path instead.
ASCII_WINDOW = READ_MAX_CHARS + 16
UTF8_WINDOW = 4 * ASCII_WINDOW
# The blocks a bounded range is read from: the block its first line starts in, then enough for the window
# and a line crossing its end.
BOUND_BLOCKS = 1 + -(-(UTF8_WINDOW + MAX_LINE_CHARS + 1) // SCAN_BLOCK)


def _bounded_bytes(region: bytes, begin: int | None, stop: int | None, first: int, last: int, from_end: bool
                   ) -> tuple[int, int, int, int] | None:
    """The lines of the range numbered ``first``…``last`` (bytes ``begin``…``stop`` of ``region``, None
    where the range goes past it) that fit ``READ_MAX_CHARS``: the leading ones, or the trailing ones
    ``from_end``, as (start byte, stop byte, first number, count). Only the window that can hold them is
    decoded and measured. None when a line near the cut is over ``MAX_LINE_CHARS`` bytes (its characters
    are not its bytes) or the window's lines are not all in ``region``."""
    if from_end:
        if stop is None:
            return None
        window = ASCII_WINDOW if region[max(0, stop - ASCII_WINDOW):stop].isascii() else UTF8_WINDOW
        floor = 0 if begin is None else begin
        edge = stop - window  # the first byte of the window: the line holding it and those after it
        if edge <= floor:
            if begin is None:
                return None
            lo = begin
        else:
            lo = region.rfind(b"\n", floor, edge) + 1
            if lo == 0 and begin is None:
                return None
            lo = max(lo, floor)
        hi = stop
        top = last - region.count(b"\n", lo, hi)  # the number of the window's first line
    else:
        if begin is None:
            return None
        window = ASCII_WINDOW if region[begin:begin + ASCII_WINDOW].isascii() else UTF8_WINDOW
        lo, limit = begin, len(region) if stop is None else stop
        edge = begin + window - 1  # the last byte of the window: the line holding it and those before it
        if edge >= limit:
            if stop is None:
                return None
            hi = stop
        else:
            nl = region.find(b"\n", edge, limit)
            if nl >= 0:
                hi = nl
            elif stop is not None:
                hi = stop
            else:
                return None
        top = first
    if not _lines_fit(region, lo, hi):
        return None
    texts = region[lo:hi].decode("utf-8").split("\n")
    plain = region.find(b"\r", lo, hi) < 0
    k = _fit(list(map(len, texts)) if plain else [_shown_len(t) for t in texts], top, from_end)
    if from_end:
        keep_from = _line_start(region, len(texts) - k, known=(0, lo))
        return keep_from, hi, top + len(texts) - k, k
    keep_to = _line_start(region, k, known=(0, lo)) - 1 if k < len(texts) else hi
    return lo, keep_to, top, k


LINE_SEARCH_BLOCK = 1 << 14  # newlines are counted this many bytes at a time, then found one by one


def _line_start(data: bytes, line: int, known: tuple[int, int] = (0, 0)) -> int:
    """The byte offset where 0-based ``line`` starts (``len(data)`` past the last): after the
    ``line``-th newline, counted forwards from ``known`` (a line and its offset, at or before ``line``;
    ``data`` is a few blocks around the range, so never far). Whole blocks are counted at C speed; only
    the last one is searched newline by newline."""
    known_line, pos = known
    need = line - known_line  # newlines to pass
    while need > 0:
        end = min(len(data), pos + LINE_SEARCH_BLOCK)
        if end == pos:
            return len(data)
        found = data.count(b"\n", pos, end)
        if found < need:
            need -= found
            pos = end
            continue
        for _ in range(need):
            pos = data.index(b"\n", pos) + 1
        need = 0
    return pos


NUMBER_BLOCK = 1 << 16  # text numbered this many bytes at a time: the pieces stay in the CPU's cache


def _numbered_bytes(first: int, data: bytes, lo: int, hi: int) -> str | None:
    """``data[lo:hi]`` (UTF-8 lines joined by "\n", no final one) numbered from ``first`` exactly as
    ``_numbered`` numbers its decoded lines, without an object per line: each ``NUMBER_BLOCK`` of lines
    becomes a ``%``-format whose every line starts with ``%6d\t``, filled in one pass. None when a line
    may be over ``MAX_LINE_CHARS`` or holds a CR (``_format_line``'s cases). A whole 4 MB file: ~4x faster
    than splitting and joining it (and 2x faster in blocks than in one piece)."""
    if hi <= lo or data.find(b"\r", lo, hi) >= 0 or not _lines_fit(data, lo, hi):
        return None
    pieces: list[str] = []
    number = first
    pos = lo
    while pos < hi:
        cut = data.rfind(b"\n", pos, pos + NUMBER_BLOCK) if pos + NUMBER_BLOCK < hi else hi
        if cut < 0:  # cannot be: _lines_fit found a newline in every block
            cut = hi
        lines = data.count(b"\n", pos, cut) + 1
        width = len(str(number))
        if number + lines > 10 ** width:  # the numbers get a digit more: that line starts the next piece
            lines = 10 ** width - number
            cut = _line_start(data, lines, known=(0, pos)) - 1  # the newline ending the piece's last line
        # "%d" after literal padding, not "%6d": formatting without a width writes the digits straight
        # into the result (CPython's fast path), 2.5x faster. Every number of a piece has ``width`` digits.
        head = b" " * (6 - width) + b"%d\t"
        form = head + data[pos:cut].replace(b"%", b"%%").replace(b"\n", b"\n" + head)
        pieces.append((form % tuple(range(number, number + lines))).decode("utf-8"))
        number += lines
        pos = cut + 1
    return "\n".join(pieces)


def _lines_fit(data: bytes, lo: int, hi: int) -> bool:
    """No line of ``data[lo:hi]`` is over ``MAX_LINE_CHARS`` bytes (so not over that many characters
    either). A line that long holds a whole newline-free block of half that size: only blocks are
    probed, at C speed; a block without a newline is settled by measuring the lines."""
    half = MAX_LINE_CHARS // 2 + 1  # a line of MAX_LINE_CHARS + 1 bytes holds a whole block of this size
    for pos in range(lo, hi - half + 1, half):
        if data.find(b"\n", pos, pos + half) < 0:
            return max(map(len, data[lo:hi].split(b"\n"))) <= MAX_LINE_CHARS
    return True


def _is_text(path: Path) -> bool:
    """Not an image, PDF or notebook (those are read from disk only)."""
    suffix = path.suffix.lower()
    return suffix not in IMAGE_TYPES and suffix not in (".pdf", ".ipynb")


def _decode_text(path: Path, ctx: ToolContext, data: bytes) -> tuple[str, Encoding]:
    try:
        return decode(data)
    except BinaryFileError as exc:
        raise ToolError(f"{shown(ctx, path)} is a binary file ({exc}); it cannot be shown as text. "
                        "If you need facts about it, use Bash (e.g. `file`, `xxd | head`).") from None


async def _read_editor_text(path: Path, ctx: ToolContext, inp: ReadInput) -> ToolOutput | None:
    """The text the editor has of ``path`` (``fs/read_text_file``: an unsaved buffer included), numbered
    as from disk; None for a file over ``STREAM_THRESHOLD`` (streamed from disk instead). Binary files
    are refused from their bytes on disk, as before: the editor serves text only."""
    disk_text: str | None = None
    disk: tuple[int, int] | None = None
    if not in_editor_only(ctx, path):
        if os.stat(path).st_size > STREAM_THRESHOLD:
            return None
        data, st = read_bytes(path)
        disk_text, _ = _decode_text(path, ctx, data)
        disk = (st.st_mtime_ns, st.st_size)
    start, limit, key = _range_key(inp)
    who = shown(ctx, path)
    text = await read_from_client(ctx, path, who)
    if ledger_of(ctx).is_unchanged_read(path, key, client_fingerprint(text.encode("utf-8"))):
        if start < 0:  # said in the line numbers its Read showed
            start, limit = _counted_from_start(text, start, limit)
        out = _unchanged(path, ctx, start, limit, key)
    else:
        out = _text_output(path, ctx, text, None, start, limit)
        record_client_read(ctx, path, _shown_key(out, key), text, disk)
        out = _remember_bound(ctx, path, key, out)
        last = out.blocks[-1] if out.blocks else None
        if disk_text is None and isinstance(last, TextBlock):
            last.text += (f"\n\nNote: {who} exists only in the editor so far (not saved to disk); commands you "
                          "run (Bash) do not see it.")
            out.metadata["unsaved"] = True
        elif disk_text is not None and text.replace("\r\n", "\n") != disk_text.replace("\r\n", "\n") \
                and isinstance(last, TextBlock):
            last.text += "\n\n" + unsaved_read_note(ctx, who)
            out.metadata["unsaved"] = True
    out.metadata["source"] = "editor"
    return out


def _text_output(path: Path, ctx: ToolContext, text: str, enc: Encoding | None, start: int,
                 limit: int) -> ToolOutput:
    """``text`` numbered ``cat -n`` style, lines ``start`` (negative: from the end) to ``start+limit-1``."""
    if not text:
        return ToolOutput.text(f"{shown(ctx, path)} exists but is empty (0 bytes).",
                               metadata={"range": [0, 0], "empty": True})
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    total = len(lines)
    from_end = start < 0
    if start < 0:
        start = max(1, total + start + 1)
    if start > total:
        return _past_end(ctx, path, start, total)
    return _lines_output(lines[start - 1:start - 1 + limit], enc, start, total, from_end=from_end)


def _lines_output(chosen: list[str], enc: Encoding | None, start: int, total: int | None, body: str | None = None,
                  count: int = 0, from_end: bool = False, asked: tuple[int, int] | None = None,
                  size: int = 0) -> ToolOutput:
    """Lines ``start``… of a file of ``total`` lines, numbered, with the range and encoding notes.
    ``chosen`` is the range asked for, cut here to ``READ_MAX_CHARS`` (its trailing lines kept
    ``from_end``), unless ``asked`` gives the range asked for (first, last line): then the lines are
    within the bound already, as ``chosen`` or as ``body``, the ``count`` lines numbered. ``total`` None:
    the lines were not counted past the range, which the file goes on after (``size`` bytes in all)."""
    if asked is None:
        asked = (start, start + len(chosen) - 1)
        chosen, start = _within_bound(chosen, start, from_end)
    end = start + (len(chosen) if body is None else count) - 1
    if body is None:
        body = _numbered(start, chosen)
    if body is None:
        body = "\n".join(_format_line(start + i, line) for i, line in enumerate(chosen))
    bounded = (start, end) != asked
    more = total is None or end < total
    of = f"of {total}" if total is not None else f"of a {size:,}-byte file that goes on"
    notes = []
    if enc is not None and (enc.name != "utf-8" or enc.bom):
        notes.append(f"(Encoding: {enc.describe()}.)")
    if bounded:
        notes.append(f"(Showing lines {start}-{end} {of}: " + _bound_note(start, end, asked[0]))
    elif more or start > 1:
        notes.append(f"(Showing lines {start}-{end} {of}."
                     + (f" Use offset={end + 1} to read more.)" if more else ")"))
    result = body + ("\n\n" + "\n".join(notes) if notes else "")
    return ToolOutput(blocks=[TextBlock(result)], bound_output=False,
                      metadata={"range": [start, end], "total_lines": total, "truncated": more or bounded,
                                **({"bounded": True, "asked": list(asked)} if bounded else {}),
                                **({"encoding": enc.describe()} if enc is not None else {})})


def _read_streamed(path: Path, ctx: ToolContext, inp: ReadInput, st: os.stat_result) -> ToolOutput:
    """A late range of a huge file: bounded memory, seeks through a newline checkpoint index."""
    start, limit, key = _range_key(inp)
    ledger = ledger_of(ctx)
    stat_fp = Fingerprint.of_stat(st)
    entry = ledger.get(path)
    if ledger.is_unchanged_read(path, key, stat_fp):
        return _unchanged(path, ctx, start, limit, key)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        head = os.pread(fd, SAMPLE, 0)
        tail = os.pread(fd, SAMPLE, max(0, st.st_size - SAMPLE))
        if head.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise ToolError(f"{shown(ctx, path)} is a UTF-16 file of {st.st_size} bytes, too large to read "
                            "here. Use Bash (e.g. `iconv -f utf-16 -t utf-8 FILE | sed -n 'A,Bp'`).")
        # Holes of a sparse file read as NULs but are not content: sniff the data before the first hole.
        first_hole = st.st_size
        if hasattr(os, "SEEK_HOLE"):
            try:
                first_hole = os.lseek(fd, 0, os.SEEK_HOLE)
            except OSError:
                first_hole = st.st_size
        if sniff_binary(head[:max(first_hole, 1)].rstrip(b"\0")) or (
                first_hole >= st.st_size and sniff_binary(tail[-8192:])):
            raise ToolError(f"{shown(ctx, path)} is a binary file; it cannot be shown as text. Use Bash "
                            "(`file`, `xxd | head`) for facts about it.")
        encoding = "utf-8"
        known = entry is not None and entry.line_index is not None and entry.fingerprint.same_stat(stat_fp)
        if start < 0 and not known:
            tail_out = _read_tail(path, ctx, fd, st, head, tail, -start, limit, key)
            assert tail_out is not None  # only a strict read gives up
            return tail_out
        if known and entry is not None and entry.line_index is not None:
            index, total = entry.line_index, entry.total_lines or 0
        else:
            index, total = _build_index(fd, st.st_size)
        from_end = start < 0
        if start < 0:
            start = max(1, total + start + 1)
        asked = (start, min(start + limit - 1, total))
        # Only the lines that can fit READ_MAX_CHARS are read: from the range's start (``_lines_from``
        # stops once they cannot), or its last MAX_BOUND_LINES from the end.
        first = max(start, asked[1] - MAX_BOUND_LINES + 1) if from_end else start
        lines, _ = _lines_from(fd, st.st_size, index, first, asked[1] - first + 1 if from_end else limit,
                               bounded=not from_end)
    finally:
        os.close(fd)
    out = []
    for n, raw, full_len in lines:
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
        text = text.rstrip("\n")
        out.append(f"{n:>6}\t{text[:MAX_LINE_CHARS]}… [line cut: {full_len} bytes in all]" if full_len > len(raw)
                   else _format_line(n, text))
    if sum(map(len, out)) + len(out) - 1 > READ_MAX_CHARS:
        k = _fit_formatted(out, from_end)
        lines, out = (lines[-k:], out[-k:]) if from_end else (lines[:k], out[:k])
    picked = b"".join(raw for _, raw, _ in lines)
    fp = Fingerprint.of_stat(st, digest(head + tail + picked))
    new_entry: LedgerEntry = ledger.record_read(path, fp, key if start <= total else None)
    new_entry.line_index, new_entry.total_lines = index, total
    if start > total:
        return _past_end(ctx, path, start, total)
    start = lines[0][0] if lines else start
    end = start + len(lines) - 1
    bounded = (start, end) != asked
    note = (f"\n\n(Large file: {st.st_size} bytes, {total} lines. Showing lines {start}-{end}"
            + (": " + _bound_note(start, end, asked[0]) if bounded
               else f". Use offset={end + 1} to read more.)" if end < total else ".)"))
    return _remember_bound(ctx, path, key, ToolOutput(
        blocks=[TextBlock("\n".join(out) + note)], bound_output=False,
        metadata={"range": [start, end], "total_lines": total, "truncated": end < total or bounded,
                  "streamed": True, **({"bounded": True, "asked": list(asked)} if bounded else {})}))


def _read_tail(path: Path, ctx: ToolContext, fd: int, st: os.stat_result, head: bytes, tail: bytes, count: int,
               limit: int, key: str, strict: bool = False) -> ToolOutput | None:
    """The last ``count`` lines of a huge file (``limit`` of them from the first), read backwards from the
    end like ``tail``: the file is not counted, so the lines are numbered from the end (-1 = last line).
    ``strict`` (a large file, which is otherwise decoded as a whole): None unless the lines are UTF-8
    without a CR or a line over ``MAX_LINE_CHARS``, so they read as the whole-file path would show them."""
    everything, whole = _tail_lines(fd, st.st_size, count)
    first = -len(everything)  # numbered from the end: -1 is the last line
    lines = everything[:limit]
    asked = (first, first + len(lines) - 1)
    joined = b"\n".join(lines)
    # No CR and no line over MAX_LINE_CHARS bytes: each line shows as its decoded text, measured by length.
    plain = max(map(len, lines), default=0) <= MAX_LINE_CHARS and b"\r" not in joined
    if strict and (not plain or whole or len(everything) < count):
        # Not plain, or the lines asked for are before what a read from the end holds, or it reached the
        # file's start (the whole file is in hand: numbered from the start, as the count gives): counted.
        return None
    try:  # one decode for the whole range ("\n" is never inside a UTF-8 sequence, valid or not)
        texts = joined.decode("utf-8", errors="strict" if strict else "replace").split("\n") if lines else []
    except UnicodeDecodeError:
        return None
    if len(texts) != len(lines):  # cannot be; be safe anyway
        texts = [raw.decode("utf-8", errors="replace") for raw in lines]
    if lines and _cost_at_most(len(joined), first, len(lines)) > READ_MAX_CHARS:  # bytes ≥ characters
        # Over the bound: the range's last lines that fit (a tail asks for the end).
        m = min(len(lines), MAX_BOUND_LINES)
        top = asked[1] - m + 1
        if plain:
            k = _fit(list(map(len, texts[-m:])), top, True)
        else:
            k = _fit_formatted([_format_cut(top + i, text, len(raw))
                                for i, (text, raw) in enumerate(zip(texts[-m:], lines[-m:], strict=True))], True)
        lines, texts, first = lines[-k:], texts[-k:], asked[1] - k + 1
    picked = b"\n".join(lines)
    fp = Fingerprint.of_stat(st, digest_parts((head, tail, picked)))
    ledger_of(ctx).record_read(path, fp, key)
    last = first + len(lines) - 1
    note = (f"\n\n(Large file: {st.st_size} bytes. Showing its lines {first} to {last}, counted from the end "
            "(-1 is the last line): numbering them from the start would mean reading the whole file. Read "
            "with a positive offset for line numbers from the start.)")
    bounded = (first, last) != asked
    if bounded:
        why = _bound_note(first, last, asked[0])
        note += "\n(" + why[0].upper() + why[1:]
    if len(everything) < count and not whole:
        note += (f"\n(Only the last {len(everything)} lines fit the {TAIL_MAX_BYTES // (1 << 20)} MiB a read from "
                 "the end holds; use a positive offset to read further back.)")
    text = None
    if plain:  # decoding never makes a line longer (in characters than in bytes) nor adds a CR
        text = _numbered(first, texts, checked=True, end=note)
    if text is None:
        text = "\n".join(_format_cut(first + i, t, len(raw))
                         for i, (t, raw) in enumerate(zip(texts, lines, strict=True))) + note
    return _remember_bound(ctx, path, key, ToolOutput(
        blocks=[TextBlock(text)], bound_output=False,
        metadata={"range": [first, last], "from_end": True, "streamed": True,
                  **({"bounded": True, "asked": list(asked), "truncated": True} if bounded else {})}))


def _format_cut(n: int, text: str, raw_len: int) -> str:
    if len(text) > MAX_LINE_CHARS:  # one marker, with the line's size in bytes (before: cut twice)
        return f"{n:>6}\t{text[:MAX_LINE_CHARS]}… [line cut: {raw_len} bytes in all]"
    return _format_line(n, text)


def _tail_lines(fd: int, size: int, count: int) -> tuple[list[bytes], bool]:
    """The last ``count`` lines (without their "\\n"), read backwards in blocks, and whether the read
    reached the start of the file.

    At most ``TAIL_MAX_BYTES`` are held (memory stays bounded): past that, fewer lines come back."""
    blocks: list[bytes] = []
    held = 0
    pos = size
    newlines = 0
    # A final line without "\n" is a line too; the file's last "\n" does not start one.
    need = count + (1 if size and os.pread(fd, 1, size - 1) == b"\n" else 0)
    while pos > 0 and newlines < need and held < TAIL_MAX_BYTES:
        n = min(TAIL_BLOCK, pos)
        pos -= n
        block = os.pread(fd, n, pos)
        blocks.append(block)
        held += len(block)
        newlines += block.count(b"\n")
    # Split from the end, at most ``need`` times: the lines before the last ``need`` stay one piece.
    parts = b"".join(reversed(blocks)).rsplit(b"\n", need)
    if parts and parts[-1] == b"":
        parts.pop()
    if pos > 0:
        parts = parts[1:]  # starts mid-line
    return parts[-count:], pos == 0


def _build_index(fd: int, size: int) -> tuple[list[tuple[int, int]], int]:
    """[(lines before byte offset, byte offset)] at every CHUNK, and the total line count.

    Holes of sparse files hold only NULs (no newlines): SEEK_DATA jumps over them.
    """
    index: list[tuple[int, int]] = [(0, 0)]
    lines = 0
    pos = 0
    last = b"\n"
    seek_data = getattr(os, "SEEK_DATA", None)
    while pos < size:
        if seek_data is not None:
            try:
                nxt = os.lseek(fd, pos, seek_data)
            except OSError:  # ENXIO: only a hole until EOF
                nxt = size
            if nxt > pos:
                pos = nxt
                index.append((lines, pos))
                last = b"\0"
                if pos >= size:
                    break
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            break
        lines += chunk.count(b"\n")
        last = chunk[-1:]
        pos += len(chunk)
        index.append((lines, pos))
    total = lines + (0 if last == b"\n" or size == 0 else 1)
    return index, total


def _lines_from(fd: int, size: int, index: list[tuple[int, int]], start: int, limit: int, bounded: bool = False
                ) -> tuple[list[tuple[int, bytes, int]], int]:
    """Lines start..start+limit-1 (1-based) as (number, bytes kept ≤ 4×MAX_LINE_CHARS, full length);
    ``bounded``: no more once the lines read cannot all fit READ_MAX_CHARS (a line of n bytes shows at
    least n/4 characters, or MAX_LINE_CHARS when cut, and costs 8 more)."""
    target = start - 1  # 0-based line number
    i = bisect.bisect_right([n for n, _ in index], target) - 1
    i = max(i, 0)
    # Step back to a checkpoint that lies at or before the line's start.
    lines_before, pos = index[i]
    keep = MAX_LINE_CHARS * 4
    out: list[tuple[int, bytes, int]] = []
    line_no = lines_before
    # Skip to the start of line `target`.
    while line_no < target and pos < size:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            break
        need = target - line_no
        cnt = chunk.count(b"\n")
        if cnt < need:
            line_no += cnt
            pos += len(chunk)
            continue
        k = -1
        for _ in range(need):
            k = chunk.index(b"\n", k + 1)
        pos += k + 1
        line_no = target
    if line_no < target:
        return [], line_no
    cur = bytearray()
    cur_len = 0
    least = -1  # what the lines read so far show at the least, numbered
    if bounded:
        limit = min(limit, MAX_BOUND_LINES)
    while len(out) < limit and pos < size and least <= READ_MAX_CHARS:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            break
        j = 0
        while j < len(chunk) and len(out) < limit and least <= READ_MAX_CHARS:
            nl = chunk.find(b"\n", j)
            seg_end = len(chunk) if nl < 0 else nl + 1
            seg = chunk[j:seg_end]
            if len(cur) < keep:
                cur += seg[:keep - len(cur)]
            cur_len += len(seg)
            j = seg_end
            if nl >= 0:
                out.append((line_no + 1, bytes(cur), cur_len))
                line_no += 1
                if bounded:
                    least += min(max(0, (cur_len - 1) // 4 - 1), MAX_LINE_CHARS) + 8
                cur, cur_len = bytearray(), 0
        pos += len(chunk)
    if cur_len and len(out) < limit:
        out.append((line_no + 1, bytes(cur), cur_len))
    return out, line_no


# ---- images, PDFs, notebooks ----------------------------------------------------------------

def _read_image(path: Path, ctx: ToolContext, media_type: str) -> ToolOutput:
    st = os.stat(path)
    if st.st_size > MAX_IMAGE_FILE:
        raise ToolError(f"{shown(ctx, path)} is {st.st_size} bytes, too large an image to read.")
    data, st = read_bytes(path)
    ledger = ledger_of(ctx)
    fp = Fingerprint(st.st_mtime_ns, st.st_size, digest(data), True)
    if ledger.is_unchanged_read(path, "image", fp):
        return ToolOutput.text(f"File unchanged since last read: the image {shown(ctx, path)} is as you saw it.",
                               metadata={"unchanged": True})
    note = ""
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as opened:
            img: Image.Image = opened
            width, height = img.size
            # The API checks the bytes against the media type: trust the content, not the file name.
            actual = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}.get(
                str(img.format))
            if max(width, height) > IMAGE_MAX_SIDE or len(data) > IMAGE_MAX_BYTES or actual is None:
                img.thumbnail((IMAGE_MAX_SIDE, IMAGE_MAX_SIDE))
                fmt = {"image/png": "PNG", "image/gif": "PNG", "image/webp": "WEBP"}.get(media_type, "JPEG")
                if fmt == "JPEG" and img.mode not in ("RGB", "L"):
                    img = img.convert("RGB")
                buf = io.BytesIO()
                img.save(buf, format=fmt, **({"quality": 85} if fmt == "JPEG" else {}))
                if buf.tell() > IMAGE_MAX_BYTES:
                    buf = io.BytesIO()
                    img.convert("RGB").save(buf, format="JPEG", quality=70)
                    fmt = "JPEG"
                data = buf.getvalue()
                media_type = {"PNG": "image/png", "WEBP": "image/webp"}.get(fmt, "image/jpeg")
                if (width, height) != img.size:
                    note = f" (downscaled from {width}x{height} to {img.size[0]}x{img.size[1]})"
            else:
                media_type = actual
    except Exception as exc:
        raise ToolError(f"{shown(ctx, path)} could not be decoded as an image: {exc}") from None
    ledger.record_read(path, fp, "image")
    return ToolOutput(blocks=[TextBlock(f"Image {shown(ctx, path)}{note}:"),
                              ImageBlock(media_type, base64.b64encode(data).decode("ascii"))],
                      metadata={"media_type": media_type, "size": len(data)})


def parse_pages(spec: str, total: int) -> list[int]:
    """'3', '1-5', '2,4-6' → 1-based page numbers (validated against ``total`` and the per-call cap)."""
    pages: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        try:
            if "-" in part:
                a_s, b_s = part.split("-", 1)
                a, b = int(a_s), int(b_s) if b_s else total
            else:
                a = b = int(part)
        except ValueError:
            raise ToolError(f'pages "{spec}" is not a page range; use e.g. "1-5", "3" or "2,4-6".') from None
        if a < 1 or b < a:
            raise ToolError(f'pages "{spec}": pages are numbered from 1 and ranges go upwards.')
        if a > total:
            raise ToolError(f"pages {spec}: the PDF has only {total} pages.")
        pages.extend(range(a, min(b, total) + 1))
    if not pages:
        raise ToolError('pages is empty; use e.g. "1-5".')
    if len(pages) > MAX_PDF_PAGES_PER_CALL:
        raise ToolError(f"pages {spec} asks for {len(pages)} pages; at most {MAX_PDF_PAGES_PER_CALL} per call. "
                        "Split it into several Reads.")
    return pages


def _read_pdf(path: Path, ctx: ToolContext, pages_spec: str | None) -> ToolOutput:
    from pypdf import PdfReader

    st = os.stat(path)
    if st.st_size > MAX_PDF_FILE:
        raise ToolError(f"{shown(ctx, path)} is {st.st_size} bytes; too large a PDF to read.")
    data, st = read_bytes(path)
    fp = Fingerprint(st.st_mtime_ns, st.st_size, digest(data), True)
    key = f"pages:{pages_spec or 'all'}"
    ledger = ledger_of(ctx)
    if ledger.is_unchanged_read(path, key, fp):
        return ToolOutput.text(f"File unchanged since last read: pages {pages_spec or 'all'} of "
                               f"{shown(ctx, path)} are as your earlier Read returned them.",
                               metadata={"unchanged": True})
    try:
        reader = PdfReader(io.BytesIO(data))
        total = len(reader.pages)
    except Exception as exc:
        raise ToolError(f"{shown(ctx, path)} could not be parsed as a PDF: {exc}") from None
    if pages_spec is None:
        if total > PDF_PAGES_REQUIRED_OVER:
            raise ToolError(f"{shown(ctx, path)} has {total} pages; PDFs over {PDF_PAGES_REQUIRED_OVER} pages "
                            f'need the pages parameter (e.g. pages: "1-5"), at most {MAX_PDF_PAGES_PER_CALL} '
                            "per call.")
        pages = list(range(1, total + 1))
    else:
        pages = parse_pages(pages_spec, total)
    parts = []
    for n in pages:
        try:
            text = reader.pages[n - 1].extract_text() or ""
        except Exception as exc:
            text = f"[page text could not be extracted: {exc}]"
        parts.append(f"--- Page {n} of {total} ---\n{text.strip() or '[no extractable text on this page]'}")
    ledger.record_read(path, fp, key)
    return ToolOutput.text(f"PDF {shown(ctx, path)} ({total} pages)\n\n" + "\n\n".join(parts),
                           metadata={"pages": pages, "total_pages": total})


def _read_notebook(path: Path, ctx: ToolContext, inp: ReadInput) -> ToolOutput:
    import nbformat

    data, st = read_bytes(path)
    fp = Fingerprint(st.st_mtime_ns, st.st_size, digest(data), True)
    key = "notebook"
    ledger = ledger_of(ctx)
    if ledger.is_unchanged_read(path, key, fp):
        return ToolOutput.text(f"File unchanged since last read: the notebook {shown(ctx, path)} is as your "
                               "earlier Read returned it.", metadata={"unchanged": True})
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise ToolError(f"{shown(ctx, path)} is not a valid notebook ({exc}). Read it as text with Bash "
                        "`cat` if you need the raw JSON.") from None
    blocks: list[TextBlock | ImageBlock] = []
    parts: list[str] = []
    for i, cell in enumerate(nb.cells):
        cid = cell.get("id") or f"cell-{i}"
        head = f'<cell id="{cid}" index="{i}" type="{cell.cell_type}"'
        if cell.cell_type == "code" and cell.get("execution_count") is not None:
            head += f' execution_count="{cell.execution_count}"'
        parts.append(head + ">\n" + _cut(cell.source, 20_000) + "\n</cell>")
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            parts.append(_output_text(output, blocks))
    ledger.record_read(path, fp, key)
    lang = (nb.metadata.get("kernelspec") or {}).get("language") or (nb.metadata.get("language_info") or {}).get(
        "name", "")
    header = f"Notebook {shown(ctx, path)}: {len(nb.cells)} cells" + (f", language {lang}" if lang else "")
    return ToolOutput(blocks=[TextBlock(header + "\n\n" + "\n".join(p for p in parts if p)), *blocks],
                      metadata={"cells": len(nb.cells)})


def _output_text(output: Any, images: list[TextBlock | ImageBlock]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return f"<output stream={output.get('name', 'stdout')}>\n{_cut(str(output.get('text', '')), 5000)}\n</output>"
    if kind == "error":
        tb = "\n".join(output.get("traceback", []))
        return (f"<output error>\n{output.get('ename')}: {output.get('evalue')}\n"
                f"{_cut(_strip_ansi(tb), 5000)}\n</output>")
    if kind in ("execute_result", "display_data"):
        data = output.get("data", {})
        for mime in ("image/png", "image/jpeg"):
            if mime in data and len(images) < 5:
                images.append(ImageBlock(mime, str(data[mime]).replace("\n", "")))
                return f"<output {kind}>[image {mime}, shown below]</output>"
        if "text/plain" in data:
            return f"<output {kind}>\n{_cut(str(data['text/plain']), 5000)}\n</output>"
        return f"<output {kind}>[{', '.join(data)}]</output>"
    return f"<output {kind}>{_cut(json.dumps(dict(output)), 500)}</output>"


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + f"… [cut: {len(text)} characters in all]"


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)

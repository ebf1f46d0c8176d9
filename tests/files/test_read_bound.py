"""Read's output bound (READ_MAX_CHARS, docs/contract.md §5): a range whose numbered text is over it shows
the lines that fit and says how to read on, on every path (small files, large UTF-8 files, huge streamed
files, other encodings), and the large-file path cuts what it decodes to what it returns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.files.helpers import Agent, assert_large_read

BOUND = "Read's 100,000-character bound"


def _rows(n: int, eol: str = "\n", wide: bool = False) -> str:
    """``n`` lines of exactly 100 characters ("row 00001 " and 90 more), so a numbered line is 107 and
    925 of them are the most that fit (108 × 925 − 1 = 99,899 characters; 926 would be 100,007)."""
    fill = "é" * 90 if wide else "x" * 90
    return "".join(f"row {i:05d} {fill}{eol}" for i in range(1, n + 1))


def _numbered(lines: range, wide: bool = False) -> str:
    fill = "é" * 90 if wide else "x" * 90
    return "\n".join(f"{i:6d}\trow {i:05d} {fill}" for i in lines)


def _ctx(agent: Agent) -> Any:
    from sidecar.tools.context import ToolContext

    return ToolContext(session=agent.session, tool_call_id="toolu_bound")


async def test_a_whole_file_over_the_bound_shows_its_first_lines_and_how_to_read_on(agent: Agent, ws: Path) -> None:
    f = ws / "rows.txt"
    f.write_text(_rows(3000))
    text, err, out = await agent.call("Read", file_path=str(f))
    assert not err
    assert text == _numbered(range(1, 926)) + (
        f"\n\n(Showing lines 1-925 of 3000: the rest of this range is over {BOUND}. Use offset=926 to read "
        "on, or Grep to find what you need.)")
    assert out.metadata["range"] == [1, 925] and out.metadata["truncated"] is True
    assert out.metadata["asked"] == [1, 2000]
    # Following the note reads on with no gap and no overlap.
    text, err, _ = await agent.call("Read", file_path=str(f), offset=926)
    assert not err and text.startswith(_numbered(range(926, 1851)) + "\n\n(Showing lines 926-1850 of 3000: the rest")
    # The same Read again is "unchanged", and says what it showed and where to go on.
    again, _, out = await agent.call("Read", file_path=str(f))
    assert out.metadata["unchanged"] is True and out.metadata["range"] == [1, 925]
    assert again == (f"File unchanged since last read: lines 1-925 of rows.txt (what your earlier Read showed of "
                     f"this range; the rest is over {BOUND}) are exactly as it returned them. Use that earlier "
                     "result instead of reading again, and offset=926 for the lines after them.")
    # An Edit of a line it showed lands, as after any Read.
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="row 00007 x", new_string="row 00007 y")
    assert not err, text


async def test_a_tail_over_the_bound_keeps_the_lines_nearest_the_end(agent: Agent, ws: Path) -> None:
    f = ws / "rows.log"
    f.write_text(_rows(3000))
    text, err, out = await agent.call("Read", file_path=str(f), offset=-2000)
    assert not err
    assert text == _numbered(range(2076, 3001)) + (
        f"\n\n(Showing lines 2076-3000 of 3000: the earlier lines of this range are over {BOUND}. Use "
        "offset=1001 with limit=1075 to read them, or Grep to find what you need.)")
    # The note's offset and limit read exactly the lines before them (a page that fits).
    text, err, _ = await agent.call("Read", file_path=str(f), offset=1001, limit=1075)
    assert not err and text.startswith(_numbered(range(1001, 1926)) + "\n\n(Showing lines 1001-1925 of 3000: the rest")
    _, _, out = await agent.call("Read", file_path=str(f), offset=-2000)
    assert out.metadata["unchanged"] is True and out.metadata["range"] == [2076, 3000]


async def test_a_middle_range_over_the_bound_and_a_range_that_fits(agent: Agent, ws: Path) -> None:
    f = ws / "mid.txt"
    f.write_text(_rows(3000))
    text, err, _ = await agent.call("Read", file_path=str(f), offset=500, limit=1500)
    assert not err and text == _numbered(range(500, 1425)) + (
        f"\n\n(Showing lines 500-1424 of 3000: the rest of this range is over {BOUND}. Use offset=1425 to read "
        "on, or Grep to find what you need.)")
    # 925 lines exactly fit: the ordinary range note, no bound.
    text, err, out = await agent.call("Read", file_path=str(f), offset=1, limit=925)
    assert not err
    assert text == _numbered(range(1, 926)) + "\n\n(Showing lines 1-925 of 3000. Use offset=926 to read more.)"
    assert "bounded" not in out.metadata


async def test_crlf_latin1_and_non_ascii_files_are_bounded_by_characters(agent: Agent, ws: Path) -> None:
    crlf = ws / "crlf.txt"
    crlf.write_bytes(_rows(3000, eol="\r\n").encode())
    text, err, _ = await agent.call("Read", file_path=str(crlf))
    assert not err and text == _numbered(range(1, 926)) + (
        f"\n\n(Showing lines 1-925 of 3000: the rest of this range is over {BOUND}. Use offset=926 to read on, "
        "or Grep to find what you need.)")
    # "é" is two bytes in UTF-8 and one character: the bound counts characters.
    wide = ws / "wide.txt"
    wide.write_text(_rows(3000, wide=True), encoding="utf-8")
    text, err, _ = await agent.call("Read", file_path=str(wide))
    assert not err and text.startswith(_numbered(range(1, 926), wide=True) + "\n\n(Showing lines 1-925 of 3000: ")
    latin = ws / "latin.txt"
    latin.write_bytes(_rows(3000, wide=True).encode("latin-1"))
    text, err, _ = await agent.call("Read", file_path=str(latin))
    assert not err and text.startswith(_numbered(range(1, 926), wide=True) + "\n\n(Encoding: ")
    assert text.endswith(f"\n(Showing lines 1-925 of 3000: the rest of this range is over {BOUND}. Use offset=926 "
                         "to read on, or Grep to find what you need.)")


async def test_a_large_file_is_cut_on_its_bytes_as_the_whole_file_path_cuts_it(agent: Agent, ws: Path) -> None:
    """Files over CONTENT_FILE_MAX take the large-file path (``_read_large_range``, not the whole-file
    fallback): for ranges over the bound from the start, the middle and the end, on LF, CRLF and
    non-ASCII files, its text is the whole-file path's, and paging by the notes' offsets reads every line
    once."""
    from sidecar.tools.files import read as read_module
    from sidecar.workspace.ledger import CONTENT_FILE_MAX
    from sidecar.workspace.textfile import decode

    cases = {
        "lf": _rows(30_000).encode(),
        "crlf": _rows(30_000, eol="\r\n").encode(),
        "wide": _rows(30_000, wide=True).encode(),
        # ragged lines (0 to 1,999 bytes), "%" signs, CJK text every 7th line, no final newline
        "ragged": "\n".join(("日本語 " * (i % 7 == 0) + f"{i}%" + "y" * (i * 37 % 1990)) for i in range(5_000)
                            ).encode(),
    }
    for name, data in cases.items():
        assert len(data) > CONTENT_FILE_MAX
        f = ws / f"large_{name}.txt"
        f.write_bytes(data)
        text, enc = decode(data)
        n = len(text.splitlines())
        for offset, limit in ((1, None), (1, 1_000_000), (n * 2 // 3, n // 6), (-2000, None), (-1_000_000, None),
                              (-(n * 3 // 10), n // 10), (2, n - 10)):
            inp = read_module.ReadInput(file_path=str(f), offset=offset, limit=limit)
            start, lim, key = read_module._range_key(inp)
            expected = read_module._text_output(f, _ctx(agent), text, enc, start, lim)
            large = read_module._read_large_range(f, _ctx(agent), start, lim, key + ":direct")
            assert large is not None, (name, offset, limit)
            assert_large_read(large.joined_text(), large.metadata, expected, len(data))
            got, err, out = await agent.call("Read", file_path=str(f), **{k: v for k, v in
                                             (("offset", offset), ("limit", limit)) if v is not None})
            assert not err
            assert_large_read(got, out.metadata, expected, len(data))
            if not out.metadata.get("from_end"):
                for k in ("truncated", "bounded"):
                    assert out.metadata.get(k) == expected.metadata.get(k), (name, k, offset, limit)
                if out.metadata.get("total_lines") is None and "asked" in out.metadata:
                    # Uncounted: the range as asked (its end not cut at the file's last line, not known)
                    assert out.metadata["asked"] == [start, start + lim - 1]
                else:
                    assert out.metadata.get("asked") == expected.metadata.get("asked"), (name, offset, limit)
            body = got.split("\n\n(")[0]
            assert len(body) <= read_module.READ_MAX_CHARS
        # Paging through by the notes' offsets: every line once, in order.
        seen: list[int] = []
        offset = 1
        while True:
            got, err, out = await agent.call("Read", file_path=str(f), offset=offset, limit=30_000)
            assert not err
            seen.extend(range(out.metadata["range"][0], out.metadata["range"][1] + 1))
            found = re.search(r"Use offset=(\d+) to read on", got)
            if found is None:
                break
            offset = int(found.group(1))
        assert seen == list(range(1, n + 1)), name


async def test_a_huge_streamed_file_is_bounded_from_the_start_and_from_the_end(agent: Agent, ws: Path) -> None:
    """Over STREAM_THRESHOLD (16 MiB): the streamed reader stops once no more lines can fit; a tail keeps
    the last lines, numbered from the end."""
    f = ws / "huge.txt"
    with open(f, "w") as fh:
        for base in range(0, 180_000, 10_000):
            fh.write(_rows(10_000).replace("row 0", "ROW 0") if base == 0 else _rows(10_000))
    size = f.stat().st_size
    tail, err, out = await agent.call("Read", file_path=str(f), offset=-1000)
    assert not err and out.metadata["range"] == [-925, -1]
    assert tail.startswith("  -925\trow 09076 ") and "    -1\trow 10000 " in tail
    assert tail.endswith(f"\n(The earlier lines of this range are over {BOUND}. Use offset=-1000 with limit=75 to "
                         "read them, or Grep to find what you need.)")
    earlier, err, out = await agent.call("Read", file_path=str(f), offset=-1000, limit=75)
    assert not err and out.metadata["range"] == [-1000, -926] and "  -926\trow 09075 " in earlier
    text, err, out = await agent.call("Read", file_path=str(f), offset=5, limit=5000)
    assert not err and out.metadata["range"] == [5, 929]
    assert text.startswith("     5\tROW 00005 ")
    assert text.endswith(f"   929\tROW 00929 {'x' * 90}\n\n(Large file: {size} bytes, 180000 lines. Showing lines "
                         f"5-929: the rest of this range is over {BOUND}. Use offset=930 to read on, or Grep to "
                         "find what you need.)")
    text, err, out = await agent.call("Read", file_path=str(f), offset=930)
    assert not err and out.metadata["range"] == [930, 1854] and text.startswith("   930\tROW 00930 ")
    # With the line index known (the reads above counted the file), a tail is numbered from the start.
    tail, err, out = await agent.call("Read", file_path=str(f), offset=-1000, limit=1000)
    assert not err and out.metadata["range"] == [179_076, 180_000]
    assert tail.startswith("179076\trow 09076 ") and tail.endswith(
        f"(Large file: {size} bytes, 180000 lines. Showing lines 179076-180000: the earlier lines of this range "
        f"are over {BOUND}. Use offset=179001 with limit=75 to read them, or Grep to find what you need.)")


async def test_a_repeated_read_past_the_end_of_a_huge_file_says_past_the_end_again(agent: Agent, ws: Path) -> None:
    """A streamed file (over 16 MiB) read past its end shows nothing: the same Read again says so again
    (it is not "unchanged", which would tell the model to reuse a result that had no lines)."""
    f = ws / "huge.txt"
    with open(f, "w") as fh:
        for _ in range(18):
            fh.write(_rows(10_000))
    expected = "huge.txt has 180000 lines; offset 200000 is past the end. Use an offset between 1 and 180000."
    for _ in range(2):
        text, err, out = await agent.call("Read", file_path=str(f), offset=200_000)
        assert not err and not out.metadata.get("unchanged")
        assert text.endswith(expected), text

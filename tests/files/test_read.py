"""Read through the real dispatcher: numbering, ranges, unchanged, special files, huge files, media."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import pytest

from tests.files.helpers import Agent, assert_large_read


async def test_numbering_and_same_range_twice(agent: Agent, ws: Path) -> None:
    f = ws / "a.txt"
    f.write_text("alpha\nbeta\ngamma\n")
    text, err, _ = await agent.call("Read", file_path=str(f))
    assert not err
    assert text == "     1\talpha\n     2\tbeta\n     3\tgamma"
    again, err, out = await agent.call("Read", file_path=str(f))
    assert not err and out.metadata["unchanged"] is True
    assert again.startswith("File unchanged since last read: lines 1-2000 of a.txt")
    # A different range is a new observation.
    part, _, _ = await agent.call("Read", file_path=str(f), offset=2, limit=1)
    assert part.startswith("     2\tbeta\n\n(Showing lines 2-2 of 3. Use offset=3 to read more.)")
    # After a change, the full text comes back.
    f.write_text("alpha\nBETA\ngamma\n")
    text, _, _ = await agent.call("Read", file_path=str(f))
    assert "     2\tBETA" in text


async def test_long_lines_cut_and_default_limit(agent: Agent, ws: Path) -> None:
    f = ws / "long.txt"
    f.write_text("x" * 2500 + "\n" + "".join(f"l{i}\n" for i in range(3000)))
    text, _, out = await agent.call("Read", file_path=str(f))
    first = text.split("\n")[0]
    assert first == "     1\t" + "x" * 2000 + "… [line cut: 2500 characters in all]"
    assert "(Showing lines 1-2000 of 3001. Use offset=2001 to read more.)" in text
    assert out.metadata["truncated"] is True


async def test_a_stray_carriage_return_and_wide_numbers_are_shown_as_cat_n(agent: Agent, ws: Path) -> None:
    # Mixed endings (not a CRLF file): the CR ending line 2 is dropped from the display, the one inside
    # line 3 is kept; numbers wider than six digits push the tab right, as cat -n does.
    f = ws / "mixed.txt"
    f.write_bytes(b"one\ntwo\r\nthr\ree\nfour\n")
    text, err, _ = await agent.call("Read", file_path=str(f))
    assert not err and text == "     1\tone\n     2\ttwo\n     3\tthr\ree\n     4\tfour"
    many = ws / "many.txt"
    many.write_text("".join(f"v{i}\n" for i in range(1_000_002)))
    text, err, _ = await agent.call("Read", file_path=str(many), offset=999_999, limit=3)
    assert not err and text.startswith("999999\tv999998\n1000000\tv999999\n1000001\tv1000000\n\n(Showing lines")


async def test_empty_relative_missing_dir(agent: Agent, ws: Path) -> None:
    (ws / "empty.txt").write_bytes(b"")
    text, err, _ = await agent.call("Read", file_path=str(ws / "empty.txt"))
    assert not err and text == "empty.txt exists but is empty (0 bytes)."
    text, err, _ = await agent.call("Read", file_path="empty.txt")
    assert err and f"Did you mean {ws / 'empty.txt'}?" in text
    text, err, _ = await agent.call("Read", file_path=str(ws / "nope.txt"))
    assert err and text.startswith(f"File does not exist: {ws / 'nope.txt'}")
    text, err, _ = await agent.call("Read", file_path=str(ws))
    assert err and "is a directory" in text


async def test_encodings_and_binary(agent: Agent, ws: Path) -> None:
    (ws / "u16.txt").write_bytes("héllo\r\nwörld\r\n".encode("utf-16"))
    text, err, _ = await agent.call("Read", file_path=str(ws / "u16.txt"))
    assert not err and text.startswith("     1\théllo\n     2\twörld") and "utf-16" in text
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    text, _, _ = await agent.call("Read", file_path=str(ws / "latin.txt"))
    assert text.startswith("     1\tcafé") and "latin-1" in text
    (ws / "bin.dat").write_bytes(b"\x00\x01\x02garbage\x00" * 100)
    text, err, _ = await agent.call("Read", file_path=str(ws / "bin.dat"))
    assert err and "is a binary file" in text


async def test_special_files_refused_at_once(agent: Agent, ws: Path) -> None:
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    for p in ["/dev/zero", "/dev/stdin", str(fifo), "/proc/self/fd/0"]:
        # Opening the FIFO or reading /dev/zero would never end: wait_for is the bound (no wall-clock
        # assertion, which a loaded machine could break).
        text, err, _ = await asyncio.wait_for(agent.call("Read", file_path=p), timeout=10)
        assert err, p
        assert "not a regular file" in text, text
    # A symlink to a device is judged by its target.
    (ws / "z").symlink_to("/dev/zero")
    text, err, _ = await agent.call("Read", file_path=str(ws / "z"))
    assert err and "character device" in text


async def test_symlink_outside_asks_and_rejection_refuses(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (ws / "link").symlink_to(outside)
    agent = Agent(ws, tmp_path)
    agent.channel.answer = "reject_once"
    text, err, _ = await agent.call("Read", file_path=str(ws / "link" / "secret.txt"))
    assert err and "rejected" in text and "top secret" not in text
    asked = agent.channel.permission_requests()
    assert len(asked) == 1 and str(outside / "secret.txt") in asked[0]["toolCall"]["title"]
    # Inside the workspace nothing is asked.
    (ws / "in.txt").write_text("ok\n")
    text, err, _ = await agent.call("Read", file_path=str(ws / "in.txt"))
    assert not err and len(agent.channel.permission_requests()) == 1
    # Percent-encoded ".." resolves before the check, so it asks too.
    text, err, _ = await agent.call("Read", file_path=str(ws) + "/%2e%2e/outside/secret.txt")
    assert err and len(agent.channel.permission_requests()) == 2


async def test_sparse_2gb_file_last_lines(agent: Agent, ws: Path) -> None:
    f = ws / "huge.log"
    with open(f, "wb") as fh:
        fh.write(b"header line\n")
        fh.seek(2 * 1024**3)
        fh.write(b"".join(b"tail %d\n" % i for i in range(100)))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    text, err, out = await agent.call("Read", file_path=str(f), offset=95, limit=10)
    elapsed = time.monotonic() - started
    assert not err, text
    total = out.metadata["total_lines"]
    assert total == 101  # header, the hole (one NUL line ending in "tail 0"), tail 1..99
    assert text.startswith("    95\ttail 93\n    96\ttail 94")
    assert text.split("\n")[6] == "   101\ttail 99"
    assert elapsed < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


async def test_negative_offset_reads_the_end(agent: Agent, ws: Path) -> None:
    small = ws / "small.txt"
    small.write_text("".join(f"l{i}\n" for i in range(1, 11)))
    text, err, _ = await agent.call("Read", file_path=str(small), offset=-3)
    assert not err and text == "     8\tl8\n     9\tl9\n    10\tl10\n\n(Showing lines 8-10 of 10.)"
    big = ws / "big.log"  # over the streaming threshold, last line without a newline
    with open(big, "wb") as fh:
        fh.write(b"x" * 99 + b"\n")
        fh.write((b"y" * 99 + b"\n") * 200_000)
        fh.write(b"end")
    text, err, out = await agent.call("Read", file_path=str(big), offset=-3, limit=2)
    assert not err, text
    assert text.startswith(f"    -3\t{'y' * 99}\n    -2\t{'y' * 99}\n\n(Large file: 20000103 bytes. Showing its "
                           "lines -3 to -2, counted from the end (-1 is the last line)")
    assert out.metadata["range"] == [-3, -2]
    text, _, out = await agent.call("Read", file_path=str(big), offset=-3, limit=2)
    # Two lines were shown, not the last three: the repeat says which, as the first Read numbered them.
    assert out.metadata.get("unchanged") and "lines -3 to -2 (counted from the end" in text, text
    text, _, _ = await agent.call("Read", file_path=str(big), offset=-1)
    assert text.startswith("    -1\tend\n")
    text, _, _ = await agent.call("Read", file_path=str(big), offset=-5_000_000)  # more than 8 MiB back
    # The first 2,000 of the 83,887 lines held are the range; its last 934 fit the output bound (107
    # characters a line: "-8xxxx", a tab, 99 y's, a newline).
    assert text.startswith(f"-82821\t{'y' * 99}\n-82820\t")
    assert (f"-81888\t{'y' * 99}\n\n(Large file: 20000103 bytes. Showing its lines -82821 to -81888, counted from "
            "the end") in text
    assert ("\n(The earlier lines of this range are over Read's 100,000-character bound. Use offset=-83887 with "
            "limit=1066 to read them, or Grep to find what you need.)\n") in text
    assert text.endswith("(Only the last 83887 lines fit the 8 MiB a read from the end holds; use a positive "
                         "offset to read further back.)")
    long_line = ws / "long.log"  # a 17 MiB line before the last one: memory stays bounded
    long_line.write_bytes(b"first\n" + b"z" * (17 * 1024 * 1024) + b"\nlast\n")
    text, _, _ = await agent.call("Read", file_path=str(long_line), offset=-10)
    assert text.startswith("    -1\tlast\n\n") and "(Only the last 1 lines fit the 8 MiB" in text


async def test_image_pdf_notebook(agent: Agent, ws: Path) -> None:
    from PIL import Image
    img = Image.new("RGB", (3000, 1000), (255, 0, 0))
    img.save(ws / "big.png")
    text, err, out = await agent.call("Read", file_path=str(ws / "big.png"))
    assert not err and "downscaled from 3000x1000" in text
    image = out.blocks[1]
    assert image.media_type == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(image.data_base64))).size == (1568, 523)

    (ws / "doc.pdf").write_bytes(_pdf(["First page text", "Second page text"]))
    text, err, _ = await agent.call("Read", file_path=str(ws / "doc.pdf"))
    assert not err, text
    assert "--- Page 1 of 2 ---\nFirst page text" in text and "--- Page 2 of 2 ---\nSecond page text" in text
    (ws / "long.pdf").write_bytes(_pdf([f"p{i}" for i in range(12)]))
    text, err, _ = await agent.call("Read", file_path=str(ws / "long.pdf"))
    assert err and "has 12 pages" in text and "pages" in text
    text, err, _ = await agent.call("Read", file_path=str(ws / "long.pdf"), pages="11-12")
    assert not err and "--- Page 11 of 12 ---\np10" in text and "Page 10 " not in text
    text, err, _ = await agent.call("Read", file_path=str(ws / "long.pdf"), pages="13")
    assert err and "only 12 pages" in text

    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"language": "python"}},
          "cells": [{"id": "c1", "cell_type": "markdown", "metadata": {}, "source": "# Title"},
                    {"id": "c2", "cell_type": "code", "metadata": {}, "execution_count": 1, "source": "print(1+1)",
                     "outputs": [{"output_type": "stream", "name": "stdout", "text": "2\n"}]}]}
    (ws / "n.ipynb").write_text(json.dumps(nb, indent=1))
    text, err, _ = await agent.call("Read", file_path=str(ws / "n.ipynb"))
    assert not err, text
    assert '<cell id="c1" index="0" type="markdown">\n# Title\n</cell>' in text
    assert '<cell id="c2" index="1" type="code" execution_count="1">\nprint(1+1)\n</cell>' in text
    assert "<output stream=stdout>\n2\n" in text


def _pdf(pages: list[str]) -> bytes:
    """A minimal valid PDF with one line of text per page (no reportlab)."""
    objs: list[bytes] = []
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objs.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    font = 3 + 2 * n
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
                    f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode())
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    return out.getvalue()



def _big_ascii(lines: int, crlf: bool = False, final_newline: bool = True, wide: bool = False) -> bytes:
    """Over CONTENT_FILE_MAX (2 MiB): a real-looking source file with a few long lines, "%" signs (the
    numbering formats the text) and, ``wide``, some non-ASCII text."""
    eol = "\r\n" if crlf else "\n"
    rows = [("    " * (i % 4) + f"value_{i} = compute({i}, 'x') % 7  # line {i}, 100%") if i % 997 else "y" * 2500
            for i in range(1, lines + 1)]
    if wide:
        rows = [r + (" # café 日本 ✓" if i % 7 == 0 else "") for i, r in enumerate(rows)]
    text = eol.join(rows) + (eol if final_newline else "")
    return text.encode("utf-8")


async def test_a_range_of_a_big_ascii_file_reads_as_the_whole_file_path_would(agent: Agent, ws: Path) -> None:
    """Issue 29: a big ASCII file is cut on its bytes and only the range is decoded; the text the model gets
    is the same as from the whole-file path (``_text_output`` over the decoded file), for every kind of range."""
    from sidecar.tools.files import read as read_module
    from sidecar.workspace.ledger import CONTENT_FILE_MAX
    from sidecar.workspace.textfile import decode

    for crlf, final, wide, long_lines in ((False, True, False, True), (True, True, False, True),
                                          (False, False, False, True), (False, True, True, True),
                                          (False, True, False, False), (False, False, True, False)):
        data = _big_ascii(60_000, crlf, final, wide)
        if not long_lines:  # the numbering's fast path: no line over MAX_LINE_CHARS anywhere
            data = data.replace(b"y" * 2500, b"y" * 2000)
        assert len(data) > CONTENT_FILE_MAX
        f = ws / f"big_{crlf}_{final}_{wide}_{long_lines}.py"
        f.write_bytes(data)
        text, enc = decode(data)
        for offset, limit in ((1, 2000), (30_000, 2000), (-2000, None), (-1, 5), (59_990, 50),
                              (1, 100_000), (-100_000, 10), (60_001, 10), (70_000, 10),
                              (2, 59_999), (40_000, 19_000), (59_999, 1), (60_000, 1)):
            inp = read_module.ReadInput(file_path=str(f), offset=offset, limit=limit)
            start, lim, _ = read_module._range_key(inp)
            expected = read_module._text_output(f, _ctx(agent), text, enc, start, lim)
            got, err, out = await agent.call("Read", file_path=str(f), **{k: v for k, v in
                                             (("offset", offset), ("limit", limit)) if v is not None})
            assert_large_read(got, out.metadata, expected, len(data))
            assert err == expected.is_error
            if not out.metadata.get("from_end"):
                assert out.metadata.get("encoding") == expected.metadata.get("encoding"), (offset, limit)
                assert out.metadata["truncated"] == expected.metadata.get("truncated", False)


async def test_a_big_file_read_in_blocks_decodes_and_counts_as_the_whole_file_path(agent: Agent, ws: Path) -> None:
    """The large-file scan reads 256 KiB blocks: a UTF-8 sequence or a CRLF cut by a block's end (or a
    sequence by a decoded piece's end), a
    latin-1 byte late in the file or ending a block (before ASCII) and a sequence cut by the file's end
    give the text (and encoding note) of the whole-file path."""
    from sidecar.tools.files import read as read_module
    from sidecar.workspace.textfile import decode

    block, piece = read_module.SCAN_BLOCK, 1 << 13  # 8 KiB pieces: where an earlier scan decoded
    row = b"x = compute(1, 'y')  # a row of a big file\n"

    def filler(n: int) -> bytes:
        return (row * (n // len(row) + 1))[:n - 1] + b"\n"

    crlf_row = b"y" * 100 + b"\r\n"
    rows = (block - 1) // len(crlf_row)
    cases = {
        "utf8_cut": filler(block - 1) + "é\n".encode() + filler(3 * block) + "日本 ✓\n".encode() * 3
        + filler(6 * block),
        # "\r" the last byte of the first block, its "\n" the first of the second
        "crlf_cut": crlf_row * rows + b"z" * (block - 1 - rows * len(crlf_row)) + b"\r\n"
        + filler(10 * block).replace(b"\n", b"\r\n"),
        "latin1_late": filler(12 * block) + b"caf\xe9\n" + filler(block),
        # a lone lead byte ending a block, an ASCII block, then a continuation byte: not UTF-8
        "lead_byte_at_block_end": filler(9 * block)[:-1] + b"\xc3" + filler(block) + b"\xa9\n" + filler(block),
        # the same within a non-ASCII block, which is decoded DECODE_PIECE at a time (ASCII pieces skipped)
        "utf8_cut_by_a_piece": filler(block + piece - 1) + "é\n".encode() + filler(piece) + "✓\n".encode()
        + filler(5 * block),
        "lead_byte_at_piece_end": filler(block + 2 * piece)[:-1] + b"\xc3" + filler(piece) + b"\xa9\n"
        + "✓\n".encode() + filler(5 * block),
        "cut_at_end": filler(10 * block) + "end ✓".encode()[:-1],
        # numbers of 1 to 7 digits (the numbering pads each width's run of lines on its own)
        "million_lines": b"".join(b"%d\n" % (i % 10) for i in range(1_100_000)),
    }
    for name, data in cases.items():
        f = ws / f"blocks_{name}.txt"
        f.write_bytes(data)
        text, enc = decode(data)
        for offset, limit in ((1, 2000), (-2000, None), (5000, 3000), (1, 1_000_000), (999_990, 20),
                              (99_990, 20)):
            inp = read_module.ReadInput(file_path=str(f), offset=offset, limit=limit)
            start, lim, _ = read_module._range_key(inp)
            expected = read_module._text_output(f, _ctx(agent), text, enc, start, lim)
            got, err, out = await agent.call("Read", file_path=str(f), **{k: v for k, v in
                                             (("offset", offset), ("limit", limit)) if v is not None})
            assert not err
            shown_as = "utf-8" if out.metadata.get("from_end") else out.metadata.get("encoding")
            if expected.metadata.get("encoding") != shown_as:
                # Not UTF-8 elsewhere: a range that is (ASCII here) shows as UTF-8 without the whole-file
                # path's encoding note; one that is not goes to that path (then the encodings match).
                assert not expected.metadata.get("encoding", "").startswith("utf-8") and shown_as == "utf-8", name
                expected = read_module._text_output(f, _ctx(agent), text, None, start, lim)
            assert_large_read(got, out.metadata, expected, len(data))


async def test_paging_through_a_big_file_after_a_same_size_rewrite_reads_the_new_lines(agent: Agent,
                                                                                      ws: Path) -> None:
    """A big file read page by page is scanned once; rewritten behind the agent's back to the same size
    and line count with its mtime set back (lines 5-10 joined, line 59000 split: every line between
    moved), the next page is the new file's, numbered as the whole-file path numbers it."""
    from sidecar.tools.files import read as read_module
    from sidecar.workspace.textfile import decode

    f = ws / "paged.py"
    data = _big_ascii(60_000)
    f.write_bytes(data)
    for offset in (1, 2001):
        got, err, _ = await agent.call("Read", file_path=str(f), offset=offset, limit=2000)
        assert not err and got.startswith(f"{offset:6d}\t") and f"value_{offset} = compute({offset}, 'x')" in got
    st = f.stat()
    head, sep, rest = data.partition(b"value_5 = ")
    joined = rest.replace(b"\n", b" ", 5)
    late = b"value_59000 = compute(59000, 'x') % 7  # line 59000, 100%"
    rewritten = head + sep + joined.replace(late, late.replace(b" ", b"\n", 5), 1)
    assert len(rewritten) == len(data) and rewritten.count(b"\n") == data.count(b"\n")
    f.write_bytes(rewritten)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    text, enc = decode(rewritten)
    expected = read_module._text_output(f, _ctx(agent), text, enc, 20_001, 2000).joined_text()
    got, err, _ = await agent.call("Read", file_path=str(f), offset=20_001, limit=2000)
    assert not err
    assert got == expected
    assert got.startswith(" 20001\t") and "value_20006 = compute(20006, 'x')" in got.splitlines()[0]


def _ctx(agent: Agent) -> Any:
    from sidecar.tools.context import ToolContext

    return ToolContext(session=agent.session, tool_call_id="toolu_compare")


async def test_edit_after_a_ranged_read_of_a_big_file_checks_staleness(agent: Agent, ws: Path) -> None:
    """The fingerprint of a ranged read of a big file is its stat plus what was read: an Edit after it
    lands, and a change made behind the agent's back is still caught."""
    f = ws / "big_edit.py"
    f.write_bytes(_big_ascii(60_000))
    _, err, _ = await agent.call("Read", file_path=str(f), offset=-10)
    assert not err
    _, _, out = await agent.call("Read", file_path=str(f), offset=-10)
    assert out.metadata["unchanged"] is True
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="value_59999 = compute(59999, 'x')",
                                    new_string="value_59999 = compute(59999, 'y')")
    assert not err, text
    assert b"value_59999 = compute(59999, 'y')" in f.read_bytes()
    _, err, _ = await agent.call("Read", file_path=str(f), offset=1, limit=10)
    assert not err
    before = f.stat().st_mtime_ns
    f.write_bytes(f.read_bytes().replace(b"value_5 = compute(5, 'x')", b"value_5 = compute(5, 'Z')"))
    os.utime(f, ns=(before + 1_000_000, before + 1_000_000))  # same size: only the stat tells
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="value_3 = compute(3, 'x')",
                                    new_string="value_3 = compute(3, 'q')")
    assert err and "modified since read" in text


async def test_a_range_from_the_start_of_a_large_file_reads_only_up_to_its_end(
        agent: Agent, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29, "Read proportional to what it returns": the first 2,000 lines of a 12 MB file read about
    what ``head -n 2000`` reads (here under 1 MB), not the whole file to count it; the last 2,000 read
    from the end, like ``tail``. Counted by the bytes the sidecar's own reads return."""
    import os as os_module

    f = ws / "twelve_mb.log"
    f.write_bytes(b"".join(b"%07d ok\n" % i for i in range(1, 1_300_001)))
    assert 12_000_000 < f.stat().st_size < 16_000_000
    read_bytes = 0
    preadv, pread, read = os_module.preadv, os_module.pread, os_module.read

    def counting_preadv(fd: int, buffers: Any, offset: int) -> int:
        nonlocal read_bytes
        got = preadv(fd, buffers, offset)
        read_bytes += got
        return got

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        nonlocal read_bytes
        data = pread(fd, n, offset)
        read_bytes += len(data)
        return data

    def counting_read(fd: int, n: int) -> bytes:
        nonlocal read_bytes
        data = read(fd, n)
        read_bytes += len(data)
        return data

    monkeypatch.setattr(os_module, "preadv", counting_preadv)
    monkeypatch.setattr(os_module, "pread", counting_pread)
    monkeypatch.setattr(os_module, "read", counting_read)
    got, err, out = await agent.call("Read", file_path=str(f), offset=1, limit=2000)
    assert not err and out.metadata["range"] == [1, 2000]
    assert f"(Showing lines 1-2000 of a {f.stat().st_size:,}-byte file that goes on. Use offset=2001" in got
    assert read_bytes < 1_000_000, read_bytes
    read_bytes = 0
    got, err, out = await agent.call("Read", file_path=str(f), offset=-2000)
    assert not err and out.metadata["range"][1] == -1 and "counted from the end" in got
    assert "\n    -1\t1300000 ok\n\n(Large file: " in got
    assert read_bytes < 1_000_000, read_bytes


async def test_a_read_from_the_end_asked_again_after_the_file_was_counted_is_said_as_it_was_shown(
        agent: Agent, ws: Path) -> None:
    """A large file's last lines read from the end are numbered from the end. Once a later read counted
    the file, the same read from the end again is unchanged: the reply names the range as the model saw
    it (its last 50 lines), not line numbers from the start it was never shown."""
    f = ws / "tail_then_counted.log"
    f.write_bytes(b"".join(b"%07d ok\n" % i for i in range(1, 400_001)))
    got, err, out = await agent.call("Read", file_path=str(f), offset=-50)
    assert not err and out.metadata["from_end"] and out.metadata["range"] == [-50, -1]
    got, err, out = await agent.call("Read", file_path=str(f), offset=399_991, limit=100)
    assert not err and out.metadata["range"] == [399_991, 400_000] and out.metadata["total_lines"] == 400_000
    got, err, out = await agent.call("Read", file_path=str(f), offset=-50)
    assert not err and out.metadata["unchanged"] is True
    assert got.startswith("File unchanged since last read: the last 50 lines of ") and "399951" not in got
    assert out.metadata["range"][0] == -50


async def test_an_offset_from_the_end_further_back_than_a_read_from_the_end_holds_is_counted(
        agent: Agent, ws: Path) -> None:
    """A read from the end holds at most 8 MiB; a negative offset further back in a 12 MB file is counted
    and numbered from the start, as the whole-file path numbers it (it used to return later lines)."""
    from sidecar.tools.files import read as read_module
    from sidecar.workspace.textfile import decode

    f = ws / "far_back.log"
    data = b"".join(b"%07d ok\n" % i for i in range(1, 1_300_001))
    f.write_bytes(data)
    assert len(data) - 1_200_000 * 11 < len(data) - read_module.TAIL_MAX_BYTES
    got, err, out = await agent.call("Read", file_path=str(f), offset=-1_200_000, limit=10)
    assert not err and not out.metadata.get("from_end")
    text, enc = decode(data)
    expected = read_module._text_output(f, _ctx(agent), text, enc, -1_200_000, 10)
    assert got == expected.joined_text()
    assert got.startswith("100001\t0100001 ok\n")


async def test_a_same_size_rewrite_with_the_mtime_set_back_is_seen_after_a_partial_read(agent: Agent,
                                                                                     ws: Path) -> None:
    """A large file is read in part (its stat and what was shown, no whole-file digest). Rewritten
    behind the agent's back to the same size with its mtime set back exactly, the same Read is not
    "unchanged" and shows the new lines, and an Edit without reading again is refused: the inode's ctime
    tells (no ``touch`` can set it back)."""
    f = ws / "rewritten.log"
    data = b"".join(b"%07d ok\n" % i for i in range(1, 400_001))
    f.write_bytes(data)
    got, err, _ = await agent.call("Read", file_path=str(f), offset=-10)
    assert not err and "0400000 ok" in got
    st = f.stat()
    with f.open("r+b") as fh:  # in place: same inode, same size
        fh.seek(len(data) - 3)
        fh.write(b"NO\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (f.stat().st_mtime_ns, f.stat().st_size) == (st.st_mtime_ns, st.st_size)
    got, err, out = await agent.call("Read", file_path=str(f), offset=-10)
    assert not err and not out.metadata.get("unchanged") and "0400000 NO" in got
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="0399999 ok", new_string="0399999 fine")
    assert not err, text  # read again just now: the Edit lands
    f.write_bytes(data)
    got, err, _ = await agent.call("Read", file_path=str(f), offset=-10)
    assert not err
    before = f.stat()
    with f.open("r+b") as fh:
        fh.seek(len(data) - 20)
        fh.write(b"Z")
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="0399998 ok", new_string="0399998 fine")
    assert err and "modified since read" in text


async def test_after_the_agents_own_edit_a_tail_read_still_sees_a_sneaky_same_size_rewrite(
        agent: Agent, ws: Path) -> None:
    """The agent's own Edit leaves a full fingerprint without the ctime (its stat is taken before the
    rename). A Read of the tail after it then teaches the fingerprint the ctime it saw, so a same-size
    rewrite with the mtime set back is not answered "unchanged" by the next same Read."""
    f = ws / "own.log"
    data = b"".join(b"%07d ok\n" % i for i in range(1, 400_001))
    f.write_bytes(data)
    got, err, _ = await agent.call("Read", file_path=str(f), offset=-10)
    assert not err
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="0399999 ok", new_string="0399999 OK")
    assert not err, text
    got, err, _ = await agent.call("Read", file_path=str(f), offset=-5)
    assert not err and "0400000 ok" in got
    st = f.stat()
    with f.open("r+b") as fh:
        fh.seek(st.st_size - 3)
        fh.write(b"NO\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    got, err, out = await agent.call("Read", file_path=str(f), offset=-5)
    assert not err and not out.metadata.get("unchanged") and "0400000 NO" in got


async def test_a_chmod_or_a_hard_link_does_not_make_a_file_read_whole_stale(agent: Agent, ws: Path) -> None:
    """A file the agent knows whole (read whole, or written by it) is checked by its digest: a change of
    its metadata alone (``chmod``, a new hard link) leaves an Edit landing, even after a partial Read
    taught the fingerprint the ctime. After a partial read of a large file, a chmod asks for a fresh
    Read (the decision in docs/files.md: nothing but the ctime sees a sneaky rewrite there)."""
    f = ws / "small.py"
    f.write_text("a = 1\nb = 2\n")
    _, err, _ = await agent.call("Read", file_path=str(f))
    assert not err
    os.chmod(f, 0o600)
    os.link(f, ws / "small.bak")
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="a = 1", new_string="a = 10")
    assert not err, text
    assert f.read_text() == "a = 10\nb = 2\n"

    big = ws / "big.log"
    big.write_bytes(b"".join(b"%07d ok\n" % i for i in range(1, 400_001)))
    _, err, _ = await agent.call("Read", file_path=str(big), offset=-10)
    assert not err
    text, err, _ = await agent.call("Edit", file_path=str(big), old_string="0399999 ok", new_string="0399999 OK")
    assert not err, text  # now known whole (written by the agent)
    _, err, _ = await agent.call("Read", file_path=str(big), offset=-5)  # learns the ctime
    assert not err
    os.chmod(big, 0o600)
    text, err, _ = await agent.call("Edit", file_path=str(big), old_string="0400000 ok", new_string="0400000 OK")
    assert not err, text
    assert big.read_bytes().endswith(b"0399999 OK\n0400000 OK\n")

    other = ws / "other.log"
    other.write_bytes(b"".join(b"%07d ok\n" % i for i in range(1, 400_001)))
    _, err, _ = await agent.call("Read", file_path=str(other), offset=-10)
    assert not err
    os.chmod(other, 0o600)
    text, err, _ = await agent.call("Edit", file_path=str(other), old_string="0399999 ok", new_string="x")
    assert err and "modified since read" in text and "Read it again" in text


async def test_an_unchanged_tail_read_gives_the_range_it_covers(agent: Agent, ws: Path) -> None:
    """The last 50 lines of a large file, read twice: the repeat is "unchanged" and its range is the one
    the first Read covered, -50 to -1 (the last line), not past the end."""
    f = ws / "tail.log"
    f.write_bytes(b"".join(b"%07d ok\n" % i for i in range(1, 400_001)))
    _, err, first = await agent.call("Read", file_path=str(f), offset=-50)
    assert not err and first.metadata["range"] == [-50, -1]
    text, err, again = await agent.call("Read", file_path=str(f), offset=-50)
    assert not err and again.metadata["unchanged"] and again.metadata["range"] == [-50, -1]
    assert text.startswith("File unchanged since last read: the last 50 lines of tail.log")


async def test_an_unchanged_tail_read_of_fewer_lines_says_which_it_returned(agent: Agent, ws: Path) -> None:
    """``offset=-50, limit=10`` returned 10 lines, not the last 50: the repeat says which ones, in the numbers
    the first Read showed (a small file numbers them from its start, a large one from its end)."""
    small = ws / "small.txt"
    small.write_text("".join(f"line {i}\n" for i in range(1, 101)))
    big = ws / "tail.log"
    big.write_bytes(b"".join(b"%07d ok\n" % i for i in range(1, 400_001)))
    said = {}
    for f in (small, big):
        _, err, first = await agent.call("Read", file_path=str(f), offset=-50, limit=10)
        text, err2, again = await agent.call("Read", file_path=str(f), offset=-50, limit=10)
        assert not err and not err2 and again.metadata["unchanged"], text
        assert again.metadata["range"] == first.metadata["range"], (first.metadata, again.metadata)
        said[f.name] = text.split(" are exactly")[0]
    assert said == {"small.txt": "File unchanged since last read: lines 51-60 of small.txt",
                    "tail.log": "File unchanged since last read: lines -50 to -41 (counted from the end: -1 is "
                                "the last line) of tail.log"}
    _, _, whole_tail = await agent.call("Read", file_path=str(small), offset=-50)
    text, _, again = await agent.call("Read", file_path=str(small), offset=-50)
    assert again.metadata["range"] == whole_tail.metadata["range"] == [51, 100], text
    assert text.startswith("File unchanged since last read: lines 51-100 of small.txt")


async def test_a_repeated_read_past_the_end_or_of_an_empty_file_says_so_again(agent: Agent, ws: Path) -> None:
    """Nothing shown, nothing to reuse: the same Read again is answered as the first, not "unchanged"."""
    f = ws / "small.txt"
    f.write_text("a\nb\nc\n")
    empty = ws / "empty.txt"
    empty.write_text("")
    for _ in range(2):
        text, err, out = await agent.call("Read", file_path=str(f), offset=10)
        assert not err and not out.metadata.get("unchanged")
        assert text == "small.txt has 3 lines; offset 10 is past the end. Use an offset between 1 and 3.", text
        text, err, out = await agent.call("Read", file_path=str(empty))
        assert not err and not out.metadata.get("unchanged") and "exists but is empty" in text, text


async def test_a_whole_read_then_a_range_read_sees_a_sneaky_same_size_rewrite(agent: Agent, ws: Path) -> None:
    """A large file whose first lines are not UTF-8 is read whole (its fingerprint full). Rewritten to the
    same size with the mtime set back so the range path can read it, the same Read is not "unchanged":
    the whole read kept the inode's ctime."""
    f = ws / "mixed.log"
    lines = [b"%07d ok\n" % i for i in range(1, 400_001)]
    lines[9] = b"000010 \xe9k\n"
    f.write_bytes(b"".join(lines))
    _, err, _ = await agent.call("Read", file_path=str(f), limit=20)
    assert not err
    st = f.stat()
    at = f.read_bytes().index(b"\xe9")
    with f.open("r+b") as fh:
        fh.seek(at)
        fh.write(b"X")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    text, err, out = await agent.call("Read", file_path=str(f), limit=20)
    assert not err and not out.metadata.get("unchanged") and "000010 Xk" in text, text

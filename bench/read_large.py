"""Read proportional to what it returns (issue 29): the first and last 2,000 lines and the whole of a
real-looking 4 MB source file, against ``head -n``, ``tail -n`` and ``cat -n``.

    .venv/bin/python bench/read_large.py [--runs 7] [--mb 4.2]

The file is made of this interpreter's own standard-library sources (real Python, some non-ASCII
comments; no network), concatenated to ``--mb`` MB. Ours: one Read through the real dispatcher, timed in a
fresh process around the tool call (as bench/files_tools.py does); the reference: the command's whole run
(its process start included). Interleaved, medians. Goals: head/tail ≤ 3×, whole file ≤ 2× ``cat -n``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, header, row

CHILD = """
import asyncio, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.files.helpers import Agent
from sidecar.workspace.watcher import ensure_watcher

async def m() -> None:
    a = Agent(Path({ws!r}), Path({tmp!r}))
    await a.call('Read', file_path={small!r})  # the session's first-call costs are not the file's
    # nor the file watcher's set-up, which that first Read started in its thread (it holds the GIL
    # for tens of ms at a time: measured inside the Read, it was a third of the whole-file time)
    await asyncio.wait_for(ensure_watcher(a.session).ready.wait(), 60)
    t = time.perf_counter()
    txt, err, _ = await a.call('Read', file_path={big!r}, offset={offset}, limit={limit})
    took = time.perf_counter() - t
    assert not err, txt[:300]
    print(took)

asyncio.run(m())
"""


def make_source(path: Path, mb: float) -> int:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts: list[bytes] = []
    size = 0
    for p in sorted(stdlib.rglob("*.py")):
        data = p.read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        parts.append(data)
        size += len(data)
        if size >= mb * 1_000_000:
            break
    blob = b"".join(parts)
    path.write_bytes(blob)
    return blob.count(b"\n")


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def ours(ws: Path, tmp: Path, big: Path, offset: int, limit: int) -> float:
    code = CHILD.format(root=str(REPO), ws=str(ws), tmp=str(tmp), small=str(ws / "small.txt"), big=str(big),
                        offset=offset, limit=limit)
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--mb", type=float, default=4.2)
    args = parser.parse_args()
    header("Read of a real multi-MB source file vs head / tail / cat -n")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        ws = tmp / "ws"
        ws.mkdir()
        (ws / "small.txt").write_text("x\n")
        big = ws / "stdlib.py"
        lines = make_source(big, args.mb)
        print(f"file: {big.stat().st_size:,} bytes, {lines:,} lines (this interpreter's stdlib sources)")
        print("reference: the command's whole run, its start included; ours: the tool call in a fresh process")
        timed(["cat", str(big)])  # in the page cache for everyone
        cases = [("read_head", "first 2,000 lines", 1, 2000, ["head", "-n", "2000", str(big)], 3.0),
                 ("read_last", "last 2,000 lines", -2000, 2000, ["tail", "-n", "2000", str(big)], 3.0),
                 ("read_whole", "whole file", 1, lines + 10, ["cat", "-n", str(big)], 2.0)]
        for key, label, offset, limit, ref, goal in cases:
            o, r = [], []
            for _ in range(args.runs):
                r.append(timed(ref))
                o.append(ours(ws, tmp, big, offset, limit))
            mo, mr = statistics.median(o), statistics.median(r)
            print(f"Read {label:18s} {mo * 1000:7.1f} ms vs {ref[0]} {mr * 1000:6.1f} ms: {mo / mr:.2f}×"
                  f"  goal ≤ {goal}×"
                  f"   runs {' '.join(f'{v * 1000:.0f}' for v in o)} / {' '.join(f'{v * 1000:.0f}' for v in r)}")
            row(key, f"Read {label} of {args.mb} MB source vs {' '.join(ref[:-1])}",
                f"{mo / mr:.2f}x ({mo * 1000:.0f} vs {mr * 1000:.0f} ms)", f"<= {goal}x", mo / mr <= goal)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

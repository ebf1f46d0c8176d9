"""File tools vs the reference commands, measured in the same run. Prints ratios (lower is better).

Every comparison is interleaved (ours, reference, ours, …) and prints both series; the closing
table (bench/run) takes the ratio of the medians. Each section first prints the reference and why it is fair.

    .venv/bin/python bench/files_tools.py [--files 50000] [--gb 1] [--runs 5]

Grep vs `rg` (same flags: content mode with the whole output from both, and one 30,000-character page
from both; files_with_matches vs `rg -l`); Glob vs `rg --files -g` on a generated tree; Read of the last
2,000 lines of a 1 GB file (`offset=-2000`, read backwards, no line count) vs `tail -n 2000`, and 2,000
lines by line number at the end of it vs `sed -n 'A,Bp;Bq'` (both must find every newline before the
range; then the same after a first Read, the line index kept in the ledger), each Read in a fresh child
process that also reports its peak RSS (VmHWM: reset by exec, unlike ru_maxrss); Edit on a
1,000,000-line `.txt` file (no language server runs: diagnostics are the LSP layer's cost) vs
read-replace-write of a copy with the same durability (temp file, fsync, rename, directory fsync; the
no-fsync time is printed too); the time from an external write to the staleness notice being queued.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import row

from sidecar.tools.files.glob import rg_binary
from sidecar.workspace.watcher import WATCHER
from tests.files.helpers import Agent


def best(fn: Callable[[], Any], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


async def abest(fn: Callable[[], Awaitable[Any]], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t)
    return min(times)


def make_tree(root: Path, n: int) -> None:
    words = ["alpha", "beta", "gamma", "delta", "needle", "omega"]
    for i in range(n):
        d = root / f"d{i % 200}" / f"s{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        ext = (".py", ".ts", ".md", ".txt")[i % 4]
        body = "\n".join(f"{words[(i + k) % 6]} line {k} of file {i}" for k in range(20)) + "\n"
        (d / f"f{i}{ext}").write_text(body)


def report(name: str, ours: float, ref: float, goal: float, medians: tuple[float, float] | None = None) -> None:
    ratio = ours / ref if ref else float("inf")
    med = ""
    if medians is not None:
        med = f"   medians {medians[0] * 1000:.0f}/{medians[1] * 1000:.0f} ms = {medians[0] / medians[1]:.2f}x"
    print(f"{name:<44} ours {ours * 1000:9.1f} ms   ref {ref * 1000:9.1f} ms   ratio {ratio:5.2f}x "
          f"(goal <= {goal}x){'' if ratio <= goal else '  MISSED'}{med}")


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False)
    return time.perf_counter() - t


def spread(xs: list[float]) -> str:
    return " ".join(f"{x * 1000:.0f}" for x in xs)


async def pair(name: str, ours: Callable[[], Awaitable[Any]], ref: list[str], goal: float, runs: int
               ) -> tuple[float, list[float], list[float]]:
    """Ours and the reference interleaved (load on a shared machine hits both alike); returns the ratio of
    the medians and both series."""
    await ours()  # warm-up, unmeasured (first-use services, the page cache)
    await asyncio.to_thread(timed, ref)
    o: list[float] = []
    r: list[float] = []
    for _ in range(runs):
        t = time.perf_counter()
        await ours()
        o.append(time.perf_counter() - t)
        r.append(await asyncio.to_thread(timed, ref))
    report(name, min(o), min(r), goal, (statistics.median(o), statistics.median(r)))
    print(f"{'':<44} runs ours {spread(o)} ms / ref {spread(r)} ms")
    return statistics.median(o) / statistics.median(r), o, r


def verdict_row(key: str, measure: str, ratio: float, o: list[float], r: list[float], goal: float,
                extra: str = "") -> None:
    row(key, measure, f"{ratio:.2f}x (median {statistics.median(o) * 1000:.0f} vs "
        f"{statistics.median(r) * 1000:.0f} ms){extra}", f"<= {goal}x", ratio <= goal)


READ_CHILD = """
import asyncio, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.files.helpers import Agent

async def m() -> None:
    a = Agent(Path({ws!r}), Path({tmp!r}))
    t = time.perf_counter()
    txt, err, _ = await a.call('Read', file_path={big!r}, offset={offset}, limit=2000)
    first = time.perf_counter() - t
    assert not err, txt
    t = time.perf_counter()
    txt, err, _ = await a.call('Read', file_path={big!r}, offset={offset2}, limit=2000)
    second = time.perf_counter() - t
    assert not err, txt
    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]
    print(first, second, hwm)

asyncio.run(m())
"""


def read_child(ws: Path, tmp: Path, big: Path, offset: int, offset2: int) -> tuple[float, float, float]:
    code = READ_CHILD.format(root=str(Path(__file__).resolve().parent.parent), ws=str(ws), tmp=str(tmp),
                             big=str(big), offset=offset, offset2=offset2)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    first, second, rss = out.split()
    return float(first), float(second), int(rss) / 1024


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rg = rg_binary()
    runs = args.runs
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        ws = (tmp / "ws")
        ws.mkdir()
        ws = ws.resolve()
        t = time.perf_counter()
        await asyncio.to_thread(make_tree, ws / "tree", args.files)
        print(f"generated {args.files} files in {time.perf_counter() - t:.1f}s")
        agent = Agent(ws, tmp, mode="acceptEdits")
        tree = ws / "tree"

        rg_common = [rg, "--no-config", "--hidden", "--no-require-git", "--glob", "!.git", "--max-columns", "500",
                     "--max-columns-preview", "--color", "never", "--no-heading", "--line-number"]
        # Grep, content mode, like for like: a search whose whole output fits in the tool's 30,000-character
        # page, so both the tool and rg search the whole tree and print everything.
        few = "needle line 1[0-9] of file 4[0-9][0-9]$"

        async def grep_all() -> None:
            txt, err, _ = await agent.call("Grep", pattern=few, path=str(tree), output_mode="content", head_limit=0)
            assert not err and "needle" in txt and "offset=" not in txt, txt[-300:]

        print("Grep content reference: rg with the tool's own flags, same pattern; the whole output (under the "
              "tool's 30,000-character page) from both, so both do the same work")
        ratio, o, r = await pair("Grep content, full output from both", grep_all, [*rg_common, "-e", few, str(tree)],
                                 1.15, runs)
        verdict_row("grep_content", "Grep content vs rg (same output)", ratio, o, r, 1.15)

        async def grep_page() -> None:
            await agent.call("Grep", pattern="needle line 1[0-9]", path=str(tree), output_mode="content",
                             head_limit=0)

        cmd = " ".join(f"'{a}'" for a in [*rg_common, "-e", "needle line 1[0-9]", str(tree)])
        print("same page: a search with far more output; the tool stops rg at its 30,000-character page, the "
              "reference is rg piped to `head -c 30000` (rg ends on SIGPIPE at the same point)")
        await pair("Grep content, one 30,000-char page each", grep_page, ["bash", "-c", f"{cmd} | head -c 30000"],
                   1.15, runs)

        async def grep_files() -> None:
            await agent.call("Grep", pattern="needle line 19 of file 4", path=str(tree))

        await pair("Grep files_with_matches (tool vs rg -l)", grep_files,
                   [rg, "--no-config", "--hidden", "--no-require-git", "-l", "-e", "needle line 19 of file 4",
                    str(tree)], 1.15, runs)

        async def glob() -> None:
            await agent.call("Glob", pattern="**/*.py", path=str(tree))

        print("Glob reference: `rg --files -g '**/*.py'` over the same tree (the tool also sorts newest first)")
        ratio, o, r = await pair("Glob **/*.py (tool vs rg --files -g)", glob,
                                 [rg, "--files", "-g", "**/*.py", str(tree)], 1.2, runs)
        verdict_row("glob", f"Glob **/*.py, {args.files} files, vs rg --files -g", ratio, o, r, 1.2)

        # Read the last 2,000 lines of a big file; then 2,000 lines deep by line number.
        big = ws / "big.log"
        line = b"x" * 99 + b"\n"
        n_lines = int(args.gb * 1024**3) // len(line) // 10_000 * 10_000

        def write_big() -> None:
            with open(big, "wb") as out:
                block = line * 10_000
                for _ in range(n_lines // 10_000):
                    out.write(block)

        await asyncio.to_thread(write_big)
        await asyncio.to_thread(timed, ["cat", str(big)])  # in the page cache for everyone
        print(f"Read reference: `tail -n 2000` (its process start included; ours is timed inside a fresh process "
              f"around the tool call), interleaved, {runs} runs each")
        o, r, rss_tail = [], [], 0.0
        for _ in range(runs):
            r.append(await asyncio.to_thread(timed, ["tail", "-n", "2000", str(big)]))
            first, _, rss_tail = await asyncio.to_thread(read_child, ws, tmp, big, -2000, -2000)
            o.append(first)
        ratio = statistics.median(o) / statistics.median(r)
        report(f"Read last 2000 lines of {args.gb} GB (offset=-2000)", min(o), min(r), 2,
               (statistics.median(o), statistics.median(r)))
        print(f"{'':<44} runs ours {spread(o)} ms / tail {spread(r)} ms")
        print(f"{'  peak RSS of the reading process':<44} {rss_tail:.0f} MB (goal <= 100 MB)")
        verdict_row("read_tail", f"Read last 2000 lines of {args.gb} GB vs tail", ratio, o, r, 2,
                    f", {rss_tail:.0f} MB")

        a, b = n_lines - 1999, n_lines
        print(f"Read deep reference: `sed -n '{a},{b}p;{b}q'` — like the tool's first Read by line number it "
              "must find every newline up to the range (tail would read from the end: the wrong reference)")
        o, r, warm, rss = [], [], [], 0.0
        for _ in range(runs):
            r.append(await asyncio.to_thread(timed, ["sed", "-n", f"{a},{b}p;{b}q", str(big)]))
            cold, w, rss = await asyncio.to_thread(read_child, ws, tmp, big, a, a - 2000)
            o.append(cold)
            warm.append(w)
        ratio = statistics.median(o) / statistics.median(r)
        report(f"Read lines {a}-{b} of {args.gb} GB, first Read", min(o), min(r), 1.5,
               (statistics.median(o), statistics.median(r)))
        print(f"{'':<44} runs ours {spread(o)} ms / sed {spread(r)} ms")
        report("  same, after a first Read (index in the ledger)", min(warm), min(r), 1.5)
        print(f"{'  peak RSS of the reading process':<44} {rss:.0f} MB (goal <= 100 MB)")
        verdict_row("read_deep", f"Read 2000 lines deep in {args.gb} GB vs sed", ratio, o, r, 1.5, f", {rss:.0f} MB")
        big.unlink()

        # Edit on a 1,000,000-line file vs read-replace-write with the same durability (of a copy, so the
        # ledger stays valid).
        million = ws / "million.txt"
        million.write_text("".join(f"value_{i} = {i}\n" for i in range(1_000_000)))
        copy = ws / "million_plain.txt"
        copy.write_bytes(million.read_bytes())
        await agent.call("Read", file_path=str(million), limit=1)
        i = [0]

        async def edit() -> None:
            k = i[0]
            i[0] += 1
            txt, err, _ = await agent.call("Edit", file_path=str(million), old_string=f"value_500000 = {500000 + k}\n",
                                           new_string=f"value_500000 = {500001 + k}\n")
            assert not err, txt

        j = [0]

        def durable() -> None:
            """Read, decode, replace, encode, write a temp file beside it, fsync it, rename it over the
            file, fsync the directory: what the tool must do to be durable, without anything else."""
            k = j[0]
            j[0] += 1
            s = copy.read_bytes().decode("utf-8")
            s = s.replace(f"value_500000 = {500000 + k}\n", f"value_500000 = {500001 + k}\n", 1)
            tmp_path = copy.with_name(copy.name + ".tmp")
            fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, s.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp_path, copy)
            dfd = os.open(copy.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

        def plain() -> None:
            s = copy.read_text()
            s = s.replace("value_500000 = ", "value_500000 = ", 1)
            copy.write_text(s)

        await edit()  # warm-up (first-use services, e.g. the language-server table)
        print("Edit reference: read + decode + replace + encode + write a temp file + fsync + rename + fsync of the "
              "directory (the tool's durability; without fsyncs it would not be like for like)")
        o, r, p = [], [], []
        for _ in range(runs):
            t = time.perf_counter()
            await edit()
            o.append(time.perf_counter() - t)
            r.append(await asyncio.to_thread(best, durable, 1))
            p.append(await asyncio.to_thread(best, plain, 1))
        ratio = statistics.median(o) / statistics.median(r)
        report("Edit 1,000,000-line file (tool vs durable)", min(o), min(r), 2,
               (statistics.median(o), statistics.median(r)))
        print(f"{'':<44} runs ours {spread(o)} ms / durable {spread(r)} ms / no fsync {spread(p)} ms")
        verdict_row("edit", "Edit 1M lines vs read-replace-write+fsync", ratio, o, r, 2)

        # External write → notice queued.
        f = ws / "watched.txt"
        f.write_text("v0\n")
        lat = []
        await agent.call("Read", file_path=str(f))
        watcher = agent.session.service(WATCHER)
        await asyncio.wait_for(watcher.ready.wait(), 10)
        for k in range(30):
            agent.session.pending_notices.clear()
            await agent.call("Read", file_path=str(f))
            await asyncio.sleep(0.05)
            t = time.perf_counter()
            f.write_text(f"v{k + 1}\n")
            while not agent.session.pending_notices:
                await asyncio.sleep(0.002)
                if time.perf_counter() - t > 5:
                    break
            lat.append(time.perf_counter() - t)
        lat.sort()
        p95 = lat[int(len(lat) * 0.95) - 1]
        print(f"{'External write -> notice queued':<44} p50 {statistics.median(lat) * 1000:.0f} ms   "
              f"p95 {p95 * 1000:.0f} ms (goal p95 <= 200 ms){'' if p95 <= 0.2 else '  MISSED'}")
        await agent.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    asyncio.run(main())

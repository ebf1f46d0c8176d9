"""File tools vs the reference commands, measured in the same run. Prints ratios (lower is better).

    .venv/bin/python bench/files_tools.py [--files 50000] [--gb 1]

Grep vs `rg` (same flags) and Glob vs `rg --files -g` on a generated tree; Read of the last 2,000 lines of
a 1 GB file vs `tail -n 2000` (cold: first Read builds the line index; warm: after a first Read) with peak
RSS measured in a child process; Edit on a 1,000,000-line file vs a plain read-replace-write; the time from
an external write to the staleness notice being queued (p95).
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sidecar.tools.files.glob import rg_binary  # noqa: E402
from tests.files.helpers import Agent  # noqa: E402


def best(fn, n: int = 5) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


async def abest(fn, n: int = 5) -> float:  # type: ignore[no-untyped-def]
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


def report(name: str, ours: float, ref: float, goal: float) -> None:
    ratio = ours / ref if ref else float("inf")
    print(f"{name:<44} ours {ours * 1000:9.1f} ms   ref {ref * 1000:9.1f} ms   ratio {ratio:5.2f}x "
          f"(goal <= {goal}x){'' if ratio <= goal else '  MISSED'}")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--gb", type=float, default=1.0)
    args = ap.parse_args()
    rg = rg_binary()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        ws = (tmp / "ws")
        ws.mkdir()
        ws = ws.resolve()
        t = time.perf_counter()
        make_tree(ws / "tree", args.files)
        print(f"generated {args.files} files in {time.perf_counter() - t:.1f}s")
        agent = Agent(ws, tmp, mode="acceptEdits")
        tree = ws / "tree"

        async def grep() -> None:
            await agent.call("Grep", pattern="needle line 1[0-9]", path=str(tree), output_mode="content",
                             head_limit=0)

        ref = best(lambda: subprocess.run([rg, "--no-config", "--hidden", "--no-require-git", "--glob", "!.git",
                                           "--max-columns", "500", "--max-columns-preview", "--color", "never",
                                           "--no-heading", "--line-number", "-e", "needle line 1[0-9]", str(tree)],
                                          capture_output=True, check=False))
        report("Grep content (tool vs rg)", await abest(grep), ref, 1.15)

        async def grep_files() -> None:
            await agent.call("Grep", pattern="needle line 19 of file 4", path=str(tree))

        ref = best(lambda: subprocess.run([rg, "--no-config", "--hidden", "--no-require-git", "-l",
                                           "-e", "needle line 19 of file 4", str(tree)], capture_output=True,
                                          check=False))
        report("Grep files_with_matches (tool vs rg -l)", await abest(grep_files), ref, 1.15)

        async def glob() -> None:
            await agent.call("Glob", pattern="**/*.py", path=str(tree))

        ref = best(lambda: subprocess.run([rg, "--files", "-g", "**/*.py", str(tree)], capture_output=True,
                                          check=False))
        report("Glob **/*.py (tool vs rg --files -g)", await abest(glob), ref, 1.2)

        # Read the last 2,000 lines of a big file.
        big = ws / "big.log"
        line = b"x" * 99 + b"\n"
        n_lines = int(args.gb * 1024**3) // len(line)
        with open(big, "wb") as f:
            block = line * 10_000
            for _ in range(n_lines // 10_000):
                f.write(block)
        n_lines = (n_lines // 10_000) * 10_000
        ref = best(lambda: subprocess.run(["tail", "-n", "2000", str(big)], capture_output=True, check=False))
        child = (f"import asyncio,resource,sys,time; sys.path.insert(0,{str(Path(__file__).parent.parent)!r});"
                 "from tests.files.helpers import Agent;from pathlib import Path\n"
                 "async def m():\n"
                 f"  a=Agent(Path({str(ws)!r}),Path({str(tmp)!r}))\n"
                 "  t=time.perf_counter()\n"
                 f"  txt,err,_=await a.call('Read',file_path={str(big)!r},offset={n_lines - 1999},limit=2000)\n"
                 "  cold=time.perf_counter()-t; assert not err, txt\n"
                 "  t=time.perf_counter()\n"
                 f"  txt,err,_=await a.call('Read',file_path={str(big)!r},offset={n_lines - 3999},limit=2000)\n"
                 "  warm=time.perf_counter()-t\n"
                 "  print(cold,warm,resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
                 "asyncio.run(m())\n")
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True).stdout
        cold, warm, rss = out.split()
        report(f"Read last 2000 lines of {args.gb} GB, cold", float(cold), ref, 2)
        report(f"Read last 2000 lines of {args.gb} GB, warm index", float(warm), ref, 2)
        print(f"{'  peak RSS of the reading process':<44} {int(rss) / 1024:.0f} MB (goal <= 100 MB)")
        big.unlink()

        # Edit on a 1,000,000-line file vs plain read-replace-write.
        million = ws / "million.py"
        million.write_text("".join(f"value_{i} = {i}\n" for i in range(1_000_000)))
        i = [0]

        async def edit() -> None:
            await agent.call("Read", file_path=str(million), limit=1)
            k = i[0]
            i[0] += 1
            txt, err, _ = await agent.call("Edit", file_path=str(million), old_string=f"value_500000 = {500000 + k}\n"
                                           if k else "value_500000 = 500000\n",
                                           new_string=f"value_500000 = {500001 + k}\n")
            assert not err, txt

        ours = await abest(edit, 3)

        def plain() -> None:
            s = million.read_text()
            s = s.replace("value_1 = 1\n", "value_1 = 1\n", 1)
            million.write_text(s)

        report("Edit 1,000,000-line file (tool vs plain)", ours, best(plain, 3), 2)

        # External write → notice queued.
        f = ws / "watched.txt"
        f.write_text("v0\n")
        lat = []
        await agent.call("Read", file_path=str(f))
        watcher = agent.session.services["watcher"]
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

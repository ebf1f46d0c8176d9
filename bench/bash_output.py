"""Bash output throughput: `yes | head -c 1G` through the Bash tool vs the same command to /dev/null.

    .venv/bin/python bench/bash_output.py [--bytes N]

Prints the reference wall time (bash, output to /dev/null), the tool's wall time (the real Bash tool on
a real Session: process group, pump thread, bounded result), their ratio, and the peak RSS of the
process that ran the tool. Goal: ratio ≤ 2, peak RSS ≤ 150 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def reference(nbytes: int) -> float:
    started = time.perf_counter()
    subprocess.run(["bash", "-c", f"yes | head -c {nbytes} > /dev/null"], check=True)
    return time.perf_counter() - started


async def through_tool(nbytes: int) -> dict[str, float | int | bool]:
    sys.path.insert(0, str(REPO))
    from sidecar.server.session import Session
    from sidecar.server.store import SessionStore
    from sidecar.tools.bash.bash import Bash, BashInput
    from sidecar.tools.bash.shells import shells_of
    from sidecar.tools.context import ToolContext

    class Channel:
        def __init__(self) -> None:
            self.client_capabilities: dict[str, object] = {}

        async def request(self, method: str, params: dict[str, object]) -> object:
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        async def notify(self, method: str, params: dict[str, object]) -> None:
            return None

    with tempfile.TemporaryDirectory() as tmp:
        session = Session(
            id="sess_bench", cwd=Path(tmp), channel=Channel(), store=SessionStore(Path(tmp) / "s")
        )
        tool = Bash()
        inp = BashInput(command=f"yes | head -c {nbytes}", timeout=600_000)
        ctx = ToolContext(session=session, tool_call_id="bench")
        started = time.perf_counter()
        out = await tool.run(inp, ctx)
        wall = time.perf_counter() - started
        await shells_of(session).close()
    return {
        "wall": wall,
        "chars": len(out.joined_text()),
        "error": out.is_error,
        "sandboxed": bool(out.metadata.get("sandboxed")),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=1 << 30)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(through_tool(args.bytes))))
        return
    ref = reference(args.bytes)
    child = subprocess.run(
        [sys.executable, __file__, "--child", "--bytes", str(args.bytes)],
        capture_output=True,
        text=True,
        check=True,
    )
    res = json.loads(child.stdout.strip().splitlines()[-1])
    ref2 = reference(args.bytes)
    ref_best = min(ref, ref2)
    print(f"output: {args.bytes:,} bytes")
    print(f"reference (bash, to /dev/null): {ref_best:.2f} s (runs: {ref:.2f}, {ref2:.2f})")
    print(f"Bash tool (sandboxed={res['sandboxed']}): {res['wall']:.2f} s, result {res['chars']:,} chars")
    print(f"ratio: {res['wall'] / ref_best:.2f}x (goal <= 2x)")
    print(f"peak RSS of the tool process: {res['peak_rss_mb']:.1f} MB (goal <= 150 MB)")


if __name__ == "__main__":
    main()

"""Idle memory: RSS of `sidecar serve --acp` after initialize + session/new (and of `sidecar serve`, LSP).

    .venv/bin/python bench/foundation_rss.py [--settle 2]

Spawns the sidecar, initializes it, opens one session on the repo, waits ``--settle`` seconds, then reads
VmRSS (and the peak, VmHWM) of the child from /proc/PID/status. The reference is the goal itself: the
ratio printed is RSS / 80 MB. Goal: ≤ 1.0 on the ACP transport; the LSP transport is shown for comparison
(it must import pygls/lsprotocol to speak LSP at all).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, header, isolated_env, rss_kb

from sidecar.client.connection import SidecarProcess

GOAL_MB = 80.0


async def measure(framing: str, settle: float) -> tuple[float, float, float]:
    env, tmp = isolated_env("http://127.0.0.1:9")  # never called: no prompt is sent
    argv = [PYTHON, "-m", "sidecar", "serve", *(["--acp"] if framing == "acp" else [])]
    process = SidecarProcess(framing=framing, env=env, cwd=str(REPO), argv=argv)  # type: ignore[arg-type]
    await process.start()
    try:
        assert process.proc is not None
        await process.initialize()
        after_init = rss_kb(process.proc.pid) / 1024
        await process.request("session/new", {"cwd": str(REPO), "mcpServers": []})
        await asyncio.sleep(settle)
        return after_init, rss_kb(process.proc.pid) / 1024, rss_kb(process.proc.pid, "VmHWM") / 1024
    finally:
        await process.close()
        tmp.cleanup()


async def run(settle: float) -> int:
    results = {framing: await measure(framing, settle) for framing in ("acp", "lsp")}
    for framing, (init, idle, peak) in results.items():
        print(f"sidecar serve {'--acp' if framing == 'acp' else '(LSP)':6s} after initialize {init:6.1f} MB   "
              f"after session/new (idle) {idle:6.1f} MB   peak {peak:6.1f} MB")
    ratio = results["acp"][1] / GOAL_MB
    print(f"ratio idle RSS (--acp) / {GOAL_MB:.0f} MB: {ratio:.2f}x   goal <= 1.00x   {'OK' if ratio <= 1 else 'OVER'}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--settle", type=float, default=2.0, help="seconds to wait after session/new")
    args = parser.parse_args()
    header("idle RSS after initialize + session/new")
    return asyncio.run(run(args.settle))


if __name__ == "__main__":
    raise SystemExit(main())

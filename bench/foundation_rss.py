"""Idle memory: RSS of `sidecar serve --acp` after initialize + session/new (and of `sidecar serve`, LSP).

    .venv/bin/python bench/foundation_rss.py [--settle 2]

Spawns the sidecar, initializes it, opens one session on the repo, waits ``--settle`` seconds and until its
RSS stops growing (the warm-up's imports are over), then reads
VmRSS (and the peak, VmHWM) of the child from /proc/PID/status. The reference is the goal itself: the
ratio printed is RSS / 100 MB, the one idle-RSS goal (issue 29; the same as ``foundation_first_prompt.py``
and bench/run's table: the idle process holds the SDK its warm-up loaded, 86.6 MB for the SDK alone). Goal:
≤ 1.0 on the ACP transport; the LSP transport is shown for comparison (it must import pygls/lsprotocol to
speak LSP at all).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, header, isolated_env, row, rss_kb

from sidecar.client.connection import SidecarProcess

GOAL_MB = 100.0


async def settled(pid: int, settle: float) -> None:
    """Wait at least ``settle`` s and until the warm-up is over: RSS grew < 0.5 MB over the last 1.5 s
    (the warm-up's imports are what grows it; on a loaded machine they take longer than any fixed pause)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    readings: list[tuple[float, float]] = []
    while loop.time() - start < 120:
        now = loop.time()
        readings.append((now, rss_kb(pid) / 1024))
        window = [r for t, r in readings if now - t <= 1.5]
        if now - start >= settle and now - readings[0][0] >= 1.5 and max(window) - min(window) < 0.5:
            return
        await asyncio.sleep(0.25)


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
        await settled(process.proc.pid, settle)
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
    row("idle_rss", "idle RSS after session/new (--acp)", f"{results['acp'][1]:.1f} MB (LSP {results['lsp'][1]:.1f})",
        f"<= {GOAL_MB:.0f} MB", ratio <= 1)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--settle", type=float, default=3.0,
                        help="seconds to wait after session/new (the warm-up ends meanwhile)")
    args = parser.parse_args()
    header("idle RSS after initialize + session/new")
    return asyncio.run(run(args.settle))


if __name__ == "__main__":
    raise SystemExit(main())

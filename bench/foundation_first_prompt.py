"""The first answer: time from ``session/prompt`` to the request reaching the model, first vs tenth prompt.

    .venv/bin/python bench/foundation_first_prompt.py [--n 10] [--pause 3]

A fresh ``sidecar serve --acp`` is initialized, a session created, and after ``--pause`` seconds (an
editor's user does not type a prompt within milliseconds of the panel opening) ``--n`` prompts are sent
one after the other. The clock runs from writing ``session/prompt`` to the scripted Messages API server
receiving the request (its ``RecordedRequest.time``, the same monotonic clock). The reference is the
tenth prompt of the same process: the goal is that the first costs no more than it (≤ 150 ms over it),
which holds when the SDK and the rest of the first turn were imported in the background after
``initialize``. Idle RSS after the warm-up is printed beside its goal (≤ 100 MB).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, isolated_env, ms, row

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def run(n: int, pause: float) -> int:
    server = ScriptedModelServer().start()
    env, tmp = isolated_env(server.base_url)
    sidecar = SidecarProcess(framing="acp", env=env, cwd=str(REPO), argv=[PYTHON, "-m", "sidecar", "serve", "--acp"])
    latencies: list[float] = []
    try:
        await sidecar.start()
        await sidecar.initialize()
        session = (await sidecar.request("session/new", {"cwd": str(REPO), "mcpServers": []}))["sessionId"]
        await asyncio.sleep(pause)
        idle_rss = rss_mb(sidecar.proc.pid) if sidecar.proc is not None else float("nan")
        for i in range(n):
            server.add_turn({"content": [{"type": "text", "text": f"answer {i}"}]})
            before = len(server.message_requests())
            started = time.monotonic()
            result = await sidecar.request("session/prompt", {"sessionId": session,
                                                              "prompt": [{"type": "text", "text": f"q{i}"}]})
            if result.get("stopReason") != "end_turn":
                raise RuntimeError(f"prompt {i}: {result}")
            arrived = server.message_requests()[before].time
            latencies.append(arrived - started)
    finally:
        await sidecar.close()
        server.stop()
        tmp.cleanup()
    first, tenth = latencies[0], latencies[-1]
    print(f"session/prompt → request at the model: first {ms(first)}, last (#{n}) {ms(tenth)}, "
          f"all {' '.join(f'{v * 1000:.0f}' for v in latencies)} ms")
    over = first - tenth
    print(f"first − last: {ms(over)}   goal ≤ 150 ms   {'OK' if over <= 0.150 else 'MISSED'}")
    print(f"idle RSS after the warm-up: {idle_rss:.1f} MB   goal ≤ 100 MB   {'OK' if idle_rss <= 100 else 'MISSED'}")
    print("reference: the last prompt of the same process (everything imported and warm by then)")
    row("first_prompt", "first prompt vs last, idle RSS", f"+{over * 1000:.0f} ms ({ms(first)} vs {ms(tenth)}), "
        f"{idle_rss:.0f} MB", "<= +150 ms, <= 100 MB", over <= 0.150 and idle_rss <= 100)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--pause", type=float, default=3.0)
    args = parser.parse_args()
    return asyncio.run(run(args.n, args.pause))


if __name__ == "__main__":
    raise SystemExit(main())

"""Cancel latency: ``session/cancel`` of a turn running a long Bash command → ``stopReason: cancelled``.

    .venv/bin/python bench/bash_cancel.py [--n 5]

A spawned ``sidecar serve --acp`` talks to the scripted Messages API server. Each round the model asks for
Bash ``sleep <unique>`` (a read-only command: no permission question); once that ``sleep`` process is
seen in /proc, the client sends ``session/cancel`` and the clock runs until the ``session/prompt``
response arrives with ``stopReason: cancelled`` (and the ``sleep`` is gone). There is no reference
command: the goal is absolute (≤ 200 ms, what a user perceives as immediate), so the median and the spread
are printed beside the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, header, isolated_env, median, ms, row

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer


def running(marker: str) -> bool:
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith("sleep ") and marker in cmd:
            return True
    return False


async def run(n: int) -> int:
    header("cancel of a running Bash command")
    server = ScriptedModelServer().start()
    env, tmp = isolated_env(server.base_url)
    work = Path(tmp.name) / "ws"
    work.mkdir()
    sidecar = SidecarProcess(framing="acp", env=env, cwd=str(REPO), argv=[PYTHON, "-m", "sidecar", "serve", "--acp"])

    async def allow(params: dict[str, object]) -> dict[str, object]:
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    sidecar.handlers["session/request_permission"] = allow
    latencies: list[float] = []
    gone: list[float] = []
    try:
        await sidecar.start()
        await sidecar.initialize()
        session = (await sidecar.request("session/new", {"cwd": str(work), "mcpServers": []}))["sessionId"]
        for i in range(n + 1):  # the first round warms up (imports, shell parser, sandbox probe): not counted
            marker = f"{90 + i}.{os.getpid() % 1000:03d}"
            call = {"type": "tool_use", "name": "Bash", "input": {"command": f"sleep {marker}"}}
            server.add_turn({"content": [call]})
            prompt = asyncio.create_task(sidecar.request(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": f"wait {i}"}]},
                timeout=300))
            deadline = time.monotonic() + 120
            while not running(marker):
                if time.monotonic() > deadline or prompt.done():
                    raise RuntimeError(f"round {i}: the sleep never started ({prompt})")
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # the command is well under way
            started = time.monotonic()
            await sidecar.notify("session/cancel", {"sessionId": session})
            result = await asyncio.wait_for(prompt, 60)
            took = time.monotonic() - started
            if result.get("stopReason") != "cancelled":
                raise RuntimeError(f"round {i}: {result}")
            while running(marker) and time.monotonic() - started < 30:  # noqa: ASYNC110 - polling /proc
                await asyncio.sleep(0.005)
            if i:
                latencies.append(took)
                gone.append(time.monotonic() - started)
    finally:
        await sidecar.close()
        server.stop()
        tmp.cleanup()
    med = median(latencies)
    print(f"session/cancel → stopReason cancelled: median {ms(med)}, min {ms(min(latencies))}, "
          f"max {ms(max(latencies))}; runs {' '.join(f'{v * 1000:.0f}' for v in latencies)} ms")
    print(f"… and the sleep process gone: median {ms(median(gone))}")
    print("reference: none (an absolute goal); the first round (warm-up) is not counted")
    row("bash_cancel", "cancel a running Bash", f"median {ms(med)} (min {ms(min(latencies))}, "
        f"max {ms(max(latencies))})", "<= 200 ms", med <= 0.2)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=10)
    args = parser.parse_args()
    return asyncio.run(run(args.n))


if __name__ == "__main__":
    raise SystemExit(main())

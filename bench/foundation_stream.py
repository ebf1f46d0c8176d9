"""A 10,000-delta turn: through the sidecar to an ACP client vs the bare ``anthropic`` SDK, same stream.

    .venv/bin/python bench/foundation_stream.py [--deltas 10000] [--n 5]

One scripted model server (sidecar.testing.scripted_server, in this process) answers every turn with one
text block of ``--deltas`` characters streamed one character per ``text_delta`` event (``text_chunk: 1``).

- reference: a child process running the bare SDK (``AsyncAnthropic.messages.stream`` → ``text_stream``),
  imported and connected once, then timed per turn from request to the last delta;
- sidecar: a spawned ``sidecar serve --acp`` after initialize + session/new, timed from sending
  ``session/prompt`` to its response, with every ``agent_message_chunk`` read by the client (the text is
  checked to be complete).

Turns alternate (reference, sidecar, …); medians are compared. The sidecar's first prompt (which pays for
importing the SDK) is measured separately and not part of the ratio. Goal: ratio ≤ 1.5.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import BENCH_API_KEY, PYTHON, REPO, header, isolated_env, median, ms

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer

REFERENCE = r"""
import asyncio, sys, time
import anthropic

async def main():
    client = anthropic.AsyncAnthropic(base_url=sys.argv[1], api_key=sys.argv[2], max_retries=0)
    print("ready", flush=True)
    for line in sys.stdin:
        started = time.perf_counter()
        parts = []
        async with client.messages.stream(model="claude-sonnet-4-5", max_tokens=32000,
                                          messages=[{"role": "user", "content": "go"}]) as stream:
            async for text in stream.text_stream:
                parts.append(text)
        elapsed = time.perf_counter() - started
        print(f"{elapsed} {len(''.join(parts))}", flush=True)

asyncio.run(main())
"""


def turn(deltas: int) -> dict[str, Any]:
    text = ("abcdefghij" * (deltas // 10 + 1))[:deltas]
    return {"content": [{"type": "text", "text": text}], "text_chunk": 1}


async def run(deltas: int, n: int) -> int:
    server = ScriptedModelServer().start()
    env, tmp = isolated_env(server.base_url)
    # A blocking line protocol, driven from a thread (asyncio.to_thread) so the reference runs alone.
    ref = subprocess.Popen([PYTHON, "-c", REFERENCE, server.base_url, BENCH_API_KEY],  # noqa: ASYNC220
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    sidecar = SidecarProcess(framing="acp", env=env, cwd=str(REPO), argv=[PYTHON, "-m", "sidecar", "serve", "--acp"])
    assert ref.stdin and ref.stdout
    try:
        if ref.stdout.readline().strip() != "ready":
            raise RuntimeError("reference client did not start")
        await sidecar.start()
        await sidecar.initialize()
        session = (await sidecar.request("session/new", {"cwd": str(REPO), "mcpServers": []}))["sessionId"]

        def reference_turn() -> float:
            server.add_turn(turn(deltas))
            assert ref.stdin and ref.stdout
            ref.stdin.write("go\n")
            ref.stdin.flush()
            elapsed, got = ref.stdout.readline().split()
            if int(got) != deltas:
                raise RuntimeError(f"reference got {got} characters, expected {deltas}")
            return float(elapsed)

        async def sidecar_turn() -> float:
            server.add_turn(turn(deltas))
            sidecar.updates.clear()
            started = time.perf_counter()
            result = await sidecar.request("session/prompt", {"sessionId": session,
                                                              "prompt": [{"type": "text", "text": "go"}]})
            elapsed = time.perf_counter() - started
            text = sidecar.agent_text(session)
            if result.get("stopReason") != "end_turn" or len(text) != deltas:
                raise RuntimeError(f"sidecar turn: {result}, {len(text)} characters")
            return elapsed

        first = await sidecar_turn()
        chunks_first = len(sidecar.updates_for(session, "agent_message_chunk"))
        await asyncio.to_thread(reference_turn)  # warm-up of the reference's connection
        ref_times: list[float] = []
        side_times: list[float] = []
        chunks: list[int] = []
        for _ in range(n):
            ref_times.append(await asyncio.to_thread(reference_turn))
            side_times.append(await sidecar_turn())
            chunks.append(len(sidecar.updates_for(session, "agent_message_chunk")))
    finally:
        await sidecar.close()
        if ref.stdin:
            ref.stdin.close()
        ref.wait(timeout=10)
        server.stop()
        tmp.cleanup()
    print(f"sidecar first prompt (includes importing the SDK): {ms(first)}, {chunks_first} chunks")
    for name, values in (("bare SDK", ref_times), ("sidecar → ACP", side_times)):
        print(f"{name:15s} median {ms(median(values)):>8s}   runs {' '.join(f'{v * 1000:.0f}' for v in values)}")
    print(f"agent_message_chunk notifications per sidecar turn: {int(median([float(c) for c in chunks]))}")
    ratio = median(side_times) / median(ref_times)
    print(f"ratio sidecar/SDK (median, {deltas} deltas): {ratio:.2f}x   goal <= 1.50x   "
          f"{'OK' if ratio <= 1.5 else 'OVER'}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--n", type=int, default=5)
    args = parser.parse_args()
    header(f"{args.deltas}-delta turn: sidecar → ACP client vs bare SDK")
    return asyncio.run(run(args.deltas, args.n))


if __name__ == "__main__":
    raise SystemExit(main())

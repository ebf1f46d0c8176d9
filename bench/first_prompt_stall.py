"""A connection that never stalls (issue 29): the first prompt of a fresh process, and every other request
answered while it prepares.

    .venv/bin/python bench/first_prompt_stall.py [--runs 5]

Each run spawns a fresh ``sidecar serve --acp`` three times (alternating, medians):

1. **first prompt 1 s after ``session/new``** → the request reaching the scripted Messages API server (its
   ``RecordedRequest.time``, the same monotonic clock); goal ≤ 300 ms. Reference printed beside: the
   same process's second prompt (everything warm).
2. **first prompt right after ``session/new``** → request at the model (printed; the side-by-side with
   Claude Code is not run here: it needs Claude Code).
3. **any other request during the first prompt**: right after ``session/new`` the first prompt is sent
   (its model turn waits 2 s), then ``session/set_mode`` at +0, +100, +200 ms and ``session/cancel`` at
   +300 ms, while the warm-up is still importing. Measured: each ``set_mode``'s answer, and cancel → the
   prompt's ``stopReason: cancelled``. Reference, same process afterwards: an idle ``set_mode`` (median of
   five) and a cancel of a prompt whose request is at the model. Goal: ≤ 100 ms each; printed as the
   difference to and ratio of the idle reference.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, header, isolated_env, median, ms, row

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer


def answer(request: Any) -> dict[str, Any]:
    """Every turn: a prompt whose text starts with "slow" waits 2 s at the model (a request in flight to
    cancel), any other is answered at once. One callable for all, so a turn a cancelled prompt never
    consumed answers the next prompt as well."""
    last = request.body["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last if isinstance(b, dict))
    if "slow" in text:
        return {"delay": 2, "content": [{"type": "text", "text": "slow answer"}]}
    return {"content": [{"type": "text", "text": "answer"}]}


async def spawn(server: ScriptedModelServer) -> tuple[SidecarProcess, Any]:
    env, tmp = isolated_env(server.base_url)
    sidecar = SidecarProcess(framing="acp", env=env, cwd=str(REPO), argv=[PYTHON, "-m", "sidecar", "serve", "--acp"])
    await sidecar.start()
    await sidecar.initialize()
    return sidecar, tmp


async def new_session(sidecar: SidecarProcess) -> str:
    return str((await sidecar.request("session/new", {"cwd": str(REPO), "mcpServers": []}))["sessionId"])


async def prompt_to_model(sidecar: SidecarProcess, server: ScriptedModelServer, session: str) -> float:
    """Seconds from writing session/prompt to its request at the model (the prompt is then answered)."""
    server.add_turn(answer)
    before = len(server.message_requests())
    started = time.monotonic()
    result = await sidecar.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "q"}]})
    if result.get("stopReason") != "end_turn":
        raise RuntimeError(f"prompt: {result}")
    return server.message_requests()[before].time - started


async def first_prompt(server: ScriptedModelServer, pause: float) -> tuple[float, float]:
    sidecar, tmp = await spawn(server)
    try:
        session = await new_session(sidecar)
        if pause:
            await asyncio.sleep(pause)
        first = await prompt_to_model(sidecar, server, session)
        second = await prompt_to_model(sidecar, server, session)
        return first, second
    finally:
        await sidecar.close()
        tmp.cleanup()


async def timed(coro: Any) -> float:
    started = time.monotonic()
    await coro
    return time.monotonic() - started


async def cancel_latency(sidecar: SidecarProcess, session: str, prompt: asyncio.Task[Any]) -> float:
    started = time.monotonic()
    await sidecar.notify("session/cancel", {"sessionId": session})
    result = await prompt
    if result.get("stopReason") != "cancelled":
        raise RuntimeError(f"cancel: {result}")
    return time.monotonic() - started


async def during_first_prompt(server: ScriptedModelServer) -> dict[str, Any]:
    """set_mode answers and cancel → cancelled during a fresh process's first prompt, and idle references."""
    sidecar, tmp = await spawn(server)
    try:
        session = await new_session(sidecar)
        server.add_turn(answer)
        sent = time.monotonic()
        prompt = asyncio.create_task(sidecar.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "slow first"}]}))
        modes: list[asyncio.Task[float]] = []
        for i, mode in enumerate(("plan", "default", "acceptEdits")):
            await asyncio.sleep(max(0.0, sent + 0.1 * i - time.monotonic()))
            modes.append(asyncio.create_task(timed(sidecar.request(
                "session/set_mode", {"sessionId": session, "modeId": mode}))))
        await asyncio.sleep(max(0.0, sent + 0.3 - time.monotonic()))
        busy_cancel = await cancel_latency(sidecar, session, prompt)
        busy_modes = list(await asyncio.gather(*modes))
        # The references: the same process, warm and idle.
        await prompt_to_model(sidecar, server, session)
        idle_modes = [await timed(sidecar.request("session/set_mode", {"sessionId": session, "modeId": m}))
                      for m in ("plan", "default", "plan", "default", "default")]
        server.add_turn(answer)
        before = len(server.message_requests())
        prompt = asyncio.create_task(sidecar.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "slow later"}]}))
        await asyncio.to_thread(server.wait_for_requests, before + 1, 30, messages_only=True)
        idle_cancel = await cancel_latency(sidecar, session, prompt)
        return {"busy_modes": busy_modes, "busy_cancel": busy_cancel, "idle_mode": median(idle_modes),
                "idle_cancel": idle_cancel}
    finally:
        await sidecar.close()
        tmp.cleanup()


async def run(runs: int) -> int:
    header("first prompt and the connection during it")
    server = ScriptedModelServer().start()
    after_1s: list[float] = []
    at_once: list[float] = []
    warm: list[float] = []
    busy_mode: list[float] = []
    busy_cancel: list[float] = []
    idle_mode: list[float] = []
    idle_cancel: list[float] = []
    try:
        for _ in range(runs):
            first, second = await first_prompt(server, 1.0)
            after_1s.append(first)
            warm.append(second)
            first, second = await first_prompt(server, 0.0)
            at_once.append(first)
            warm.append(second)
            probe = await during_first_prompt(server)
            busy_mode.append(max(probe["busy_modes"]))
            busy_cancel.append(probe["busy_cancel"])
            idle_mode.append(probe["idle_mode"])
            idle_cancel.append(probe["idle_cancel"])
    finally:
        server.stop()
    print("reference: the same process's second prompt (warm) and idle answers measured after the first turn")
    print(f"first prompt 1 s after session/new → request at the model: {ms(median(after_1s))} "
          f"(runs {' '.join(f'{v * 1000:.0f}' for v in after_1s)} ms; warm prompt {ms(median(warm))})   goal ≤ 300 ms")
    print(f"first prompt right after session/new → request at the model: {ms(median(at_once))} "
          f"(runs {' '.join(f'{v * 1000:.0f}' for v in at_once)} ms)")
    bm, im, bc, ic = median(busy_mode), median(idle_mode), median(busy_cancel), median(idle_cancel)
    print(f"session/set_mode during the first prompt (slowest of three): {bm * 1000:.1f} ms vs idle {im * 1000:.1f} ms "
          f"(+{(bm - im) * 1000:.1f} ms, {bm / im:.1f}×)   goal ≤ 100 ms")
    print(f"session/cancel during the first prompt → cancelled: {bc * 1000:.1f} ms vs idle {ic * 1000:.1f} ms "
          f"(+{(bc - ic) * 1000:.1f} ms, {bc / ic:.1f}×)   goal ≤ 100 ms")
    print(f"spread: set_mode {' '.join(f'{v * 1000:.0f}' for v in busy_mode)} ms, "
          f"cancel {' '.join(f'{v * 1000:.0f}' for v in busy_cancel)} ms; stdev of the first prompt "
          f"{statistics.pstdev(after_1s) * 1000:.0f} ms")
    row("first_prompt_1s", "first prompt 1 s after session/new → request", ms(median(after_1s)), "<= 300 ms",
        median(after_1s) <= 0.300)
    # The goal is Claude Code's figure in a side-by-side on the same machine, which needs Claude Code: the
    # issue's 648 ms was measured on another machine, so the row is printed, not judged.
    row("first_prompt_now", "first prompt right after session/new → request", ms(median(at_once)),
        "<= Claude Code, same run (issue 29: 648 ms)", None)
    row("busy_requests", "set_mode / cancel during the first prompt",
        f"{bm * 1000:.0f} / {bc * 1000:.0f} ms (idle {im * 1000:.1f} / {ic * 1000:.1f})", "<= 100 ms",
        bm <= 0.100 and bc <= 0.100)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    return asyncio.run(run(args.runs))


if __name__ == "__main__":
    raise SystemExit(main())

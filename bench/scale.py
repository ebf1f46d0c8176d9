"""Scale: many sessions, a long session with compaction, a big watched workspace, session/load of a long session.

    .venv/bin/python bench/scale.py [--sessions 50] [--turns 300] [--files 100000] [--skip watcher,...]

Each part is printed as numbers with its goal beside them (issue 18, "Scale measured and fine today"):

- **sessions**: one spawned ``sidecar serve --acp`` (scripted Messages API server on loopback); N sessions
  each send one prompt at the same time; every turn is the model asking for three read-only tools at
  once (Read, Glob, Grep over a small workspace) and then answering; each model reply starts
  ``--model-delay`` s (default 1) after its request, as a real model's does. Time from the first prompt sent to
  the last response, for 5 sessions and then for N. Goal: N = 50 takes ≤ 1.5× the time of 5 (issue 29;
  issue 18 asked ≤ 2×; the reference is the 5-session run of the same process, measured just before).
- **long**: one session, ``--turns`` prompts one after the other, each a Read of a different 3 KB file then
  an answer, in a context window small enough (``SIDECAR_CONTEXT_WINDOW``) that the conversation is
  compacted every few dozen turns (the summary is a scripted reply). Per-turn time = ``session/prompt`` to
  its response. Goal: flat — the median of the last tenth of the turns ≤ 1.5× the median of the first
  tenth (compaction turns are counted apart).
- **load**: a fresh sidecar (same data dir) answers ``session/load`` of that long session (its history
  replayed as ``session/update`` notifications), after one untimed ``session/new`` (which pays the
  first session method's imports). Goal: ≤ 1 s for 300 turns.
- **watcher**: a fresh process starts the file watcher on a workspace of ``--files`` files (the first
  Read starts it), waits until it is ready, and reports its VmRSS, then the time from an external write
  of a read file to the staleness notice being queued (p50/p95 of 20). Goals: ≤ 150 MB at 100k files;
  notice p95 ≤ 200 ms.

``bench/run`` uses smaller sizes (see its ARGS); ``BENCH_FULL=1 bench/run`` the defaults above.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, header, isolated_env, ms, row

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import RecordedRequest, ScriptedModelServer

SUMMARY_MARK = "Your task is to summarise the conversation"


def answer_turns(server: ScriptedModelServer, make_tools: Any, n: int, delay: float = 0.0) -> None:
    """``n`` callable turns: a summary request gets a summary, a request carrying tool results gets a text
    answer, anything else gets the tool calls ``make_tools(request)``."""

    def respond(request: RecordedRequest) -> dict[str, Any]:
        turn = answer(request)
        if delay:
            turn["delay"] = delay
        return turn

    def answer(request: RecordedRequest) -> dict[str, Any]:
        last = request.last_user_message().get("content")
        last_text = last if isinstance(last, str) else " ".join(
            str(b.get("text", "")) for b in last or [] if isinstance(b, dict))
        if SUMMARY_MARK in last_text or SUMMARY_MARK in str(request.body.get("system", "")):
            return {"content": [{"type": "text", "text": "Summary: the user asked for files to be read; "
                                 "each was read and reported. Next: wait for the next request."}]}
        if request.tool_results():
            return {"content": [{"type": "text", "text": "done"}]}
        return {"content": make_tools(request)}

    server.add_turns([respond] * n)


async def start_sidecar(env: dict[str, str]) -> SidecarProcess:
    sidecar = SidecarProcess(framing="acp", env=env, cwd=str(REPO), argv=[PYTHON, "-m", "sidecar", "serve", "--acp"])

    async def allow(params: dict[str, object]) -> dict[str, object]:
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    sidecar.handlers["session/request_permission"] = allow
    await sidecar.start()
    await sidecar.initialize()
    return sidecar


async def prompt(sidecar: SidecarProcess, session: str, text: str) -> str:
    result = await sidecar.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]},
                                   timeout=600)
    return str(result.get("stopReason"))


async def part_sessions(n: int, delay: float) -> None:
    header(f"{n} concurrent sessions vs 5, one 3-tool turn each, the model answering after {delay} s")
    server = ScriptedModelServer().start()
    env, tmp = isolated_env(server.base_url)
    ws = Path(tmp.name) / "ws"
    for i in range(200):
        d = ws / f"pkg{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{i}.py").write_text("".join(f"def f{k}(): return {k}  # needle {i}\n" for k in range(40)))

    def tools(request: RecordedRequest) -> list[dict[str, Any]]:
        i = len(request.messages) % 200
        return [{"type": "tool_use", "name": "Read", "input": {"file_path": str(ws / f"pkg{i % 10}" / f"m{i}.py")}},
                {"type": "tool_use", "name": "Glob", "input": {"pattern": "**/*.py"}},
                {"type": "tool_use", "name": "Grep", "input": {"pattern": "needle 1[0-9]", "output_mode": "content"}}]

    sidecar = await start_sidecar(env)
    cpu: dict[int, float] = {}
    own: dict[int, float] = {}
    first: dict[int, list[float]] = {}

    def cpu_seconds() -> tuple[float, float]:
        """CPU time of the sidecar itself and with its waited-for children (git, rg, …), from /proc/PID/stat."""
        assert sidecar.proc is not None
        stat = Path(f"/proc/{sidecar.proc.pid}/stat").read_text()
        ticks = [int(x) for x in stat[stat.rfind(")") + 2:].split()[11:15]]
        tick = os.sysconf("SC_CLK_TCK")
        return sum(ticks[:2]) / tick, sum(ticks) / tick

    try:
        async def burst(count: int) -> float:
            sessions = [(await sidecar.request("session/new", {"cwd": str(ws), "mcpServers": []}))["sessionId"]
                        for _ in range(count)]
            answer_turns(server, tools, 2 * count, delay)
            before = len(server.message_requests())
            started, cpu0 = time.monotonic(), cpu_seconds()
            reasons = await asyncio.gather(*(prompt(sidecar, s, "read, glob, grep") for s in sessions))
            took = time.monotonic() - started
            own1, all1 = cpu_seconds()
            own[count], cpu[count] = own1 - cpu0[0], all1 - cpu0[1]
            # When each turn's first request reached the model: a spread of ~1 s here was the model server's
            # listen backlog (5) dropping connections, not the sidecar (docs/performance.md, eighth pass).
            first[count] = sorted(r.time - started for r in server.message_requests()[before:]
                                  if not r.tool_results())
            if set(reasons) != {"end_turn"}:
                raise RuntimeError(f"stop reasons {reasons}")
            return took

        await burst(2)  # warm-up: imports, first-use services
        small = await burst(5)
        big = await burst(n)
        small2 = await burst(5)  # again after, so a load change during the run shows
    finally:
        await sidecar.close()
        server.stop()
        tmp.cleanup()
    ref = statistics.mean([small, small2])
    ratio = big / ref
    print(f"5 sessions: {small:.2f} s (again after: {small2:.2f} s); {n} sessions: {big:.2f} s; "
          f"{n} vs 5 = {ratio:.2f}x (goal <= 1.5x for 50)")
    print(f"CPU of the sidecar and its children: {cpu.get(5, 0):.2f} s for 5 sessions, {cpu.get(n, 0):.2f} s for {n} "
          f"({cpu.get(n, 0) / max(n, 1) * 1000:.0f} ms a session, the sidecar's own "
          f"{own.get(n, 0) / max(n, 1) * 1000:.0f} ms; 5 sessions: {cpu.get(5, 0) / 5 * 1000:.0f} ms, own "
          f"{own.get(5, 0) / 5 * 1000:.0f} ms): a burst is CPU-bound on this machine when the "
          "CPU it needs exceeds what the machine's load leaves it")
    if first.get(n):
        arrived = first[n]
        print(f"the {n} turns' first requests reached the model {ms(arrived[0])}–{ms(arrived[-1])} after the prompts "
              f"were sent (median {ms(statistics.median(arrived))}; 5 sessions: up to {ms(max(first.get(5) or [0]))})")
    cores = os.cpu_count() or 1
    spread, own_cpu = cpu.get(n, 0) / cores, own.get(n, 0)  # all its CPU over every core; the sidecar's own
    floor = max(2 * delay, spread)
    # The sessions start together, so their CPU falls mostly between the model's waits, not during them; and
    # the sidecar's own CPU is mostly Python's, one thread at a time under the GIL: one core at most.
    estimate = 2 * delay + max(own_cpu, spread)
    print(f"lower bound for the {n}-session burst on this machine: {floor:.2f} s (two model replies of {delay} s, "
          f"or its CPU spread over all {cores} cores with nothing else running), so {floor / ref:.2f}x of the "
          "5-session burst is the best this run could show")
    print(f"CPU-bound estimate: {estimate:.2f} s ({estimate / ref:.2f}x of the 5-session burst): two model replies "
          f"of {delay} s plus, between them, the larger of the sidecar's own CPU ({own_cpu:.2f} s, run "
          f"one Python thread at a time) and all its CPU spread over {cores} cores ({spread:.2f} s); "
          "the sessions start together, so little of that CPU overlaps the model's waits (a run can beat it a "
          "little: system calls run outside the GIL, and the first sessions' tools overlap the last ones' wait)")
    print("fair because: both bursts are of new sessions in the same warm process (their first turn: the "
          "system prompt, the watch; a turn that only reads takes no checkpoint snapshot), measured minutes apart "
          "at most, with the same tools over the same workspace, against a model server that accepts every "
          "connection at once; only the number of sessions differs")
    print(f"reference: the 5-session burst of the same process, before and after (mean); each model reply "
          f"comes {delay} s after its request, as a real model's would take seconds, so the ratio shows whether "
          "sessions wait on each other, not only how much CPU 3 tools x N take on this machine "
          "(--model-delay 0 for that)")
    row("scale_sessions", f"{n} vs 5 concurrent sessions", f"{ratio:.2f}x ({big:.2f} vs {ref:.2f} s, model {delay} s)",
        "<= 1.5x", ratio <= 1.5)


async def part_long(turns: int, window: int) -> None:
    header(f"one session, {turns} turns, compaction (context window {window} tokens)")
    server = ScriptedModelServer().start()
    env, tmp = isolated_env(server.base_url)
    env["SIDECAR_CONTEXT_WINDOW"] = str(window)
    ws = Path(tmp.name) / "ws"
    ws.mkdir()
    for i in range(turns):
        (ws / f"notes{i}.txt").write_text("".join(f"note {i}.{k}: the value is {i * k}\n" for k in range(100)))

    def tools(request: RecordedRequest) -> list[dict[str, Any]]:
        found = re.findall(r"\bread (\d+)\b", str(request.last_user_message().get("content")))
        n = int(found[-1]) if found else 0
        return [{"type": "tool_use", "name": "Read", "input": {"file_path": str(ws / f"notes{n}.txt")}}]

    answer_turns(server, tools, 4 * turns)
    per_turn: list[float] = []
    compacted: list[int] = []
    sidecar = await start_sidecar(env)
    try:
        session = (await sidecar.request("session/new", {"cwd": str(ws), "mcpServers": []}))["sessionId"]
        for i in range(turns):
            before = len(server.message_requests())
            started = time.monotonic()
            reason = await prompt(sidecar, session, f"read {i}")
            per_turn.append(time.monotonic() - started)
            if reason != "end_turn":
                raise RuntimeError(f"turn {i}: {reason}")
            if any(SUMMARY_MARK in r.text() for r in server.message_requests()[before:]):
                compacted.append(i)
    finally:
        await sidecar.close()
        server.stop()
    tenth = max(1, turns // 10)
    plain = [t for i, t in enumerate(per_turn) if i not in compacted]
    first = statistics.median(plain[:tenth])
    last = statistics.median(plain[-tenth:])
    ratio = last / first
    print(f"per turn: first {tenth} turns median {ms(first)}, last {tenth} median {ms(last)} ({ratio:.2f}x); "
          f"{len(compacted)} compactions (turns {compacted[:8]}{'…' if len(compacted) > 8 else ''}), "
          f"those turns median {ms(statistics.median([per_turn[i] for i in compacted])) if compacted else '-'}")
    deciles = [statistics.median(plain[k:k + tenth]) for k in range(0, len(plain), tenth)]
    print(f"median per tenth of the session: {' '.join(f'{d * 1000:.0f}' for d in deciles)} ms")
    print("reference: the first tenth of the same session")
    row("scale_long", f"long session ({turns} turns), last vs first tenth",
        f"{ratio:.2f}x ({ms(last)} vs {ms(first)}), {len(compacted)} compactions", "<= 1.5x, >= 1 compaction",
        ratio <= 1.5 and bool(compacted))
    await part_load(env, ws, session, turns)
    tmp.cleanup()


async def part_load(env: dict[str, str], ws: Path, session: str, turns: int) -> None:
    header(f"session/load of the {turns}-turn session in a fresh sidecar")
    sidecar = await start_sidecar(env)
    times: list[float] = []
    try:
        # An editor loads a session after its panel is up: the first session method's imports (ACP's
        # schema) are paid by a session/new first, not counted.
        await sidecar.request("session/new", {"cwd": str(ws), "mcpServers": []})
        for _ in range(3):
            started = time.monotonic()
            await sidecar.request("session/load", {"sessionId": session, "cwd": str(ws), "mcpServers": []},
                                  timeout=600)
            times.append(time.monotonic() - started)
        updates = len(sidecar.updates) if hasattr(sidecar, "updates") else -1
    finally:
        await sidecar.close()
    first = times[0]
    print(f"session/load (after a session/new): first {ms(first)}, "
          f"again {' '.join(ms(t) for t in times[1:])}; {updates} updates replayed")
    print("reference: none (an absolute goal, 1 s for 300 turns)")
    row("scale_load", f"session/load of {turns} turns", f"{ms(first)} (again {ms(min(times[1:]))})",
        "<= 1 s (300 turns)", first <= 1.0)


WATCH_CHILD = """
import asyncio, statistics, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.files.helpers import Agent
from sidecar.workspace.watcher import WATCHER

def rss():
    return int([l for l in open('/proc/self/status') if l.startswith('VmRSS:')][0].split()[1]) / 1024

async def m() -> None:
    base = rss()
    ws = Path({ws!r})
    a = Agent(ws, Path({tmp!r}))
    f = ws / "watched.txt"
    f.write_text("v0\\n")
    started = time.perf_counter()
    await a.call('Read', file_path=str(f))
    watcher = a.session.service(WATCHER)
    await asyncio.wait_for(watcher.ready.wait(), 600)
    ready = time.perf_counter() - started
    await asyncio.sleep(1)
    after = rss()
    lat = []
    for k in range(20):
        a.session.pending_notices.clear()
        await a.call('Read', file_path=str(f))
        await asyncio.sleep(0.05)
        t = time.perf_counter()
        f.write_text(f"v{{k + 1}}\\n")
        while not a.session.pending_notices and time.perf_counter() - t < 5:
            await asyncio.sleep(0.002)
        lat.append(time.perf_counter() - t)
    lat.sort()
    print(base, after, rss(), ready, statistics.median(lat), lat[int(len(lat) * 0.95) - 1])
    await a.close()

asyncio.run(m())
"""


def make_tree(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"d{i % 500}" / f"s{i % 9}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text(f"x = {i}\n")


async def part_watcher(files: int) -> None:
    header(f"file watcher on a {files}-file workspace")
    with tempfile.TemporaryDirectory(prefix="sidecar-bench-watch-") as tmp_s:
        tmp = Path(tmp_s)
        ws = tmp / "ws"
        started = time.monotonic()
        await asyncio.to_thread(make_tree, ws, files)
        print(f"generated {files} files in {time.monotonic() - started:.1f} s")
        code = WATCH_CHILD.format(root=str(REPO), ws=str(ws), tmp=str(tmp))
        out = await asyncio.to_thread(subprocess.run, [PYTHON, "-c", code], capture_output=True, text=True,
                                      check=True, env={**os.environ, "HOME": str(tmp)})
        base, after, end, ready, p50, p95 = (float(x) for x in out.stdout.split())
    print(f"VmRSS: {base:.0f} MB before the watcher, {after:.0f} MB watching ({end:.0f} MB at the end); "
          f"ready after {ready:.1f} s")
    print(f"external write -> notice queued: p50 {ms(p50)}, p95 {ms(p95)}")
    print("reference: none (absolute goals); the whole process's RSS is counted, the interpreter included")
    row("scale_watcher_rss", f"watcher RSS, {files} files", f"{after:.0f} MB (ready in {ready:.1f} s)",
        "<= 150 MB (100k files)", after <= 150)
    row("scale_watcher_notice", f"watcher notice latency, {files} files", f"p50 {ms(p50)}, p95 {ms(p95)}",
        "p95 <= 200 ms", p95 <= 0.2)


async def main_async(args: argparse.Namespace) -> None:
    skip = set(filter(None, args.skip.split(",")))
    if "sessions" not in skip:
        await part_sessions(args.sessions, args.model_delay)
    if "long" not in skip:
        await part_long(args.turns, args.window)
    if "watcher" not in skip:
        await part_watcher(args.files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--model-delay", type=float, default=1.0,
                        help="seconds before each scripted model reply in the sessions part")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=60_000, help="context window (tokens) of the long session")
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: sessions,long,watcher")
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Prompt-cache prefix stability over a 20-turn scripted session through a spawned `sidecar serve --acp`.

    .venv/bin/python bench/foundation_prefix.py [--turns 20]

Each prompt's turn is a tool call (Read, Glob, Grep in rotation on a small workspace), then text, so the
session makes 2 × turns Messages API requests. For each request after the first, the request is
serialized canonically (``tools``, ``system``, ``messages`` in the order the API caches them, JSON with
sorted keys and no spaces) and the longest common prefix with the previous request is divided by the
request's length: the share of its bytes that repeats the previous prefix. Shown twice: as sent, and with
``cache_control`` markers removed (a breakpoint moving to the newest message is not a content change; the
API's cache keys on content). Goal: ≥ 95 % (the mean as sent, and every request's share is printed).

The model's turns carry a signed thinking block, as adaptive thinking produces them, so the history sent
back holds them too. Also measured: the fixed part of every request (the ``tools`` array, each tool's
description, the system prompt) in bytes and characters, and whether it stayed byte-identical across all
requests (it must: it is the start of the cached prefix).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, header, isolated_env

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import RecordedRequest, ScriptedModelServer


def canonical(body: dict[str, Any], strip_cache_control: bool) -> bytes:
    parts = {k: body.get(k) for k in ("tools", "system", "messages")}
    if strip_cache_control:
        parts = json.loads(json.dumps(parts), object_hook=lambda d: {k: v for k, v in d.items()
                                                                     if k != "cache_control"})
    # One array in cache order, so a prefix of the bytes is a prefix of tools → system → messages.
    return json.dumps([parts["tools"], parts["system"], parts["messages"]], sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False).encode()


def common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on slice equality: fast on large bodies
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shares(requests: list[RecordedRequest], strip: bool) -> list[float]:
    bodies = [canonical(r.body, strip) for r in requests]
    return [common_prefix(prev, cur) / len(cur) for prev, cur in itertools.pairwise(bodies)]


def make_workspace(root: Path) -> None:
    (root / "src").mkdir()
    for i in range(8):
        (root / "src" / f"mod{i}.py").write_text(
            "".join(f"def f{i}_{j}(x):\n    return x * {j}  # line {j}\n" for j in range(40)))
    (root / "README.md").write_text("# bench workspace\n\nA small project for the prefix benchmark.\n")


def tool_turn(i: int, ws: Path) -> dict[str, Any]:
    kind = i % 3
    if kind == 0:
        call = {"name": "Read", "input": {"file_path": str(ws / "src" / f"mod{i % 8}.py"), "limit": 30}}
    elif kind == 1:
        call = {"name": "Glob", "input": {"pattern": "src/*.py"}}
    else:
        call = {"name": "Grep", "input": {"pattern": f"f{i % 8}_1", "path": str(ws / "src")}}
    thought = f"Step {i}: the user wants part {i} checked; {call['name']} is the right tool for it."
    return {"content": [{"type": "thinking", "thinking": thought},
                        {"type": "text", "text": f"Looking at step {i}."}, {"type": "tool_use", **call}]}


def fixed_part(requests: list[RecordedRequest]) -> None:
    """Sizes of the tools array and system prompt, and whether they stayed byte-identical."""
    first = requests[0].body
    tools, system = first.get("tools") or [], first.get("system") or []
    tools_bytes = len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode())
    system_text = "".join(b.get("text", "") for b in system if isinstance(b, dict))
    described = sorted(((len(t.get("description", "")), t["name"]) for t in tools), reverse=True)
    print(f"tools array: {len(tools)} tools, {tools_bytes} bytes; descriptions {sum(n for n, _ in described)} chars "
          f"(largest: {', '.join(f'{name} {n}' for n, name in described[:5])})")
    print(f"system prompt: {len(system_text)} chars")
    same = all(json.dumps(r.body.get("tools")) == json.dumps(tools) and
               json.dumps(r.body.get("system")) == json.dumps(system) for r in requests)
    print(f"tools + system byte-identical in all {len(requests)} requests: {'yes' if same else 'NO'}")
    print(f"thinking {first.get('thinking')}, output_config {first.get('output_config')}, "
          f"max_tokens {first.get('max_tokens')}")


async def run(turns: int) -> int:
    server = ScriptedModelServer().start()
    env, tmp = isolated_env(server.base_url)
    ws = Path(tempfile.mkdtemp(prefix="ws-", dir=tmp.name))
    make_workspace(ws)
    process = SidecarProcess(framing="acp", env=env, cwd=str(ws), argv=[PYTHON, "-m", "sidecar", "serve", "--acp"])

    async def allow(params: dict[str, Any]) -> dict[str, Any]:
        option = next(o for o in params["options"] if o["kind"] == "allow_once")
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    process.handlers["session/request_permission"] = allow
    try:
        await process.start()
        await process.initialize()
        session = (await process.request("session/new", {"cwd": str(ws), "mcpServers": []}))["sessionId"]
        for i in range(turns):
            server.add_turns([tool_turn(i, ws),
                              {"content": [{"type": "text", "text": f"Step {i} done: the code looks fine."}]}])
            result = await process.request("session/prompt", {"sessionId": session, "prompt": [
                {"type": "text", "text": f"Please check part {i} of the project."}]})
            if result.get("stopReason") != "end_turn":
                raise RuntimeError(f"turn {i}: {result}")
    finally:
        await process.close()
        server.stop()
    requests = server.message_requests()
    tmp.cleanup()
    errors = [r for r in requests if any(b.get("is_error") for b in r.tool_results())]
    if len(requests) != 2 * turns or errors:
        print(f"warning: {len(requests)} requests, {len(errors)} with tool errors")
    fixed_part(requests)
    raw, stripped = shares(requests, False), shares(requests, True)
    sizes = [len(canonical(r.body, False)) for r in requests]
    print(f"{len(requests)} requests, {sizes[0]} → {sizes[-1]} bytes (canonical)")
    print("share as sent (%):       " + " ".join(f"{s * 100:.1f}" for s in raw))
    print("share without markers (%): " + " ".join(f"{s * 100:.1f}" for s in stripped))
    mean_raw, mean_stripped = sum(raw) / len(raw), sum(stripped) / len(stripped)
    print(f"mean share as sent {mean_raw * 100:.2f} % (min {min(raw) * 100:.2f} %), "
          f"without cache_control {mean_stripped * 100:.2f} % (min {min(stripped) * 100:.2f} %)")
    print(f"ratio mean share / 95 %: {mean_raw / 0.95:.3f}x   goal >= 1.000x   "
          f"{'OK' if mean_raw >= 0.95 else 'UNDER'}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    header(f"request prefix stability over a {args.turns}-turn session")
    os.environ.setdefault("PYTHONPATH", str(REPO))
    return asyncio.run(run(args.turns))


if __name__ == "__main__":
    raise SystemExit(main())

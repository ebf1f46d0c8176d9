"""Startup: spawn to the LSP ``initialize`` response, `sidecar serve` vs `jedi-language-server`, same run.

    .venv/bin/python bench/foundation_startup.py [--n 7]

Both servers come from the repo's .venv and get the same LSP ``initialize`` request (Content-Length framing)
the moment they are spawned; the clock stops when the response with its id has been read. Runs alternate
(sidecar, jedi, sidecar, …) so machine load hits both alike; medians are compared. Each server then gets
``shutdown``/``exit``. Goal: ratio sidecar/jedi ≤ 1.0 (no slower).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, VENV_BIN, header, isolated_env, median, ms, row


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def read_message(out: IO[bytes]) -> dict[str, Any] | None:
    length = None
    while True:
        line = out.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    if length is None:
        return None
    result: dict[str, Any] = json.loads(out.read(length))
    return result


def initialize_request(root: Path) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": root.as_uri(), "rootPath": str(root),
        "capabilities": {"window": {"workDoneProgress": True}, "workspace": {"workspaceFolders": True}},
        "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]}}


def time_initialize(argv: list[str], env: dict[str, str], root: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=str(root), start_new_session=True)
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write(frame(initialize_request(root)))
        proc.stdin.flush()
        while True:
            message = read_message(proc.stdout)
            if message is None:
                raise RuntimeError(f"{argv[0]} exited before answering initialize")
            if message.get("id") == 1 and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{argv[0]}: initialize failed: {message['error']}")
                elapsed = time.perf_counter() - started
                break
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
        proc.stdin.flush()
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        return elapsed
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=7, help="runs of each server (median)")
    args = parser.parse_args()
    jedi = VENV_BIN / "jedi-language-server"
    if not jedi.exists():
        print(f"skip: {jedi} is missing (uv sync installs it with the dev group)")
        return 0
    header("startup to LSP initialize response")
    env, tmp = isolated_env()
    servers = {"sidecar serve": [PYTHON, "-m", "sidecar", "serve"], "jedi-language-server": [str(jedi)]}
    times: dict[str, list[float]] = {name: [] for name in servers}
    try:
        for argv in servers.values():  # one unmeasured warm-up each (page cache, .pyc)
            time_initialize(argv, env, REPO)
        for _ in range(args.n):
            for name, argv in servers.items():
                times[name].append(time_initialize(argv, env, REPO))
    finally:
        tmp.cleanup()
    for name, values in times.items():
        print(f"{name:22s} median {ms(median(values)):>8s}   min {ms(min(values)):>8s}   "
              f"runs {' '.join(f'{v * 1000:.0f}' for v in values)}")
    ratio = median(times["sidecar serve"]) / median(times["jedi-language-server"])
    print(f"ratio sidecar/jedi (median): {ratio:.2f}x   goal <= 1.00x   {'OK' if ratio <= 1.0 else 'OVER'}")
    print("reference: jedi-language-server answering the same initialize request, runs alternated, medians")
    row("startup", "startup to LSP initialize vs jedi", f"{ratio:.2f}x ({ms(median(times['sidecar serve']))} vs "
        f"{ms(median(times['jedi-language-server']))})", "<= 1.0x", ratio <= 1.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

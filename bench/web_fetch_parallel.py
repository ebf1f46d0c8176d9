"""Eight WebFetch calls in one assistant turn vs one, against a loopback server that answers after 300 ms.

    .venv/bin/python bench/web_fetch_parallel.py [--delay 0.3] [--calls 8] [--rounds 3]

The calls go through the agent loop's tool step (``AgentLoop._run_tools``: adjacent concurrency-safe calls
run together) and the real dispatcher, permission gate (an explicit ``WebFetch(domain:127.0.0.1)`` rule),
address checks and httpx. Each call fetches its own URL, so the cache does not help. Target: eight calls
finish within 1.5x the time of one. The server runs in a child process (a listen backlog of 128, one
thread per connection).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sidecar.agent.loop import AgentLoop, Conversation
from sidecar.model.client import ModelClient
from sidecar.model.settings import ModelSettings
from sidecar.permissions.gate import govern
from sidecar.session import ConnectionState, Session
from sidecar.store import SessionStore
from sidecar.tools.registry import ToolRegistry
from sidecar.tools.web import WebFetch, WebSearch


def start_server(delay: float) -> ThreadingHTTPServer:
    class Slow(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            time.sleep(delay)
            page = f"<html><body><h1>Page {self.path}</h1><p>Answered after {delay}s.</p></body></html>"
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        request_queue_size = 128  # the default listen backlog of 5 drops SYNs of 8 simultaneous connects

    server = Server(("127.0.0.1", 0), Slow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Channel:
    def __init__(self) -> None:
        self.client_capabilities: dict[str, Any] = {}
        self.state = ConnectionState()

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        raise AssertionError(f"unexpected request {method}: the rule should allow loopback")

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        pass


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.3)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    # The server runs in its own process so its threads do not compete with the agent for the GIL.
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(args.delay)],  # noqa: ASYNC220
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / ".claude").mkdir(parents=True)
        (ws / ".claude" / "settings.json").write_text(
            json.dumps({"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}}))
        session = govern(Session(id="sess_bench", cwd=ws, channel=Channel(), store=SessionStore(Path(tmp) / "store")),
                         trusted=True)  # its project allow rule applies only in a trusted workspace
        loop = AgentLoop(session, ToolRegistry([WebFetch(), WebSearch()]), ModelClient(ModelSettings()), "",
                         Conversation())
        counter = iter(range(10**6))

        async def turn(n: int) -> float:
            uses = [{"type": "tool_use", "id": f"toolu_{i}", "name": "WebFetch",
                     "input": {"url": f"http://127.0.0.1:{port}/page/{next(counter)}", "prompt": "title?"}}
                    for i in range(n)]
            start = time.perf_counter()
            results = await loop._run_tools(uses)
            elapsed = time.perf_counter() - start
            bad = [r.output.joined_text() for r in results if r.output.is_error]
            assert not bad, bad
            return elapsed

        await turn(1)  # warm-up: imports, first connection
        one = min([await turn(1) for _ in range(args.rounds)])
        many = min([await turn(args.calls) for _ in range(args.rounds)])
    server.terminate()
    server.wait()
    ratio = many / one
    print(f"server delay            {args.delay * 1000:.0f} ms")
    print(f"1 WebFetch              {one * 1000:.0f} ms")
    print(f"{args.calls} WebFetch in one turn  {many * 1000:.0f} ms")
    print(f"ratio                   {ratio:.2f}x (target <= 1.5x) {'OK' if ratio <= 1.5 else 'FAIL'}")
    if ratio > 1.5:
        sys.exit(1)


def serve(delay: float) -> None:
    server = start_server(delay)
    print(server.server_address[1], flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(float(sys.argv[2]))
    else:
        asyncio.run(main())

"""Fixtures for the web tools: real HTTP servers on 127.0.0.1, a session with rules, a no-network guard.

Nothing here talks to any address but loopback. Tests of private/metadata addresses use ``GuardTransport``
(fails the test if a connection is attempted) and a stub resolver.
"""

from __future__ import annotations

import ipaddress
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from sidecar.permissions.gate import govern
from sidecar.session import ConnectionState, Session
from sidecar.store import SessionStore
from sidecar.tools.dispatch import Dispatcher, ToolCall, ToolCallResult
from sidecar.tools.registry import ToolRegistry
from sidecar.tools.web import WebFetch, WebSearch
from sidecar.tools.web.services import WEB, WebServices, WebSettings
from sidecar.tools.web.url_safety import IPAddress

Handler = Callable[[BaseHTTPRequestHandler], None]


class LocalServer:
    """A threaded HTTP server on a loopback address; ``routes`` maps a path to a handler."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.routes: dict[str, Handler] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.bytes_sent: dict[str, int] = {}
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                handler = server.routes.get(path)
                if handler is None:
                    body = b"<html><body><h1>Not here</h1></body></html>"
                    self.send_response(404)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                try:
                    handler(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        class _Server(ThreadingHTTPServer):
            request_queue_size = 128

        self.httpd = _Server((host, 0), _H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def start(self) -> LocalServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- route helpers ---------------------------------------------------------------------
    def page(self, path: str, body: bytes | str, content_type: str = "text/html; charset=utf-8",
             status: int = 200, headers: dict[str, str] | None = None) -> None:
        data = body.encode() if isinstance(body, str) else body

        def handler(h: BaseHTTPRequestHandler) -> None:
            h.send_response(status)
            h.send_header("Content-Type", content_type)
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)

        self.routes[path] = handler

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        def handler(h: BaseHTTPRequestHandler) -> None:
            h.send_response(status)
            h.send_header("Location", location)
            h.send_header("Content-Length", "0")
            h.end_headers()

        self.routes[path] = handler


@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    server = LocalServer().start()
    yield server
    server.stop()


@dataclass
class FakeChannel:
    """The editor side: answers permission questions with ``answer`` and records them."""

    answer: str = "allow_once"
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    state: ConnectionState = field(default_factory=ConnectionState)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[dict[str, Any]] = field(default_factory=list)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        assert method == "session/request_permission", method
        self.permission_requests.append(params)
        option = next(o for o in params["options"] if o["kind"] == self.answer)
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append(params)


@dataclass
class WebEnv:
    session: Session
    channel: FakeChannel
    services: WebServices
    dispatcher: Dispatcher

    async def call(self, name: str, **inp: Any) -> ToolCallResult:
        self.n = getattr(self, "n", 0) + 1
        return await self.dispatcher.run(ToolCall(f"toolu_{self.n:03d}", name, inp))

    async def fetch(self, url: str, prompt: str = "Summarise the page") -> tuple[str, ToolCallResult]:
        result = await self.call("WebFetch", url=url, prompt=prompt)
        return result.output.joined_text(), result


MakeEnv = Callable[..., WebEnv]


@pytest.fixture
def make_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MakeEnv:
    """``make_env(allow=["WebFetch(domain:127.0.0.1)"], **settings)``: a session in a fresh workspace whose
    ``.claude/settings.json`` holds those rules."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("SIDECAR_MANAGED_SETTINGS", str(tmp_path / "managed-settings.json"))
    for key in ("SIDECAR_WEBSEARCH_FALLBACK", "SIDECAR_DDG_ENDPOINT", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(key, raising=False)
    counter = iter(range(1000))

    def make(allow: list[str] | None = None, deny: list[str] | None = None, answer: str = "allow_once",
             resolver: Callable[[str, int], Any] | None = None,
             transport: httpx.AsyncBaseTransport | None = None, **settings: Any) -> WebEnv:
        ws = tmp_path / f"ws{next(counter)}"
        (ws / ".claude").mkdir(parents=True)
        (ws / ".claude" / "settings.json").write_text(
            json.dumps({"permissions": {"allow": allow or [], "deny": deny or []}}))
        channel = FakeChannel(answer=answer)
        store = SessionStore(tmp_path / "sessions")
        session = govern(Session(id=f"sess_web{next(counter)}", cwd=ws, channel=channel, store=store), trusted=True)
        services = WebServices(settings=WebSettings(**settings))
        if resolver is not None:
            services.resolver = resolver
        if transport is not None:
            services.transport = transport
        session.provide(WEB, services)
        dispatcher = Dispatcher(session, ToolRegistry([WebFetch(), WebSearch()]))
        return WebEnv(session, channel, services, dispatcher)

    return make


class GuardTransport(httpx.AsyncBaseTransport):
    """Fails the test if any request is sent."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts.append(str(request.url))
        raise AssertionError(f"a connection was attempted to {request.url}")


def stub_resolver(table: dict[str, list[str]]) -> Callable[[str, int], Any]:
    async def resolve(host: str, port: int) -> list[IPAddress]:
        if host not in table:
            raise AssertionError(f"unexpected DNS lookup of {host}")
        return [ipaddress.ip_address(a) for a in table[host]]

    return resolve

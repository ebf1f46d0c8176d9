"""A scripted stand-in for the Anthropic Messages API, served over real HTTP on loopback.

Point ``ANTHROPIC_BASE_URL`` (or ``anthropic.Anthropic(base_url=...)``) at
:attr:`ScriptedModelServer.base_url` and the real SDK talks to it: ``POST /v1/messages`` (streaming SSE
or a plain JSON Message) and ``POST /v1/messages/count_tokens``. Each ``/v1/messages`` request consumes
the next *turn* of the script, in arrival order; every request is recorded. The turn format is
documented in ``docs/scripted-model.md``:

    normal  {"content": [blocks...], "stop_reason"?, "usage"?, "text_chunk"?, "delay"?, "chunk_delay"?}
    faults  {"fault": "http", "status": 529, "headers"?, "error_type"?, "message"?}
            {"fault": "drop", "after_blocks": N, "turn": {normal turn}}
            {"fault": "sse_error", "error_type"?, "message"?, "after_blocks"?, "turn"?}
            {"fault": "truncate", "after_blocks": N, "turn": {normal turn}}

A turn may also be a callable ``f(request) -> dict`` returning one of those, evaluated when its request
arrives. When the script runs out, the server answers ``(scripted model: no more turns)`` with ``end_turn``.

Command line (serves until killed, prints the base URL as its first stdout line)::

    python -m sidecar.testing.scripted_server --script turns.json [--port N] [--host H]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from sidecar.testing.api_rules import RULES, Rejection, SignatureBook, validate

__all__ = [
    "EXHAUSTED_TEXT",
    "RecordedRequest",
    "Rejection",
    "ScriptedModelServer",
    "Turn",
    "TurnFunc",
    "take_rejections",
]

EXHAUSTED_TEXT = "(scripted model: no more turns)"
MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
MODELS_PATH = "/v1/models"

DEFAULT_TEXT_CHUNK = 8
DEFAULT_JSON_CHUNK = 12

_ERROR_TYPE_FOR_STATUS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_STATUS_FOR_ERROR_TYPE: dict[str, int] = {v: k for k, v in _ERROR_TYPE_FOR_STATUS.items()}
_DEFAULT_ERROR_MESSAGE: dict[str, str] = {
    "overloaded_error": "Overloaded",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
}


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as the server received it."""

    path: str
    """URL path without the query string, e.g. ``/v1/messages``."""
    headers: dict[str, str]
    """Request headers, keys lower-cased."""
    body: dict[str, Any]
    """The parsed JSON body (``{}`` if the body was empty or not a JSON object)."""
    time: float
    """``time.monotonic()`` when the request arrived."""
    query: str = ""
    """The raw query string (the SDK's beta client adds ``beta=true``)."""
    raw_body: bytes = field(default=b"", repr=False)
    answered: float | None = None
    """``time.monotonic()`` when the answer's last byte was written (a streamed reply's end), else None."""

    @property
    def api_key(self) -> str | None:
        """The credential: ``x-api-key``, or the ``authorization: Bearer`` token (what SDK 2.x sends)."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        auth = self.headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []

    def last_user_message(self) -> dict[str, Any]:
        """The last message with ``role: user`` (``{}`` when there is none)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return dict(message)
        return {}

    def tool_results(self) -> list[dict[str, Any]]:
        """The ``tool_result`` blocks of the last user message, in order."""
        content = self.last_user_message().get("content")
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    def text(self) -> str:
        """All text of the request (system prompt, message text, tool results), joined with newlines."""
        parts: list[str] = []
        _collect_text(self.body.get("system"), parts)
        for message in self.messages:
            _collect_text(message.get("content"), parts)
        return "\n".join(parts)


def _collect_text(value: object, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect_text(item, out)
    elif isinstance(value, dict):
        kind = value.get("type")
        if kind == "text" and isinstance(value.get("text"), str):
            out.append(value["text"])
        elif kind == "tool_result":
            _collect_text(value.get("content"), out)


TurnFunc = Callable[[RecordedRequest], dict[str, Any]]
Turn = dict[str, Any] | TurnFunc


_REJECTION_LOG: list[str] = []
_REJECTION_LOCK = threading.Lock()


def take_rejections() -> list[str]:
    """Every request any strict server in this process rejected since the last call (then forgotten).

    The test suite's autouse check uses this: a request the real API would reject fails the test that sent it.
    """
    with _REJECTION_LOCK:
        taken = list(_REJECTION_LOG)
        _REJECTION_LOG.clear()
    return taken


class _Dropped(Exception):
    """Raised inside the handler to cut the connection without a proper end."""


class ScriptedModelServer:
    """A loopback HTTP server answering Messages API requests from a script of turns."""

    def __init__(
        self,
        turns: Iterable[Turn] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        strict: bool = True,
        relax: Iterable[str] = (),
        models: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """``models`` (model id → Models API object) are served on ``GET /v1/models/{id}`` and ``GET
        /v1/models``; without it those answer 404, as an endpoint without the Models API does.
        ``strict`` (default) validates every request as the real API does and answers what it would
        (400 ``invalid_request_error``, 413 for size) without consuming a turn; ``relax`` names rules of
        :data:`sidecar.testing.api_rules.RULES` to leave unchecked; ``strict=False`` checks nothing."""
        self._host = host
        self._relax = frozenset(RULES if not strict else relax)
        unknown = self._relax - set(RULES)
        if unknown:
            raise ValueError(f"unknown rule(s) {sorted(unknown)}; rules are {list(RULES)}")
        self.signatures = SignatureBook()
        """Thinking signatures this server issued; a thinking block sent back must match one unmodified."""
        self.rejections: list[Rejection] = []
        """Requests this server refused as the real API would, in arrival order."""
        self._port = port
        self._lock = threading.Condition()
        self._turns: deque[Turn] = deque(turns or ())
        self._requests: list[RecordedRequest] = []
        self._ids: dict[str, int] = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self.models: dict[str, dict[str, Any]] = dict(models or {})
        self.model_lookups: list[str] = []
        """Model ids asked for on ``GET /v1/models/{id}``, in arrival order."""
        self.errors: list[str] = []
        """Problems the server hit while answering (bad turns, exceptions in callables)."""

    # -- script -------------------------------------------------------------------------------------------

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        strict: bool = True,
        relax: Iterable[str] = (),
    ) -> ScriptedModelServer:
        """Load turns from a JSON file: a list of turns, or an object with a ``turns`` list."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        turns = data.get("turns") if isinstance(data, dict) else data
        if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
            raise ValueError(f"{path}: expected a JSON list of turn objects or {{'turns': [...]}}")
        return cls(turns=turns, host=host, port=port, strict=strict, relax=relax)

    def add_turn(self, turn: Turn) -> None:
        with self._lock:
            self._turns.append(turn)

    def add_turns(self, turns: Iterable[Turn]) -> None:
        with self._lock:
            self._turns.extend(turns)

    @property
    def pending_turns(self) -> int:
        """How many scripted turns have not been consumed yet."""
        with self._lock:
            return len(self._turns)

    # -- recorded requests --------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received under ``/v1/messages`` (including count_tokens), in arrival order."""
        with self._lock:
            return list(self._requests)

    def message_requests(self) -> list[RecordedRequest]:
        """Only the ``/v1/messages`` requests (the model calls), in arrival order."""
        return [r for r in self.requests if r.path == MESSAGES_PATH]

    def wait_for_requests(self, n: int, timeout: float = 10.0, *, messages_only: bool = False) -> bool:
        """Block until at least ``n`` requests were recorded; False on timeout."""

        def enough() -> bool:
            reqs = self._requests
            count = sum(1 for r in reqs if r.path == MESSAGES_PATH) if messages_only else len(reqs)
            return count >= n

        with self._lock:
            return self._lock.wait_for(enough, timeout=timeout)

    # -- lifecycle ----------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ScriptedModelServer is not started")
        host, port = self._httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"scripted": self})
        server_cls = _IPv6Server if ":" in self._host else _Server
        httpd = server_cls((self._host, self._port), handler)
        httpd.scripted = self
        self._stopping.clear()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:  # wake handler threads blocked on idle keep-alive connections
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- internals used by the handler -------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()

    def _next_turn(self) -> Turn | None:
        with self._lock:
            return self._turns.popleft() if self._turns else None

    def _validate(self, request: RecordedRequest) -> Rejection | None:
        if self._relax == frozenset(RULES):
            return None
        rejection = validate(
            request.body,
            request.raw_body,
            signatures=self.signatures,
            relax=self._relax,
            count_tokens=request.path == COUNT_TOKENS_PATH,
        )
        if rejection is not None:
            with self._lock:
                self.rejections.append(rejection)
            with _REJECTION_LOCK:
                _REJECTION_LOG.append(f"{request.path} [{rejection.rule}] {rejection.status}: {rejection.message}")
        return rejection

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            n = self._ids.get(prefix, 0) + 1
            self._ids[prefix] = n
        return f"{prefix}_{n:04d}"

    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._sockets.add(sock)
            else:
                self._sockets.discard(sock)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default listen backlog is 5: a burst of new connections (50 sessions' first requests)
    # overflowed it and the kernel dropped their SYNs, each retried after 1 s; the Messages API has no
    # such limit, so the scripted one must not add it.
    request_queue_size = 1024
    scripted: ScriptedModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError | _Dropped):
            return  # the client went away or we cut it on purpose
        self.scripted.errors.append(f"{type(exc).__name__}: {exc}")
        super().handle_error(request, client_address)


class _IPv6Server(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedModel/1"
    scripted: ScriptedModelServer

    def setup(self) -> None:
        super().setup()
        self._pending: list[bytes] = []
        self._pending_size = 0
        with contextlib.suppress(OSError):  # events must not wait for Nagle's algorithm
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.scripted._track(self.connection, True)

    def finish(self) -> None:
        self.scripted._track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- routing ------------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        models = self.scripted.models
        if path.startswith(MODELS_PATH + "/"):
            model_id = path[len(MODELS_PATH) + 1 :]
            with self.scripted._lock:
                self.scripted.model_lookups.append(model_id)
            if model_id in models:
                self._send_json(200, {"type": "model", "id": model_id, **models[model_id]})
                return
        elif path == MODELS_PATH and models:
            data = [{"type": "model", "id": k, **v} for k, v in models.items()]
            page = {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
            self._send_json(200, page)
            return
        self._send_json(404, _error_body("not_found_error", f"GET {self.path} is not served here"))

    def do_POST(self) -> None:
        arrived = time.monotonic()
        url = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:
            parsed = None
        body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        request = RecordedRequest(
            path=url.path.rstrip("/") or "/",
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            time=arrived,
            query=url.query,
            raw_body=raw,
        )
        if not request.path.startswith(MESSAGES_PATH):
            self._send_json(404, _error_body("not_found_error", f"POST {url.path} is not served here"))
            return
        self.scripted._record(request)
        rejection = None
        if isinstance(parsed, dict) and request.path in (MESSAGES_PATH, COUNT_TOKENS_PATH):
            rejection = self.scripted._validate(request)
        if parsed is None or (raw and not isinstance(parsed, dict)):
            self._send_json(400, _error_body("invalid_request_error", "request body is not a JSON object"))
        elif rejection is not None:
            self._send_json(rejection.status, _error_body(rejection.error_type, rejection.message))
        elif request.path == COUNT_TOKENS_PATH:
            self._send_json(200, {"input_tokens": _estimate_tokens(raw)})
        elif request.path == MESSAGES_PATH:
            self._answer(request)
        else:
            self._send_json(404, _error_body("not_found_error", f"POST {url.path} is not served here"))

    def _answer(self, request: RecordedRequest) -> None:
        scripted = self.scripted
        turn = scripted._next_turn()
        try:
            resolved = _resolve(turn, request)
        except Exception as exc:  # a broken script must answer, not hang the client
            message = f"scripted turn failed: {type(exc).__name__}: {exc}"
            scripted.errors.append(message)
            self._send_json(500, _error_body("api_error", message))
            return
        stream = bool(request.body.get("stream"))
        scripted._sleep(float(resolved.get("delay") or 0))
        fault = resolved.get("fault")
        try:
            if fault is None:
                self._respond_turn(request, resolved, stream)
                object.__setattr__(request, "answered", time.monotonic())  # set once, by this thread
            elif fault == "http":
                self._http_fault(resolved)
            elif fault == "drop":
                inner = resolved.get("turn") or {"content": []}
                after = int(resolved.get("after_blocks") or 0)
                if stream:
                    self._respond_turn(request, inner, stream, cut_after=after)
                else:
                    raise _Dropped
            elif fault == "truncate":
                inner = resolved.get("turn") or {"content": []}
                self._respond_turn(request, inner, stream, cut_after=int(resolved.get("after_blocks") or 0),
                                   clean_end=True)
            elif fault == "sse_error":
                self._sse_error(request, resolved, stream)
            else:
                message = f"unknown scripted fault {fault!r}"
                scripted.errors.append(message)
                self._send_json(500, _error_body("api_error", message))
        except _Dropped:
            self._drop()

    # -- responses ----------------------------------------------------------------------------------------

    def _respond_turn(
        self, request: RecordedRequest, turn: dict[str, Any], stream: bool, cut_after: int | None = None,
        clean_end: bool = False,
    ) -> None:
        """``cut_after``: stop after that many blocks, cutting the connection, or (``clean_end``) ending the
        response properly with no ``message_delta``/``message_stop``."""
        message = _build_message(self.scripted, request, turn)
        if not stream:
            self._send_json(200, message)
            return
        self._start_sse()
        chunk_delay = float(turn.get("chunk_delay") or 0)
        text_chunk = max(1, int(turn.get("text_chunk") or DEFAULT_TEXT_CHUNK))
        json_chunk = max(1, int(turn.get("json_chunk") or DEFAULT_JSON_CHUNK))
        for index, event in _stream_events(message, text_chunk, json_chunk):
            if cut_after is not None and index >= cut_after and event["type"] not in ("message_start", "ping"):
                if clean_end:
                    break
                self._flush()
                raise _Dropped
            self._send_event(event, flush=chunk_delay > 0 or event["type"] == "ping")
            self.scripted._sleep(chunk_delay)
        self._end_sse()

    def _http_fault(self, turn: dict[str, Any]) -> None:
        status = int(turn.get("status") or 529)
        error_type = str(turn.get("error_type") or _ERROR_TYPE_FOR_STATUS.get(status, "api_error"))
        message = str(turn.get("message") or _DEFAULT_ERROR_MESSAGE.get(error_type, error_type))
        headers = {str(k): str(v) for k, v in (turn.get("headers") or {}).items()}
        self._send_json(status, _error_body(error_type, message), headers)

    def _sse_error(self, request: RecordedRequest, turn: dict[str, Any], stream: bool) -> None:
        error_type = str(turn.get("error_type") or "overloaded_error")
        message = str(turn.get("message") or _DEFAULT_ERROR_MESSAGE.get(error_type, error_type))
        body = _error_body(error_type, message)
        if not stream:
            self._send_json(_STATUS_FOR_ERROR_TYPE.get(error_type, 500), body)
            return
        inner = turn.get("turn") or {"content": []}
        after = int(turn.get("after_blocks") or 0)
        msg = _build_message(self.scripted, request, inner)
        self._start_sse()
        for index, event in _stream_events(msg, DEFAULT_TEXT_CHUNK, DEFAULT_JSON_CHUNK):
            if index >= after and event["type"] not in ("message_start", "ping"):
                break
            self._send_event(event)
        self._send_event(body, name="error")
        self._end_sse()

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", self.scripted._new_id("req"))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", self.scripted._new_id("req"))
        self.end_headers()

    def _send_event(self, payload: dict[str, Any], name: str | None = None, flush: bool = False) -> None:
        """Queue one SSE event as an HTTP chunk; written at once when ``flush`` or when 16 KiB are queued."""
        data = f"event: {name or payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()
        frame = b"%x\r\n%s\r\n" % (len(data), data)
        self._pending.append(frame)
        self._pending_size += len(frame)
        if flush or self._pending_size >= 16384:
            self._flush()

    def _end_sse(self) -> None:
        self._pending.append(b"0\r\n\r\n")
        self._flush()

    def _flush(self) -> None:
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        try:
            self.wfile.write(data)
        except OSError as exc:  # client went away (cancel): stop this response quietly
            self.close_connection = True
            raise _Dropped from exc

    def _drop(self) -> None:
        """Cut the TCP connection abruptly: no more bytes, no chunked terminator."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


# -- message building ---------------------------------------------------------------------------------------


def _resolve(turn: Turn | None, request: RecordedRequest) -> dict[str, Any]:
    if turn is None:
        return {"content": [{"type": "text", "text": EXHAUSTED_TEXT}], "stop_reason": "end_turn"}
    resolved = turn(request) if callable(turn) else turn
    if not isinstance(resolved, dict):
        raise TypeError(f"a turn must be a dict, got {type(resolved).__name__}")
    return resolved


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _estimate_tokens(raw: bytes) -> int:
    return max(1, len(raw) // 4)


def _build_block(scripted: ScriptedModelServer, block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    out = dict(block)
    if kind == "text":
        out.setdefault("text", "")
    elif kind == "thinking":
        out.setdefault("thinking", "")
        given = out.get("signature")
        out["signature"] = scripted.signatures.issue(str(out["thinking"]), given if isinstance(given, str) else None)
    elif kind == "tool_use":
        out.setdefault("id", scripted._new_id("toolu"))
        out.setdefault("input", {})
    elif kind == "server_tool_use":
        out.setdefault("id", scripted._new_id("srvtoolu"))
        out.setdefault("name", "web_search")
        out.setdefault("input", {})
    elif kind == "redacted_thinking":
        out.setdefault("data", "")
    elif kind is None:
        raise ValueError(f"content block without a 'type': {block!r}")
    return out


def _build_message(scripted: ScriptedModelServer, request: RecordedRequest, turn: dict[str, Any]) -> dict[str, Any]:
    raw_content = turn.get("content") or []
    if not isinstance(raw_content, list):
        raise ValueError("a turn's 'content' must be a list of blocks")
    content = [_build_block(scripted, b) for b in raw_content]
    default_stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    output_tokens = max(1, len(json.dumps(content)) // 4)
    usage: dict[str, Any] = {
        "input_tokens": _estimate_tokens(request.raw_body),
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    usage.update(turn.get("usage") or {})
    return {
        "id": scripted._new_id("msg_scripted"),
        "type": "message",
        "role": "assistant",
        "model": str(request.body.get("model") or "scripted-model"),
        "content": content,
        "stop_reason": turn.get("stop_reason") or default_stop,
        "stop_sequence": turn.get("stop_sequence"),
        "usage": usage,
    }


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _stream_events(message: dict[str, Any], text_chunk: int, json_chunk: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """The SSE events of ``message``, each with the number of content blocks completed before it."""
    usage = message["usage"]
    start_usage = dict(usage, output_tokens=1)
    start = dict(message, content=[], stop_reason=None, stop_sequence=None, usage=start_usage)
    yield 0, {"type": "message_start", "message": start}
    yield 0, {"type": "ping"}
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            opening = dict(block, text="")
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], text_chunk)]
        elif kind == "thinking":
            opening = dict(block, thinking="", signature="")
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], text_chunk)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind in ("tool_use", "server_tool_use"):
            opening = dict(block, input={})
            encoded = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in _pieces(encoded, json_chunk)]
        else:  # results and anything else arrive whole in content_block_start
            opening = block
        yield index, {"type": "content_block_start", "index": index, "content_block": opening}
        for delta in deltas:
            yield index, {"type": "content_block_delta", "index": index, "delta": delta}
        yield index, {"type": "content_block_stop", "index": index}
    done = len(message["content"])
    final_usage = {"output_tokens": usage["output_tokens"]}
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use"):
        if key in usage:
            final_usage[key] = usage[key]
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    yield done, {"type": "message_delta", "delta": delta, "usage": final_usage}
    yield done, {"type": "message_stop"}


# -- command line -------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sidecar.testing.scripted_server",
        description="Serve a scripted Anthropic Messages API on loopback; prints the base URL first.",
    )
    parser.add_argument("--script", required=True, help="JSON file: a list of turns, or {'turns': [...]}")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--log", action="store_true", help="print one line per request to stderr")
    parser.add_argument("--record", metavar="FILE",
                        help="append each request as a JSON line {path, body} to FILE (for tests outside Python)")
    parser.add_argument("--lenient", action="store_true", help="accept requests the real API would reject")
    parser.add_argument("--relax", action="append", default=[], choices=RULES, help="leave one rule unchecked")
    args = parser.parse_args(argv)
    server = ScriptedModelServer.from_file(
        args.script, host=args.host, port=args.port, strict=not args.lenient, relax=args.relax
    )
    server.start()
    print(server.base_url, flush=True)
    seen = 0
    try:
        while True:
            time.sleep(0.2)
            reqs = server.requests
            for req in reqs[seen:]:
                if args.log:
                    print(
                        f"{req.path} model={req.body.get('model')} stream={req.body.get('stream')}",
                        file=sys.stderr,
                        flush=True,
                    )
                if args.record:
                    with open(args.record, "a", encoding="utf-8") as out:
                        out.write(json.dumps({"path": req.path, "body": req.body}) + "\n")
            seen = len(reqs)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""ACP v1 over stdio: one JSON-RPC message per line (newline-delimited JSON).

A reader and a writer around the transport-free core. Requests are handled concurrently (so a
``session/cancel`` gets through while a prompt runs). Bad input never kills the process: bad JSON,
unknown methods, wrong params and over-long lines each get a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import stat
import sys
import threading
from typing import Any

from sidecar.errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, REQUEST_CANCELLED, ClientGone, RpcError
from sidecar.server import jsonrpc
from sidecar.server.core import SessionCore
from sidecar.server.outbox import Outbox
from sidecar.session import ConnectionState

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024 * 1024
CANCEL_REQUEST = "$/cancel_request"


class AcpStdioChannel:
    """The ClientChannel of one ACP connection."""

    def __init__(self, writer: Any) -> None:
        self.client_capabilities: dict[str, Any] = {}
        self.state = ConnectionState()
        self._writer = writer
        # What one loop iteration sends goes out as one write (a session/load replay: thousands of updates).
        self._outbox = Outbox(writer.write)
        self._write_lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        data = jsonrpc.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._write_lock:
            self._outbox.write(data)
            await self._writer.drain()  # flow control: waits while the pipe is full (after a flush)

    def flush(self) -> None:
        self._outbox.close()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if self._closed:  # nobody would answer (e.g. the terminal/kill after the client went away)
            raise ClientGone()
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        try:
            await self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            return await future
        except asyncio.CancelledError:
            # Forget it: a late reply finds no future and is dropped. Tell the client, too.
            await asyncio.shield(self.notify("$/cancel_request", {"requestId": msg_id}))
            raise
        finally:
            self._pending.pop(msg_id, None)

    def resolve(self, message: dict[str, Any]) -> None:
        msg_id = message.get("id")
        future = self._pending.get(msg_id) if isinstance(msg_id, int) and not isinstance(msg_id, bool) else None
        if future is None or future.done():
            log.debug("dropping reply to unknown or cancelled request %r", msg_id)
            return
        if "error" in message:
            future.set_exception(jsonrpc.remote_error(message["error"]))
        else:
            future.set_result(message.get("result"))

    def fail_all(self) -> None:
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ClientGone())


async def read_lines(reader: asyncio.StreamReader) -> Any:
    """Yield complete lines; an over-long line yields None (after discarding it) instead of its bytes."""
    buffer = bytearray()
    overflow = False
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            if buffer and not overflow:
                yield bytes(buffer)
            return
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                if not overflow:
                    buffer += chunk[start:]
                    if len(buffer) > MAX_LINE_BYTES:
                        overflow = True
                        buffer.clear()
                break
            if overflow:
                yield None
                overflow = False
            else:
                buffer += chunk[start:nl]
                yield bytes(buffer)
            buffer.clear()
            start = nl + 1


class AcpServer:
    def __init__(self, core: SessionCore) -> None:
        self.core = core
        self._tasks: set[asyncio.Task[None]] = set()
        self._initialized = False
        # Requests being handled, by id, and the ids the client cancelled with ``$/cancel_request``.
        self._running: dict[int | str, asyncio.Task[None]] = {}
        self._cancelled: set[int | str] = set()

    async def serve(self, reader: asyncio.StreamReader, writer: Any) -> None:
        channel = AcpStdioChannel(writer)
        try:
            async for line in read_lines(reader):
                if line is None:
                    await channel.send(error_response(None, PARSE_ERROR,
                                                      f"Message larger than {MAX_LINE_BYTES} bytes; ignored"))
                    continue
                if not line.strip():
                    continue
                try:
                    await self._on_line(line, channel)
                except (BrokenPipeError, ConnectionError):
                    raise
                except Exception:  # no line stops the server
                    log.exception("unexpected failure handling a line")
        finally:
            channel.fail_all()
            await self.core.close_channel(channel)
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            channel.flush()

    async def _on_line(self, line: bytes, channel: AcpStdioChannel) -> None:
        try:
            message = jsonrpc.classify(jsonrpc.loads(line))
        except RpcError as exc:
            await channel.send(error_response(exc.data if exc.code == INVALID_REQUEST else None,
                                              exc.code, exc.message))
            return
        if message.kind == "response":
            channel.resolve(message.body)
            return
        method = message.body["method"]
        if method == CANCEL_REQUEST:
            self._cancel_request(message.body.get("params"))
            return
        if message.kind == "request":
            if not self._initialized and method != "initialize":
                await channel.send(error_response(message.id, INVALID_REQUEST,
                                                  f"Invalid request: {method} before initialize; "
                                                  "send initialize first"))
                return
        elif not self._initialized:
            log.debug("ignoring notification %s before initialize", method)
            return
        task = asyncio.create_task(self._handle(message, channel))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        key = message.id
        if message.kind == "request" and key is not None:
            self._running[key] = task
            task.add_done_callback(lambda _t: self._forget(key))

    def _forget(self, key: int | str) -> None:
        self._running.pop(key, None)
        self._cancelled.discard(key)

    def _cancel_request(self, params: Any) -> None:
        """ACP ``$/cancel_request {requestId}``: the request is cancelled and still answered (a prompt
        with ``stopReason: cancelled``, anything else with -32800)."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if not jsonrpc.valid_id(request_id) or request_id is None:
            log.debug("ignoring $/cancel_request with requestId %r", request_id)
            return
        task = self._running.get(request_id)
        if task is None or task.done():
            return
        self._cancelled.add(request_id)
        task.cancel()

    async def _handle(self, message: jsonrpc.Message, channel: AcpStdioChannel) -> None:
        msg_id = message.id
        is_request = message.kind == "request"
        method: str = message.body["method"]
        try:
            result = await self.core.handle(method, message.body.get("params"), channel)
            if method == "initialize":
                self._initialized = True
            if is_request:
                await channel.send({"jsonrpc": "2.0", "id": msg_id, "result": result})
        except RpcError as exc:
            if is_request:
                await channel.send(error_response(msg_id, exc.code, exc.message, exc.data))
        except asyncio.CancelledError:
            if is_request and msg_id in self._cancelled:
                await channel.send(error_response(msg_id, REQUEST_CANCELLED, "Request cancelled by the client"))
                return
            raise
        except Exception as exc:
            log.exception("internal error handling %s", method)
            if is_request:
                await channel.send(error_response(msg_id, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}"))


error_response = jsonrpc.error_response


class BlockingWriter:
    """Writer for a stdout that is a regular file (asyncio pipes only take pipes, sockets, ttys)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()  # a regular file: never waits for a reader

    async def drain(self) -> None:
        return


def _feed_from_thread(reader: asyncio.StreamReader, stream: Any, loop: asyncio.AbstractEventLoop) -> None:
    while chunk := stream.read1(1 << 16):
        loop.call_soon_threadsafe(reader.feed_data, chunk)
    loop.call_soon_threadsafe(reader.feed_eof)


async def stdio_streams() -> tuple[asyncio.StreamReader, Any]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    mode = os.fstat(sys.stdin.fileno()).st_mode
    # epoll takes pipes, sockets and ttys; a regular file or /dev/null (EPERM, raised later in a callback,
    # leaving the reader waiting forever) is read from a thread.
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or sys.stdin.isatty():
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    else:
        threading.Thread(target=_feed_from_thread, args=(reader, sys.stdin.buffer, loop), daemon=True).start()
    writer: Any
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout.buffer)
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    except ValueError:
        writer = BlockingWriter(sys.stdout.buffer)
    return reader, writer


async def serve_acp_stdio(core: SessionCore) -> None:
    reader, writer = await stdio_streams()
    await AcpServer(core).serve(reader, writer)

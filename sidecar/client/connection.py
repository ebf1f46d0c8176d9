"""A client for the sidecar as a child process, over either framing (ACP ndjson or LSP headers).

Used by the terminal client (`sidecar chat`) and by the end-to-end tests, so both drive the sidecar
exactly as an editor would. Requests from the sidecar (permission, review, questions …) go to
``handlers``; ``session/update`` notifications go to ``on_update`` and are kept in ``updates``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
Framing = Literal["acp", "lsp"]


class RemoteError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = int(error.get("code", 0))
        self.message = str(error.get("message", ""))
        self.data = error.get("data")


class SidecarProcess:
    def __init__(self, *, framing: Framing = "acp", env: dict[str, str] | None = None, cwd: str | None = None,
                 argv: list[str] | None = None, stderr: Any = None) -> None:
        self.framing = framing
        self.argv = argv or [sys.executable, "-m", "sidecar", "serve", *(["--acp"] if framing == "acp" else [])]
        self.env = env if env is not None else dict(os.environ)
        self.cwd = cwd
        self.stderr = stderr
        self.handlers: dict[str, Handler] = {}
        self.updates: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        # Every other notification (``_sidecar/model_retry`` …): method, params.
        self.on_notification: Callable[[str, dict[str, Any]], None] | None = None
        self.on_update: Callable[[dict[str, Any]], Awaitable[None] | None] | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self._reader_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._write_lock = asyncio.Lock()

    async def start(self) -> SidecarProcess:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=self.stderr if self.stderr is not None else asyncio.subprocess.DEVNULL,
            env=self.env, cwd=self.cwd, limit=256 * 1024 * 1024, start_new_session=True)
        self._reader_task = asyncio.create_task(self._read_loop())
        return self

    # ---- framing ------------------------------------------------------------------------
    async def send_raw(self, data: bytes) -> None:
        assert self.proc and self.proc.stdin
        async with self._write_lock:
            self.proc.stdin.write(data)
            await self.proc.stdin.drain()

    async def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode()
        if self.framing == "lsp":
            await self.send_raw(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        else:
            await self.send_raw(body + b"\n")

    async def _read_message(self) -> dict[str, Any] | None:
        assert self.proc and self.proc.stdout
        out = self.proc.stdout
        if self.framing == "acp":
            line = await out.readline()
            if not line:
                return None
            return dict(json.loads(line))
        length = None
        while True:
            header = await out.readline()
            if not header:
                return None
            header = header.strip()
            if not header:
                break
            name, _, value = header.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value.strip())
        if length is None:
            return None
        return dict(json.loads(await out.readexactly(length)))

    async def _read_loop(self) -> None:
        try:
            while (message := await self._read_message()) is not None:
                self._dispatch(message)
        except (asyncio.IncompleteReadError, ConnectionError, json.JSONDecodeError):
            pass
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("sidecar exited"))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            future = self._pending.pop(message.get("id"), None)
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(RemoteError(message["error"]))
                else:
                    future.set_result(message.get("result"))
            return
        if "id" in message:
            task = asyncio.create_task(self._answer(message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        self.notifications.append(message)
        if self.on_notification is not None and message["method"] != "session/update":
            self.on_notification(message["method"], message.get("params") or {})
        if message["method"] == "session/update":
            update = message["params"]
            self.updates.append(update)
            if self.on_update is not None:
                result = self.on_update(update)
                if asyncio.iscoroutine(result):
                    task = asyncio.create_task(result)
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

    async def _answer(self, message: dict[str, Any]) -> None:
        handler = self.handlers.get(message["method"])
        if handler is None:
            await self.send({"jsonrpc": "2.0", "id": message["id"],
                             "error": {"code": -32601, "message": f"client has no {message['method']}"}})
            return
        try:
            result = await handler(message.get("params") or {})
            await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        except Exception as exc:
            await self.send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": str(exc)}})

    # ---- requests -----------------------------------------------------------------------
    async def request(self, method: str, params: dict[str, Any] | None = None, timeout: float | None = 120) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        await self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})
        async with asyncio.timeout(timeout):
            return await future

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def initialize(self, client_capabilities: dict[str, Any] | None = None,
                         settings: dict[str, Any] | None = None,
                         lsp_capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        caps = client_capabilities or {}
        if self.framing == "acp":
            params: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": caps}
            if settings:
                params["_meta"] = {"sidecar": {"settings": settings}}
            return dict(await self.request("initialize", params))
        result = await self.request("initialize", {
            "processId": os.getpid(), "rootUri": None, "capabilities": lsp_capabilities or {"window": {}},
            "initializationOptions": {"acp": {"clientCapabilities": caps}, "settings": settings or {}}})
        await self.notify("initialized", {})
        return dict(result)

    def updates_for(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [u["update"] for u in self.updates
                if u.get("sessionId") == session_id and (kind is None or u["update"].get("sessionUpdate") == kind)]

    def agent_text(self, session_id: str) -> str:
        return "".join(u["content"].get("text", "") for u in self.updates_for(session_id, "agent_message_chunk"))

    async def close(self) -> int | None:
        if self.proc is None:
            return None
        if self.framing == "lsp" and self.proc.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.request("shutdown", None), 5)
                await self.notify("exit")
        if self.proc.stdin and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
        if self._reader_task:
            self._reader_task.cancel()
            await asyncio.gather(self._reader_task, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return self.proc.returncode

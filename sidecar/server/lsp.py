"""The LSP transport: the same core behind pygls, for vscode-languageclient.

LSP's lifecycle stands in for ACP ``initialize``: the client's ACP capabilities arrive in
``initializationOptions.acp.clientCapabilities`` (its settings in ``initializationOptions.settings``)
and our agent capabilities go out in ``capabilities.experimental.acp``. The server advertises no
language features; it takes document sync so it knows the editor's open, unsaved buffers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from typing import Any

import cattrs
from lsprotocol import converters, types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, lsp_method
from pygls.protocol.language_server import LanguageServerProtocol

from sidecar import DISTRIBUTION, version
from sidecar.errors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, PARSE_ERROR, RpcError
from sidecar.server import jsonrpc
from sidecar.server.client_version import client_mismatch
from sidecar.server.core import SessionCore
from sidecar.server.outbox import Outbox
from sidecar.session import ConnectionState
from sidecar.workspace.buffers import OpenBuffers

log = logging.getLogger(__name__)


class ErrorRepliesUnlogged(logging.Filter):
    """pygls logs every request answered with an error (a ``JsonRpcException``: the model API's 400, a
    missing key, bad params) with its traceback, at ERROR, into the editor's output panel. That answer is
    the protocol working as it should, and ``report_server_error`` logs it in one line; only other
    failures keep pygls's record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], JsonRpcException))


logging.getLogger("pygls.protocol.json_rpc").addFilter(ErrorRepliesUnlogged())


def dict_converter() -> cattrs.Converter:
    """lsprotocol's converter, but custom methods keep their params/results as plain dicts
    (pygls' default turns them into namedtuples, which loses keys such as ``_meta``)."""
    converter = converters.get_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, c: c(**obj))
    return converter


class SidecarProtocol(LanguageServerProtocol):
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        server: SidecarLanguageServer = self._server  # type: ignore[assignment]
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        acp_options: dict[str, Any] = options["acp"] if isinstance(options.get("acp"), dict) else {}
        caps = acp_options.get("clientCapabilities")
        server.channel.client_capabilities = dict(caps) if isinstance(caps, dict) else {}
        # An ACP-aware editor (ours) sends the "acp" key; a plain LSP client gets window/showMessageRequest.
        state = server.channel.state
        state.supports_acp_permissions = "acp" in options
        workspace_caps = params.capabilities.workspace
        state.applies_buffer_edits = bool(workspace_caps and workspace_caps.apply_edit)
        if isinstance(options.get("settings"), dict) or isinstance(options.get("workspaceSettings"), dict):
            user = options.get("settings")
            server.core.configure(user if isinstance(user, dict) else {}, options.get("workspaceSettings"))
        if isinstance(options.get("workspaceTrust"), bool):  # VS Code's Workspace Trust (docs/protocol.md)
            state.workspace_trust = options["workspaceTrust"]
        # Said once the client is listening (on `initialized`): a window/showMessage every LSP client shows.
        server.version_warning = client_mismatch(options.get("client"), version())
        if server.version_warning:
            log.warning("%s", server.version_warning)
        result.capabilities.experimental = {"acp": {"protocolVersion": 1,
                                                    "agentCapabilities": server.core.agent_capabilities()}}
        try:
            asyncio.get_running_loop().call_soon(server.core.warm_up)  # after this answer is written
        except RuntimeError:  # no loop running (a synchronous test harness): warm up now
            server.core.warm_up()
        return result

    @functools.cached_property
    def _encoder(self) -> json.JSONEncoder:
        """Made once (``json.dumps`` with options makes an encoder per call: every message sent)."""
        return json.JSONEncoder(default=self._serialize_message, allow_nan=False)

    def _send_data(self, data: Any) -> None:
        """pygls' writer, with standard JSON out (never NaN) and a byte-exact Content-Length."""
        if not data or self.writer is None:
            return
        try:
            try:
                body = self._encoder.encode(data)
            except ValueError:  # a non-finite float somewhere: it goes out as null
                body = jsonrpc.dumps(json.loads(json.dumps(data, default=self._serialize_message)))
        except Exception:
            log.exception("could not serialise an outgoing message")
            return
        payload = body.encode("utf-8")
        header = f"Content-Length: {len(payload)}\r\nContent-Type: {self.CONTENT_TYPE}; charset=utf-8\r\n\r\n"
        self.writer.write(header.encode("ascii") + payload)

    def send_plain(self, message: dict[str, Any]) -> None:
        """A message that is plain JSON already (our own methods, error answers): written as it is, without
        a trip through pygls' converter (~2.5x the cost of the write itself)."""
        self._send_data(message)

    def receive(self, raw: Any) -> None:
        """One decoded message body: checked (id, method, jsonrpc), then handed to pygls. Errors that
        pygls would only log are answered, so the client never waits for a reply that will not come."""
        try:
            message = jsonrpc.classify(raw)
        except RpcError as exc:
            self.send_plain(jsonrpc.error_response(exc.data, exc.code, exc.message))
            return
        if message.kind == "response" and message.id not in self._request_futures:
            log.debug("dropping reply to unknown request %r", message.id)
            return
        body = message.body
        if message.kind != "response":
            method = body["method"]
            if method not in self.fm.builtin_features and method not in self.fm.features \
                    and method != "$/cancelRequest":
                if message.kind == "request":
                    self.send_plain(jsonrpc.error_response(message.id, METHOD_NOT_FOUND,
                                                            f"Method not found: {method}"))
                return
            body = {**body, "params": body.get("params")}
        try:
            structured = self.structure_message(body)
        except Exception as exc:
            if message.kind == "request":
                code = exc.code if isinstance(exc, JsonRpcException) else INVALID_PARAMS
                # The body did not fit the method's params type: that is what -32602 means.
                self.send_plain(jsonrpc.error_response(message.id, INVALID_PARAMS if code == INTERNAL_ERROR
                                                        else code, f"Invalid params for {message.body['method']}"))
            return
        try:
            self.handle_message(structured)
        except Exception:
            log.exception("unexpected failure handling %s", message.body.get("method"))
            if message.kind == "request":
                self.send_plain(jsonrpc.error_response(message.id, INTERNAL_ERROR, "Internal error"))


MAX_HEADER_LINE = 8192
MAX_BODY_BYTES = 64 * 1024 * 1024
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)


class FrameReader:
    """LSP base-protocol framing that recovers from what a broken or hostile client sends.

    A header block is the lines up to an empty line. ``Content-Length`` is found anywhere in a line (so
    a header glued to the end of garbage, or to a body sent without its length, is still found) and must
    be a decimal within ``MAX_BODY_BYTES``. A block without a usable length is answered with -32700 and
    skipped; reading goes on at the next header. Header lines are read bounded (no line eats memory)."""

    def __init__(self, stream: Any, executor: Any) -> None:
        self.stream = stream
        self.executor = executor

    async def _call(self, fn: Any, *args: Any) -> bytes:
        data: bytes = await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
        return data

    async def next(self) -> tuple[bytes | None, str | None]:
        """(body, None), or (None, why) for a block to answer with a parse error; EOF raises EOFError."""
        length: int | None = None
        problem: str | None = None
        seen_header = False
        while True:
            line = await self._call(self.stream.readline, MAX_HEADER_LINE)
            if not line:
                raise EOFError
            if not line.endswith(b"\n"):  # an over-long line: drop the rest of it
                while line and not line.endswith(b"\n"):
                    line = await self._call(self.stream.readline, MAX_HEADER_LINE)
                problem = problem or "header line too long"
                seen_header = True
                continue
            if not line.strip():
                if not seen_header:
                    continue  # blank lines between messages
                if length is None:
                    return None, problem or "no Content-Length header"
                break
            seen_header = True
            match = _CONTENT_LENGTH.search(line)
            if match:
                value = match.group(1).strip()
                if value.isdigit() and len(value) <= 12 and int(value) <= MAX_BODY_BYTES:
                    length, problem = int(value), None
                else:
                    length, problem = None, f"bad Content-Length {value[:40]!r}"
        body = await self._call(self.stream.read, length)
        if len(body) < length:
            raise EOFError
        return body, None


class LspChannel:
    """The ClientChannel of the LSP connection."""

    def __init__(self, server: SidecarLanguageServer) -> None:
        self.server = server
        self.client_capabilities: dict[str, Any] = {}
        self.state = ConnectionState()

    def _typed(self, method: str, params: dict[str, Any]) -> Any:
        """pygls sends LSP's own methods (window/showMessageRequest, $/cancelRequest …) only as
        lsprotocol objects; our custom methods stay plain dicts."""
        entry = types.METHOD_TO_TYPES.get(method)
        if entry is None or entry[2] is None:
            return params
        return self.server.protocol._converter.structure(params, entry[2])  # type: ignore[arg-type]

    def _plain(self, result: Any) -> Any:
        if hasattr(result, "__attrs_attrs__"):
            return self.server.protocol._converter.unstructure(result)
        return result

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        if method in types.METHOD_TO_TYPES:
            self.server.protocol.notify(method, self._typed(method, params))
        else:  # ours (session/update …): plain JSON already
            self.server.protocol.send_plain({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        msg_id = f"sidecar-{uuid.uuid4().hex[:12]}"
        future = self.server.protocol.send_request(method, self._typed(method, params), msg_id=msg_id)
        try:
            return self._plain(await asyncio.wrap_future(future))
        except asyncio.CancelledError:
            # A late reply must find no future (pygls would crash setting a cancelled one).
            self.server.protocol._request_futures.pop(msg_id, None)
            self.server.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
            raise
        except JsonRpcException as exc:
            raise RpcError(exc.code, exc.message, exc.data) from None

    async def request_permission(self, params: dict[str, Any]) -> Any:
        """ACP ``session/request_permission`` for our extension (it sent ``initializationOptions.acp``);
        a plain LSP client gets ``window/showMessageRequest`` with one action per option."""
        if self.state.supports_acp_permissions:
            return await self.request("session/request_permission", params)
        tool_call = params.get("toolCall") or {}
        options: list[dict[str, Any]] = params.get("options") or []
        title = str(tool_call.get("title") or "")
        raw = tool_call.get("rawInput") or {}
        detail = str(raw.get("command") or raw.get("file_path") or "")
        message = f"Sidecar wants to run: {title}" + (f"\n{detail}" if detail and detail not in title else "")
        result = await self.request("window/showMessageRequest",
                                    {"type": 2, "message": message, "actions": [{"title": o["name"]} for o in options]})
        chosen = result.get("title") if isinstance(result, dict) else None
        for o in options:
            if o["name"] == chosen:
                return {"outcome": {"outcome": "selected", "optionId": o["optionId"]}}
        return {"outcome": {"outcome": "cancelled"}}


class SidecarLanguageServer(LanguageServer):
    protocol: SidecarProtocol  # built from protocol_cls below

    def __init__(self, core: SessionCore) -> None:
        super().__init__(DISTRIBUTION, version(), protocol_cls=SidecarProtocol, converter_factory=dict_converter,
                         text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.core = core
        self.channel = LspChannel(self)
        self.buffers: OpenBuffers = core.buffers
        self.version_warning: str | None = None  # the client's version does not fit (client_version.py)
        self._register()

    def report_server_error(self, error: Exception, source: Any) -> None:
        log.warning("request failed: %s", error)

    def _register(self) -> None:
        for method in self.core.methods:
            if method == "initialize":
                continue
            self.feature(method)(self._handler_for(method))

        @self.feature(types.INITIALIZED)
        def initialized(*_: Any) -> None:
            if self.version_warning:
                self.protocol.notify(types.WINDOW_SHOW_MESSAGE,
                                     types.ShowMessageParams(type=types.MessageType.Warning,
                                                             message=self.version_warning))

        @self.feature(types.TEXT_DOCUMENT_DID_OPEN)
        def did_open(params: types.DidOpenTextDocumentParams) -> None:
            doc = params.text_document
            self.buffers.open(doc.uri, doc.text, doc.version)

        @self.feature(types.TEXT_DOCUMENT_DID_CHANGE)
        def did_change(params: types.DidChangeTextDocumentParams) -> None:
            doc = self.workspace.get_text_document(params.text_document.uri)
            self.buffers.change(params.text_document.uri, doc.source, params.text_document.version)

        @self.feature(types.TEXT_DOCUMENT_DID_SAVE)
        def did_save(params: types.DidSaveTextDocumentParams) -> None:
            self.buffers.save(params.text_document.uri)

        @self.feature(types.TEXT_DOCUMENT_DID_CLOSE)
        def did_close(params: types.DidCloseTextDocumentParams) -> None:
            self.buffers.close(params.text_document.uri)

        @self.feature(types.SHUTDOWN)
        async def shutdown(*_: Any) -> None:
            await self.core.close_channel(self.channel)

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """pygls' stdio server with our framing (``FrameReader``) and message checks (``receive``)."""
        self._stop_event = threading.Event()
        # What one loop iteration sends goes out as one write (a session/load replay: thousands of updates).
        outbox = Outbox(StdoutWriter(stdout or sys.stdout.buffer).write)
        self.protocol.set_writer(outbox)
        reader = FrameReader(stdin or sys.stdin.buffer, self.thread_pool)
        try:
            asyncio.run(self._read_frames(reader))
        except BrokenPipeError:
            log.error("the client closed the connection")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            outbox.close()
            self.shutdown()  # type: ignore[no-untyped-call]

    async def _read_frames(self, reader: FrameReader) -> None:
        protocol = self.protocol
        while self._stop_event is None or not self._stop_event.is_set():
            try:
                body, problem = await reader.next()
            except EOFError:
                break
            if body is None:
                protocol.send_plain(jsonrpc.error_response(None, PARSE_ERROR, f"Parse error: {problem}"))
                continue
            try:
                raw = jsonrpc.loads(body)
            except RpcError as exc:
                protocol.send_plain(jsonrpc.error_response(None, exc.code, exc.message))
                continue
            try:
                protocol.receive(raw)
            except BrokenPipeError:
                raise
            except Exception:  # no message stops the server
                log.exception("unexpected failure handling a message")

    def _handler_for(self, method: str) -> Any:
        async def handler(params: Any) -> Any:
            try:
                if method == "session/prompt":
                    async with self._progress("Sidecar is working"):
                        return await self.core.handle(method, params, self.channel)
                return await self.core.handle(method, params, self.channel)
            except RpcError as exc:
                raise JsonRpcException(exc.message, exc.code, exc.data) from None
        handler.__name__ = f"handle_{method.replace('/', '_')}"
        return handler


    @contextlib.asynccontextmanager
    async def _progress(self, title: str) -> AsyncIterator[None]:
        """``$/progress`` around long work, when the client supports work-done progress."""
        caps = self.protocol.client_capabilities
        supported = bool(caps and caps.window and caps.window.work_done_progress)
        token = f"sidecar-{uuid.uuid4().hex[:12]}"
        if supported:
            try:
                async with asyncio.timeout(5):
                    await self.work_done_progress.create_async(token)
                self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=False))
            except Exception:  # the client declined or did not answer: work goes on without progress
                supported = False
        try:
            yield
        finally:
            if supported:
                self.work_done_progress.end(token, types.WorkDoneProgressEnd())


def serve_lsp_stdio(core: SessionCore) -> None:
    SidecarLanguageServer(core).start_io()

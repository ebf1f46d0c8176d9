"""The LSP transport: the same core behind pygls, for vscode-languageclient.

LSP's lifecycle stands in for ACP ``initialize``: the client's ACP capabilities arrive in
``initializationOptions.acp.clientCapabilities`` (its settings in ``initializationOptions.settings``)
and our agent capabilities go out in ``capabilities.experimental.acp``. The server advertises no
language features; it takes document sync so it knows the editor's open, unsaved buffers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import cattrs
from lsprotocol import converters, types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, lsp_method
from pygls.protocol.language_server import LanguageServerProtocol

from sidecar.errors import RpcError
from sidecar.server.core import SessionCore
from sidecar.workspace.buffers import OpenBuffers

log = logging.getLogger(__name__)


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
        acp_options = options.get("acp") or {}
        server.channel.client_capabilities = dict(acp_options.get("clientCapabilities") or {})
        # An ACP-aware editor (ours) sends the "acp" key; a plain LSP client gets window/showMessageRequest.
        server.channel.supports_acp_permissions = "acp" in options
        if isinstance(options.get("settings"), dict):
            server.core.configure(options["settings"])
        if isinstance(options.get("workspaceTrust"), bool):  # VS Code's Workspace Trust (docs/protocol.md)
            server.channel.workspace_trust = options["workspaceTrust"]  # type: ignore[attr-defined]
        result.capabilities.experimental = {"acp": {"protocolVersion": 1,
                                                    "agentCapabilities": server.core.agent_capabilities()}}
        try:
            asyncio.get_running_loop().call_soon(server.core.warm_up)  # after this answer is written
        except RuntimeError:  # no loop running (a synchronous test harness): warm up now
            server.core.warm_up()
        return result


class LspChannel:
    """The ClientChannel of the LSP connection."""

    def __init__(self, server: SidecarLanguageServer) -> None:
        self.server = server
        self.client_capabilities: dict[str, Any] = {}
        self.supports_acp_permissions = False

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
        self.server.protocol.notify(method, self._typed(method, params))

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
        if self.supports_acp_permissions:
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
    def __init__(self, core: SessionCore) -> None:
        super().__init__("sidecar", "0.1.0", protocol_cls=SidecarProtocol, converter_factory=dict_converter,
                         text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.core = core
        self.channel = LspChannel(self)
        self.buffers: OpenBuffers = core.buffers
        self._register()

    def report_server_error(self, error: Exception, source: Any) -> None:
        log.warning("request failed: %s", error)

    def _register(self) -> None:
        for method in self.core.methods:
            if method == "initialize":
                continue
            self.feature(method)(self._handler_for(method))

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
                await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
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

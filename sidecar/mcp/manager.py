"""Connecting a session's MCP servers and bridging their tools and resources.

Each server runs in its own asyncio task that holds the ``mcp`` client open (the SDK's anyio scopes
must be entered and left in one task) until the session closes. Servers connect in parallel when the
session starts, each bounded by ``CONNECT_TIMEOUT``; one that fails or dies later is reported (a
notice for the model, a log line, an audit event), never fatal: its tools answer with an error that
says so. Tools are registered as ``mcp__<server>__<tool>`` in the session's registry; with at least one
server connected, ``ListMcpResources`` and ``ReadMcpResource`` are added too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from contextlib import AsyncExitStack
from typing import Any

from sidecar.mcp.config import ServerConfig, server_configs
from sidecar.permissions.gate import secret_env_names
from sidecar.permissions.trust import McpOffer, describe_mcp, mcp_details, mcp_fingerprint, trust_of
from sidecar.secrets import SECRET_ENV_VARS
from sidecar.session import ServiceKey
from sidecar.tools.registry import REGISTRY

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = float(os.environ.get("SIDECAR_MCP_TIMEOUT") or 30)


def tool_name(server: str, tool: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp__{server}__{tool}")
    return clean[:64]


class McpConnection:
    def __init__(self, config: ServerConfig, session: Any) -> None:
        self.config = config
        self.session = session
        self.client: Any = None
        self.tools: list[Any] = []
        self.error: str | None = None
        self.dead = False
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def _client(self) -> Any:
        from mcp import Client, StdioServerParameters

        c = self.config
        if c.transport == "stdio":
            # The SDK passes only a few safe variables (HOME, PATH, …) plus the configured ``env``.
            params = StdioServerParameters(command=c.command, args=c.args, env=c.env or None, cwd=self.session.cwd)
            return Client(params, mode="legacy")
        if c.transport == "sse":
            from mcp.client.sse import sse_client

            return Client(sse_client(c.url, headers=c.headers or None), mode="legacy")
        if c.headers:
            import httpx2  # the SDK's own HTTP stack
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=c.headers, follow_redirects=False)
            return Client(streamable_http_client(c.url, http_client=http))
        return Client(c.url)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                await self._ready.wait()
        except TimeoutError:
            self.error = f"did not answer within {CONNECT_TIMEOUT:.0f}s"
            self._stop.set()

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                self.client = await stack.enter_async_context(self._client())
                listing = await self.client.list_tools()
                self.tools = list(listing.tools)
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:
            self.error = self.error or f"{type(exc).__name__}: {exc}"
            log.warning("MCP server %s: %s", self.name, self.error)
        finally:
            if self._ready.is_set() and not self._stop.is_set():
                self.mark_dead(self.error or "the connection closed")
            self._ready.set()

    def mark_dead(self, reason: str) -> None:
        if self.dead:
            return
        self.dead = True
        self.error = reason
        self.session.audit("mcp_server_died", server=self.name, reason=reason)
        self.session.add_notice(f"The MCP server {self.name!r} stopped ({reason}); its tools (mcp__{self.name}__*) "
                                "are unavailable for the rest of this session. Tell the user if it matters.")

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except (TimeoutError, Exception):
                self._task.cancel()


class McpManager:
    def __init__(self, session: Any) -> None:
        self.session = session
        self.connections: dict[str, McpConnection] = {}

    async def start(self, configs: list[ServerConfig]) -> None:
        conns = [McpConnection(c, self.session) for c in configs]
        await asyncio.gather(*(c.start() for c in conns))
        for conn in conns:
            self.connections[conn.name] = conn
            if conn.error and not conn.tools:
                self.session.audit("mcp_server_failed", server=conn.name, error=conn.error)
                self.session.add_notice(f"The MCP server {conn.name!r} could not be started ({conn.error}); its "
                                        "tools are unavailable.")

    def status(self) -> list[dict[str, Any]]:
        return [{"name": c.name, "transport": c.config.transport, "source": c.config.source,
                 "status": "failed" if c.dead or (c.error and not c.tools) else "connected",
                 "tools": len(c.tools), **({"error": c.error} if c.error else {})} for c in self.connections.values()]

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)


def mcp_offer(config: ServerConfig) -> McpOffer:
    return McpOffer(config.name, describe_mcp(config.raw), mcp_fingerprint(config.raw), mcp_details(config.raw))



# The session's MCP connections, made when the first server is connected.
MCP = ServiceKey[McpManager]("mcp", McpManager)
# ``.mcp.json`` servers not decided yet: asked about at the first prompt (``ask_pending_mcp``).
MCP_PENDING = ServiceKey[list[ServerConfig]]("mcp_pending")

async def start_mcp(session: Any) -> None:
    """Connect the client's servers and the ``.mcp.json`` servers the user already allowed; the others
    wait in ``MCP_PENDING`` for ``ask_pending_mcp`` (the first prompt)."""
    configs = server_configs(session.cwd, session.mcp_servers, (*SECRET_ENV_VARS, *secret_env_names(session)))
    trust = trust_of(session)
    ready: list[ServerConfig] = []
    pending: list[ServerConfig] = []
    for config in configs:
        if config.source != ".mcp.json":
            ready.append(config)
        elif config.refused:
            session.audit("mcp_server_refused", server=config.name, reason=config.refused)
            session.add_notice(f"The MCP server {config.name!r} from .mcp.json was not started: {config.refused}.")
        else:
            decision = trust.mcp_decision(mcp_offer(config)) if trust is not None else False
            if decision is True and trust is not None and trust.restricted:
                pending.append(config)  # remembered, but the editor keeps the workspace restricted
            elif decision is True:
                ready.append(config)
            elif decision is None:
                pending.append(config)
            else:
                session.audit("mcp_server_not_trusted", server=config.name)
    session.provide(MCP_PENDING, pending)
    await connect_mcp(session, ready)


async def ask_pending_mcp(session: Any) -> None:
    """Ask about each ``.mcp.json`` server not decided yet (by name and command), then start the allowed."""
    pending = session.find_service(MCP_PENDING) or []
    trust = trust_of(session)
    if not pending or trust is None or trust.restricted:
        return  # in Restricted Mode they wait for the editor to grant trust
    session.provide(MCP_PENDING, [])
    allowed = [c for c in pending if await trust.ask_mcp(mcp_offer(c))]
    await connect_mcp(session, allowed)


async def connect_mcp(session: Any, configs: list[ServerConfig]) -> None:
    from sidecar.mcp.tools import McpTool, resource_tools

    if not configs:
        return
    manager = session.service(MCP)
    had_tools = any(c.tools for c in manager.connections.values())
    await manager.start(configs)
    registry = session.service(REGISTRY)
    added = 0
    for conn in manager.connections.values():
        for tool in conn.tools:
            name = tool_name(conn.name, tool.name)
            if registry.get(name) is None:
                registry.add(McpTool(conn, tool, name))
                added += 1
    if not had_tools and any(c.tools for c in manager.connections.values()):
        for tool in resource_tools(manager):
            registry.add(tool)
    log.info("MCP: %d servers, %d tools", len(manager.connections), added)

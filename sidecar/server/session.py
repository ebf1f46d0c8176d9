"""One conversation: its roots, mode, history, ledger and the channel back to its client.

Transport-free: a Session talks to its client only through ``ClientChannel`` (LSP and ACP adapters
both implement it). Services tools need hang off the session (ledger, gate, shells, ...).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sidecar.permissions.gate import Mode, PermissionGate

if TYPE_CHECKING:
    from sidecar.server.store import SessionStore

log = logging.getLogger(__name__)


class RpcError(Exception):
    """A JSON-RPC error to send back (or received from the peer)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ClientChannel(Protocol):
    """The way back to the editor. Implemented by each transport adapter."""

    client_capabilities: dict[str, Any]

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request and await its result. Cancelling the awaiting task forgets the request
        (a late reply is dropped, never a crash)."""
        ...

    async def notify(self, method: str, params: dict[str, Any]) -> None: ...


def sidecar_capability(channel: ClientChannel, name: str) -> bool:
    """Whether the client advertised ``clientCapabilities._meta.sidecar.<name>`` (DESIGN.md §3.3)."""
    meta = channel.client_capabilities.get("_meta") or {}
    sidecar = meta.get("sidecar") or {}
    return bool(sidecar.get(name))


@dataclass
class Session:
    id: str
    cwd: Path
    channel: ClientChannel
    store: SessionStore
    additional_directories: list[Path] = field(default_factory=list)
    mode: Mode = "default"
    # Conversation in Messages API shape: [{"role": ..., "content": [...]}].
    history: list[dict[str, Any]] = field(default_factory=list)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    title: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    # Short notices queued for the next model request ("X was modified ...").
    pending_notices: list[str] = field(default_factory=list)
    # Free slot for services added by tool families (ledger, shells, lsp, todos ...), keyed by name.
    services: dict[str, Any] = field(default_factory=dict)
    prompt_task: asyncio.Task[Any] | None = None
    cancel_requested: bool = False

    def __post_init__(self) -> None:
        self.cwd = self.cwd.resolve()
        self.permissions = PermissionGate(self)

    # ---- workspace --------------------------------------------------------------------
    @property
    def roots(self) -> list[Path]:
        return [self.cwd, *[d.resolve() for d in self.additional_directories]]

    def within_roots(self, path: Path) -> bool:
        return any(path == r or path.is_relative_to(r) for r in self.roots)

    def service(self, name: str, factory: Any) -> Any:
        """Get or lazily create a per-session service (e.g. ``service("ledger", ReadLedger)``)."""
        if name not in self.services:
            self.services[name] = factory(self) if callable(factory) else factory
        return self.services[name]

    def add_notice(self, text: str) -> None:
        if text not in self.pending_notices:
            self.pending_notices.append(text)

    # ---- talking to the client --------------------------------------------------------
    async def send_update(self, update: dict[str, Any]) -> None:
        await self.channel.notify("session/update", {"sessionId": self.id, "update": update})

    async def request_permission(self, tool_call: dict[str, Any],
                                 options: list[dict[str, Any]]) -> dict[str, Any] | None:
        """ACP ``session/request_permission``; returns the selected outcome dict or None when cancelled."""
        try:
            result = await self.channel.request(
                "session/request_permission", {"sessionId": self.id, "toolCall": tool_call, "options": options}
            )
        except RpcError as exc:
            log.warning("permission request failed: %s", exc.message)
            return None
        outcome = (result or {}).get("outcome") or {}
        if outcome.get("outcome") != "selected":
            return None
        return dict(outcome)

    def has_client_capability(self, name: str) -> bool:
        return sidecar_capability(self.channel, name)

    # ---- persistence ------------------------------------------------------------------
    def append_message(self, message: dict[str, Any]) -> None:
        self.history.append(message)
        self.updated_at = time.time()
        self.store.append(self.id, {"type": "message", "message": message})

    def audit(self, event: str, **fields: Any) -> None:
        self.store.append(self.id, {"type": "audit", "event": event, "time": time.time(), **fields})


def new_session_id() -> str:
    return f"sess_{uuid.uuid4().hex[:16]}"

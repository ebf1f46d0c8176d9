"""A real Session with an in-test ClientChannel that answers the sidecar's requests from a script."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sidecar.permissions.gate import govern
from sidecar.permissions.trust import TRUST, TrustStore, WorkspaceTrust
from sidecar.session import ConnectionState, Session
from sidecar.tools.context import ToolContext

Responder = Callable[[str, dict[str, Any]], Awaitable[Any]]


class MemoryStore:
    """Records what the session writes to its log (the audit trail is what these tests look at)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.events: list[dict[str, Any]] = []

    def append(self, session_id: str, event: dict[str, Any]) -> None:
        self.events.append(event)

    def path(self, session_id: str) -> Path:
        return self.root / f"{session_id}.jsonl"

    def audits(self, event: str = "permission") -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == "audit" and e.get("event") == event]


class ScriptedChannel:
    """A ClientChannel whose answers come from ``responder``; every request and notification is kept."""

    def __init__(self, capabilities: dict[str, Any] | None = None) -> None:
        self.client_capabilities: dict[str, Any] = capabilities or {}
        self.state = ConnectionState()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.notifications: list[tuple[str, dict[str, Any]]] = []
        self.responder: Responder = self._no_answer

    async def _no_answer(self, method: str, params: dict[str, Any]) -> Any:
        raise AssertionError(f"unexpected request {method}: {params}")

    def answer_with(self, option_id: str, feedback: str | None = None) -> None:
        async def respond(method: str, params: dict[str, Any]) -> Any:
            outcome: dict[str, Any] = {"outcome": "selected", "optionId": option_id}
            if feedback:
                outcome["_meta"] = {"feedback": feedback}
            return {"outcome": outcome}
        self.responder = respond

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.requests.append((method, params))
        return await self.responder(method, params)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))

    def methods(self) -> list[str]:
        return [m for m, _ in self.requests]

    def updates(self) -> list[dict[str, Any]]:
        return [p["update"] for m, p in self.notifications if m == "session/update"]


def write_settings(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def make_session(cwd: Path, channel: ScriptedChannel | None = None, mode: str = "default",
                 trusted: bool | None = True) -> Session:
    """A governed session; ``trusted`` is the editor's word on the workspace (None: not said)."""
    store = MemoryStore(cwd.parent / "store")
    session = Session(id="sess_test", cwd=cwd, channel=channel or ScriptedChannel(),
                      store=store)  # type: ignore[arg-type]
    session.provide(TRUST, WorkspaceTrust(session, trusted, TrustStore(cwd.parent / "trust.json")))
    govern(session)
    if mode != "default":
        session.mode = mode  # type: ignore[assignment]
    return session


def ctx_of(session: Session, call_id: str = "toolu_1") -> ToolContext:
    return ToolContext(session=session, tool_call_id=call_id)

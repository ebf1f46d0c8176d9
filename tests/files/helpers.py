"""A real Session with an in-test ClientChannel, driven through the real Dispatcher (the tool path)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.permissions.gate import govern
from sidecar.session import ConnectionState, Session
from sidecar.store import SessionStore
from sidecar.tools.builtin import file_tools
from sidecar.tools.dispatch import Dispatcher, ToolCall
from sidecar.tools.registry import ToolRegistry
from sidecar.workspace.watcher import WATCHER


@dataclass
class RecordingChannel:
    """Records notifications and permission requests; answers them with ``answer`` (allow_once by default)."""

    client_capabilities: dict[str, Any] = field(default_factory=dict)
    state: ConnectionState = field(default_factory=ConnectionState)
    notifications: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str = "allow_once"

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.requests.append((method, params))
        if method == "session/request_permission":
            return {"outcome": {"outcome": "selected", "optionId": self.answer}}
        raise AssertionError(f"unexpected request {method}")

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))

    def permission_requests(self) -> list[dict[str, Any]]:
        return [p for m, p in self.requests if m == "session/request_permission"]


_ids = itertools.count(1)


class Agent:
    def __init__(self, root: Path, tmp: Path, mode: str = "default") -> None:
        self.channel = RecordingChannel()
        self.session = govern(Session(id=f"sess_test{next(_ids)}", cwd=root, channel=self.channel,
                               store=SessionStore(tmp / "store")), trusted=True)
        self.session.mode = mode  # type: ignore[assignment]
        self.dispatcher = Dispatcher(self.session, ToolRegistry(file_tools()))

    async def call(self, name: str, **inp: Any) -> tuple[str, bool, Any]:
        result = await self.dispatcher.run(ToolCall(id=f"toolu_{next(_ids)}", name=name, input=inp))
        return result.output.joined_text(), result.output.is_error, result.output

    async def close(self) -> None:
        watcher = self.session.find_service(WATCHER)
        if watcher is not None:
            await watcher.close()

"""Fixtures for the Bash family: a real Session (tmp workspace, tmp store) with a scripted client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from sidecar.permissions.gate import govern
from sidecar.session import ConnectionState, Session
from sidecar.store import SessionStore
from sidecar.tools.bash.shells import shells_of
from sidecar.tools.context import ToolContext


class RecordingChannel:
    """Answers permission requests with ``answer`` and records every message."""

    def __init__(self) -> None:
        self.client_capabilities: dict[str, Any] = {}
        self.state = ConnectionState()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.notes: list[tuple[str, dict[str, Any]]] = []
        self.answer = "allow_once"

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.requests.append((method, params))
        return {"outcome": {"outcome": "selected", "optionId": self.answer}}

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notes.append((method, params))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "bash-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return ws


@pytest_asyncio.fixture
async def session(workspace: Path, tmp_path: Path) -> AsyncIterator[Session]:
    s = govern(Session(
        id="sess_bashtest", cwd=workspace, channel=RecordingChannel(), store=SessionStore(tmp_path / "store")
    ), trusted=True)
    yield s
    await shells_of(s).close()


def make_ctx(session: Session, call_id: str = "call_1", progress: list[str] | None = None) -> ToolContext:
    async def sink(text: str) -> None:
        if progress is not None:
            progress.append(text)

    return ToolContext(session=session, tool_call_id=call_id, _progress=sink)

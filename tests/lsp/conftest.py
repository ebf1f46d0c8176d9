"""Shared pieces for the LSP tool's tests: a fixture project copied to a tmp dir, a Session with an
in-test ClientChannel (the editor stand-in), and a helper that runs the tool as the dispatcher does."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sidecar.errors import RpcError
from sidecar.permissions.gate import govern
from sidecar.session import ConnectionState, Session
from sidecar.store import SessionStore
from sidecar.tools.context import ToolContext
from sidecar.tools.lsp.lsp import LSPInput, LSPTool

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "lsp"

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class EditorChannel:
    """A ClientChannel that records what the sidecar asks and answers with the given handlers."""

    def __init__(self, sidecar_caps: dict[str, bool] | None = None,
                 handlers: dict[str, Handler] | None = None) -> None:
        self.client_capabilities: dict[str, Any] = {"_meta": {"sidecar": sidecar_caps or {}}}
        self.state = ConnectionState()
        self.handlers = handlers or {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.notifications: list[tuple[str, dict[str, Any]]] = []

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.requests.append((method, params))
        handler = self.handlers.get(method)
        if handler is None:
            raise RpcError(-32601, f"method not found: {method}")
        return await handler(params)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))


_ids = itertools.count(1)


def copy_fixtures(dest: Path) -> Path:
    """fixtures/lsp copied under ``dest``; returns the copy's root (holding py_project, outside_lib ...)."""
    root = dest / "lsp"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("node_modules", "__pycache__"))
    return root.resolve()


def make_session(cwd: Path, store_dir: Path, channel: EditorChannel | None = None) -> Session:
    return govern(Session(id=f"sess_lsptest{next(_ids)}", cwd=cwd, channel=channel or EditorChannel(),
                   store=SessionStore(store_dir)), trusted=True)


async def run_lsp(session: Session, operation: str, file_path: str | Path, line: int = 1, character: int = 1,
                  query: str | None = None) -> str:
    """validate → check_permission → run, as the dispatcher does; returns the model-facing text."""
    tool = LSPTool()
    inp = LSPInput(operation=operation, filePath=str(file_path), line=line,  # type: ignore[arg-type]
                   character=character, query=query)
    ctx = ToolContext(session=session, tool_call_id=f"toolu_{next(_ids)}")
    await tool.validate(inp, ctx)
    await tool.check_permission(inp, ctx)
    out = await tool.run(inp, ctx)
    return out.joined_text()


def isolated_home(tmp: Path) -> dict[str, str]:
    """Environment overrides so no user or managed settings leak into a test."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "SIDECAR_MANAGED_SETTINGS": str(tmp / "managed-settings.json"),
            "XDG_DATA_HOME": str(tmp / "xdg-data"), "XDG_CACHE_HOME": str(tmp / "xdg-cache")}


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); read its state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False

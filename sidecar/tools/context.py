"""What a tool sees while it runs: the session's services plus this call's identity and progress sink."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sidecar.permissions.gate import PermissionGate
    from sidecar.server.session import Session


@dataclass
class ToolContext:
    session: Session
    tool_call_id: str
    # Label shown to the user when a sub-agent asks (None for the main agent).
    agent_label: str | None = None
    _progress: Callable[[str], Awaitable[None]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cwd(self) -> Path:
        return self.session.cwd

    @property
    def roots(self) -> list[Path]:
        return self.session.roots

    @property
    def permissions(self) -> PermissionGate:
        return self.session.permissions

    async def progress(self, text: str) -> None:
        """Stream partial output to the editor (a ``tool_call_update`` with the text so far)."""
        if self._progress is not None:
            await self._progress(text)

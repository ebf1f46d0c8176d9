"""What a tool sees while it runs: the session, this call's identity, progress sink and verdicts.

Sub-agents are created through ``spawn_agent``, a factory the agent loop injects (the Task tool never
imports the loop), as Zed's spawn-agent tool receives its thread environment.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sidecar.permission_types import HookVerdict
    from sidecar.session import PermissionGatePort, Session


class SubAgent(Protocol):
    """A sub-agent with its own history (``AgentLoop`` implements it)."""

    last_text: str

    async def run(self, user_content: list[dict[str, Any]]) -> str:
        """Run to the end of its turn; the stop reason."""
        ...

    def tool_call_count(self) -> int: ...


@dataclass
class SubAgentSpec:
    # The tools it may use: names from the spawning agent's registry.
    tool_names: list[str]
    system_prompt: str
    label: str
    # The Task call the sub-agent runs under (its calls are shown nested under that card).
    parent_tool_call_id: str | None = None
    # None: the session's main model.
    model_name: str | None = None


SpawnAgent = Callable[[SubAgentSpec], SubAgent]


@dataclass
class ToolContext:
    session: Session
    tool_call_id: str
    # Label shown to the user when a sub-agent asks (None for the main agent).
    agent_label: str | None = None
    _progress: Callable[[str], Awaitable[None]] | None = None
    # Creates sub-agents (set by the agent loop; None where no loop runs, e.g. unit tests of one tool).
    spawn_agent: SpawnAgent | None = None
    # What a PreToolUse hook said about this call (the gate applies it).
    hook_verdict: HookVerdict | None = None
    # What validation computed for ``run`` to reuse, once per call (the Bash tool's command analysis,
    # WebFetch's resolved target).
    prepared: Any = None
    # Paths the call resolved during validation, canonical, keyed by the raw path.
    resolved_paths: dict[str, Any] = field(default_factory=dict)
    # The call as the editor was shown it (``title``, ``kind``, ``locations``): a permission question
    # about it carries the same kind and locations, so a client deciding by kind decides right.
    shown: dict[str, Any] = field(default_factory=dict)

    @property
    def cwd(self) -> Path:
        return self.session.cwd

    @property
    def roots(self) -> list[Path]:
        return self.session.roots

    @property
    def permissions(self) -> PermissionGatePort:
        return self.session.permissions

    async def show(self, content: list[dict[str, Any]]) -> None:
        """A ``tool_call_update`` (in progress) whose content is ``content``: ACP ToolCallContent, e.g. a
        client terminal ``{"type": "terminal", "terminalId"}`` the editor streams itself."""
        await self.session.send_update({"sessionUpdate": "tool_call_update", "toolCallId": self.tool_call_id,
                                        "status": "in_progress", "content": content})

    async def progress(self, text: str) -> None:
        """Stream partial output to the editor (a ``tool_call_update`` with the text so far)."""
        if self._progress is not None:
            await self._progress(text)

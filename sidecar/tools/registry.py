"""The tools one agent may use (the built-in list is ``sidecar.tools.builtin``)."""

from __future__ import annotations

from typing import Any

from sidecar.session import ServiceKey
from sidecar.tools.base import Tool


class ToolRegistry:
    """The tools one agent may use. Names are unique; lookups by model-facing name."""

    def __init__(self, tools: list[Tool[Any]]) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name}")
            self._tools[tool.name] = tool

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def all(self) -> list[Tool[Any]]:
        return list(self._tools.values())

    def add(self, tool: Tool[Any]) -> None:
        if tool.name in self._tools:
            raise ValueError(f"duplicate tool name {tool.name}")
        self._tools[tool.name] = tool

    def describe_call(self, name: str, raw_input: dict[str, Any]) -> dict[str, Any]:
        """How the editor shows a call of ``name``: its title, kind and locations (never raises)."""
        tool = self.get(name)
        if tool is None:
            return {"title": name, "kind": "other", "locations": []}
        try:
            title = tool.title(raw_input)
        except Exception:  # a title must never fail a call: partial input is normal
            title = tool.name
        try:
            locations = [loc.to_acp() for loc in tool.locations(tool.Input.model_validate(raw_input))]
        except Exception:
            locations = []
        return {"title": title, "kind": tool.kind, "locations": locations}

    def restricted_to(self, names: list[str]) -> ToolRegistry:
        return ToolRegistry([t for t in self.all() if t.name in names])


# The session's tools (built-ins, then MCP's and the deferred ones added as they come).
REGISTRY = ServiceKey[ToolRegistry]("registry")

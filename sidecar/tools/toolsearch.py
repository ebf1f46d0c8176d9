"""Deferred tool loading and the ToolSearch tool (docs/contract.md §5.1, point 10).

When the deferrable tools (``Tool.always_loaded = False``: MCP tools) would take more than a budget
of the context, each is sent with ``"defer_loading": true``: the API keeps it out of the model's
context until the model finds it with ToolSearch, whose result carries ``tool_reference`` blocks; the
API then appends those definitions where the result sits in the conversation. The ``tools`` array is
byte-identical in every request, so the prompt-cache prefix (tools → system → earlier messages) never
changes: discovery appends, never replaces. ToolSearch itself is never deferred, and it is sent only
when something is deferred. The names of the deferred tools are listed in its description.

Settings (client settings, then environment): ``toolSearch`` / ``SIDECAR_TOOL_SEARCH`` = ``auto``
(default: defer when over budget) | ``on`` (always defer deferrable tools) | ``off``;
``toolSearchBudget`` / ``SIDECAR_TOOL_SEARCH_BUDGET`` = the budget in tokens (default: 10% of the
context window). Tokens are estimated as characters / 4 of the JSON definitions.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.model.client import MODEL
from sidecar.permissions.settings import CLIENT_SETTINGS
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext

if TYPE_CHECKING:
    from sidecar.tools.registry import ToolRegistry

BETA = "advanced-tool-use-2025-11-20"


def _setting(session: Any, key: str, env: str) -> str | None:
    settings = session.find_service(CLIENT_SETTINGS) or {}
    value = settings.get(key) if isinstance(settings, dict) else None
    if value is None:
        value = os.environ.get(env)
    return None if value is None else str(value)


def estimate_tokens(definitions: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(d)) for d in definitions) // 4


def deferred_tool_names(registry: ToolRegistry, session: Any) -> set[str]:
    """Which tools of ``registry`` to send with ``defer_loading`` (empty when none, or no ToolSearch)."""
    if registry.get(ToolSearch.name) is None:
        return set()
    candidates = [t for t in registry.all() if not t.always_loaded]
    if not candidates:
        return set()
    mode = (_setting(session, "toolSearch", "SIDECAR_TOOL_SEARCH") or "auto").lower()
    if mode in ("off", "false", "0"):
        return set()
    if mode not in ("on", "true", "1", "always"):
        model = session.find_service(MODEL)
        window = model.settings.context_window if model is not None else 200_000
        budget = int(_setting(session, "toolSearchBudget", "SIDECAR_TOOL_SEARCH_BUDGET") or window // 10)
        if estimate_tokens([t.api_definition() for t in candidates]) <= budget:
            return set()
    return {t.name for t in candidates}


class ToolSearchInput(ToolInput):
    """Find deferred tools and load their definitions so that you can call them. Some tools (mostly from
    MCP servers) are only listed by name below; their parameters are unknown to you until you search
    for them, and calling one before it is loaded fails.

    Query forms: "select:Name1,Name2" loads those exact tools; otherwise keywords are matched against
    tool names and descriptions ("+word" makes a word required). Load what you need in one search when
    you can.
    """

    query: str = Field(description='"select:<tool names, comma-separated>" or keywords to search for.')
    max_results: int = Field(default=5, ge=1, le=20, description="How many tools to load at most.")


class ToolReferenceBlock:
    """A ``tool_reference`` result block: the API appends that tool's definition to the context."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name

    def to_api(self) -> dict[str, Any]:
        return {"type": "tool_reference", "tool_name": self.tool_name}


class ToolSearch(Tool[ToolSearchInput]):
    name: ClassVar[str] = "ToolSearch"
    kind: ClassVar[ToolKind] = "search"
    Input = ToolSearchInput

    def __init__(self) -> None:
        self.registry: ToolRegistry | None = None
        self.session: Any = None

    def configure(self, registry: ToolRegistry, session: Any) -> None:
        self.registry, self.session = registry, session

    def deferred(self) -> list[Tool[Any]]:
        if self.registry is None:
            return []
        names = deferred_tool_names(self.registry, self.session)
        return [t for t in self.registry.all() if t.name in names]

    def description(self) -> str:
        names = [t.name for t in self.deferred()]
        return super().description() + "\n\nDeferred tools:\n" + ("\n".join(names) if names else "(none)")

    def title(self, raw_input: dict[str, Any]) -> str:
        return f"Search tools: {raw_input.get('query') or ''}".strip()

    def is_read_only(self, inp: ToolSearchInput) -> bool:
        return True

    async def run(self, inp: ToolSearchInput, ctx: ToolContext) -> ToolOutput:
        deferred = {t.name: t for t in self.deferred()}
        if not deferred:
            raise ToolError("No tools are deferred in this session: every tool is already loaded. Call it directly.")
        query = inp.query.strip()
        if query.lower().startswith("select:"):
            wanted = [n.strip() for n in query[len("select:"):].split(",") if n.strip()]
            found = [n for n in wanted if n in deferred]
            missing = [n for n in wanted if n not in deferred]
            if not found:
                raise ToolError(f"No deferred tool named {', '.join(missing)}. Search by keywords instead, or pick "
                                "a name from the deferred tools list in this tool's description.")
        else:
            found = rank(query, list(deferred.values()))[: inp.max_results]
            missing = []
            if not found:
                raise ToolError(f"No deferred tool matches {query!r}. Try other keywords or \"select:<name>\".")
        text = "Loaded " + ", ".join(found) + ". You can call them now."
        if missing:
            text += f" Not found: {', '.join(missing)}."
        return ToolOutput(blocks=[ToolReferenceBlock(n) for n in found] + [_text(text)],
                          editor_content=[{"type": "content", "content": {"type": "text", "text": text}}],
                          metadata={"subject": query, "loaded": found})


def _text(text: str) -> Any:
    from sidecar.tools.base import TextBlock

    return TextBlock(text)


def rank(query: str, tools: list[Tool[Any]]) -> list[str]:
    words = [w.lower() for w in re.split(r"\s+", query) if w]
    required = [w[1:] for w in words if w.startswith("+") and len(w) > 1]
    optional = [w for w in words if not w.startswith("+")]
    scored: list[tuple[int, str]] = []
    for tool in tools:
        name = tool.name.lower()
        text = f"{name} {tool.description().lower()}"
        if not all(w in text for w in required):
            continue
        score = sum(10 if w in name else (2 if w in text else 0) for w in optional + required)
        if score > 0:
            scored.append((-score, tool.name))
    return [n for _, n in sorted(scored)]

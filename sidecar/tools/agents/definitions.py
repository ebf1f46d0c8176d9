"""Agent types for the Task tool: two built in, more from ``.claude/agents/*.md``.

A definition file has a frontmatter with ``name``, ``description`` (when to use it), ``tools`` (a
comma-separated list or a YAML list; absent = every tool a sub-agent may have) and ``model``
(``inherit`` (default), ``sonnet``/``opus`` = the main model, ``haiku`` = the small model, or a model
id); the body is the agent's instructions. Project agents (``<cwd>/.claude/agents``) override user
agents (``~/.claude/agents``), which override the built-in ones of the same name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sidecar.tools.agents.frontmatter import as_list, split_frontmatter

log = logging.getLogger(__name__)

# Tools that change nothing: an agent type restricted to these runs concurrently with its siblings.
READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep", "LSP", "WebFetch", "WebSearch", "ToolSearch", "BashOutput"})
# Never given to a sub-agent: it cannot start agents, talk to the user, or own the session's plan/mode.
MAIN_ONLY_TOOLS = frozenset({"Task", "TaskOutput", "TaskStop", "AskUserQuestion", "TodoWrite", "ExitPlanMode",
                             "Config", "Brief"})


@dataclass(frozen=True)
class AgentType:
    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None  # None: every tool a sub-agent may have
    model: str | None = None  # None / "inherit": the session's model
    source: str = "built-in"

    def tool_names(self, available: list[str]) -> list[str]:
        allowed = [n for n in available if n not in MAIN_ONLY_TOOLS]
        if self.tools is None:
            return allowed
        wanted = set(self.tools)
        return [n for n in allowed if n in wanted or any(n.startswith(f"{w}__") for w in wanted
                                                           if w.startswith("mcp__"))]

    def is_read_only(self, available: list[str]) -> bool:
        return all(n in READ_ONLY_TOOLS for n in self.tool_names(available))


GENERAL = AgentType(
    name="general-purpose",
    description="General-purpose agent for researching complex questions, searching for code and running "
                "multi-step tasks. Use it when a search may take several rounds or a task is self-contained.",
    prompt="You are a sub-agent started by the main coding agent for one task. Do the task completely with "
           "the tools you have, then reply with a concise final report: what you found or changed, with "
           "absolute file paths and the relevant snippets. The report is all the main agent sees.",
    tools=None,
)

EXPLORE = AgentType(
    name="Explore",
    description="Fast read-only agent for exploring a codebase: find files by pattern, search code for "
                "keywords, answer questions about how the code works. It cannot change anything. Several "
                "Explore agents started in one message run in parallel.",
    prompt="You are a read-only exploration sub-agent. Search and read the code to answer the task; you "
           "cannot edit files or run commands. Reply with a concise final report: the answer, with absolute "
           "file paths and line numbers. The report is all the main agent sees.",
    tools=("Read", "Glob", "Grep", "LSP", "WebFetch", "WebSearch"),
)

BUILT_IN = (GENERAL, EXPLORE)


def load_agent_file(path: Path, source: str) -> AgentType | None:
    try:
        meta, body = split_frontmatter(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    name = str(meta.get("name") or path.stem).strip()
    description = str(meta.get("description") or "").strip()
    if not name or not description:
        log.warning("agent file %s has no name/description frontmatter; skipped", path)
        return None
    tools = as_list(meta.get("tools"))
    model = meta.get("model")
    return AgentType(name=name, description=description, prompt=body.strip() or GENERAL.prompt,
                     tools=tuple(tools) if tools is not None else None,
                     model=str(model) if model and str(model) != "inherit" else None, source=source)


def agent_types(cwd: Path, home: Path | None = None) -> dict[str, AgentType]:
    found: dict[str, AgentType] = {a.name: a for a in BUILT_IN}
    for directory, source in (((home or Path.home()) / ".claude" / "agents", "user"),
                              (cwd / ".claude" / "agents", "project")):
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.md")):
            agent = load_agent_file(path, source)
            if agent is not None:
                found[agent.name] = agent
    return found

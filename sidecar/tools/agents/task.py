"""Task: start a sub-agent with its own history for one self-contained job; its final report is the result.

The sub-agent is an ``AgentLoop`` with its own ``Conversation``, a registry restricted to its type's
tools, and the session's governance: its calls go through the same dispatcher and permission gate, and
its permission questions reach the user labelled with the sub-agent (``ToolContext.agent_label``). Its
text is not streamed to the editor; its tool calls are (titled ``[label] …``). Sub-agents whose type has
only read-only tools are concurrency-safe, so several started in one message run in parallel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.model.client import MODEL
from sidecar.session import ServiceKey
from sidecar.tools.agents.definitions import BUILT_IN, AgentType
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import SubAgent, SubAgentSpec, ToolContext
from sidecar.tools.registry import REGISTRY

if TYPE_CHECKING:
    from sidecar.tools.registry import ToolRegistry


class TaskInput(ToolInput):
    """Launch a sub-agent to handle a complex, multi-step task on its own. The sub-agent starts with an
    empty history and the tools of its type; its final message comes back to you as this tool's result.

    When to use it:
    - Open-ended searches that may take several rounds of Glob, Grep and Read ("where is the retry
      policy decided?", "which callers rely on this behaviour?"): the exploration stays out of your own
      context and only the answer comes back.
    - Independent pieces of work that can run side by side: send several Task calls in one message to
      run them in parallel (read-only types such as Explore run concurrently).
    - Long, self-contained jobs; with run_in_background you keep working and collect the report later
      with TaskOutput (or stop it with TaskStop).

    When not to use it:
    - Reading a file whose path you know: Read. Finding a class or function by name: Grep or Glob.
      Looking inside two or three known files: Read them. A sub-agent is slower for these.
    - Work that needs the conversation's context the sub-agent does not have, or that you must watch
      step by step.

    Writing the prompt: the sub-agent knows nothing of this conversation. Give it the goal, what you
    already know (paths, names, constraints), whether it should change code or only research, and
    exactly what to report back (e.g. "list the files and line numbers", "a summary under 200 words").
    Its report is not shown to the user: tell the user what matters from it. A report is the agent's
    own account; check the parts your next step depends on.

    Available agent types are listed below; pick one in subagent_type.
    """

    description: str = Field(description="A short (3-5 word) description of the task.")
    prompt: str = Field(description="The task for the agent to perform, complete and self-contained.")
    subagent_type: str = Field(description="The type of agent to use (one of the listed agent types).")
    run_in_background: bool = Field(default=False, description="Start the agent and return at once with its "
                                    "id; read its report later with TaskOutput (or stop it with TaskStop).")


class Task(Tool[TaskInput]):
    name: ClassVar[str] = "Task"
    kind: ClassVar[ToolKind] = "think"
    Input = TaskInput

    def __init__(self) -> None:
        self.agents: dict[str, AgentType] = {a.name: a for a in BUILT_IN}
        self.registry: ToolRegistry | None = None  # the session's registry (set at session start)

    def configure(self, agents: dict[str, AgentType], registry: ToolRegistry) -> None:
        self.agents = dict(agents)
        self.registry = registry

    def description(self) -> str:
        listed = "\n".join(f"- {a.name}: {a.description} (Tools: "
                           f"{', '.join(a.tools) if a.tools is not None else 'all tools'})"
                           for a in self.agents.values())
        return super().description() + "\n\nAgent types:\n" + listed

    def title(self, raw_input: dict[str, Any]) -> str:
        kind = raw_input.get("subagent_type") or "agent"
        return f"{kind}: {raw_input.get('description') or 'task'}"

    def _available(self) -> list[str]:
        return self.registry.names() if self.registry is not None else []

    def is_read_only(self, inp: TaskInput) -> bool:
        agent = self.agents.get(inp.subagent_type)
        return agent is not None and agent.is_read_only(self._available())

    def is_concurrency_safe(self, inp: TaskInput, ctx: ToolContext) -> bool:
        return inp.run_in_background or self.is_read_only(inp)

    async def validate(self, inp: TaskInput, ctx: ToolContext) -> None:
        if ctx.agent_label:
            raise ToolError("A sub-agent cannot start sub-agents. Do the work yourself with your tools.")
        if inp.subagent_type not in self.agents:
            raise ToolError(f"Unknown subagent_type {inp.subagent_type!r}. Use one of: "
                            f"{', '.join(self.agents)}.")
        if not inp.prompt.strip():
            raise ToolError("The prompt is empty. Describe the task completely: the sub-agent sees nothing else.")

    async def check_permission(self, inp: TaskInput, ctx: ToolContext) -> None:
        """Starting an agent needs no approval: each of its tool calls is governed on its own."""

    async def run(self, inp: TaskInput, ctx: ToolContext) -> ToolOutput:
        if ctx.spawn_agent is None:
            raise ToolError("Sub-agents are not available here. Do the work yourself with your tools.")
        session = ctx.session
        agent = self.agents[inp.subagent_type]
        registry = self.registry if self.registry is not None else session.service(REGISTRY)
        label = f"{agent.name}: {inp.description}"
        system = (f"{session.system_prompt}\n\n<agent-instructions type=\"{agent.name}\">\n"
                  f"{agent.prompt}\n</agent-instructions>")
        loop = ctx.spawn_agent(SubAgentSpec(tool_names=agent.tool_names(registry.names()), system_prompt=system,
                                            label=label, parent_tool_call_id=ctx.tool_call_id,
                                            model_name=model_for(agent, session.service(MODEL).settings)))
        session.audit("subagent_start", toolCallId=ctx.tool_call_id, agent=agent.name, label=label)
        if inp.run_in_background:
            agents = session.service(BACKGROUND_AGENTS)
            task_id = agents.start(label, self._finish(loop, agent, ctx, label, inp.prompt))
            return ToolOutput.text(f"Started {label} in the background with task_id {task_id}. Continue with other "
                                   "work; read its report with TaskOutput when you need it.",
                                   metadata={"subject": label, "task_id": task_id})
        await ctx.progress(f"Running {label}…")
        return await self._finish(loop, agent, ctx, label, inp.prompt)

    async def _finish(self, loop: SubAgent, agent: AgentType, ctx: ToolContext, label: str,
                      prompt: str) -> ToolOutput:
        session = ctx.session
        stop = await loop.run([{"type": "text", "text": prompt}])
        calls = loop.tool_call_count()
        session.audit("subagent_end", toolCallId=ctx.tool_call_id, agent=agent.name, stop=stop, tool_calls=calls)
        report = loop.last_text.strip()
        if stop != "end_turn":
            report = (report + "\n\n" if report else "") + f"[The sub-agent stopped early: {stop}.]"
        if not report:
            report = "The sub-agent finished without a report."
        return ToolOutput.text(report, metadata={"subject": label, "agent": agent.name, "stop_reason": stop,
                                                 "tool_calls": calls})


class BackgroundAgents:
    """Sub-agents started with ``run_in_background``; cancelled when the session closes."""

    def __init__(self, session: Any = None) -> None:
        self.tasks: dict[str, asyncio.Task[ToolOutput]] = {}
        self.labels: dict[str, str] = {}

    def start(self, label: str, work: Coroutine[Any, Any, ToolOutput]) -> str:
        task_id = f"agent_{len(self.tasks) + 1}"
        self.tasks[task_id] = asyncio.create_task(work, name=task_id)
        self.labels[task_id] = label
        return task_id

    async def close(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)


BACKGROUND_AGENTS = ServiceKey[BackgroundAgents]("background_agents", BackgroundAgents)


def model_for(agent: AgentType, settings: Any) -> str | None:
    if agent.model is None:
        return None
    alias = agent.model.lower()
    if alias == "haiku":
        return str(settings.small_model)
    if alias in ("sonnet", "opus"):
        return None
    return agent.model

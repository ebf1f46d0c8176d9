"""TaskOutput / TaskStop: the report of a background sub-agent, and stopping one."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.agents.task import BACKGROUND_AGENTS, BackgroundAgents
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext


class TaskOutputInput(ToolInput):
    """Get the report of a sub-agent started with Task(run_in_background=true). By default waits until
    it finishes (up to timeout); with block=false answers at once whether it is still running."""

    task_id: str = Field(description="The task_id Task returned.")
    block: bool = Field(default=True, description="Wait for the agent to finish.")
    timeout: int = Field(default=120_000, ge=0, le=600_000, description="How long to wait, in ms.")


class TaskStopInput(ToolInput):
    """Stop a background sub-agent (started with Task(run_in_background=true)) that is no longer needed."""

    task_id: str = Field(description="The task_id Task returned.")


def _lookup(ctx: ToolContext, task_id: str) -> tuple[BackgroundAgents, asyncio.Task[ToolOutput]]:
    agents = ctx.session.service(BACKGROUND_AGENTS)
    task = agents.tasks.get(task_id)
    if task is None:
        known = ", ".join(agents.tasks) or "none"
        raise ToolError(f"No background agent {task_id!r}. Known task ids: {known}.")
    return agents, task


class TaskOutput(Tool[TaskOutputInput]):
    name: ClassVar[str] = "TaskOutput"
    kind: ClassVar[ToolKind] = "think"
    Input = TaskOutputInput

    def title(self, raw_input: dict[str, Any]) -> str:
        return f"Output of {raw_input.get('task_id') or 'agent'}"

    def is_read_only(self, inp: TaskOutputInput) -> bool:
        return True

    async def run(self, inp: TaskOutputInput, ctx: ToolContext) -> ToolOutput:
        agents, task = _lookup(ctx, inp.task_id)
        if inp.block and not task.done():
            await asyncio.wait([task], timeout=inp.timeout / 1000)
        label = agents.labels[inp.task_id]
        if not task.done():
            return ToolOutput.text(f"{label} ({inp.task_id}) is still running. Check again later.",
                                   metadata={"status": "running"})
        if task.cancelled():
            return ToolOutput.text(f"{label} ({inp.task_id}) was stopped before it finished.",
                                   metadata={"status": "stopped"})
        exc = task.exception()
        if exc is not None:
            raise ToolError(f"{label} ({inp.task_id}) failed: {type(exc).__name__}: {exc}")
        result = task.result()
        return ToolOutput(blocks=result.blocks, is_error=result.is_error,
                          metadata={**result.metadata, "status": "completed"})


class TaskStop(Tool[TaskStopInput]):
    name: ClassVar[str] = "TaskStop"
    kind: ClassVar[ToolKind] = "think"
    Input = TaskStopInput

    def title(self, raw_input: dict[str, Any]) -> str:
        return f"Stop {raw_input.get('task_id') or 'agent'}"

    def is_read_only(self, inp: TaskStopInput) -> bool:
        return True  # stops work the agent itself started

    async def run(self, inp: TaskStopInput, ctx: ToolContext) -> ToolOutput:
        agents, task = _lookup(ctx, inp.task_id)
        if task.done():
            return ToolOutput.text(f"{agents.labels[inp.task_id]} ({inp.task_id}) had already finished.")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return ToolOutput.text(f"Stopped {agents.labels[inp.task_id]} ({inp.task_id}).")

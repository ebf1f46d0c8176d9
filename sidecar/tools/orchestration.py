"""The orchestration tools (questions, plans, sub-agents, skills, tool search, settings), listed once."""

from __future__ import annotations

from typing import Any

from sidecar.tools.base import Tool


def orchestration_tools() -> list[Tool[Any]]:
    from sidecar.tools.agents.task import Task
    from sidecar.tools.agents.task_output import TaskOutput, TaskStop
    from sidecar.tools.interaction.ask_user_question import AskUserQuestion
    from sidecar.tools.interaction.brief import Brief
    from sidecar.tools.interaction.config import Config
    from sidecar.tools.interaction.todo_write import TodoWrite
    from sidecar.tools.skills.skill import Skill
    from sidecar.tools.toolsearch import ToolSearch

    return [AskUserQuestion(), TodoWrite(), Task(), TaskOutput(), TaskStop(), Skill(), ToolSearch(), Config(), Brief()]

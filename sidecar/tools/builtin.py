"""Every built-in tool, listed once. A new tool: write ``sidecar/tools/<family>/<tool>.py``, add it here.

The composition (``sidecar.server.core``) builds each session's ``ToolRegistry`` from this list. Imports
are local so that ``sidecar check-command`` and friends start fast.
"""

from __future__ import annotations

from typing import Any

from sidecar.tools.base import Tool


def builtin_tools() -> list[Tool[Any]]:
    from sidecar.tools.agents.task import Task
    from sidecar.tools.agents.task_output import TaskOutput, TaskStop
    from sidecar.tools.bash.bash import Bash
    from sidecar.tools.bash.bash_output import BashOutput
    from sidecar.tools.bash.kill_shell import KillShell
    from sidecar.tools.files.edit import EditTool
    from sidecar.tools.files.glob import GlobTool
    from sidecar.tools.files.grep import GrepTool
    from sidecar.tools.files.notebook_edit import NotebookEditTool
    from sidecar.tools.files.read import ReadTool
    from sidecar.tools.files.write import WriteTool
    from sidecar.tools.interaction.ask_user_question import AskUserQuestion
    from sidecar.tools.interaction.brief import Brief
    from sidecar.tools.interaction.config import Config
    from sidecar.tools.interaction.todo_write import TodoWrite
    from sidecar.tools.lsp.lsp import LSPTool
    from sidecar.tools.plan.exit_plan_mode import ExitPlanMode
    from sidecar.tools.skills.skill import Skill
    from sidecar.tools.toolsearch import ToolSearch
    from sidecar.tools.web.fetch import WebFetch
    from sidecar.tools.web.search import WebSearch

    return [
        ExitPlanMode(), WebFetch(), WebSearch(), LSPTool(),
        ReadTool(), WriteTool(), EditTool(), GlobTool(), GrepTool(), NotebookEditTool(),
        AskUserQuestion(), TodoWrite(), Task(), TaskOutput(), TaskStop(), Skill(), ToolSearch(), Config(), Brief(),
        Bash(), BashOutput(), KillShell(),
    ]


def file_tools() -> list[Tool[Any]]:
    """The file family alone (Read, Write, Edit, Glob, Grep, NotebookEdit), for a registry of just those."""
    families = {"Read", "Write", "Edit", "Glob", "Grep", "NotebookEdit"}
    return [t for t in builtin_tools() if t.name in families]

"""TodoWrite: the agent's task list, kept in the session and shown in the editor as an ACP ``plan``.

Each call replaces the whole list (Claude Code's contract). The list is validated (non-empty content,
at most one task ``in_progress``), kept in ``session.todos`` and published as
``session/update {"sessionUpdate": "plan", "entries": [{content, priority, status}]}``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from sidecar.errors import ToolError
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext

Status = Literal["pending", "in_progress", "completed"]


class Todo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="What to do, in the imperative (\"Run the tests\").")
    status: Status = Field(description="pending, in_progress (at most one task at a time) or completed.")
    activeForm: str = Field(description="The same task in the present continuous (\"Running the tests\"), "
                                        "shown while it is in progress.")


class TodoWriteInput(ToolInput):
    """Create and update a structured task list for the current work. The user sees it as your plan and
    watches it progress; it also keeps you on track through long, multi-step work.

    When to use it:
    - A task that needs three or more distinct steps, or careful work across several files.
    - The user gives several things to do at once (a numbered list, "also ...").
    - The user asks for a todo list or a plan to follow.
    - New work turns up while you go (a failing test to fix, a follow-up the user adds): add it.

    When not to use it:
    - One simple step, or a few trivial ones ("rename this variable", "run the tests").
    - Questions, explanations and conversation: there is nothing to track.
    - Do not add steps just to have a list; each item is a piece of work the user would recognise.

    How:
    - Each call replaces the whole list: send every task, not only the changed ones.
    - Each task has `content` (imperative: "Add retry to the client") and `activeForm` (what is shown
      while it runs: "Adding retry to the client"), and a status: pending, in_progress or completed.
    - Mark a task in_progress before you start it; keep exactly one in_progress while you work.
    - Mark a task completed as soon as it is fully done (tests pass, nothing left broken); do not batch
      completions at the end. If it is blocked or only partly done, keep it in_progress and add a task
      for what blocks it.
    - Remove tasks that turned out to be irrelevant instead of completing them.
    """

    todos: list[Todo] = Field(description="The complete, updated task list.")


class TodoWrite(Tool[TodoWriteInput]):
    name: ClassVar[str] = "TodoWrite"
    kind: ClassVar[ToolKind] = "think"
    Input = TodoWriteInput

    def title(self, raw_input: dict[str, Any]) -> str:
        todos = raw_input.get("todos")
        return f"Update todos ({len(todos)})" if isinstance(todos, list) else "Update todos"

    def is_read_only(self, inp: TodoWriteInput) -> bool:
        return True  # touches nothing outside the session

    def is_concurrency_safe(self, inp: TodoWriteInput, ctx: ToolContext) -> bool:
        return False  # two lists in one turn: the later one wins, in call order

    async def validate(self, inp: TodoWriteInput, ctx: ToolContext) -> None:
        for i, todo in enumerate(inp.todos, 1):
            if not todo.content.strip():
                raise ToolError(f"Task {i} has empty content. Give every task a short imperative description.")
        active = [t.content for t in inp.todos if t.status == "in_progress"]
        if len(active) > 1:
            listed = "; ".join(active)
            raise ToolError(f"{len(active)} tasks are in_progress ({listed}); at most one may be. Keep the one "
                            "you are working on in_progress and set the others to pending or completed.")

    async def run(self, inp: TodoWriteInput, ctx: ToolContext) -> ToolOutput:
        todos = [t.model_dump() for t in inp.todos]
        ctx.session.todos = todos
        ctx.session.log.todos(todos)
        await ctx.session.send_update(plan_update(todos))
        done = sum(1 for t in todos if t["status"] == "completed")
        text = ("Todos have been modified successfully. Ensure that you continue to use the todo list to track "
                "your progress. Please proceed with the current tasks if applicable."
                f" ({done}/{len(todos)} completed)")
        lines = [f"[{'x' if t['status'] == 'completed' else ('~' if t['status'] == 'in_progress' else ' ')}] "
                 f"{t['content']}" for t in todos]
        return ToolOutput.text(text, editor_content=[
            {"type": "content", "content": {"type": "text", "text": "\n".join(lines) or "(empty list)"}}],
            metadata={"subject": "todos", "count": len(todos)})


def plan_update(todos: list[dict[str, Any]]) -> dict[str, Any]:
    """The ACP ``plan`` session update for a todo list."""
    return {"sessionUpdate": "plan", "entries": [
        {"content": t["content"], "priority": "medium", "status": t["status"]} for t in todos]}

"""KillShell: stop a background shell started with Bash run_in_background (its whole process group)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.bash.shells import shells_of
from sidecar.tools.context import ToolContext


class KillShellInput(ToolInput):
    """Stop a background shell you started with Bash `run_in_background` (SIGTERM to its process group,
    SIGKILL if it does not exit). Use it when a server, watcher or long job is no longer needed, and
    before starting a second copy of the same server on the same port. Shells still running when the
    session ends are stopped anyway.
    """

    shell_id: str = Field(description="The ID of the background shell to stop, e.g. bash_1")


class KillShell(Tool[KillShellInput]):
    name: ClassVar[str] = "KillShell"
    kind: ClassVar[ToolKind] = "execute"
    Input: ClassVar[type[ToolInput]] = KillShellInput

    def title(self, raw_input: dict[str, Any]) -> str:
        return f"Stop {raw_input.get('shell_id') or 'background shell'}"

    async def check_permission(self, inp: KillShellInput, ctx: ToolContext) -> None:
        return None  # ends a process this session started; nothing else

    async def run(self, inp: KillShellInput, ctx: ToolContext) -> ToolOutput:
        shells = shells_of(ctx.session)
        shell = shells.shells.get(inp.shell_id)
        if shell is None:
            known = ", ".join(shells.shells) or "none"
            raise ToolError(f"No background shell {inp.shell_id!r} (known: {known}).")
        was_running = shell.running.running
        await shells.kill(inp.shell_id)
        if not was_running:
            return ToolOutput.text(
                f"Shell {inp.shell_id} had already finished with exit code "
                f"{shell.running.exit_code}; its leftover processes, if any, were stopped."
            )
        return ToolOutput.text(
            f"Shell {inp.shell_id} was killed (command: {shell.running.command}).",
            metadata={"subject": inp.shell_id},
        )

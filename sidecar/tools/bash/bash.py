"""Bash: run a shell command in the workspace, governed as a mini runtime (seed 000).

contract → ``BashInput`` (its docstring is what the model reads); governance → parse + classify
(``classify.analyze``), the permission request with per-subcommand rule parts and the narrowest
suggested rule, catastrophic commands refused in every mode; execution → ``runner`` in the sandbox,
cwd persisted in the session's ``ShellManager``; presentation → bounded output with exit code,
duration and kill status, streamed to the editor while it runs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.shell.classify import Analysis, Where, analyze
from sidecar.shell.rules import suggest_rule
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.bash import runner, sandbox
from sidecar.tools.bash.check_command import bash_request
from sidecar.tools.bash.shells import shells_of
from sidecar.tools.context import ToolContext

CONCURRENCY_CHECK_CHARS = 2048


class BashInput(ToolInput):
    """Run a shell command (bash) in the workspace and return its output.

    Use it for builds, tests, git, package managers and other programs. Prefer the dedicated tools
    for files: Read (not cat/head/tail), Grep (not grep/rg), Glob (not find/ls), Edit/Write (not
    sed/echo >). The working directory persists between calls (a `cd` stays in effect); environment
    changes do not. Quote paths with spaces. Chain dependent steps with `&&`; issue independent
    read-only commands as separate parallel calls. Output over 30,000 characters is cut in the middle and
    saved to a file you can Read. Commands that need input will fail (stdin is empty). For servers,
    watchers and other long-running commands use run_in_background and poll with BashOutput.
    Commands that only read run without asking; others follow the user's permission rules.
    """

    command: str = Field(description="The command to run")
    timeout: int | None = Field(
        default=None, description="Optional timeout in milliseconds (max 600000); default 120000"
    )
    description: str | None = Field(
        default=None,
        description="A short (5-10 words) description of what "
        "the command does, in active voice, e.g. 'Run the unit tests'",
    )
    run_in_background: bool | None = Field(
        default=None,
        description="Run in the background and return a "
        "shell id at once; read its output later with BashOutput",
    )
    dangerouslyDisableSandbox: bool | None = Field(
        default=None, description="Run outside the sandbox (only honoured when the user's settings allow it)"
    )


class Bash(Tool[BashInput]):
    name: ClassVar[str] = "Bash"
    kind: ClassVar[ToolKind] = "execute"
    Input: ClassVar[type[ToolInput]] = BashInput

    # ---- contract -------------------------------------------------------------------------
    def title(self, raw_input: dict[str, Any]) -> str:
        """Short: the command's first line (cut at 120), with the count of further lines. The model's
        ``description`` is not part of it: the question shows what runs, in full, as its content."""
        command = str(raw_input.get("command") or "").strip()
        lines = command.splitlines()
        if not lines:
            return "Bash"
        first = lines[0] if len(lines[0]) <= 120 else lines[0][:117] + "..."
        more = f" (+{len(lines) - 1} more line{'s' if len(lines) > 2 else ''})" if len(lines) > 1 else ""
        return f"`{first}`{more}"

    # ---- governance -----------------------------------------------------------------------
    def _analysis(self, inp: BashInput, ctx: ToolContext | None) -> Analysis:
        if ctx is None:
            return analyze(inp.command, Where(Path.cwd()))
        shells = shells_of(ctx.session)
        return analyze(inp.command, Where(shells.cwd, ctx.roots))

    async def _analysis_off_loop(self, inp: BashInput, ctx: ToolContext) -> Analysis:
        """Classification is CPU work (bashlex, ~0.1 s per KB on this box): a worker thread keeps the
        event loop answering other sessions, ``session/cancel`` included (bench/bash_classify.py)."""
        return await asyncio.to_thread(self._analysis, inp, ctx)

    def is_read_only(self, inp: BashInput) -> bool:
        return self._analysis(inp, None).read_only

    def is_concurrency_safe(self, inp: BashInput) -> bool:
        # Asked synchronously by the agent loop: only short commands are classified here (a few ms);
        # a longer one simply runs in order, and its classification happens off the loop.
        return len(inp.command) <= CONCURRENCY_CHECK_CHARS and self.is_read_only(inp)

    async def validate(self, inp: BashInput, ctx: ToolContext) -> None:
        if not inp.command.strip():
            raise ToolError("The command is empty. Pass the shell command to run in `command`.")
        if inp.timeout is not None and not 0 < inp.timeout <= runner.MAX_TIMEOUT_MS:
            raise ToolError(
                f"timeout must be between 1 and {runner.MAX_TIMEOUT_MS} milliseconds; "
                f"omit it for the default of {runner.DEFAULT_TIMEOUT_MS}. For longer work use "
                "run_in_background and poll with BashOutput."
            )

    async def check_permission(self, inp: BashInput, ctx: ToolContext) -> None:
        analysis = await self._analysis_off_loop(inp, ctx)
        pending = [s for s in analysis.subcommands if s.cls != "read-only"]
        suggestion = None
        if pending and pending[0].words and "\n" not in inp.command:
            suggestion = suggest_rule(pending[0].words)
        request = bash_request(
            analysis, raw_input=inp.model_dump(exclude_none=True), suggested_rule=suggestion
        )
        request.title = self.title(inp.model_dump())
        request.content = question_content(inp.command, inp.description)
        if analysis.catastrophic:
            request.forbidden_reason = (
                f"this command is refused in every mode: {analysis.catastrophic}. "
                "Do not try to run it another way"
            )
        ctx.prepared = analysis
        await ctx.permissions.require(request, ctx)

    # ---- execution + presentation ---------------------------------------------------------
    async def run(self, inp: BashInput, ctx: ToolContext) -> ToolOutput:
        shells = shells_of(ctx.session)
        analysis: Analysis = ctx.prepared or await self._analysis_off_loop(inp, ctx)
        notes: list[str] = []
        policy = shells.sandbox_policy(
            network=analysis.worst == "network" or any(s.cls == "network" for s in analysis.subcommands),
            read_only=analysis.read_only,
        )
        if inp.dangerouslyDisableSandbox and policy is not None:
            if shells.unsandboxed_allowed():
                policy.cleanup()
                policy = None
                notes.append("Ran outside the sandbox (dangerouslyDisableSandbox, allowed by settings).")
            else:
                notes.append(
                    "dangerouslyDisableSandbox was ignored: the settings do not allow unsandboxed "
                    "commands (sandbox.allowUnsandboxedCommands). Ask the user if the sandbox blocks "
                    "what you need."
                )
        if policy is None and not shells.sandbox_note_given and not inp.dangerouslyDisableSandbox:
            shells.sandbox_note_given = True
            if not sandbox.available():
                notes.append(
                    f"Note: commands run without a sandbox ({sandbox.unavailable_reason()}); only the "
                    "permission rules govern them."
                )
        if inp.run_in_background and policy is not None:
            policy.network = True  # servers must be reachable from later commands (docs/bash.md)
        running = await shells.start(
            inp.command, ctx.tool_call_id, policy, cap=None if inp.run_in_background else runner.FILE_CAP
        )
        if inp.run_in_background:
            shell = shells.add_background(running)
            text = (
                f"Command running in the background with ID: {shell.id}. Read its output with BashOutput "
                f"(bash_id: {shell.id}); stop it with KillShell (shell_id: {shell.id})."
            )
            return ToolOutput.text(
                "\n".join([text, *notes]),
                metadata={"subject": inp.command, "shell_id": shell.id, "background": True},
            )
        timeout_ms = inp.timeout or runner.DEFAULT_TIMEOUT_MS
        await runner.run(running, timeout_ms, ctx.progress)
        cwd_note = shells.update_cwd(running)
        rendered = runner.render(running.output_path, total=running.pump.total)
        status = status_line(running, timeout_ms)
        parts = [rendered.text.rstrip("\n") if rendered.text else "(no output)", status]
        if cwd_note:
            parts.append(cwd_note)
        parts += notes
        failed = running.timed_out or running.killed or (running.exit_code or 0) != 0
        if not rendered.truncated:
            _remove_quietly(running.output_path)
        _remove_quietly(running.cwd_path)
        return ToolOutput.text(
            "\n".join(parts),
            is_error=failed,
            bound_output=False,
            metadata={
                "subject": inp.command,
                "exit_code": running.exit_code,
                "timed_out": running.timed_out,
                "killed": running.killed,
                "duration_ms": int(running.duration * 1000),
                "truncated": rendered.truncated,
                "output_bytes": rendered.size,
                "output_path": str(rendered.saved_path) if rendered.saved_path else None,
                "sandboxed": policy is not None,
            },
        )


def question_content(command: str, description: str | None) -> list[dict[str, Any]]:
    """What the permission question shows: every line of the command, in full, as a block of its own;
    the model's description after it, labelled as the model's words."""
    fence = "```"
    while fence in command:
        fence += "`"
    blocks = [{"type": "content", "content": {"type": "text", "text": f"{fence}sh\n{command}\n{fence}"}}]
    if description:
        blocks.append({"type": "content", "content": {"type": "text", "text": f"The model says: {description}"}})
    return blocks


def status_line(running: runner.RunningCommand, timeout_ms: int) -> str:
    secs = f"{running.duration:.2f} s"
    if running.timed_out:
        return (
            f"Timed out after {timeout_ms} ms ({secs}); the command and its child processes were killed "
            "(SIGTERM, then SIGKILL). Use run_in_background for long-running commands, or a larger "
            f"timeout (max {runner.MAX_TIMEOUT_MS})."
        )
    if running.killed:
        return f"Killed after {secs}."
    return f"Exit code {running.exit_code} ({secs})"


def _remove_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass

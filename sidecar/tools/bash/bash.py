"""Bash: run a shell command in the workspace, governed as a mini runtime
(docs/contract.md §5.1, mechanism three).

contract → ``BashInput`` (its docstring is what the model reads); governance → parse + classify
(``classify.analyze``), the permission request with per-subcommand rule parts and the narrowest
suggested rule, catastrophic commands refused in every mode; execution → ``runner`` in the sandbox,
cwd persisted in the session's ``ShellManager``; presentation → bounded output with exit code,
duration and kill status, streamed to the editor while it runs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.shell.classify import GIT_PROGRAMS_REASON, Analysis, Where, analyze
from sidecar.shell.rules import describe_rule, suggest_rule
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.bash import runner, sandbox, terminal
from sidecar.tools.bash.command_request import command_request
from sidecar.tools.bash.shells import ShellManager, shells_of
from sidecar.tools.context import ToolContext
from sidecar.workspace.gitenv import repo_programs

if TYPE_CHECKING:  # imported with the pool, on the first long command: ~0.9 MB an idle sidecar never needs
    from concurrent.futures import ProcessPoolExecutor

    from sidecar.session import Session

CONCURRENCY_CHECK_CHARS = 2048
# The builtins that move the shell. The classifier lists them wherever they are (``builtin cd``, ``eval``,
# a subshell, a loop), and a read-only command can run nothing else that does (``source`` asks).
MOVES_THE_SHELL = frozenset({"cd", "pushd", "popd"})
# Commands longer than this are classified in a worker process, shorter ones in a thread.
OFF_PROCESS_CHARS = 4096
_pool: ProcessPoolExecutor | None = None


def _lower_priority() -> None:
    """The worker yields the CPU to the sidecar's event loop (nice 10) on a busy machine."""
    try:
        os.nice(10)
    except OSError:
        pass


async def classify_off_loop(command: str, where: Where) -> Analysis:
    """``analyze`` without holding up the event loop (other sessions, ``session/cancel``).

    Classification is CPU work (bashlex: ~0.05-0.1 s per KiB on the shared box). A thread is enough for
    short commands; for long ones a thread still starves the loop of the GIL (measured: 66-200 ms
    pauses during a 64 KiB command at load 11), so they go to one spawned worker process at nice 10,
    started on first use (bench/bash_classify.py --long)."""
    if len(command) <= OFF_PROCESS_CHARS:
        return await asyncio.to_thread(analyze, command, where)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_lower_priority
        )
    try:
        return await asyncio.get_running_loop().run_in_executor(_pool, analyze, command, where)
    except BrokenProcessPool:
        _pool = None
        return await asyncio.to_thread(analyze, command, where)


class BashInput(ToolInput):
    """Run a shell command (bash) in the workspace and return its output, exit code and duration.

    Use it for what only a program can do: builds, tests, linters, git, package managers, running
    scripts. It is not the tool for looking at or changing files.

    Dedicated tools first:
    - Reading a file: Read, not cat/head/tail/less. Finding files: Glob, not find/ls -R. Searching
      contents: Grep, not grep/rg/ag. Changing files: Edit or Write, not sed -i, awk, echo/cat with `>`
      or heredocs. Those tools show the user proper diffs and file cards, respect the read-before-edit
      checks and cost fewer tokens. `ls` of one directory to check it exists is fine.
    - Talk to the user in your reply, never through `echo` or `printf`.

    Writing the command:
    - Quote every path that contains spaces or shell characters with double quotes:
      `cd "/work/My Project"`, `pytest "tests/test a.py"`. Unquoted, the shell splits it into two words.
    - The working directory persists between calls (a `cd` stays in effect; a `cd` that would leave
      the workspace roots is not kept); variables, `export`s and activated virtualenvs do not. Prefer
      absolute paths over changing directory; when a tool must run elsewhere use `cd "dir" && tool`.
    - Several steps that depend on each other: one call, joined with `&&` (or `;` when a step may fail
      and the next must run anyway). Independent commands (e.g. `git status` and `git diff`): send them
      as separate Bash calls in the same message, so they run side by side. Do not use newlines to
      separate commands, except inside quoted strings and heredocs.
    - Give `description` a short active-voice summary (5-10 words, e.g. "Run the parser unit tests");
      the user sees it on the tool card.

    No interactive programs: stdin is empty and there is no terminal, so anything that waits for input
    hangs until it times out or fails at once. Never start editors (vim, nano), pagers (less, more, `git
    log` without a pager setting: use `git --no-pager`), REPLs, `git rebase -i`, `git add -i/-p` or
    `git commit` without `-m`. Pass the non-interactive flag when there is one (`--yes`, `-y`,
    `--no-input`, `--non-interactive`, `CI=1`, `npm init -y`).

    Time and output:
    - `timeout` is in milliseconds: 120000 (2 minutes) by default, at most 600000 (10 minutes). Give a
      long build or test run a larger timeout up front rather than retrying after it was killed.
    - Output over 30,000 characters is cut in the middle; the whole output is saved to a file whose
      path the result names, and you can Read or Grep it. Narrow noisy commands yourself (`-q`, `| tail
      -50`, test selection) so the part you need is not the part that is cut.
    - A non-zero exit code comes back as an error result with the output; read it before retrying.

    Background work: for servers, watchers and anything that runs until stopped, or for a long job you
    want to keep working beside, set `run_in_background: true`. The call returns a shell id at once;
    read new output with BashOutput (optionally with a `filter`) and stop it with KillShell when it is
    no longer needed. Do not append `&` yourself and do not `sleep` in a loop waiting for it; check
    its output when you need it. Foreground commands that fork a daemon keep it running until the
    session ends.

    Sandbox: where the platform has one, commands run in a sandbox: the file system is read-only
    except the workspace roots and a private temporary directory ($TMPDIR), and the network is off
    unless the user allowed it. Commands that only read get $TMPDIR alone; the agent's own
    configuration (.claude/, .vscode/, CLAUDE.md, AGENTS.md, git config and hooks) stays read-only.
    Typical signs that the sandbox stopped something: "Read-only file
    system" or "Permission denied" when writing outside the workspace (e.g. ~/.cache, /usr/local),
    "Could not resolve host", "Network is unreachable" or a connection error from a download. When
    that happens, do not try tricks to get around it. Say which command was blocked and why it needs
    more access; if the task really needs it, run the same command again with
    `dangerouslyDisableSandbox: true`, which the user's settings may allow or refuse (the user may be
    asked). Prefer a change that needs no extra access: cache or build output inside the workspace,
    a tool already installed. Commands that only read run without asking; the rest follow the user's
    permission rules, and commands that would destroy the system are always refused.

    Git:
    - Commit only when the user asked you to. Never push unless asked.
    - Before a commit, look at `git status`, `git diff` (staged and unstaged) and `git log -n 5
      --oneline` (independent: run them in parallel) to see what changed and how messages are written
      here. Stage the files you mean by name rather than `git add -A`/`git add .`, and leave out files
      that may hold secrets (.env, credentials, keys); warn the user if they asked to commit one.
    - Write a message that says why, in the repository's style; pass it with `-m`, or for several lines
      with a quoted heredoc: `git commit -F - <<'EOF'` ... `EOF`.
    - Never skip or bypass hooks or signing (`--no-verify`, `-n`, `--no-gpg-sign`, `HUSKY=0`) unless
      the user asked. The repository's hooks do not run for the commands you run here, so run the checks
      they stand for (the project's formatter, linter, tests) yourself before committing. If a commit
      fails, it did not happen: fix the cause and make a new commit; do not `--amend`, which would change
      the previous commit.
    - Never force-push (`--force`, `--force-with-lease`, `+refspec`), least of all to main/master;
      never rewrite published history (rebase, reset --hard, amend of a pushed commit) or delete
      branches unless the user explicitly asked for exactly that. Do not change git config.
    - If there is nothing to commit, say so instead of making an empty commit.
    - Pull requests: with the `gh` CLI. First see the whole branch: `git status`, `git diff
      <base>...HEAD`, `git log <base>..HEAD` and whether the branch tracks a remote. Push with `git
      push -u origin <branch>` if needed, then `gh pr create --title "..." --body "..."` (a heredoc for
      the body): a short summary of every commit on the branch, not only the last, and how it was
      tested. Give the user the PR URL. Use `gh` for other GitHub work too (issues, checks, comments).
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


class _GitSettingsDeferred:
    """Stands in for ``repo_programs`` on the event loop: answers "none" and notes that it was asked."""

    def __init__(self) -> None:
        self.asked = False

    def __call__(self, directory: Path) -> list[str]:
        self.asked = True
        return []


@dataclass
class _OnLoop:
    """An analysis ``is_concurrency_safe`` made, and where: ``prepare`` keeps it if the shell is still there."""

    analysis: Analysis
    cwd: Path
    roots: list[Path]


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
    @staticmethod
    def _where(ctx: ToolContext, git_programs: Callable[[Path], list[str]] = repo_programs) -> Where:
        """Where the session's shell is; a git command is judged with its repository's own settings."""
        return Where(shells_of(ctx.session).cwd, ctx.roots, git_programs=git_programs)

    def anticipate(self, session: Session) -> None:
        """A read-only sandbox started while the command still streams (docs/bash.md, "A sandbox started
        ahead"): the session's first read-only command need not wait for bubblewrap either."""
        shells_of(session).prepare_spare()

    def is_read_only(self, inp: BashInput) -> bool:
        # What a command reads depends on where it runs: ``is_concurrency_safe`` and ``may_write`` judge it
        # with the session's shell; without one it counts as a change.
        return False

    def may_write(self, inp: BashInput, ctx: ToolContext) -> bool:
        # The classification the gate judged (with the session's roots); a read-only command also runs in
        # a read-only sandbox when there is one. A command not yet classified may write.
        analysis = ctx.prepared
        return not (isinstance(analysis, Analysis) and analysis.read_only)

    def is_concurrency_safe(self, inp: BashInput, ctx: ToolContext) -> bool:
        # Asked synchronously by the agent loop: only short commands are classified here (a few ms);
        # a longer one simply runs in order, and its classification happens off the loop. The analysis
        # is kept for ``prepare``, unless a git command in it needed its repository's settings (reading
        # them runs git, which the loop must not wait for: ``prepare`` classifies it again with them).
        if len(inp.command) > CONCURRENCY_CHECK_CHARS:
            return False
        git = _GitSettingsDeferred()
        where = self._where(ctx, git)
        analysis = analyze(inp.command, where)
        if not git.asked:
            ctx.prepared = _OnLoop(analysis, where.cwd, list(where.roots))
        return analysis.read_only

    async def prepare(self, inp: BashInput, ctx: ToolContext) -> None:
        """The command's analysis, once per call: the one ``is_concurrency_safe`` made when it still holds
        (same shell directory and roots), else made now off the loop."""
        where = self._where(ctx)
        early = ctx.prepared
        if (isinstance(early, _OnLoop) and early.analysis.command == inp.command and early.cwd == where.cwd
                and early.roots == list(where.roots)):
            ctx.prepared = early.analysis
        else:
            ctx.prepared = await classify_off_loop(inp.command, where)

    async def _analysis(self, inp: BashInput, ctx: ToolContext) -> Analysis:
        if not isinstance(ctx.prepared, Analysis):  # a step driven without ``prepare`` (one tool by hand)
            await self.prepare(inp, ctx)
        analysis: Analysis = ctx.prepared
        return analysis

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
        analysis = await self._analysis(inp, ctx)
        pending = [s for s in analysis.subcommands if s.cls != "read-only"]
        suggestion = None
        if pending and pending[0].words and "\n" not in inp.command:
            suggestion = suggest_rule(pending[0].words, pending[0].text)
        request = command_request(
            analysis, raw_input=inp.model_dump(exclude_none=True), suggested_rule=suggestion
        )
        request.title = self.title(inp.model_dump())
        request.content = question_content(inp.command, inp.description)
        request.content += [{"type": "content", "content": {"type": "text", "text": f"Warning: {s.reason}."}}
                            for s in pending if s.reason.startswith(GIT_PROGRAMS_REASON)][:1]
        if suggestion is not None:  # what "Always allow" would cover besides this command (issue 27)
            request.content.append({"type": "content", "content": {
                "type": "text", "text": f"\"Always allow\": {describe_rule(suggestion)}"}})
        if analysis.catastrophic:
            request.forbidden_reason = (
                f"this command is refused in every mode: {analysis.catastrophic}. "
                "Do not try to run it another way"
            )
        await ctx.permissions.require(request, ctx)

    # ---- execution + presentation ---------------------------------------------------------
    async def run(self, inp: BashInput, ctx: ToolContext) -> ToolOutput:
        shells = shells_of(ctx.session)
        analysis = await self._analysis(inp, ctx)
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
        # A read-only command's globs run as the file names judged (docs/bash.md, "Expansions").
        command = analysis.run_command or inp.command
        if not inp.run_in_background and ctx.session.client.offers_terminal():
            # The editor runs it in its own terminal (docs/bash.md, "In the client's terminal").
            return await self._run_in_client_terminal(inp, ctx, policy, notes, command)
        running = await shells.start(
            command, ctx.tool_call_id, policy, cap=None if inp.run_in_background else runner.FILE_CAP,
            report_cwd=moves_the_shell(analysis),
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
        if analysis.read_only and policy is not None:
            # The next read-only command's sandbox, made while the model answers (docs/bash.md, "A sandbox
            # started ahead"); after this step's output is on its way.
            asyncio.get_running_loop().call_soon(shells.prepare_spare, policy.network)
        return ended_output(inp, running, shells, timeout_ms, notes, sandboxed=policy is not None)

    async def _run_in_client_terminal(self, inp: BashInput, ctx: ToolContext,
                                      policy: sandbox.SandboxPolicy | None, notes: list[str],
                                      command: str) -> ToolOutput:
        shells = shells_of(ctx.session)
        timeout_ms = inp.timeout or runner.DEFAULT_TIMEOUT_MS
        done = await terminal.run(ctx.session.client, shells, command, ctx.tool_call_id, policy,
                                  timeout_ms, ctx.show)
        return ended_output(inp, done, shells, timeout_ms, notes, sandboxed=policy is not None)


def moves_the_shell(analysis: Analysis) -> bool:
    """Whether the command may leave the shell in another directory (then its final one is reported)."""
    return not analysis.read_only or any(s.words and s.words[0] in MOVES_THE_SHELL for s in analysis.subcommands)


class Ended(Protocol):
    """How a command ended and where its output is: local (``runner.RunningCommand``) or in the client's
    terminal (``terminal.TerminalRun``)."""

    timed_out: bool
    killed: bool
    exit_code: int | None

    @property
    def duration(self) -> float: ...

    @property
    def output_path(self) -> Path: ...

    @property
    def cwd_path(self) -> Path | None: ...

    @property
    def total(self) -> int: ...

    def final_cwd(self) -> Path | None: ...


def ended_output(inp: BashInput, ended: Ended, shells: ShellManager, timeout_ms: int, notes: list[str], *,
                 sandboxed: bool) -> ToolOutput:
    """The result of a foreground command that has ended: its output bounded (head, marker, tail), the
    status line, the cwd note, the notes; its files removed unless the result names the output file.
    A command run in the client's terminal adds its signal and terminal id, and the card embeds the
    terminal (the output rides along for a replay, which has no terminal: ``SessionLog.update``)."""
    cwd_note = shells.update_cwd(ended)
    in_terminal = ended if isinstance(ended, terminal.TerminalRun) else None
    rendered = runner.render(ended.output_path, total=ended.total,
                             lost_middle=in_terminal is not None and in_terminal.lost_middle)
    status = status_line(ended, timeout_ms)
    after = [status, *([cwd_note] if cwd_note else []), *notes]
    output = rendered.text.rstrip("\n") if rendered.text else "(no output)"
    failed = ended.timed_out or ended.killed or ended.exit_code != 0
    if not rendered.truncated:
        _remove_quietly(ended.output_path)
    if ended.cwd_path is not None:
        _remove_quietly(ended.cwd_path)
    metadata: dict[str, Any] = {"subject": inp.command, "exit_code": ended.exit_code}
    if in_terminal is not None:
        metadata["signal"] = in_terminal.signal
    metadata |= {
        "timed_out": ended.timed_out,
        "killed": ended.killed,
        "duration_ms": int(ended.duration * 1000),
        "truncated": rendered.truncated,
        "output_bytes": rendered.size,
        "output_path": str(rendered.saved_path) if rendered.saved_path else None,
        "sandboxed": sandboxed,
    }
    editor_content: list[dict[str, Any]] = []
    if in_terminal is not None:
        metadata["terminal_id"] = in_terminal.terminal_id
        # The editor shows the output in its terminal; the card adds how it ended, not the output again.
        editor_content = [{"type": "terminal", "terminalId": in_terminal.terminal_id,
                           "_meta": {"sidecar": {"output": rendered.text.rstrip("\n") or "(no output)"}}},
                          {"type": "content", "content": {"type": "text", "text": "\n".join(after)}}]
    return ToolOutput.text("\n".join([output, *after]), is_error=failed, bound_output=False,
                           editor_content=editor_content, metadata=metadata)


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


def status_line(running: Ended, timeout_ms: int) -> str:
    secs = f"{running.duration:.2f} s"
    if running.timed_out:
        return (
            f"Timed out after {timeout_ms} ms ({secs}); the command and its child processes were killed "
            "(SIGTERM, then SIGKILL). Use run_in_background for long-running commands, or a larger "
            f"timeout (max {runner.MAX_TIMEOUT_MS})."
        )
    if running.killed:
        return f"Killed after {secs}."
    if running.exit_code is None:
        signal = getattr(running, "signal", None)
        return f"Ended by signal {signal} ({secs})" if signal else f"Ended without an exit code ({secs})"
    return f"Exit code {running.exit_code} ({secs})"


def _remove_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass

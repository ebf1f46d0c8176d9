"""Per-session shell state: the working directory ``cd`` leaves behind, background shells, cleanup.

One ``ShellManager`` per session (``session.service(SHELLS)``). ``close()`` kills every
background shell and every process group a foreground command left running; the session core calls
it when the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sidecar.errors import ToolError
from sidecar.secrets import scrubbed_env
from sidecar.session import ServiceKey
from sidecar.tools.bash import runner, sandbox
from sidecar.workspace.gitenv import safe_git_env

if TYPE_CHECKING:
    from sidecar.session import Session

# Environment variables removed from every Bash command's environment: they would change what a command
# the classifier called read-only does. LESSOPEN/LESSCLOSE name an input preprocessor ``less`` runs on
# each file; CDPATH sends a relative ``cd src`` to another folder than the one the classifier resolved.
CHANGES_WHAT_RUNS = ("LESSOPEN", "LESSCLOSE", "CDPATH")
# A spare sandbox nobody used for this long ends (two processes and two pipes less).
SPARE_IDLE_S = 300.0


@dataclass
class BackgroundShell:
    id: str
    running: runner.RunningCommand
    offset: int = 0  # bytes of output already returned by BashOutput
    waiter: asyncio.Task[Any] | None = None


class EndsSomewhere(Protocol):
    """A finished command that can tell the directory it ended in (local or in the client's terminal)."""

    def final_cwd(self) -> Path | None: ...


def session_setting(session: Session, *keys: str) -> Any:
    """The first value at ``keys`` in the session's settings sources (highest precedence first)."""
    gate = getattr(session, "permissions", None)
    if gate is None:
        return None
    sources = gate.settings().sources
    for src in sources:
        node: Any = getattr(src, "data", None)
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


class ShellManager:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.cwd: Path = session.cwd
        self.shells: dict[str, BackgroundShell] = {}
        self._ids = itertools.count(1)
        self._calls = itertools.count(1)
        self._groups: set[int] = set()
        self.sandbox_note_given = False
        self._tmp = Path(tempfile.mkdtemp(prefix=f"sidecar-{session.id}-"))
        # The read-only sandbox started ahead for the next command (``prepare_spare``), and when it was.
        self._spare: runner.SpareSandbox | None = None
        self._spare_timer: asyncio.TimerHandle | None = None
        self._closed = False  # the session ended: no spare is started after it

    # ---- where things go --------------------------------------------------------------------
    @property
    def tmp_dir(self) -> Path:
        """The session's TMPDIR: writable inside every sandbox policy."""
        return self._tmp

    def output_path(self, call_id: str) -> Path:
        try:
            out_dir = self.session.store.tool_output_dir(self.session.id)
        except Exception:
            out_dir = self._tmp
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id) or "call"
        return out_dir / f"bash-{safe}-{next(self._calls)}.log"

    def env(self) -> dict[str, str]:
        extra = session_setting(self.session, "secretEnvVars") or []
        names = tuple(str(n) for n in extra if isinstance(n, str))
        env = safe_git_env(scrubbed_env(extra_secret_names=names))
        env["TMPDIR"] = str(self._tmp)
        for name in CHANGES_WHAT_RUNS:
            env.pop(name, None)
        return env

    # ---- sandbox ----------------------------------------------------------------------------
    def sandbox_policy(self, network: bool, read_only: bool = False) -> sandbox.SandboxPolicy | None:
        """The policy for the next command, or None when it runs unsandboxed.

        A command classified read-only (it ran without asking) gets no writable root at all, only the
        session's TMPDIR: whatever the classifier missed cannot write. Any other command gets the roots
        writable, the agent's configuration inside them read-only (``SandboxPolicy.guard``)."""
        if session_setting(self.session, "sandbox", "enabled") is False or not sandbox.available():
            return None
        allow_net = bool(session_setting(self.session, "sandbox", "allowNetwork"))
        if read_only:
            return sandbox.SandboxPolicy(writable=[self._tmp], network=network or allow_net)
        policy = sandbox.SandboxPolicy(writable=[*self.session.roots, self._tmp], network=network or allow_net)
        policy.guard(list(self.session.roots))
        return policy

    def unsandboxed_allowed(self) -> bool:
        return bool(session_setting(self.session, "sandbox", "allowUnsandboxedCommands"))

    # ---- running ----------------------------------------------------------------------------
    async def start(
        self,
        command: str,
        call_id: str,
        policy: sandbox.SandboxPolicy | None,
        cap: int | None = runner.FILE_CAP,
        report_cwd: bool = True,
    ) -> runner.RunningCommand:
        if self.cwd != self.session.cwd and not self.cwd.is_dir():
            # Removed since a command moved there: go back to the session's directory, and say so instead of
            # running the command elsewhere than the model meant (an `rm` there would hit other files).
            gone, self.cwd = self.cwd, self.session.cwd
            raise ToolError(f"The command was not run: the working directory {gone} no longer exists. The "
                            f"working directory is now {self.cwd}; run the command again (with `cd` to where "
                            "it should run, if not there).", metadata={"subject": command, "exit_code": None})
        env = self.env()
        spare = None
        if not report_cwd and cap is not None and policy is not None and self._spare is not None \
                and self._spare.fits(runner.spare_key(policy, env)):
            spare = self._take_spare()
        running = await runner.start(
            command,
            cwd=self.cwd,
            env=env,
            output_path=self.output_path(call_id),
            policy=policy,
            cap=cap,
            report_cwd=report_cwd,
            spare=spare,
        )
        self._groups.add(running.pgid)
        return running

    # ---- a sandbox ready ahead --------------------------------------------------------------
    @property
    def spare(self) -> runner.SpareSandbox | None:
        """The read-only sandbox waiting for the next read-only command, if any."""
        return self._spare

    def prepare_spare(self, network: bool = False) -> None:
        """Start the read-only sandbox the next read-only command will run in, unless one waits already
        (docs/bash.md, "A sandbox started ahead"). It ends unused after ``SPARE_IDLE_S`` or with the session."""
        if self._closed:
            return
        policy = self.sandbox_policy(network, read_only=True)
        env = self.env()
        key = runner.spare_key(policy, env) if policy is not None else None
        if key is not None and self._spare is not None and self._spare.fits(key):
            return
        self._discard_spare()  # none, ended, or started for another environment or settings
        if key is None:
            return
        spare = runner.SpareSandbox.start(key, env)
        if spare is None:
            return
        self._spare = spare
        self._spare_timer = spare.loop.call_later(SPARE_IDLE_S, self._discard_spare)

    def _take_spare(self) -> runner.SpareSandbox | None:
        spare, self._spare = self._spare, None
        if self._spare_timer is not None:
            self._spare_timer.cancel()
            self._spare_timer = None
        return spare

    def _discard_spare(self) -> None:
        spare = self._take_spare()
        if spare is not None:
            spare.discard()

    def update_cwd(self, running: EndsSomewhere) -> str | None:
        """Adopt the directory the command ended in; a note for the model when it changed or was reset."""
        new = running.final_cwd()
        if new is None or new == self.cwd:
            return None
        if not any(new == r or new.is_relative_to(r) for r in self.session.roots):
            self.cwd = self.cwd if self.cwd.exists() else self.session.cwd
            return (
                f"The working directory {new} is outside the workspace roots; it stays {self.cwd}. "
                "Use absolute paths for places outside the workspace."
            )
        self.cwd = new
        return f"Working directory is now {new}."

    def add_background(self, running: runner.RunningCommand) -> BackgroundShell:
        shell = BackgroundShell(id=f"bash_{next(self._ids)}", running=running)
        shell.waiter = asyncio.create_task(running.wait())
        self.shells[shell.id] = shell
        return shell

    async def kill(self, shell_id: str) -> BackgroundShell | None:
        shell = self.shells.get(shell_id)
        if shell is None:
            return None
        if shell.running.running or runner.group_alive(shell.running.pgid):
            await shell.running.kill()
        return shell

    async def close(self) -> None:
        """End every background shell and leftover process group of this session."""
        self._closed = True
        for shell in list(self.shells.values()):
            with contextlib.suppress(Exception):
                await shell.running.kill(grace=1.0)
            if shell.waiter is not None:
                shell.waiter.cancel()
        self._discard_spare()
        for pgid in list(self._groups):
            runner.kill_group(pgid, signal.SIGKILL)
        self._groups.clear()
        import shutil

        shutil.rmtree(self._tmp, ignore_errors=True)


SHELLS = ServiceKey[ShellManager]("shells", ShellManager)


def shells_of(session: Session) -> ShellManager:
    return session.service(SHELLS)

"""``sidecar chat`` and ``sidecar demo``: the terminal client.

It spawns ``sidecar serve --acp`` and is its ACP client: streams the answer, shows tool calls and
diffs, and asks permission and questions in the terminal. Offline (no key, or ``--demo``) it runs the
bundled scripted model on a copy of the fixture workspace.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from sidecar.client.connection import RemoteError, SidecarProcess
from sidecar.client.lines import Interrupted, LineSource, NextMode, PipedLines, TerminalLines, quiet_terminal
from sidecar.client.render import UpdateRenderer, chat_console, diff_text, readable_option, spend_line
from sidecar.secrets import SECRET_ENV_VARS, RedactingFilter, secret
from sidecar.store import cache_dir, data_dir

REPO = Path(__file__).resolve().parents[2]
# Package data (in the wheel): ``sidecar demo`` works from an installed package, offline.
DEMO_WORKSPACE = Path(__file__).resolve().parent / "demo_workspace"


ASK_ATTEMPTS = 3
# Typed words for the usual permission options, by ACP option kind.
_WORD_KINDS = {"y": "allow_once", "yes": "allow_once", "a": "allow_always", "always": "allow_always",
               "n": "reject_once", "no": "reject_once", "never": "reject_always"}


def pick_option(options: list[dict[str, Any]], answer: str) -> dict[str, Any] | None:
    """The option a typed answer names: its number, y/yes, n/no, a/always, never, or the start of its
    name; ``None`` when it names none (the question is asked again rather than guessed)."""
    text = answer.strip().lower()
    if text.isdigit():
        return options[int(text) - 1] if 0 < int(text) <= len(options) else None
    kind = _WORD_KINDS.get(text)
    if kind is not None:
        return next((o for o in options if o.get("kind") == kind), None)
    named = [o for o in options if str(o.get("name", "")).lower().startswith(text)] if text else []
    return named[0] if len(named) == 1 else None


CLIENT_COMMANDS: list[tuple[str, str]] = [
    ("help", "the commands and keys"),
    ("mode", "show or set the permission mode: /mode plan"),
    ("expand", "the last collapsed tool output in full"),
    ("quit", "leave (Ctrl-D does too)"),
    ("exit", "leave"),
]
STOP_REASONS = {
    "cancelled": "Interrupted. The session goes on: say what to do next.",
    "max_tokens": "The answer was cut off: the model reached its output limit (max_tokens).",
    "max_turn_requests": "Stopped: the turn reached its limit of model requests.",
    "refusal": "The model declined to go on (refusal).",
}


class SidecarGone(Exception):
    """The ``sidecar serve`` child exited."""


def _message(exc: BaseException) -> str:
    """One line for the user."""
    text = exc.message if isinstance(exc, RemoteError) else str(exc) or type(exc).__name__
    return " ".join(text.split())


class TerminalClient:
    def __init__(self, console: Console, *, auto_yes: bool, trust: bool = False, cwd: Path | None = None,
                 lines: LineSource | None = None) -> None:
        self.console = console
        self.auto_yes = auto_yes
        # --trust: trust questions (workspace, .mcp.json servers) answered "for this session".
        self.trust = trust
        self.renderer = UpdateRenderer(console, cwd)
        self.lines: LineSource = lines or PipedLines(lambda prompt: console.print(
            Text(prompt, style="bold yellow"), end=""))
        # Set by the chat: cancels the running turn; it returns once ``session/cancel`` is on the wire.
        self.interrupt_turn: Callable[[], Awaitable[None]] = _nothing_to_interrupt

    async def ask(self, prompt: str) -> str | None:
        """One answer line, stripped; ``None`` when stdin is closed (which must never count as a yes).
        Ctrl-C at the question interrupts the turn (and answers ``None``)."""
        with self.renderer.paused():
            try:
                return await self.lines.read(prompt)
            except Interrupted:
                # ACP's order: session/cancel first, then the question's "cancelled" answer. Answered first,
                # the sidecar may take it as a refusal and send the next request before the cancel arrives.
                await self.interrupt_turn()
                return None

    async def on_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        with self.renderer.paused():
            return await self._permission(params)

    async def _permission(self, params: dict[str, Any]) -> dict[str, Any]:
        show = self.renderer.paths
        call = params.get("toolCall") or {}
        options = params.get("options") or []
        trust_question = ((call.get("_meta") or {}).get("sidecar") or {}).get("trust")
        heading = "Trust" if trust_question else "Permission"
        tool = str(((call.get("_meta") or {}).get("sidecar") or {}).get("tool") or "")
        title = self.renderer.title(str(call.get("title") or "tool call"), tool)
        self.console.print(Text(f"\n⚠ {heading}: {title}", style="bold yellow"))
        for item in call.get("content") or []:
            if trust_question and item.get("type") == "content":
                self.console.print(Text(str((item.get("content") or {}).get("text", "")), style="yellow"))
            if item.get("type") == "diff":
                self.console.print(diff_text(show(str(item["path"])), item.get("oldText"), item.get("newText", "")))
                self.renderer.diffs_shown.add(str(call.get("toolCallId")))
        if trust_question and (self.trust or self.auto_yes):
            # --yes answers permissions, never trust: only --trust trusts (for this session).
            kind = "allow_once" if self.trust else "reject_once"
            chosen = next((o for o in options if o.get("kind") == kind), options[0])
            self.console.print(Text(f"  → {chosen['name']} ({'--trust' if self.trust else '--yes'})", style="yellow"))
            return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}
        if self.auto_yes:
            chosen = next((o for o in options if o.get("kind") == "allow_once"), options[0])
            self.console.print(Text(f"  → {chosen['name']} (--yes)", style="yellow"))
            return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}
        if any(item.get("type") == "diff" for item in call.get("content") or []):
            self.console.print()
        for i, option in enumerate(options, 1):
            self.console.print(f"  {i}. {readable_option(str(option['name']), show)}", markup=False,
                               highlight=False)
        for _ in range(ASK_ATTEMPTS):
            answer = await self.ask(f"Choose 1–{len(options)}, y or n [1]: ")
            if answer is None:
                break
            chosen = pick_option(options, answer or "1")
            if chosen is not None:
                return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}
            self.console.print(Text(f"  {answer!r} is not one of the choices.", style="red"))
        return {"outcome": {"outcome": "cancelled"}}

    async def on_ask_user(self, params: dict[str, Any]) -> dict[str, Any]:
        with self.renderer.paused():
            answers: dict[str, list[str]] = {}
            for q in params.get("questions") or []:
                self.console.print(Text(f"\n? {q.get('question')}", style="bold cyan"))
                labels = [o.get("label", "") for o in q.get("options") or []]
                for i, option in enumerate(q.get("options") or [], 1):
                    self.console.print(f"  {i}. {option.get('label')} — {option.get('description', '')}",
                                       markup=False, highlight=False)
                if self.auto_yes:
                    answers[q["question"]] = labels[:1]
                    continue
                raw = await self.ask("Answer (number(s) or text): ")
                if raw is None:
                    return {"outcome": "cancelled"}
                picked = [labels[int(p) - 1] for p in raw.replace(",", " ").split()
                          if p.isdigit() and 0 < int(p) <= len(labels)]
                answers[q["question"]] = picked or [raw]
            return {"outcome": "answered", "answers": answers}


async def _nothing_to_interrupt() -> None:
    """Before a chat sets its own: no turn to cancel."""


def demo_env(base_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ANTHROPIC_BASE_URL"] = base_url
    env["ANTHROPIC_API_KEY"] = "scripted-demo-key"
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    return env


def _ago(stamp: str) -> str:
    try:
        then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return str(stamp)
    seconds = max(0, int((datetime.now(UTC) - then).total_seconds()))
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"


class Chat:
    """One ``sidecar chat``: the sidecar child, the session, the prompt loop."""

    def __init__(self, args: argparse.Namespace, cwd: Path, env: dict[str, str], console: Console,
                 lines: LineSource | None = None) -> None:
        self.args = args
        self.cwd = cwd
        self.console = console
        if lines is None:
            terminal = sys.stdin.isatty() and sys.stdout.isatty()
            lines = TerminalLines(data_dir() / "chat-history", self.slash_commands) if terminal else None
        self.client = TerminalClient(console, auto_yes=bool(args.yes), trust=bool(getattr(args, "trust", False)),
                                     cwd=cwd, lines=lines)
        self.client.interrupt_turn = self.interrupt_at_question
        self.renderer = self.client.renderer
        self.lines = self.client.lines
        # From a checkout the served agent imports this copy; an installed package's interpreter already has
        # it (its site-packages on PYTHONPATH would leak into the commands the agent runs).
        checkout = {"PYTHONPATH": str(REPO)} if (REPO / "pyproject.toml").is_file() else {}
        self.process = SidecarProcess(framing="acp", env={**env, **checkout}, cwd=str(cwd),
                                      stderr=subprocess.DEVNULL)
        self.process.handlers["session/request_permission"] = self.client.on_permission
        self.process.handlers["_sidecar/ask_user"] = self.client.on_ask_user
        self.process.on_update = self.on_update
        self.held: list[dict[str, Any]] | None = None  # a replay, held until the banner is printed
        self.process.on_notification = lambda method, params: (
            self.renderer.retry(params) if method == "_sidecar/model_retry" else None)
        self.session_id = ""
        self.modes: list[dict[str, Any]] = []
        self.agent: dict[str, Any] = {}
        self.turn: asyncio.Task[Any] | None = None
        self.cancelling = False
        self.starting = True  # until the session is open
        self.main_task: asyncio.Task[Any] | None = None
        self._sending: set[asyncio.Task[None]] = set()  # session/cancel notifications on their way

    def on_update(self, params: dict[str, Any]) -> None:
        if self.held is not None:
            self.held.append(params["update"])
        else:
            self.renderer.render(params["update"])

    def slash_commands(self) -> list[tuple[str, str]]:
        theirs = [(str(c.get("name", "")).lstrip("/"), str(c.get("description", "")))
                  for c in self.renderer.commands]
        ours = {name for name, _ in CLIENT_COMMANDS}
        return CLIENT_COMMANDS + [c for c in theirs if c[0] and c[0] not in ours]

    # ---- Ctrl-C ---------------------------------------------------------------------------------------
    def interrupt(self) -> None:
        """Ctrl-C while the model works: ``session/cancel`` (the turn ends, the session goes on); a second
        Ctrl-C before the turn has ended leaves the chat."""
        if self.turn is None or self.turn.done():
            if self.starting and self.main_task is not None:
                self.main_task.cancel()  # starting up or loading a session: leave
            return  # between prompts (a /mode on its way): the prompt's own Ctrl-C handling is next
        if self.cancelling:
            if self.main_task is not None:
                self.main_task.cancel()
            return
        self.cancelling = True
        self.renderer.interrupting()
        task = asyncio.get_running_loop().create_task(
            self.process.notify("session/cancel", {"sessionId": self.session_id}))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def interrupt_at_question(self) -> None:
        """Ctrl-C at a question: :meth:`interrupt`, returning once the ``session/cancel`` it sends is out."""
        self.interrupt()
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)

    # ---- the session ----------------------------------------------------------------------------------
    async def request(self, method: str, params: dict[str, Any], timeout: float | None = 120) -> Any:
        try:
            return await self.process.request(method, params, timeout=timeout)
        except ConnectionError as exc:
            raise SidecarGone(str(exc)) from None

    async def open_session(self) -> bool:
        args = self.args
        resume = getattr(args, "resume", None)
        if getattr(args, "continue_", False) or resume is not None:
            listed = await self.request("session/list", {"cwd": str(self.cwd)})
            sessions = list(listed.get("sessions") or [])
            chosen: str | None = None
            if resume:
                chosen = str(resume)
            elif not sessions:
                self.renderer.note("No earlier session in this folder: starting a new one.")
            elif resume is None:  # --continue: the most recent one here
                chosen = str(sessions[0]["sessionId"])
            else:
                chosen = await self.pick_session(sessions)
                if chosen is None:
                    return False
            if chosen is not None:
                self.held = []
                try:
                    result = await self.request("session/load", {"sessionId": chosen, "cwd": str(self.cwd),
                                                                 "mcpServers": []})
                except RemoteError as exc:
                    self.held = None
                    self.error(exc if exc.code != -32002 else RemoteError({
                        "code": exc.code, "message": f"No saved session {chosen}; `sidecar chat --resume` lists "
                                                     "this folder's sessions."}))
                    return False
                self.session_id = chosen
                self.banner(result, resumed=next((s for s in sessions if s.get("sessionId") == chosen), {}))
                replay, self.held = self.held, None
                for update in replay:
                    self.renderer.render(update)
                self.renderer.finish()
                return True
        result = await self.request("session/new", {"cwd": str(self.cwd), "mcpServers": []})
        self.session_id = str(result["sessionId"])
        self.banner(result)
        return True

    async def pick_session(self, sessions: list[dict[str, Any]]) -> str | None:
        shown = sessions[:20]
        self.console.print(Text("Sessions in this folder, newest first:", style="bold"))
        for i, s in enumerate(shown, 1):
            title = " ".join(str(s.get("title") or "(untitled)").split())
            self.console.print(Text.assemble(f"  {i}. ", (title[:70], "bold"),
                                             (f" · {_ago(str(s.get('updatedAt')))} · {s['sessionId']}", "dim")))
        for _ in range(ASK_ATTEMPTS):
            try:
                answer = await self.lines.read(f"Resume which (1–{len(shown)}) [1]: ")
            except Interrupted:
                return None
            if answer is None:
                return None
            if not answer:
                return str(shown[0]["sessionId"])
            if answer.isdigit() and 0 < int(answer) <= len(shown):
                return str(shown[int(answer) - 1]["sessionId"])
            self.console.print(Text(f"  {answer!r} is not one of the choices.", style="red"))
        return None

    def banner(self, result: dict[str, Any], resumed: dict[str, Any] | None = None) -> None:
        modes = result.get("modes") or {}
        self.modes = list(modes.get("availableModes") or [])
        self.renderer.mode = str(modes.get("currentModeId") or "default")
        model: dict[str, Any] = next((o for o in result.get("configOptions") or [] if o.get("id") == "model"), {})
        model_name = next((str(c.get("name")) for c in model.get("options") or []
                           if c.get("value") == model.get("currentValue")), str(model.get("currentValue") or "?"))
        name = str(self.agent.get("title") or "Sidecar")
        version = f" {self.agent['version']}" if self.agent.get("version") else ""
        folder = self.renderer.paths.home(str(self.cwd))
        fixed = [f"✻ {name}{version}", model_name, None, f"{self.renderer.mode} mode", "/help"]
        room = self.console.width - sum(len(p) for p in fixed if p) - 3 * (len(fixed) - 1) - 1
        if len(folder) > room > 8:
            folder = "…" + folder[-(room - 1):]
        line = Text()
        for i, (part, style) in enumerate(zip([p or folder for p in fixed],
                                               ["bold magenta", "bold", "", "magenta", "dim"], strict=True)):
            if i:
                line.append(" · ", style="dim")
            line.append(part, style=style)
        line.no_wrap, line.overflow = True, "ellipsis"
        self.renderer.show(line, gap=False)
        if resumed is not None:
            title = " ".join(str(resumed.get("title") or "").split())
            self.renderer.show(Text(f"Resumed {title!r}" if title else f"Resumed {self.session_id}", style="dim"),
                               gap=False)

    async def set_mode(self, mode: str) -> None:
        known = [str(m.get("id")) for m in self.modes]
        if known and mode not in known:
            self.renderer.note(f"Unknown mode {mode!r}; the modes are {', '.join(known)}.", style="red")
            return
        await self.request("session/set_mode", {"sessionId": self.session_id, "modeId": mode})
        if self.renderer.mode != mode:  # else the sidecar's current_mode_update has said it
            self.renderer.mode = mode
            self.renderer.note(f"Mode: {mode}", style="magenta")

    def error(self, exc: BaseException) -> None:
        self.renderer.note(f"✗ {_message(exc)}", style="red")

    def help(self) -> None:
        out = Text()
        out.append("Commands\n", style="bold")
        for name, description in CLIENT_COMMANDS:
            out.append(f"  /{name:<14}", style="bold").append(f"{description}\n")
        theirs = [c for c in self.slash_commands() if c not in CLIENT_COMMANDS]
        if theirs:
            out.append("Sent to the agent\n", style="bold")
            for name, description in theirs:
                out.append(f"  /{name:<14}", style="bold").append(f"{' '.join(description.split())[:90]}\n")
        modes = ", ".join(str(m.get("id")) for m in self.modes) or "default, acceptEdits, plan, bypassPermissions"
        out.append("Keys\n", style="bold")
        for key, what in (("Ctrl-C", "interrupt the model (the session goes on); twice at an empty prompt: quit"),
                          ("Ctrl-D", "quit"), ("Shift-Tab", "the next mode: default → acceptEdits → plan"),
                          ("Alt-Enter, \\ Enter", "a new line in the prompt"),
                          ("Tab", "complete a / command")):
            out.append(f"  {key:<19}", style="bold").append(f"{what}\n")
        out.append(f"Modes: {modes}. Later: sidecar chat --continue (this folder's latest session) or "
                   "--resume [ID].", style="dim")
        self.renderer.show(out)

    # ---- turns ----------------------------------------------------------------------------------------
    async def prompt(self, text: str) -> str | None:
        """One turn; its stop reason, or ``None`` when it ended with an error (said in one line)."""
        self.cancelling = False
        self.renderer.begin_turn()
        self.turn = asyncio.get_running_loop().create_task(self.request("session/prompt", {
            "sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}, timeout=None))
        try:
            with quiet_terminal():
                result = await self.turn
        except RemoteError as exc:
            self.renderer.end_turn()
            self.error(exc)
            return None
        finally:
            self.renderer.end_turn()
        reason = str(result.get("stopReason"))
        if reason != "end_turn":
            self.renderer.note(STOP_REASONS.get(reason, f"Turn ended: {reason}"),
                               style="yellow" if reason == "cancelled" else "dim")
        meta = result.get("_meta")
        summary = spend_line(((meta or {}).get("sidecar") or {}).get("spend") if isinstance(meta, dict) else None)
        if summary:
            self.renderer.note(summary, gap=reason == "end_turn")
        return reason

    async def command(self, text: str) -> bool:
        """A client command (True), or not one of ours (False: it goes to the agent)."""
        name, _, argument = text[1:].partition(" ")
        argument = argument.strip()
        if name == "help":
            self.help()
        elif name == "expand":
            self.renderer.expand()
        elif name == "mode":
            if argument:
                await self.set_mode(argument)
            else:
                self.renderer.note(f"Mode: {self.renderer.mode} (modes: "
                                   f"{', '.join(str(m.get('id')) for m in self.modes)})", style="magenta")
        else:
            return False
        return True

    async def run(self) -> int:
        self.main_task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, self.interrupt)
        await self.process.start()
        try:
            init = await self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {
                "_meta": {"sidecar": {"askUser": True}}}})
            self.agent = dict((init or {}).get("agentInfo") or {})
            if not await self.open_session():
                return 1
            self.starting = False
            if self.args.mode:
                try:
                    await self.set_mode(self.args.mode)
                except RemoteError as exc:
                    self.error(exc)
                    if self.args.prompt:
                        return 2
            if self.args.prompt:
                self.console.print(Text(f"› {self.args.prompt}", style="bold"))
                reason = await self.prompt(self.args.prompt)
                return 0 if reason == "end_turn" else 130 if reason == "cancelled" else 1
            return await self.loop()
        except asyncio.CancelledError:
            self.renderer.end_turn()
            self.console.print(Text("Interrupted.", style="yellow"))
            return 130
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            await self.process.close()

    async def loop(self) -> int:
        armed = False  # Ctrl-C once at an empty prompt: the next one quits
        typed = ""  # kept across a Shift-Tab
        while True:
            if self.lines.interactive:
                self.renderer.gap()
            try:
                default, typed = typed, ""
                text = await self.lines.read(self.prompt_text(), main=True, default=default)
            except NextMode as shift_tab:
                typed = shift_tab.text
                try:
                    await self.set_mode(self.next_mode())
                except RemoteError as exc:
                    self.error(exc)
                continue
            except Interrupted:
                if armed:
                    self.goodbye()
                    return 0
                armed = True
                self.renderer.note("Press Ctrl-C again to quit (or Ctrl-D); Ctrl-C while the model works "
                                   "interrupts it.", gap=False)
                continue
            armed = False
            if text is None or text in ("/quit", "/exit"):
                self.goodbye()
                return 0
            if not text:
                continue
            if not self.lines.interactive:
                self.console.print(Text(f"› {text}", style="bold"))
            try:
                if text.startswith("/") and await self.command(text):
                    continue
                await self.prompt(text)
            except RemoteError as exc:
                self.error(exc)

    def next_mode(self) -> str:
        """Shift-Tab's cycle, as in Claude Code: default → acceptEdits → plan → default (bypassPermissions
        only by name: /mode bypassPermissions)."""
        cycle = [m for m in ("default", "acceptEdits", "plan") if m in {str(x.get("id")) for x in self.modes}]
        cycle = cycle or ["default"]
        current = self.renderer.mode if self.renderer.mode in cycle else cycle[-1]
        return cycle[(cycle.index(current) + 1) % len(cycle)]

    def prompt_text(self) -> str:
        mode = self.renderer.mode
        return "› " if mode in (None, "default") else f"{mode} › "

    def goodbye(self) -> None:
        if self.lines.interactive:
            self.console.print(Text(f"Resume this session with: sidecar chat --resume {self.session_id}",
                                    style="dim"))
        else:
            self.renderer.finish()


async def chat_session(args: argparse.Namespace, cwd: Path, env: dict[str, str], console: Console) -> int:
    try:
        return await Chat(args, cwd, env, console).run()
    except SidecarGone:
        console.print(Text(f"✗ The sidecar process stopped unexpectedly; its log is in {cache_dir() / 'logs'}.",
                           style="red"))
        return 1


def have_credentials() -> bool:
    return bool(secret("ANTHROPIC_API_KEY") or secret("ANTHROPIC_AUTH_TOKEN"))


def server_env() -> dict[str, str]:
    """The environment for ``sidecar serve``: ours, plus the credentials ``capture_secrets`` took out of
    it (the server captures them in turn, first thing)."""
    env = dict(os.environ)
    for name in SECRET_ENV_VARS:
        value = secret(name)
        if value:
            env[name] = value
    return env


def run_chat(args: argparse.Namespace) -> int:
    if getattr(args, "demo", False):
        return run_demo(args)
    from sidecar.model.credentials import keychain_key

    if not have_credentials() and not os.environ.get("ANTHROPIC_BASE_URL") and not keychain_key():
        Console(stderr=True).print(
            "No model configured: run `sidecar login` to keep an API key in the OS keychain, or set "
            "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or ANTHROPIC_BASE_URL for an Anthropic-compatible "
            "endpoint), or run `sidecar demo` for the offline demo.", style="red")
        return 2
    cwd = Path(args.cwd or os.getcwd()).resolve()
    if not cwd.is_dir():
        Console(stderr=True).print(f"No such folder: {cwd}", style="red", markup=False, highlight=False)
        return 2
    return guarded(lambda: asyncio.run(chat_session(args, cwd, server_env(), chat_console())))


def guarded(run: Callable[[], int]) -> int:
    """No traceback ever reaches the terminal: a fault in the client is one line, the traceback goes to
    the log file it names."""
    try:
        return run()
    except KeyboardInterrupt:
        print()
        return 130
    except Exception as exc:
        where = _log_fault(exc)
        Console(stderr=True).print(
            f"sidecar chat failed: {_message(exc)}" + (f" (details in {where})" if where else ""),
            style="red", markup=False, highlight=False)
        return 1


def _log_fault(exc: BaseException) -> Path | None:
    try:
        folder = cache_dir() / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"chat-{time.strftime('%Y%m%d')}-{os.getpid()}.log"
        handler = logging.FileHandler(path)
    except OSError:
        return None
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("sidecar.chat")
    logger.addHandler(handler)
    logger.error("sidecar chat failed", exc_info=exc)
    logger.removeHandler(handler)
    handler.close()
    return path


def run_demo(args: argparse.Namespace) -> int:
    """The fixture workspace (a temp copy, or --cwd) with real tools: Claude when a key is set (and not
    --offline), else the bundled scripted model."""
    from sidecar.client.demo import DEMO_PROMPT, demo_turns
    from sidecar.testing.scripted_server import ScriptedModelServer

    console = chat_console()
    offline = getattr(args, "offline", False) or getattr(args, "demo", False) or not have_credentials()
    temp: str | None = None
    if args.cwd:
        cwd = Path(args.cwd).resolve()
    else:
        temp = tempfile.mkdtemp(prefix="sidecar-demo-")
        cwd = Path(temp) / "demo-workspace"
        shutil.copytree(DEMO_WORKSPACE, cwd, ignore=shutil.ignore_patterns("__pycache__"))
    if not args.prompt:
        args.prompt = DEMO_PROMPT
    try:
        if not offline:
            console.print(Text(f"Demo with Claude, real tools, workspace {cwd}", style="bold magenta"))
            return guarded(lambda: asyncio.run(chat_session(args, cwd, server_env(), console)))
        console.print(Text(f"Offline demo: scripted model, real tools, workspace {cwd}", style="bold magenta"))
        with ScriptedModelServer(demo_turns(cwd)) as server:
            return guarded(lambda: asyncio.run(chat_session(args, cwd, demo_env(server.base_url), console)))
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)

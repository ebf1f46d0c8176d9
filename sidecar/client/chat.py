"""``sidecar chat`` and ``sidecar demo``: the terminal client.

It spawns ``sidecar serve --acp`` and is its ACP client: streams the answer, shows tool calls and
diffs, and asks permission and questions in the terminal. Offline (no key, or ``--demo``) it runs the
bundled scripted model on a copy of the fixture workspace.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from sidecar.client.connection import RemoteError, SidecarProcess
from sidecar.client.render import UpdateRenderer, diff_text
from sidecar.secrets import SECRET_ENV_VARS, secret

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


class TerminalClient:
    def __init__(self, console: Console, *, auto_yes: bool, trust: bool = False) -> None:
        self.console = console
        self.auto_yes = auto_yes
        # --trust: trust questions (workspace, .mcp.json servers) answered "for this session".
        self.trust = trust
        self.renderer = UpdateRenderer(console)

    async def ask(self, prompt: str) -> str | None:
        """One answer line, stripped; ``None`` when stdin is closed (which must never count as a yes)."""
        self.console.print(Text(prompt, style="bold yellow"), end="")
        line: str = await asyncio.to_thread(sys.stdin.readline)
        return line.strip() if line else None

    async def on_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.renderer.finish()
        call = params.get("toolCall") or {}
        options = params.get("options") or []
        trust_question = ((call.get("_meta") or {}).get("sidecar") or {}).get("trust")
        heading = "Trust" if trust_question else "Permission"
        self.console.print(Text(f"\n⚠ {heading}: {call.get('title', 'tool call')}", style="bold yellow"))
        for item in call.get("content") or []:
            if trust_question and item.get("type") == "content":
                self.console.print(Text(str((item.get("content") or {}).get("text", "")), style="yellow"))
            if item.get("type") == "diff":
                self.console.print(diff_text(item["path"], item.get("oldText"), item.get("newText", "")))
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
        for i, option in enumerate(options, 1):
            self.console.print(f"  {i}. {option['name']}")
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
        self.renderer.finish()
        answers: dict[str, list[str]] = {}
        for q in params.get("questions") or []:
            self.console.print(Text(f"\n? {q.get('question')}", style="bold cyan"))
            labels = [o.get("label", "") for o in q.get("options") or []]
            for i, option in enumerate(q.get("options") or [], 1):
                self.console.print(f"  {i}. {option.get('label')} — {option.get('description', '')}")
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


def demo_env(base_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ANTHROPIC_BASE_URL"] = base_url
    env["ANTHROPIC_API_KEY"] = "scripted-demo-key"
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    return env


async def chat_session(args: argparse.Namespace, cwd: Path, env: dict[str, str], console: Console) -> int:
    client = TerminalClient(console, auto_yes=bool(args.yes), trust=bool(getattr(args, "trust", False)))
    # From a checkout the served agent imports this copy; an installed package's interpreter already has
    # it (its site-packages on PYTHONPATH would leak into the commands the agent runs).
    checkout = {"PYTHONPATH": str(REPO)} if (REPO / "pyproject.toml").is_file() else {}
    process = SidecarProcess(framing="acp", env={**env, **checkout}, cwd=str(cwd),
                             stderr=open(os.devnull, "wb"))
    process.handlers["session/request_permission"] = client.on_permission
    process.handlers["_sidecar/ask_user"] = client.on_ask_user
    process.on_update = lambda params: client.renderer.render(params["update"])
    process.on_notification = lambda method, params: (
        client.renderer.retry(params) if method == "_sidecar/model_retry" else None)
    await process.start()
    try:
        await process.initialize({"_meta": {"sidecar": {"askUser": True}}})
        session = await process.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        session_id = session["sessionId"]
        if args.mode:
            await process.request("session/set_mode", {"sessionId": session_id, "modeId": args.mode})
        prompts = [args.prompt] if args.prompt else None
        while True:
            text = prompts.pop(0) if prompts else (None if prompts is not None else await client.ask("\n› "))
            if text is None or text in ("/quit", "/exit"):
                return 0
            if not text:
                continue
            if text.startswith("/mode "):
                await process.request("session/set_mode", {"sessionId": session_id, "modeId": text.split()[1]})
                continue
            console.print(Text(f"› {text}", style="bold"))
            try:
                result = await process.request("session/prompt", {
                    "sessionId": session_id, "prompt": [{"type": "text", "text": text}]}, timeout=None)
            except RemoteError as exc:
                client.renderer.finish()
                console.print(Text(f"error: {exc.message}", style="red"))
                if prompts is not None:
                    return 1
                continue
            client.renderer.finish()
            console.print(Text(f"[{result['stopReason']}]", style="dim"))
            if prompts is not None and not prompts:
                return 0
    finally:
        await process.close()


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
    if not have_credentials() and not os.environ.get("ANTHROPIC_BASE_URL"):
        Console(stderr=True).print(
            "No model configured: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or ANTHROPIC_BASE_URL for an "
            "Anthropic-compatible endpoint), or run `sidecar demo` for the offline demo.", style="red")
        return 2
    cwd = Path(args.cwd or os.getcwd()).resolve()
    return asyncio.run(chat_session(args, cwd, server_env(), Console()))


def run_demo(args: argparse.Namespace) -> int:
    """The fixture workspace (a temp copy, or --cwd) with real tools: Claude when a key is set (and not
    --offline), else the bundled scripted model."""
    from sidecar.client.demo import DEMO_PROMPT, demo_turns
    from sidecar.testing.scripted_server import ScriptedModelServer

    console = Console()
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
            return asyncio.run(chat_session(args, cwd, server_env(), console))
        console.print(Text(f"Offline demo: scripted model, real tools, workspace {cwd}", style="bold magenta"))
        with ScriptedModelServer(demo_turns(cwd)) as server:
            return asyncio.run(chat_session(args, cwd, demo_env(server.base_url), console))
    finally:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)

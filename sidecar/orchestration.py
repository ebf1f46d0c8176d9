"""Wires the orchestration features into sessions without editing the session core.

``install(core)`` is called once by ``SessionCore``. It adds a session-start hook (agent types, tool
search, the observed read ledger with checkpoints and nested memory, compaction, MCP servers, skills,
slash commands), wraps ``session/prompt`` (slash commands, a checkpoint per user turn, the user message
id in the response's ``_meta``, notifications) and adds ``_sidecar/panel_visibility``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from sidecar.server.session import ClientChannel, RpcError, Session, sidecar_capability

if TYPE_CHECKING:
    from sidecar.server.core import SessionCore

log = logging.getLogger(__name__)

BUILTIN_COMMANDS = [
    {"name": "compact", "description": "Summarise the conversation so far to free context",
     "input": {"hint": "optional instructions for the summary"}},
    {"name": "clear", "description": "Start the conversation afresh (files are kept)"},
    {"name": "model", "description": "Show or set the model", "input": {"hint": "model id"}},
]


def install(core: SessionCore) -> None:
    core.on_session_start.append(lambda session: start_session(core, session))
    original_prompt = core.methods["session/prompt"]

    async def prompt(params: dict[str, Any], channel: ClientChannel) -> Any:
        session = core.session(params.get("sessionId"))
        busy = session.prompt_task is not None and not session.prompt_task.done()
        command = slash_command(params.get("prompt") or [])
        if command is not None and not busy:
            name, argument = command
            handled = await run_command(core, session, name, argument)
            if handled is not None:
                return handled
            skill = (session.services.get("skills") or {}).get(name)
            if skill is not None:  # /<skill> args: the skill, loaded, is the prompt
                from sidecar.tools.skills.skill import skill_prompt

                params = {**params, "prompt": await skill_prompt(session, skill, argument)}
        if session.services.get("brief") and not busy:
            from sidecar.tools.interaction.brief import BRIEF_NOTICE

            session.add_notice(BRIEF_NOTICE)
        checkpoints = session.services.get("checkpoints")
        message_id = checkpoints.begin_turn() if checkpoints is not None and not busy else None
        result = await original_prompt(params, channel)
        if isinstance(result, dict) and message_id is not None:
            result.setdefault("_meta", {}).setdefault("sidecar", {})["userMessageId"] = message_id
        await notify(session, "turn_ended", f"The agent finished ({(result or {}).get('stopReason')})")
        return result

    async def panel_visibility(params: dict[str, Any], channel: ClientChannel) -> None:
        channel.panel_visible = bool(params.get("visible", True))  # type: ignore[attr-defined]

    core.methods["session/prompt"] = prompt
    core.methods["_sidecar/panel_visibility"] = panel_visibility


async def start_session(core: SessionCore, session: Session) -> None:
    from sidecar.agent.compaction import before_model_request
    from sidecar.memory.nested import NestedMemory
    from sidecar.tools.agents.definitions import agent_types
    from sidecar.tools.agents.task import Task
    from sidecar.tools.toolsearch import ToolSearch
    from sidecar.workspace.checkpoints import Checkpoints, ObservedLedger

    registry = session.services["registry"]
    ledger = ObservedLedger(session)
    previous = session.services.get("ledger")
    if previous is not None:  # created by an earlier hook: keep what it recorded
        ledger._entries = previous._entries
    session.services["ledger"] = ledger
    checkpoints = Checkpoints(session)
    checkpoints.attach(ledger)
    session.services["checkpoints"] = checkpoints
    session.services["rewind"] = checkpoints.rewind
    memory = NestedMemory(session)
    ledger.on_read.append(memory.on_read)
    session.services["before_model_request"] = [before_model_request]
    session.services["notify_waiting"] = lambda message: notify(session, "waiting", message)
    notify_on_permission_questions(session)

    try:
        from sidecar.mcp.manager import start_mcp
        await start_mcp(session)
    except Exception:
        log.exception("MCP servers could not be started")
    try:
        from sidecar.tools.skills.skill import configure_skills
        configure_skills(session)
    except Exception:
        log.exception("skills could not be loaded")

    task = registry.get("Task")
    if isinstance(task, Task):
        task.configure(agent_types(session.cwd), registry)
    search = registry.get("ToolSearch")
    if isinstance(search, ToolSearch):
        search.configure(registry, session)
    # After session/new has answered, so the client knows the session id.
    asyncio.get_running_loop().call_later(0.05, lambda: asyncio.ensure_future(publish_commands(session)))


async def publish_commands(session: Session) -> None:
    commands = list(BUILTIN_COMMANDS)
    for skill in session.services.get("skills", {}).values():
        commands.append({"name": skill.name, "description": skill.description})
    try:
        await session.send_update({"sessionUpdate": "available_commands_update", "availableCommands": commands})
    except Exception:
        log.debug("could not publish commands", exc_info=True)


def slash_command(prompt: list[Any]) -> tuple[str, str] | None:
    texts = [b.get("text", "") for b in prompt if isinstance(b, dict) and b.get("type") == "text"]
    if len(texts) != 1 or len(prompt) != 1:
        return None
    text = texts[0].strip()
    if not text.startswith("/") or len(text) < 2:
        return None
    name, _, argument = text[1:].partition(" ")
    return name, argument.strip()


async def run_command(core: SessionCore, session: Session, name: str, argument: str) -> dict[str, Any] | None:
    """Run a slash command; None when the name is not one (the text goes to the model as typed)."""
    from sidecar.agent.compaction import compact, replace_history

    if name == "compact":
        agent = core.main_agent(session)
        try:
            done = await compact(agent, keep_tokens=0, instructions=argument)
        except Exception as exc:
            raise RpcError(-32000, f"Compaction failed: {exc}") from None
        text = "Conversation compacted." if done else "Nothing to compact yet."
        await session.send_update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
        return {"stopReason": "end_turn"}
    if name == "model":
        settings = core.model_settings
        if argument:
            settings.model = argument
            session.audit("config", setting="model", new=argument)
        text = f"Model: {settings.model} (small model: {settings.small_model})"
        await session.send_update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
        return {"stopReason": "end_turn"}
    if name == "clear":
        replace_history(session, [])
        ledger = session.services.get("ledger")
        if ledger is not None and hasattr(ledger, "clear"):
            ledger.clear()
        session.services.pop("todos", None)
        session.pending_notices.clear()
        checkpoints = session.services.get("checkpoints")
        if checkpoints is not None:
            checkpoints.compacted()
        session.audit("cleared")
        await session.send_update({"sessionUpdate": "agent_message_chunk",
                                   "content": {"type": "text", "text": "Conversation cleared."}})
        return {"stopReason": "end_turn"}
    return None


def notify_on_permission_questions(session: Session) -> None:
    """Every question the gate asks (permissions, edit approvals without the review UI) notifies too."""

    async def asking(request: Any, ctx: Any) -> None:
        if request.tool_name != "AskUserQuestion":  # that tool notifies itself
            who = f"[{ctx.agent_label}] " if getattr(ctx, "agent_label", None) else ""
            await notify(session, "waiting", f"Approval needed: {who}{request.title}")

    session.permissions.on_ask.append(asking)


async def notify(session: Session, kind: str, message: str) -> None:
    """``_sidecar/notify`` when the client asked for it (``notify`` capability) and its panel is hidden."""
    channel = session.channel
    if not sidecar_capability(channel, "notify") or getattr(channel, "panel_visible", True):
        return
    try:
        await channel.notify("_sidecar/notify", {"sessionId": session.id, "kind": kind, "message": message,
                                                 "title": session.title or "Sidecar"})
    except Exception:
        log.debug("notify failed", exc_info=True)

"""The features a session gets beyond the protocol, attached to the core's named extension points.

``attach(core)`` is called once by the composition root (``sidecar.app.build_core``). It adds:

- on session start (once ``sidecar.app.build_session`` assembled it): MCP servers, the slash-command list;
- before a prompt: workspace trust (the questions a new session did not ask: the workspace, each
  ``.mcp.json`` server; what the answer enables starts then), slash commands (``/compact``, ``/clear``,
  ``/model``, ``/<skill>``), the brief-mode
  notice, a checkpoint per user turn (its id goes back in the result's ``_meta.sidecar.userMessageId``);
- after a prompt: the "turn finished" notification;
- the ``_sidecar/panel_visibility`` and ``_sidecar/workspace_trust`` methods.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sidecar.errors import agent_error
from sidecar.server.core import PromptTurn, SessionCore
from sidecar.session import ClientChannel, Session

log = logging.getLogger(__name__)

BUILTIN_COMMANDS = [
    {"name": "compact", "description": "Summarise the conversation so far to free context",
     "input": {"hint": "optional instructions for the summary"}},
    {"name": "clear", "description": "Start the conversation afresh (files are kept)"},
    {"name": "model", "description": "Show or set the model", "input": {"hint": "model id"}},
]


def attach(core: SessionCore) -> None:
    async def before_prompt(turn: PromptTurn) -> dict[str, Any] | None:
        session = turn.session
        command = slash_command(turn.prompt)
        if command is not None:
            name, argument = command
            handled = await run_command(core, session, name, argument)
            if handled is not None:
                return handled
            from sidecar.tools.skills.skill import SKILLS, skill_prompt

            skill = (session.find_service(SKILLS) or {}).get(name)
            if skill is not None:  # /<skill> args: the skill, loaded, is the prompt

                turn.prompt = await skill_prompt(session, skill, argument)
        if session.brief:
            from sidecar.tools.interaction.brief import BRIEF_NOTICE

            session.add_notice(BRIEF_NOTICE)
        from sidecar.workspace.checkpoints import CHECKPOINTS

        checkpoints = session.find_service(CHECKPOINTS)
        if checkpoints is not None:
            turn.meta["userMessageId"] = await checkpoints.begin_turn()
        return None

    async def after_prompt(turn: PromptTurn, result: dict[str, Any]) -> None:
        await notify(turn.session, "turn_ended", f"The agent finished ({result.get('stopReason')})")

    async def panel_visibility(params: dict[str, Any], channel: ClientChannel) -> None:
        channel.state.panel_visible = bool(params.get("visible", True))

    async def trust_first(turn: PromptTurn) -> dict[str, Any] | None:
        await resolve_trust(turn.session)
        return None

    async def workspace_trust(params: dict[str, Any], channel: ClientChannel) -> None:
        trusted = params.get("trusted")
        if not isinstance(trusted, bool):
            return
        channel.state.workspace_trust = trusted
        from sidecar.permissions.trust import trust_of

        for session in [s for s in core.sessions.values() if s.channel is channel]:
            trust = trust_of(session)
            if trust is not None:
                trust.client_trust = trusted
                if trusted and not trust.workspace_trusted:
                    trust.granted_pending = True  # applied before the session's next prompt
                trust.trusted = trusted

    core.on_session_start.append(start_session)
    core.before_prompt.insert(0, trust_first)
    core.before_prompt.append(before_prompt)
    core.after_prompt.append(after_prompt)
    core.add_method("_sidecar/panel_visibility", panel_visibility)
    core.add_method("_sidecar/workspace_trust", workspace_trust)


async def resolve_trust(session: Session) -> None:
    """Ask what the session's opening did not (docs/permissions.md, Trust) and start what was allowed."""
    from sidecar.agent.prompt import build_system_prompt
    from sidecar.mcp.manager import ask_pending_mcp
    from sidecar.permissions.hooks import run_session_start
    from sidecar.permissions.trust import trust_of

    trust = trust_of(session)
    if trust is None:
        return
    # One prompt at a time resolves it: a second prompt sent meanwhile (the core refuses a second prompt
    # only once the first one's turn runs) waits here for the grant, then runs with its prompt and mode.
    async with trust.resolving:
        granted = trust.granted_pending
        trust.granted_pending = False
        if trust.trusted is None and not trust.asked:
            granted = await trust.ask_workspace()
        if granted:
            # Memory imports refused until now are read: the next request carries them (one prompt-cache
            # miss, once; the user asked for it by trusting). Built first (git runs: off the loop), then
            # the grant applies at once, with no await before the mode is decided.
            try:
                system_prompt = await asyncio.to_thread(build_system_prompt, session.cwd, session.roots,
                                                        allow=trust.import_allowed)
            except BaseException:
                trust.granted_pending = True  # not applied (stopped, or the prompt failed): the next prompt does
                raise
            session.permissions.trust_changed()
            session.system_prompt = system_prompt
            # A defaultMode the trusted settings bring applies only before the first prompt, and never over
            # a mode the user chose (``session/set_mode``) meanwhile.
            if not session.history and not session.mode_chosen:
                mode = session.permissions.initial_mode()
                if mode != session.mode:
                    await session.set_mode(mode, by="settings")
            for context in await run_session_start(session, "startup"):
                session.add_notice(context)
        try:
            await ask_pending_mcp(session)
        except Exception:
            log.exception("MCP servers could not be started")


async def start_session(session: Session) -> None:
    """What starts once ``sidecar.app.build_session`` assembled the session and the core registered it:
    its MCP servers, then (after ``session/new`` has answered) the slash-command list."""
    try:
        from sidecar.mcp.manager import start_mcp
        await start_mcp(session)
    except Exception:
        log.exception("MCP servers could not be started")
    # After session/new has answered, so the client knows the session id.
    asyncio.get_running_loop().call_later(0.05, lambda: asyncio.ensure_future(publish_commands(session)))


async def publish_commands(session: Session) -> None:
    from sidecar.tools.skills.skill import SKILLS

    commands = list(BUILTIN_COMMANDS)
    for skill in (session.find_service(SKILLS) or {}).values():
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
    from sidecar.model.client import MODEL
    from sidecar.model.options import change as change_config_option
    from sidecar.workspace.checkpoints import CHECKPOINTS, ObservedLedger
    from sidecar.workspace.ledger import LEDGER

    if name == "compact":
        agent = core.main_agent(session)
        try:
            done = await compact(agent, keep_tokens=0, instructions=argument)
        except Exception as exc:
            raise agent_error("compaction_failed", f"Compaction failed: {exc}") from None
        text = "Conversation compacted." if done else "Nothing to compact yet."
        await session.send_update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
        return {"stopReason": "end_turn"}
    if name == "model":
        settings = session.service(MODEL).settings  # this session's, not the server's
        if argument:  # any id (a local server's model too); the picker's list is what set_config_option checks
            await change_config_option(session, "model", argument, by="/model")
        text = f"Model: {settings.model} (small model: {settings.small_model})"
        await session.send_update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
        return {"stopReason": "end_turn"}
    if name == "clear":
        replace_history(session, [])
        ledger = session.find_service(LEDGER)
        if isinstance(ledger, ObservedLedger):
            ledger.clear()
        session.todos = None
        session.pending_notices.clear()
        checkpoints = session.find_service(CHECKPOINTS)
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
    await session.client.notify_user(kind, message, session.title or "Sidecar")

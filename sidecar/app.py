"""The composition root: builds the session core, attaches the features, and assembles every session.

Transports (``sidecar.server``) and the CLI get a ready core from ``build_core()``; nothing below this
module wires features into the core or replaces its methods. The core opens sessions (``session/new``,
``session/load``) and hands each to ``build_session``, injected into it (the core sits below this module).
"""

from __future__ import annotations

import asyncio
import logging

from sidecar import features
from sidecar.model.settings import ModelSettings
from sidecar.server.core import SessionCore
from sidecar.session import Session
from sidecar.store import SavedSession, SessionStore

log = logging.getLogger(__name__)


def build_core(store: SessionStore | None = None, model_settings: ModelSettings | None = None) -> SessionCore:
    core = SessionCore(store=store, model_settings=model_settings, build_session=build_session)
    features.attach(core)
    return core


async def build_session(core: SessionCore, session: Session, saved: SavedSession | None) -> None:
    """Everything a session is made of, in one place: the editor's settings and the workspace's trust, the
    permission gate and the starting mode (decided here, once; ``features.resolve_trust`` decides it again
    only when trust is granted before the first prompt and the user chose no mode), the session's spend
    and its own model client with what was picked before (both from ``saved``, the log of a loaded session),
    its tools, system prompt, read ledger, checkpoints, nested memory, compaction and skills.

    Imported here, not at the top: ``initialize`` answers before these (docs/performance.md); the warm-up
    thread has imported them by the time a session opens (``SESSION_MODULES``)."""
    from sidecar.agent.compaction import before_model_request
    from sidecar.agent.loop import BEFORE_MODEL_REQUEST
    from sidecar.agent.prompt import build_system_prompt
    from sidecar.memory.nested import IMPORT_POLICY, NestedMemory
    from sidecar.model.client import MODEL
    from sidecar.model.options import restore
    from sidecar.model.pricing import USAGE_METER, UsageMeter
    from sidecar.permissions.gate import govern, secret_env_names
    from sidecar.permissions.settings import CLIENT_SETTINGS, WORKSPACE_SETTINGS
    from sidecar.permissions.trust import TRUST, WorkspaceTrust
    from sidecar.secrets import capture_secrets
    from sidecar.tools.agents.definitions import agent_types
    from sidecar.tools.agents.task import Task
    from sidecar.tools.builtin import builtin_tools
    from sidecar.tools.dispatch import AFTER_TOOL_CALL, BEFORE_TOOL_CALL, TOOL_CALL_ANNOUNCED
    from sidecar.tools.interaction.ask_user_question import NOTIFY_WAITING
    from sidecar.tools.registry import REGISTRY, ToolRegistry
    from sidecar.tools.skills.skill import configure_skills
    from sidecar.tools.toolsearch import ToolSearch
    from sidecar.workspace.buffers import BUFFERS
    from sidecar.workspace.checkpoints import CHECKPOINTS, ObservedLedger, start_checkpoints
    from sidecar.workspace.ledger import LEDGER

    trust = session.provide(TRUST, WorkspaceTrust(session, session.channel.state.workspace_trust))
    session.provide(CLIENT_SETTINGS, core.client_settings)
    session.provide(WORKSPACE_SETTINGS, core.workspace_settings)
    govern(session)  # the gate, and the starting mode unless the user chose one
    names = secret_env_names(session)
    if names:  # ``secretEnvVars``: out of this process's environment too, not only its children's
        capture_secrets(names)
    session.provide(BUFFERS, core.buffers)
    session.provide(USAGE_METER, UsageMeter.restored(saved.events) if saved is not None else UsageMeter())
    # The session's own model settings: /model or Config in one session changes no other session.
    model = session.provide(MODEL, core.model.for_session())
    restore(model.settings, saved.config if saved is not None else {})  # the model/effort picked before
    registry = session.provide(REGISTRY, ToolRegistry(builtin_tools()))
    session.provide(IMPORT_POLICY, trust.import_allowed)
    # Off the loop: its ``git status`` (two git processes, more in a big repository) and the memory files'
    # reads would hold up every other session and request meanwhile (issue 29).
    session.system_prompt = await asyncio.to_thread(build_system_prompt, session.cwd, session.roots,
                                                    allow=trust.import_allowed)

    ledger = ObservedLedger(session)
    session.provide(LEDGER, ledger)
    checkpoints = await asyncio.to_thread(start_checkpoints, session)  # persisted: reloaded on session/load
    session.provide(CHECKPOINTS, checkpoints)
    checkpoints.attach(ledger)
    session.service(TOOL_CALL_ANNOUNCED).append(checkpoints.announce)
    session.service(BEFORE_TOOL_CALL).append(checkpoints.before_tool)
    session.service(AFTER_TOOL_CALL).append(checkpoints.after_tool)
    ledger.on_read.append(NestedMemory(session).on_read)
    session.service(BEFORE_MODEL_REQUEST).append(before_model_request)

    async def notify_waiting(message: str) -> None:
        await features.notify(session, "waiting", message)

    session.provide(NOTIFY_WAITING, notify_waiting)
    features.notify_on_permission_questions(session)
    try:
        configure_skills(session)
    except Exception:
        log.exception("skills could not be loaded")
    task = registry.get("Task")
    if isinstance(task, Task):
        task.configure(agent_types(session.cwd), registry)
    search = registry.get("ToolSearch")
    if isinstance(search, ToolSearch):
        search.configure(registry, session)

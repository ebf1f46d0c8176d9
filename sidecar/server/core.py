"""The session core: every ACP method, independent of the transport it arrived on.

Transports (``acp_stdio``, ``lsp``) parse frames, then call ``SessionCore.handle(method, params,
channel)`` and send back what it returns (or the ``RpcError`` it raises). The method table below is
the whole protocol surface of the agent side (docs/contract.md §3.1, §3.3).
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import gc
import importlib
import linecache
import logging
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sidecar import DISTRIBUTION, version
from sidecar.errors import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, RpcError, agent_error
from sidecar.model.client import MODEL, ModelClient, ModelError
from sidecar.model.client import warm_up as warm_up_model_client
from sidecar.model.pricing import USAGE_METER
from sidecar.model.settings import ModelSettings
from sidecar.server.auth import auth_methods, auth_rpc_error, authenticate
from sidecar.server.plain_params import (
    parse,
    parse_config_option_params,
    parse_initialize_params,
    parse_mode_params,
    parse_model_params,
    parse_prompt_params,
    parse_session_params,
)
from sidecar.session import MODES, ClientChannel, Session, new_session_id
from sidecar.store import SavedSession, SessionStore, data_dir
from sidecar.workspace.buffers import OpenBuffers, open_buffers

# What a session needs (the agent loop, the tools, permissions, the prompt's content, pydantic and the
# params' models in ``sidecar.server.params``) is imported by the methods that use it, not here: the LSP
# transport answers ``initialize`` before these imports (~0.2 s on this machine), and the warm-up thread
# imports them right after it (``SESSION_MODULES``), before the first session/new.
if TYPE_CHECKING:
    from sidecar.agent.loop import AgentLoop, StopReason
    from sidecar.workspace.checkpoints import Checkpoints

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1

MODE_INFO = [
    {"id": "default", "name": "Default", "description": "Ask before edits and commands that change things"},
    {"id": "acceptEdits", "name": "Accept edits", "description": "Apply edits in the workspace without asking"},
    {"id": "plan", "name": "Plan", "description": "Read and plan only; no edits or changing commands"},
    {"id": "bypassPermissions", "name": "Bypass permissions",
     "description": "Ask nothing, except for writes to .git, .claude, .vscode and .idea"},
]

Handler = Callable[[dict[str, Any], ClientChannel], Awaitable[Any]]


_T = TypeVar("_T")


class _PromptStopped(Exception):
    """A step of a prompt was stopped (``session/cancel``, or its request cancelled): the prompt answers
    ``cancelled``."""


@dataclass
class PromptTurn:
    """One ``session/prompt`` as the extension points see it."""

    session: Session
    # The prompt's ACP content blocks; a before-prompt hook may replace them (a skill's text).
    prompt: list[Any]
    # Merged into the result's ``_meta.sidecar`` (e.g. ``userMessageId``).
    meta: dict[str, Any] = field(default_factory=dict)
    # ``prompt`` as Messages API blocks, one per block (None: nothing for the model), and the list they
    # were made from: converted once a prompt (a @terminal's text is redacted in it), again only for a
    # list a hook put in its place.
    _api: tuple[list[Any], list[dict[str, Any] | None]] | None = field(default=None, repr=False)

    def api_blocks(self) -> list[dict[str, Any] | None]:
        from sidecar.server.content import block_to_api

        if self._api is None or self._api[0] is not self.prompt:
            self._api = (self.prompt, [block_to_api(b) for b in self.prompt])
        return self._api[1]

    def content(self) -> list[dict[str, Any]]:
        """What the model gets of the prompt before its mentions are resolved."""
        return [api for api in self.api_blocks() if api is not None]


# The core's named extension points (features attach in the composition root, ``sidecar.app``):
# a session started or loaded; before a prompt runs (a hook returning a result answers the prompt
# itself, as a slash command does); after a prompt ran.
SessionHook = Callable[[Session], Awaitable[None]]
BeforePrompt = Callable[[PromptTurn], Awaitable[dict[str, Any] | None]]
AfterPrompt = Callable[[PromptTurn, dict[str, Any]], Awaitable[None]]
# Assembles a session the core opened: (the core, the new session, the log it was loaded from or None).
SessionBuilder = Callable[["SessionCore", Session, "SavedSession | None"], Awaitable[None]]


def client_capabilities(raw: dict[str, Any] | None) -> dict[str, Any]:
    """The client's capabilities with ACP's defaults filled in (fs, terminal, auth: all off)."""
    caps = {k: v for k, v in (raw or {}).items() if v is not None}
    fs: dict[str, Any] = caps["fs"] if isinstance(caps.get("fs"), dict) else {}
    caps["fs"] = {**fs, "readTextFile": fs.get("readTextFile") is True,
                  "writeTextFile": fs.get("writeTextFile") is True}
    caps["terminal"] = caps.get("terminal") is True
    auth: dict[str, Any] = caps["auth"] if isinstance(caps.get("auth"), dict) else {}
    caps["auth"] = {**auth, "terminal": auth.get("terminal") is True}
    return caps


class SessionCore:
    def __init__(self, store: SessionStore | None = None, model_settings: ModelSettings | None = None, *,
                 build_session: SessionBuilder) -> None:
        self.store = store or SessionStore()
        # The composition root's assembly of every session it opens (``sidecar.app.build_session``):
        # injected, since what a session is made of lives in layers above the core.
        self.build_session = build_session
        self.model_settings = model_settings or ModelSettings.from_env()
        self.model = ModelClient(self.model_settings)
        self.sessions: dict[str, Session] = {}
        # The editor's open buffers (LSP document sync), shared by every session of this server.
        self.buffers: OpenBuffers = open_buffers()
        # Settings the editor sent (sidecar.* in VS Code): model, permissions rules, … (the user's scope)
        self.client_settings: dict[str, Any] = {}
        # The editor's folder/workspace-scope settings: project scope, they only restrict until trust
        # (``sidecar.permissions.settings``); never the model, endpoint, key or effort.
        self.workspace_settings: dict[str, Any] = {}
        self.on_session_start: list[SessionHook] = []
        self.before_prompt: list[BeforePrompt] = []
        self._warmed = False
        self._warming = False  # the warm-up thread was started (not only ``_warmed`` set by a test)
        # The warm-up's two stages, awaited (never blocked on) by the methods that need their imports:
        # session/new and its kin wait for ``sessions_ready``, a prompt for ``turn_ready``.
        self.sessions_ready = WarmUpStage()
        self.turn_ready = WarmUpStage()
        self.after_prompt: list[AfterPrompt] = []
        self.methods: dict[str, Handler] = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/list": self.list_sessions,
            "session/prompt": self.prompt,
            "session/cancel": self.cancel,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
            # ACP's unstable model selection (acpc --model, older Zed): the ``model`` config option.
            "session/set_model": self.set_model,
            "_sidecar/sessions/rewind": self.rewind,
            "_sidecar/sessions/undo_rewind": self.undo_rewind,
            "_sidecar/sessions/compare": self.compare,
        }

    def warm_up(self) -> None:
        """Import what sessions and the first turn need (the session modules and the tools, then the SDK
        and what its first request loads) in a thread, once, right after ``initialize`` has answered. The event loop
        never imports these itself while the thread runs: the methods that need them wait for its stages
        (``sessions_ready``, ``turn_ready``) without blocking, so every other message is answered
        meanwhile (docs/performance.md, issue 29). Started before ``initialize`` (at the process's start)
        it gained nothing — the two threads share one GIL, so the imports cost the same CPU either way —
        and made the initialize answer 25 % slower (bench/foundation_startup.py: 1.00× vs 0.79× jedi)."""
        if self._warmed:
            return
        self._warmed = self._warming = True
        threading.Thread(target=import_first_turn_modules, args=(lambda: self.model,),
                         kwargs={"sessions_ready": self.sessions_ready, "turn_ready": self.turn_ready},
                         name="sidecar-warm-up", daemon=True).start()

    async def ready(self, stage: WarmUpStage) -> None:
        """Wait, without blocking the loop, until the warm-up passed ``stage`` (at once when no warm-up
        runs: a core driven by tests imports on first use)."""
        if self._warming:
            await stage.wait()

    def add_method(self, method: str, handler: Handler) -> None:
        """A feature's own method (``_sidecar/…``); the protocol's methods cannot be replaced."""
        if method in self.methods:
            raise ValueError(f"{method} is already handled")
        self.methods[method] = handler

    # ---- dispatch ------------------------------------------------------------------------
    async def handle(self, method: str, params: Any, channel: ClientChannel) -> Any:
        handler = self.methods.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: expected an object")
        try:
            return await handler(params, channel)
        except OSError as exc:  # the session store, checkpoints …: a clear error, never -32603 "OSError"
            if isinstance(exc, (ConnectionError, TimeoutError)) or (exc.errno not in DISK_ERRNOS
                                                                    and exc.filename is None):
                raise
            raise storage_error(exc) from None

    def configure(self, settings: dict[str, Any], workspace_settings: Any = None) -> None:
        """Settings from the client (LSP ``initializationOptions.settings``/``workspaceSettings`` or ACP
        initialize ``_meta.sidecar.settings``/``workspaceSettings``). Only the user's scope (``settings``)
        chooses the model, endpoint and effort."""
        self.client_settings = dict(settings)
        self.workspace_settings = dict(workspace_settings) if isinstance(workspace_settings, dict) else {}
        self.model_settings = ModelSettings.from_env(settings)
        self.model = ModelClient(self.model_settings)

    def agent_capabilities(self) -> dict[str, Any]:
        return {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            # ACP v1's stable field: session/new and session/load take ``additionalDirectories``.
            "sessionCapabilities": {"list": {}, "additionalDirectories": {}},
            "_meta": {"sidecar": {"reviewEdit": True, "askUser": True, "lspQuery": True, "diagnostics": True,
                                  "rewind": True}},
        }

    # ---- lifecycle ----------------------------------------------------------------------
    async def initialize(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        req = parse_initialize_params(params)
        channel.client_capabilities = client_capabilities(req.client_capabilities)
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        ours = meta["sidecar"] if isinstance(meta.get("sidecar"), dict) else {}
        if isinstance(ours.get("settings"), dict) or isinstance(ours.get("workspaceSettings"), dict):
            user = ours.get("settings")
            self.configure(user if isinstance(user, dict) else {}, ours.get("workspaceSettings"))
        if isinstance(meta.get("sidecar"), dict) and isinstance(meta["sidecar"].get("workspaceTrust"), bool):
            # The editor's own Workspace Trust (VS Code: vscode.workspace.isTrusted); see docs/protocol.md.
            channel.state.workspace_trust = meta["sidecar"]["workspaceTrust"]
        asyncio.get_running_loop().call_soon(self.warm_up)  # after this answer is written
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": self.agent_capabilities(),
            "agentInfo": {"name": DISTRIBUTION, "title": "Sidecar", "version": version()},
            "authMethods": auth_methods(channel.client_capabilities),
        }

    async def authenticate(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        """ACP ``authenticate``: ``sidecar.server.auth`` (the keychain or the environment's key)."""
        return authenticate(params, self.model_settings)

    def _modes(self, session: Session) -> dict[str, Any]:
        return {"currentModeId": session.mode, "availableModes": MODE_INFO}

    @staticmethod
    def _config_options(session: Session) -> list[dict[str, Any]]:
        from sidecar.model.options import config_options

        return config_options(session.service(MODEL).settings)

    @staticmethod
    def _models(options: list[dict[str, Any]]) -> dict[str, Any]:
        """ACP's unstable ``models`` (``SessionModelState``) from the ``model`` config option: the field a
        client looks for before it sends ``session/set_model``."""
        model = next(o for o in options if o["id"] == "model")
        return {"currentModelId": model["currentValue"],
                "availableModels": [{"modelId": o["value"], "name": o["name"], "description": o["description"]}
                                    for o in model["options"]]}

    async def _start(self, session: Session, saved: SavedSession | None = None) -> None:
        """A session opened (``saved``: the log it was loaded from): assembled by the composition root's
        ``build_session`` (its services, gate and starting mode), then registered and started."""
        from sidecar.permissions.hooks import run_session_start

        await self.build_session(self, session, saved)
        self.sessions[session.id] = session
        _clean_stale_temps(session, lambda: self.ready(self.turn_ready))
        # An untrusted workspace's hooks are not even configured (its settings only restrict); a workspace
        # trusted at the first prompt runs SessionStart then (``sidecar.features``).
        for context in await run_session_start(session, "resume" if session.history else "startup"):
            session.add_notice(context)  # SessionStart hooks' output reaches the model with the next request
        for hook in self.on_session_start:
            try:
                await hook(session)
            except Exception:
                log.exception("session start hook failed")

    async def new_session(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        req = parse_session_params(params, load=False)
        await self.ready(self.sessions_ready)
        cwd = session_directory(req.cwd, "cwd")
        if not cwd.is_dir():
            raise RpcError(INVALID_PARAMS, f"cwd must be an existing absolute directory: {req.cwd!r}")
        from sidecar.server.params import NewSessionExtras

        extra = [session_directory(d, "additionalDirectories")
                 for d in parse(NewSessionExtras, params).additional_directories or []]
        session = Session(id=new_session_id(), cwd=cwd, channel=channel, store=self.store,
                          additional_directories=extra,
                          mcp_servers=[s if isinstance(s, dict) else {} for s in (params.get("mcpServers") or [])])
        session.log.header(session.cwd, extra)
        await self._start(session)
        options = self._config_options(session)
        return {"sessionId": session.id, "modes": self._modes(session), "configOptions": options,
                "models": self._models(options)}

    async def load_session(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        from sidecar.server.content import replay_log, replay_updates
        from sidecar.tools.registry import REGISTRY

        req = parse_session_params(params, load=True)
        await self.ready(self.sessions_ready)
        if req.cwd:
            session_directory(req.cwd, "cwd")
        from sidecar.server.params import NewSessionExtras

        requested = [str(session_directory(d, "additionalDirectories"))
                     for d in parse(NewSessionExtras, params).additional_directories or []]
        saved = self.store.load(req.session_id)
        if saved is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"No saved session {req.session_id}")
        live = self.sessions.get(req.session_id)
        if live is not None and live.running_prompt():
            raise agent_error("prompt_running", "That session is running a prompt; cancel it first")
        # ACP: a non-empty list is the loaded session's whole list; omitted or empty keeps the saved roots.
        session = Session(id=saved.id, cwd=Path(req.cwd or saved.cwd), channel=channel, store=self.store,
                          additional_directories=[Path(d) for d in requested or saved.additional_directories],
                          history=list(saved.messages), title=saved.title,
                          mode=saved.mode if saved.mode in MODES else "default", mode_chosen=saved.mode_chosen)
        await self._start(session, saved)
        registry = session.service(REGISTRY)
        updates = replay_log(saved.events, registry.describe_call)
        if updates is None:  # a log from before the updates were kept
            updates = replay_updates(saved.messages, registry.describe_call)
        for update in updates:
            await session.client.update(update)  # shown again, not logged again
        options = self._config_options(session)
        return {"modes": self._modes(session), "configOptions": options, "models": self._models(options)}

    async def list_sessions(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        await self.ready(self.sessions_ready)
        from sidecar.server.params import ListSessions

        cwd = parse(ListSessions, params).cwd
        items = [{"sessionId": s.id, "cwd": s.cwd, "title": s.title,
                  "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.updated_at)),
                  **({"additionalDirectories": s.additional_directories} if s.additional_directories else {})}
                 for s in self.store.list(cwd)]
        return {"sessions": items}

    def session(self, session_id: Any) -> Session:
        session = self.sessions.get(str(session_id))
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND,
                           f"Unknown session {session_id}; create one with session/new or load it")
        return session

    # ---- turns --------------------------------------------------------------------------
    def main_agent(self, session: Session) -> AgentLoop:
        from sidecar.agent.loop import AgentLoop, Conversation
        from sidecar.tools.registry import REGISTRY

        # The model is fixed for the turn: a change while it runs (the picker, the Config tool) answers
        # from the next prompt, since a tool loop cannot switch models between a call and its result
        # (the new model's thinking would have to start a message the old model wrote).
        model = session.service(MODEL)
        return AgentLoop(session, session.service(REGISTRY), model, session.system_prompt,
                         Conversation(session.history, on_append=session.append_message),
                         model_name=model.settings.model)

    async def prompt(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        req = parse_prompt_params(params)
        session = self.session(req.session_id)
        if session.running_prompt():
            raise agent_error("prompt_running", "A prompt is already running in this session; wait or cancel it")
        blocks = list(params.get("prompt") or [])
        turn = PromptTurn(session, blocks)
        if not turn.content():
            raise RpcError(INVALID_PARAMS, "Invalid params: prompt is empty")
        # From here to the answer this prompt holds the session: before, a second prompt sent while the
        # first waited in a hook before its turn (the workspace trust question) ran a second turn at once.
        session.prompting = True
        try:
            return await self._prompt_accepted(session, turn, blocks)
        finally:
            session.prompting = False

    async def _prompt_accepted(self, session: Session, turn: PromptTurn, blocks: list[Any]) -> dict[str, Any]:
        prompt_id = f"prompt_{uuid.uuid4().hex[:12]}"
        session.log.prompt(prompt_id, blocks, len(session.history))
        meter = session.find_service(USAGE_METER)
        if meter is not None:
            meter.begin_turn()
        try:
            result = await self._prompt_turn(turn)
        except RpcError as exc:
            # The rewind id of a prompt that failed after its checkpoint, as a result would carry it.
            if isinstance(exc.data, dict) and turn.meta.get("userMessageId"):
                exc.data.setdefault("userMessageId", turn.meta["userMessageId"])
            session.log.turn_end(prompt_id, "error", user_message_id=turn.meta.get("userMessageId"),
                                 error={"code": exc.code, "message": exc.message, "data": exc.data},
                                 session_spend=meter.session.to_json() if meter is not None else None)
            raise
        except asyncio.CancelledError:
            session.log.turn_end(prompt_id, "cancelled", user_message_id=turn.meta.get("userMessageId"),
                                 session_spend=meter.session.to_json() if meter is not None else None)
            raise
        spend = meter.turn_record() if meter is not None else None
        if spend is not None:  # ACP's (unstable) turn usage, and the cost beside it
            result["usage"] = spend["usage"]
            result.setdefault("_meta", {}).setdefault("sidecar", {})["spend"] = spend
        session.log.turn_end(prompt_id, str(result.get("stopReason")), user_message_id=turn.meta.get("userMessageId"),
                             spend=spend)
        return result

    async def _prompt_turn(self, turn: PromptTurn) -> dict[str, Any]:
        if await self._wait_for_turn_modules(turn.session):
            return self._with_meta({"stopReason": "cancelled"}, turn)
        answered = await self._before_turn(turn)
        if answered is not None:
            return self._with_meta(answered, turn)
        result = await self._run_prompt(turn)
        for after in self.after_prompt:
            try:
                await after(turn, result)
            except Exception:
                log.exception("after-prompt hook failed")
        return self._with_meta(result, turn)

    async def _before_turn(self, turn: PromptTurn) -> dict[str, Any] | None:
        """The before-prompt hooks (the workspace trust question, a skill's expansion …) in a task of their
        own that counts as the prompt's: ``session/cancel`` (or the request's own cancellation) stops them
        and the prompt answers ``cancelled`` with no request sent. A hook's answer ends the prompt there."""
        session = turn.session

        async def hooks() -> dict[str, Any] | None:
            for before in self.before_prompt:
                answered = await before(turn)
                if answered is not None:
                    return answered
            return None

        try:
            return await self._as_prompt_task(session, hooks())
        except _PromptStopped:
            return {"stopReason": "cancelled"}

    @staticmethod
    async def _as_prompt_task(session: Session, step: Awaitable[_T]) -> _T:
        """One step of a prompt (the warm-up wait, the hooks before the turn, the turn) in a task that is the
        session's ``prompt_task`` meanwhile: ``session/cancel``, or the transport cancelling the request itself
        (``$/cancel_request``, ``$/cancelRequest``), stops it and raises ``_PromptStopped``."""
        task = asyncio.ensure_future(step)
        session.prompt_task = task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            session.cancel_requested = True
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            raise _PromptStopped from None
        finally:
            session.prompt_task = None

    async def _wait_for_turn_modules(self, session: Session) -> bool:
        """The first prompt of a fresh process waits for the warm-up's last stage (the SDK, the tools'
        schemas, the HTTP client) without blocking the loop; meanwhile it counts as running (a second
        prompt is refused, ``session/cancel`` ends it). True when it was cancelled while waiting."""
        if not self._warming or self.turn_ready.is_set():
            return False
        try:
            await self._as_prompt_task(session, self.ready(self.turn_ready))
        except _PromptStopped:
            return True
        return False

    @staticmethod
    def _with_meta(result: dict[str, Any], turn: PromptTurn) -> dict[str, Any]:
        if turn.meta:
            result.setdefault("_meta", {}).setdefault("sidecar", {}).update(turn.meta)
        return result

    async def _run_prompt(self, turn: PromptTurn) -> dict[str, Any]:
        from sidecar.server.content import prompt_title

        session = turn.session
        content = turn.content()  # a hook's replacement (a skill's text) may be empty
        if not content:
            raise RpcError(INVALID_PARAMS, "Invalid params: prompt is empty")
        if session.title is None:
            session.title = prompt_title(turn.prompt, content)
            session.log.title(session.title)
        agent = self.main_agent(session)
        session.cancel_requested = False
        try:
            stop_reason = await self._as_prompt_task(session, self._run_agent(agent, turn))
        except _PromptStopped:  # the turn stops and the prompt answers "cancelled"
            return {"stopReason": "cancelled"}
        except ModelError as exc:
            auth = auth_rpc_error(exc, session.service(MODEL).settings)
            if auth is not None:  # no key, or a refused one: -32000, what to do in the message
                raise auth from None
            # Retrying helps after an overload, a rate limit or no answer; a refused request fails again.
            retryable = exc.status is None or exc.status == 429 or exc.status >= 500
            error = agent_error("model_unavailable", str(exc), retryable=retryable, status=exc.status)
            if isinstance(error.data, dict):
                error.data.update({"errorType": exc.error_type, "providerMessage": exc.detail,
                                   "attempts": exc.attempts})
            raise error from None
        return {"stopReason": stop_reason}

    @staticmethod
    async def _run_agent(agent: AgentLoop, turn: PromptTurn) -> StopReason:
        """The turn, after the prompt's URL and git mentions are resolved (inside the task: a cancel stops
        a fetch too). Only a resolved mention's text is converted here; every other block was already."""
        from sidecar.server.content import block_to_api
        from sidecar.server.mentions import expand_mentions

        converted = turn.api_blocks()
        expanded = await expand_mentions(turn.session, turn.prompt)  # block for block, resolved ones replaced
        blocks = [api if new is old else block_to_api(new)
                  for old, new, api in zip(turn.prompt, expanded, converted, strict=True)]
        return await agent.run([b for b in blocks if b is not None])

    async def cancel(self, params: dict[str, Any], channel: ClientChannel) -> None:
        session = self.sessions.get(str(params.get("sessionId")))
        if session is None:
            return None
        session.cancel_requested = True
        if session.prompt_task is not None and not session.prompt_task.done():
            session.prompt_task.cancel()
        return None

    async def set_mode(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        req = parse_mode_params(params)
        session = self.session(req.session_id)
        if req.mode_id not in MODES:
            raise RpcError(INVALID_PARAMS, f"Unknown mode {req.mode_id}; use one of {', '.join(MODES)}")
        if req.mode_id == "bypassPermissions" and not session.permissions.bypass_allowed():
            raise agent_error("mode_disabled", "bypassPermissions is disabled by a managed setting")
        await session.set_mode(req.mode_id)
        return {}

    async def set_config_option(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        """ACP ``session/set_config_option`` (a select: ``model`` or ``effort``): this session only."""
        from sidecar.model.options import change as change_config_option
        from sidecar.model.options import validate as validate_config_option

        req = parse_config_option_params(params)
        session = self.session(req.session_id)
        validate_config_option(session.service(MODEL).settings, req.config_id, req.value)
        # The answer carries the options; no config_option_update to the client that asked.
        options = await change_config_option(session, req.config_id, req.value, announce=False)
        return {"configOptions": options}

    async def set_model(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        """ACP's unstable ``session/set_model``: the ``model`` config option of this session, announced
        with a ``config_option_update`` (the answer is empty in that protocol)."""
        from sidecar.model.options import change as change_config_option
        from sidecar.model.options import validate as validate_config_option

        req = parse_model_params(params)
        session = self.session(req.session_id)
        validate_config_option(session.service(MODEL).settings, req.config_id, req.value)
        await change_config_option(session, req.config_id, req.value)
        return {}

    async def rewind(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        from sidecar.server.params import RewindRequest

        parse(RewindRequest, params)
        session = self.session(params.get("sessionId"))
        return await self._checkpoints(session).rewind(session, params)

    async def undo_rewind(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        from sidecar.server.params import UndoRewindRequest

        parse(UndoRewindRequest, params)
        session = self.session(params.get("sessionId"))
        return await self._checkpoints(session).undo_rewind(session, params)

    async def compare(self, params: dict[str, Any], channel: ClientChannel) -> dict[str, Any]:
        from sidecar.server.params import RewindRequest

        parse(RewindRequest, params)
        session = self.session(params.get("sessionId"))
        return await self._checkpoints(session).compare(session, params)

    @staticmethod
    def _checkpoints(session: Session) -> Checkpoints:
        from sidecar.workspace.checkpoints import CHECKPOINTS

        checkpoints = session.find_service(CHECKPOINTS)
        if checkpoints is None:
            raise agent_error("checkpoints_unavailable", "Checkpoints are not available in this session")
        return checkpoints

    async def close_channel(self, channel: ClientChannel) -> None:
        """The client went away: stop its sessions' work and release their services."""
        for session in [s for s in self.sessions.values() if s.channel is channel]:
            await close_session(session)
            self.sessions.pop(session.id, None)


# Heavy modules of the first turn, imported in the background after initialize (docs/performance.md).
# In the order they are needed: first the sidecar's session modules and the tools' (``SESSION_MODULES``,
# ``builtin_tools``), so that a session opened while the SDK is still importing waits for no import lock
# the warm-up holds (a replay needs no SDK); then the SDK and what its first request loads (the last five
# names: measured with -X importtime); a name missing in another SDK version is skipped.
# Not ACP's schema: what editors send is read without it (``parse_prompt_params`` and its kin); unusual
# params import it when they come (~0.4 s of CPU, ~9 MB an idle sidecar would otherwise hold).
# Not httpx: the SDK has its own HTTP stack (httpx2); httpx is the web tools' client, imported by them
# (it pulls in its CLI: rich, click, pygments; 7 MB of idle memory).
FIRST_TURN_MODULES = ("anthropic", "anthropic.types", "httpcore2", "opentelemetry.propagate",
                      "anyio._core._sockets", "anyio._core._streams", "concurrent.futures.thread",
                      "sidecar.shell.classify")
# What session/new and a turn need of the sidecar's own modules (imported by the methods that use them, so
# that ``initialize`` is answered before them); first in the warm-up, then the tools (``builtin_tools``).
SESSION_MODULES = ("sidecar.server.params", "sidecar.permissions.trust", "sidecar.permissions.gate",
                   "sidecar.permissions.hooks", "sidecar.model.options", "sidecar.agent.prompt", "sidecar.agent.loop",
                   "sidecar.server.content", "sidecar.tools.registry", "sidecar.tools.builtin",
                   "sidecar.tools.bash.sandbox", "sidecar.workspace.textfile")
# The GIL's switch interval while the warm-up runs. A request handled meanwhile (a session's replay)
# gives the GIL up at each system call (a file read, a write to the client, a stat of an import) and,
# at the default 5 ms, waits that long for the importing thread to hand it back, each time.
WARM_UP_SWITCH_INTERVAL = 0.0005


class WarmUpStage:
    """A point the warm-up thread reaches, awaitable from any event loop without blocking it (a
    ``threading.Event`` whose waiters are futures resolved through ``call_soon_threadsafe``)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def is_set(self) -> bool:
        return self._done.is_set()

    def set(self) -> None:
        with self._lock:
            self._done.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # that loop is closed: nobody waits any more
                pass

    async def wait(self) -> None:
        if self._done.is_set():
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._done.is_set():
                return
            self._waiters.append((loop, future))
        await future


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def import_first_turn_modules(model: ModelClient | Callable[[], ModelClient],
                              sessions_ready: WarmUpStage | None = None,
                              turn_ready: WarmUpStage | None = None) -> None:
    """The warm-up (``SessionCore.warm_up``'s thread): the imports, then the model client. ``model`` may
    be a callable: the core's client when the warm-up reaches it (``initialize`` may have replaced it with
    the editor's settings)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, WARM_UP_SWITCH_INTERVAL))
    try:
        _import_ahead(sessions_ready)
        try:
            warm_up_model_client(model if isinstance(model, ModelClient) else model())
        except Exception:
            log.debug("model client warm-up failed", exc_info=True)
    finally:
        sys.setswitchinterval(interval)
        for stage in (sessions_ready, turn_ready):  # reached, or failed: the methods import themselves
            if stage is not None:
                stage.set()


def _import_ahead(sessions_ready: WarmUpStage | None) -> None:
    # No cycle collection while the imports run: their ~160,000 objects all live on, and the automatic
    # collections that walked them again and again were a fifth of the SDK's import (~0.16 s of CPU). They
    # are frozen (``release_import_garbage``) before collections resume; the few hundred objects of
    # cyclic garbage the imports leave are frozen with them (a collection here held the loop 115 ms).
    collecting = gc.isenabled()
    gc.disable()
    try:
        _import_modules(sessions_ready)
        release_import_garbage()
    finally:
        if collecting:
            gc.enable()


def _import_modules(sessions_ready: WarmUpStage | None) -> None:
    for name in SESSION_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            log.debug("warm-up import of %s failed", name, exc_info=True)
    tools: list[Any] = []
    try:
        from sidecar.tools.builtin import builtin_tools

        tools = builtin_tools()  # imports every tool's module
    except Exception:
        log.debug("warm-up of the tools failed", exc_info=True)
    if sessions_ready is not None:
        sessions_ready.set()  # session/new may run: what it imports is loaded
    for name in FIRST_TURN_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # a missing optional module is the first turn's problem, reported there
            log.debug("warm-up import of %s failed", name, exc_info=True)
    try:  # the tools' JSON schemas, built once per input class: ~0.2 s of the first request otherwise
        for tool in tools:
            tool.api_definition()
    except Exception:
        log.debug("warm-up of the tool schemas failed", exc_info=True)


def release_import_garbage() -> None:
    """What the imports left behind and the idle process does not need: the source lines pydantic read
    for ACP's field docstrings (``linecache``, re-read if a traceback wants them) and the heap pages
    malloc kept after the import's temporaries were freed (``malloc_trim``, glibc only). The ~170,000
    objects the imports made live for good: ``gc.freeze()`` takes them out of the collector's view, so no
    later full collection walks them (one ``gc.collect()`` here held the GIL, and so the event loop, for
    115 ms and found 10 objects; every automatic full collection of a turn cost as much)."""
    linecache.clearcache()
    gc.freeze()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to give back this way
        pass


def _clean_stale_temps(session: Session, after: Callable[[], Awaitable[None]]) -> None:
    """Temp files a killed Write/Edit left in the workspace (``.<name>.<hex>.sidecar-tmp``) and the sandbox
    placeholders of a sidecar killed during a command go, in the background: a big tree never delays the
    session's start. It waits for what ``after`` returns (the warm-up's end; made only when the walk runs, so
    a session that has none leaves no coroutine unawaited): the walk of a large workspace (~0.1 s of
    CPU for this repository with its .venv) shared the GIL with the warm-up's imports, and so delayed the
    first prompt by as much. Once per root and process: what it removes was left by a process that died
    (a write of this one is never 60 s old and unfinished), so 50 sessions of one workspace walk it once."""
    roots = [root for root in session.roots if root not in _CLEANED_ROOTS]
    first = not _CLEANED_ROOTS
    _CLEANED_ROOTS.update(roots)
    if not roots and not first:
        return

    def clean() -> None:
        from sidecar.tools.bash.sandbox import remove_stale_placeholders
        from sidecar.workspace.textfile import remove_stale_temps

        for root in roots:
            for removed in remove_stale_temps(root):
                log.warning("removed the temp file of an interrupted write: %s", removed)
        if first:
            for removed in remove_stale_placeholders():
                log.warning("removed the sandbox placeholder of an interrupted command: %s", removed)

    async def clean_after() -> None:
        await after()
        try:
            await asyncio.get_running_loop().run_in_executor(None, clean)
        except Exception:
            log.warning("removing stale temp files failed", exc_info=True)

    task = asyncio.get_running_loop().create_task(clean_after())
    _BACKGROUND.add(task)  # held until done: the loop keeps only a weak reference to a task
    task.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[asyncio.Task[None]] = set()
_CLEANED_ROOTS: set[Path] = set()  # the roots whose stale temp files this process has removed


# Errors of the disk itself: the user frees space or fixes the folder, then the same request works.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def storage_error(exc: OSError) -> RpcError:
    """A method failed on a file of the sidecar's own (a full disk under the session store): -32050
    ``storage_unavailable`` (a disk fault: retryable once fixed) or ``storage_error``, naming the file."""
    where = f" {exc.filename}" if exc.filename else ""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in DISK_ERRNOS:
        log.warning("storage unavailable:%s: %s", where, reason)
        return agent_error("storage_unavailable",
                           f"Could not write{where}: {reason}. The sidecar keeps its sessions under "
                           f"{data_dir()}; free space there (or fix that folder) and try again.", retryable=True)
    log.warning("storage error:%s: %s", where, reason, exc_info=exc)
    return agent_error("storage_error", f"Could not use{where}: {reason}.")


def session_directory(raw: str, field: str) -> Path:
    """A directory of ``session/new``/``session/load`` (``cwd``, ``additionalDirectories``): an absolute path
    without NUL or other control characters, else -32602 naming the field (never -32603 from deep inside)."""
    if not raw or any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise RpcError(INVALID_PARAMS, f"Invalid params: {field} must be an absolute path without control "
                                       f"characters (NUL, newline …): {raw!r}")
    path = Path(raw)
    if not path.is_absolute():
        raise RpcError(INVALID_PARAMS, f"Invalid params: {field} must be an absolute path: {raw!r}")
    return path


async def close_session(session: Session) -> None:
    if session.prompt_task is not None and not session.prompt_task.done():
        session.cancel_requested = True
        session.prompt_task.cancel()
        await asyncio.gather(session.prompt_task, return_exceptions=True)
    for name, service in session.owned_services():  # the server's shared services stay open
        close = getattr(service, "close", None)
        if close is None:
            continue
        try:
            result = close()
            if asyncio.iscoroutine(result):
                await asyncio.wait_for(result, timeout=5)
        except Exception:
            log.exception("closing service %s failed", name)

"""The gate every tool call passes before its first side effect (docs/contract.md §6).

``require`` is the one asking path: the decision (``sidecar.permissions.decide``, the table of tiers),
its audit record, and when the verdict is "ask" the question to the user. Commands, fetches, MCP tools
and edit reviews (``sidecar.permissions.review``, which brings its own question) all go through it.

Asking uses ACP ``session/request_permission`` with the four option kinds, through the session's
``ClientPort`` (the LSP channel falls back to ``window/showMessageRequest`` for a plain LSP client).
"Always allow" remembers the suggested rule: in ``.claude/settings.local.json`` for commands, fetches and
MCP tools, for the session for edits. Every decision is written to the session log (``session.audit``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sidecar.client_messages import PermissionOption, PermissionToolCall, ToolCallLocation
from sidecar.errors import ClientRequestError, ToolError
from sidecar.permission_types import Decision, HookVerdict, PermissionRequest, UserAnswer, within
from sidecar.permissions.decide import decide, source_label
from sidecar.permissions.rules import READ_RULE_TOOL, PathContext, Rule, parse_rule, path_rule_matches
from sidecar.permissions.settings import (
    CLIENT_SETTINGS,
    WORKSPACE_SETTINGS,
    Settings,
    SettingsLoader,
    add_rule_to_settings_file,
    local_settings_path,
)
from sidecar.permissions.trust import TRUST, WorkspaceTrust, granted_rules, trust_of, workspace_trusted
from sidecar.secrets import scrubbed_env
from sidecar.session import MODES, Asker, CallContext, Mode

if TYPE_CHECKING:
    from sidecar.session import Session

log = logging.getLogger(__name__)

__all__ = ["MODES", "Asker", "CallContext", "Decision", "HookVerdict", "Mode", "PermissionGate", "UserAnswer", "govern",
           "source_label"]




# ACP ToolKind of a permission question whose call has no tool kind of its own.
KIND_OF_ACCESS: dict[str, str] = {"read": "read", "write": "edit", "execute": "execute", "fetch": "fetch",
                                  "other": "other"}


class PermissionGate:
    """Per-session gate. ``require`` returns when the call may proceed and raises ToolError otherwise."""

    def __init__(self, session: Session) -> None:
        self.session = session
        # Rules granted ("always allow"/"always reject") for this session only.
        self.session_rules: list[Rule] = []
        # Called before every question to the user (e.g. to notify an editor whose panel is hidden).
        self.on_ask: list[Callable[[PermissionRequest, CallContext], Awaitable[None]]] = []
        self.loader = SettingsLoader(Path(session.cwd), trusted=lambda: workspace_trusted(session),
                                     granted=lambda: granted_rules(session))
        self._client_settings: dict[str, Any] | None = None
        self._widen_roots()

    # ---- settings ---------------------------------------------------------------------------
    def set_client_settings(self, data: dict[str, Any] | None) -> None:
        """The editor extension's settings (same shape as a settings.json), sent by the client.
        Without this call they are the session's ``CLIENT_SETTINGS``."""
        self._client_settings = data or {}
        self._widen_roots()

    def settings(self) -> Settings:
        client = self._client_settings
        if client is None:
            client = self.session.find_service(CLIENT_SETTINGS)
        self.loader.client_settings = client if isinstance(client, dict) else {}
        workspace = self.session.find_service(WORKSPACE_SETTINGS)
        self.loader.workspace_settings = workspace if isinstance(workspace, dict) else {}
        return self.loader.load()

    @property
    def session_allow(self) -> list[str]:
        return [r.text for r in self.session_rules if r.behavior == "allow"]

    def rules(self) -> list[Rule]:
        return [*self.settings().rules(), *self.session_rules]

    def trust_changed(self) -> None:
        """The workspace became trusted: its settings' directories and default mode now apply."""
        self._widen_roots()

    def _widen_roots(self) -> None:
        """``additionalDirectories`` from settings widen the session's roots."""
        extra: list[Path] = getattr(self.session, "additional_directories", [])
        for d in self.settings().additional_directories(Path(self.session.cwd)):
            if d not in [p.resolve() for p in extra]:
                extra.append(d)

    def initial_mode(self, current: str = "default", new: bool = True) -> Mode:
        """The one place a session's starting mode is decided (``sidecar.app.build_session`` applies it at
        the session's start; ``features.resolve_trust`` again when its workspace becomes trusted before the
        first prompt and the user chose no mode).

        A new session (``new``, still in ``default``): the editor's ``initialMode`` (its user scope), else
        the settings' ``defaultMode`` (managed, the editor's, then the workspace's sources — which count only
        once the workspace is trusted, and never give ``bypassPermissions`` from the editor's workspace
        scope —, then the user's file). A loaded session keeps ``current``. Whatever the source, a mode a
        managed or any other ``disableBypassPermissionsMode`` forbids is never the answer."""
        if new and current == "default":
            settings = self.settings()  # sets the loader's client settings too
            client = self.loader.client_settings
            candidates: tuple[object, ...] = (client.get("initialMode"), settings.default_mode())
        else:
            candidates = (current,)
        for mode in candidates:
            if isinstance(mode, str) and mode in MODES and self.mode_allowed(mode):
                return mode
        return "default"

    def bypass_allowed(self) -> bool:
        return self.mode_allowed("bypassPermissions")

    def mode_allowed(self, mode: str) -> bool:
        """False for ``bypassPermissions`` when a settings source sets disableBypassPermissionsMode."""
        if mode not in MODES:
            return False
        return not (mode == "bypassPermissions" and self.settings().bypass_disabled())

    def path_context(self) -> PathContext:
        return PathContext.for_cwd(Path(self.session.cwd))

    def read_denied(self) -> Callable[[Path], bool] | None:
        """A test for "a Read deny rule names this file" (Grep and Glob drop such results), or None when
        no Read deny rule with a path exists."""
        specs = [r.specifier for r in self.rules()
                 if r.behavior == "deny" and r.tool == READ_RULE_TOOL and r.specifier is not None]
        if not specs:
            return None
        pctx = self.path_context()
        return lambda path: any(path_rule_matches(spec, path, pctx) for spec in specs)

    # ---- deciding ---------------------------------------------------------------------------
    async def require(self, request: PermissionRequest, ctx: CallContext, ask: Asker | None = None) -> Decision:
        """The one asking path: decide, audit, and when the verdict is "ask" ask (``ask``, default the
        gate's own question), audit the answer and raise ToolError on a refusal."""
        decision = self.decide(request, ctx.hook_verdict)
        self.audit_decision(request, ctx, decision)
        if decision.verdict == "allow":
            return decision
        if decision.verdict == "deny":
            raise ToolError(denial_message(request, decision))
        answer = await (ask or self.ask_user)(request, ctx)
        reason = answer.reason or ("user cancelled" if answer.cancelled else f"user chose {answer.option_id}")
        user = Decision("allow" if answer.allowed else "deny", reason, decided_by="user")
        self.audit_decision(request, ctx, user, always=answer.always, feedback=answer.feedback)
        if not answer.allowed:
            raise ToolError(answer.message or rejection_message(answer))
        return user

    def decide(self, request: PermissionRequest, hook: HookVerdict | None = None) -> Decision:
        """Rules, hooks' verdicts and the mode; never asks the user (``sidecar.permissions.decide``)."""
        session = self.session
        roots = session.roots
        saved = None
        if request.read_only and not all(within(p, roots) for p in request.paths):
            saved = session.store.tool_output_dir(session.id).resolve()
        return decide(request, self.rules(), session.mode, roots, hook, cwd=Path(session.cwd),
                      saved_output=saved)

    # ---- asking -----------------------------------------------------------------------------
    async def ask_user(self, request: PermissionRequest, ctx: CallContext,
                       options: list[PermissionOption] | None = None) -> UserAnswer:
        """Ask the user; with ``options`` given, the caller interprets ``UserAnswer.option_id``."""
        for listener in self.on_ask:
            await listener(request, ctx)
        custom = options is not None
        if options is None:
            options = default_options(request)
        title = request.title if not ctx.agent_label else f"[{ctx.agent_label}] {request.title}"
        shown = ctx.shown
        # The tool call as it is (ACP ToolCall): clients decide by ``kind`` (acpc counts a missing one as
        # a read), so it is always there; the tool's own kind, else the one its access implies.
        tool_call: PermissionToolCall = {"toolCallId": ctx.tool_call_id, "title": title,
                                         "kind": shown.get("kind") or KIND_OF_ACCESS[request.access],
                                         "rawInput": request.raw_input, "status": "pending"}
        locations = (shown["locations"] if "locations" in shown
                     else [ToolCallLocation(path=str(p)) for p in request.paths])
        if locations:
            tool_call["locations"] = locations
        if request.content:
            tool_call["content"] = request.content
        try:
            outcome = await self.session.client.request_permission(tool_call, options)
        except ClientRequestError as exc:  # no answer is no permission: as if the user had cancelled
            log.warning("permission request failed: %s", exc)
            outcome = None
        if outcome is None:
            return UserAnswer(allowed=False, cancelled=True)
        option_id = outcome["optionId"]
        kind: str = next((o["kind"] for o in options if o["optionId"] == option_id), option_id)
        feedback = outcome.get("feedback")
        feedback = feedback if feedback and feedback.strip() else None
        allowed = kind.startswith("allow")
        # The answer on the call's card ("You chose: Allow once"), in the log too: a reload shows it again.
        name = next((o["name"] for o in options if o["optionId"] == option_id), "")
        await self.session.send_update({"sessionUpdate": "tool_call_update", "toolCallId": ctx.tool_call_id,
                                        "_meta": {"sidecar": {"answer": {"optionId": option_id, "kind": kind,
                                                                         "name": name}}}})
        answer = UserAnswer(allowed=allowed, always=kind.endswith("always"), feedback=feedback,
                            option_id=option_id)
        if not custom and answer.always and request.suggested_rule:
            self.remember(request, "allow" if allowed else "deny")
        return answer

    def remember(self, request: PermissionRequest, behavior: Literal["allow", "deny"]) -> None:
        """"Always": edits for this session; commands, fetches and MCP tools in settings.local.json."""
        assert request.suggested_rule
        rule = parse_rule(request.suggested_rule, behavior, "session")
        if rule not in self.session_rules:
            self.session_rules.append(rule)
        if request.access == "write":
            return
        path = local_settings_path(Path(self.session.cwd))
        try:
            add_rule_to_settings_file(path, rule.text, behavior)
            trust = trust_of(self.session)
            if trust is not None and behavior == "allow":  # the user's own rule: it applies untrusted too
                trust.store.add_granted_rule(trust.cwd, rule.text)
            self.session.audit("permission_rule_saved", rule=rule.text, behavior=behavior, path=str(path))
        except (OSError, ValueError) as exc:
            log.warning("could not save %s to %s: %s", rule.text, path, exc)
            self.session.audit("permission_rule_not_saved", rule=rule.text, behavior=behavior, error=str(exc))

    def audit_decision(self, request: PermissionRequest, ctx: CallContext, decision: Decision,
                       **extra: Any) -> None:
        self.session.audit("permission", tool=request.tool_name, toolCallId=ctx.tool_call_id,
                           title=request.title,
                           verdict=decision.verdict, reason=decision.reason, rule=decision.rule,
                           source=decision.source, decided_by=decision.decided_by, mode=self.session.mode,
                           agent=ctx.agent_label, **{k: v for k, v in extra.items() if v is not None})


def gate_of(session: Session) -> PermissionGate:
    """The session's gate itself, for what lies beyond the surface its users call (its settings)."""
    gate = session.permissions
    if not isinstance(gate, PermissionGate):
        raise TypeError(f"session {session.id} is governed by {type(gate).__name__}, not a PermissionGate")
    return gate


def secret_env_names(session: Any) -> tuple[str, ...]:
    """``secretEnvVars`` of every settings source (each adds names; a repository's list counts too)."""
    gate = getattr(session, "permissions", None)
    if not isinstance(gate, PermissionGate):
        return ()
    names: list[str] = []
    for src in gate.settings().sources:
        items = src.data.get("secretEnvVars")
        names += [n for n in items if isinstance(n, str) and n] if isinstance(items, list) else []
    return tuple(dict.fromkeys(names))


def child_env(session: Any, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of any process the session starts (hooks, MCP servers, language servers):
    the sidecar's own, without its credentials and the names in ``secretEnvVars``."""
    env = scrubbed_env(extra_secret_names=secret_env_names(session))
    env.update(extra or {})
    return env


def govern(session: Session, trusted: bool | None = None) -> Session:
    """Attach a permission gate to a session and set its starting mode, unless its user chose one: for
    every session the core opens (``sidecar.app.build_session``) and for tests and embeddings that build
    a ``Session`` themselves.
    ``trusted`` given: the workspace's trust as an editor would state it (without it, and without a
    ``TRUST`` service, the workspace is not trusted)."""
    if trusted is not None:
        session.provide(TRUST, WorkspaceTrust(session, trusted))
    gate = session.permissions = PermissionGate(session)
    if not session.mode_chosen:  # a loaded session keeps the mode its user set
        session.mode = gate.initial_mode(session.mode, new=not session.history)
    return session


def default_options(request: PermissionRequest) -> list[PermissionOption]:
    rule = request.suggested_rule
    scope = "for this session" if request.access == "write" else "in this project"
    options: list[PermissionOption] = [{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}]
    if rule:
        options.append({"optionId": "allow_always", "name": f"Always allow {rule} {scope}",
                        "kind": "allow_always"})
    options.append({"optionId": "reject_once", "name": "Reject", "kind": "reject_once"})
    if rule:
        options.append({"optionId": "reject_always", "name": f"Always reject {rule} {scope}",
                        "kind": "reject_always"})
    return options


def denial_message(request: PermissionRequest, decision: Decision) -> str:
    if decision.decided_by == "mode":
        return ("The session is in plan mode, which allows no edits and no commands that change anything. "
                "Keep researching with read-only tools, then present your plan with ExitPlanMode and wait "
                "for the user to approve it.")
    if decision.decided_by == "hook":
        return (f"A PreToolUse hook blocked this {request.tool_name} call: {decision.reason}. "
                "Do not retry it unchanged; adjust your approach.")
    return (f"Permission to use {request.tool_name} was denied: {decision.reason}. Do not retry this call; "
            "choose another approach or ask the user.")


def rejection_message(answer: UserAnswer) -> str:
    if answer.cancelled:
        return "The user cancelled this request; the tool did not run. Wait for the user's next instruction."
    msg = "The user rejected this tool call; it did not run."
    if answer.feedback:
        msg += f" The user said: {answer.feedback}"
    return msg + " Do not retry the same call; adjust your approach to what the user wants."


"""Claude Code hooks from settings: shell commands run at points of the agent's life.

Settings shape (every source contributes; identical commands run once)::

    {"hooks": {"PreToolUse": [{"matcher": "Bash|Edit", "hooks": [{"type": "command",
                                                               "command": "./check.sh", "timeout": 30}]}]}}

A hook gets a JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
``permission_mode`` and the event's fields) and answers with its exit code and output:

- exit 0: success; stdout may be JSON (``decision``, ``reason``, ``continue``, ``stopReason``,
  ``systemMessage``, ``hookSpecificOutput.permissionDecision`` / ``permissionDecisionReason`` /
  ``additionalContext``); for UserPromptSubmit and SessionStart plain stdout is context for the model;
- exit 2: blocking; stderr goes to the model (PreToolUse: the call is refused; PostToolUse: the model is
  told; Stop: the agent keeps going) or to the user (UserPromptSubmit: the prompt is dropped);
- any other exit: a non-blocking error, logged and audited.

Matchers (PreToolUse, PostToolUse, SessionStart): empty or ``*`` matches all; names separated by ``|``
match exactly; anything else is a regular expression that must match the whole tool name.
Default timeout 60 s; a hook that overruns is killed (its process group) and counts as a non-blocking error.
A PreToolUse ``allow`` skips the question, never a deny rule (see ``gate.PermissionGate.decide``).

Where these are called: ``run_pre_tool_use`` / ``run_post_tool_use`` by the dispatcher around
``check_permission`` / ``run``; ``run_user_prompt_submit``, ``run_stop`` and ``run_session_start`` by the
agent loop and the session core.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sidecar.errors import ToolError
from sidecar.permissions.gate import HookVerdict, child_env, gate_of
from sidecar.secrets import scrubbed_env

if TYPE_CHECKING:
    from sidecar.session import Session

log = logging.getLogger(__name__)

HookEvent = Literal["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"]
DEFAULT_TIMEOUT_S = 60.0
MAX_OUTPUT = 64 * 1024
_SIMPLE_MATCHER = re.compile(r"^[A-Za-z0-9_|]+$")


@dataclass(frozen=True)
class HookCommand:
    command: str
    timeout: float
    source: str
    matcher: str


@dataclass
class HookRun:
    hook: HookCommand
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def json(self) -> dict[str, Any]:
        text = self.stdout.strip()
        if self.exit_code != 0 or not text.startswith("{"):
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def specific(self) -> dict[str, Any]:
        spec = self.json.get("hookSpecificOutput")
        return spec if isinstance(spec, dict) else {}


@dataclass
class HookResult:
    """The combined answer of every hook that ran for one event."""

    runs: list[HookRun] = field(default_factory=list)
    blocked: bool = False
    # For the model (PreToolUse/PostToolUse/Stop) or the user (UserPromptSubmit).
    message: str = ""
    permission: Literal["allow", "deny", "ask"] | None = None
    context: list[str] = field(default_factory=list)
    # ``continue: false``: stop the agent; ``stop_reason`` is shown to the user.
    stop: bool = False
    stop_reason: str = ""
    system_messages: list[str] = field(default_factory=list)


def matcher_matches(matcher: str | None, subject: str) -> bool:
    if not matcher or matcher == "*":
        return True
    if _SIMPLE_MATCHER.match(matcher):
        return subject in matcher.split("|")
    try:
        return re.fullmatch(matcher, subject) is not None
    except re.error:
        return matcher == subject


def configured_hooks(session: Session, event: HookEvent, subject: str | None) -> list[HookCommand]:
    out: list[HookCommand] = []
    seen: set[str] = set()
    for source, hooks in gate_of(session).settings().hooks():
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        for group in groups:
            if not isinstance(group, dict):
                continue
            matcher = group.get("matcher") if isinstance(group.get("matcher"), str) else ""
            if subject is not None and not matcher_matches(matcher, subject):
                continue
            for h in group.get("hooks") or []:
                if not isinstance(h, dict) or h.get("type", "command") != "command":
                    continue
                command = h.get("command")
                if not isinstance(command, str) or not command.strip() or command in seen:
                    continue
                seen.add(command)
                timeout = h.get("timeout")
                t = float(timeout) if isinstance(timeout, int | float) and timeout > 0 else DEFAULT_TIMEOUT_S
                out.append(HookCommand(command, t, source, matcher or ""))
    return out


async def run_hook(hook: HookCommand, payload: dict[str, Any], cwd: str,
                   env: dict[str, str] | None = None) -> HookRun:
    env = {**(env if env is not None else scrubbed_env()), "CLAUDE_PROJECT_DIR": cwd, "SIDECAR_PROJECT_DIR": cwd}
    proc = await asyncio.create_subprocess_shell(
        hook.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
    data = json.dumps(payload, ensure_ascii=False, default=str).encode()
    try:
        async with asyncio.timeout(hook.timeout):
            out, err = await proc.communicate(data)
    except TimeoutError:
        _kill(proc)
        await proc.wait()
        return HookRun(hook, None, "", f"hook timed out after {hook.timeout:g}s", timed_out=True)
    except BaseException:
        _kill(proc)
        raise
    return HookRun(hook, proc.returncode, out[:MAX_OUTPUT].decode(errors="replace"),
                   err[:MAX_OUTPUT].decode(errors="replace"))


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_event(session: Session, event: HookEvent, subject: str | None,
                    fields: dict[str, Any]) -> HookResult:
    """Run every matching hook of ``event`` in parallel and combine their answers."""
    hooks = configured_hooks(session, event, subject)
    if not hooks:
        return HookResult()
    payload = {
        "session_id": session.id,
        "transcript_path": str(_transcript_path(session)),
        "cwd": str(session.cwd),
        "hook_event_name": event,
        "permission_mode": session.mode,
        **fields,
    }
    env = child_env(session)
    runs = await asyncio.gather(*(run_hook(h, payload, str(session.cwd), env) for h in hooks))
    result = combine(event, list(runs))
    for run in runs:
        session.audit("hook", hook_event=event, command=run.hook.command, source=run.hook.source,
                      exit_code=run.exit_code, timed_out=run.timed_out, subject=subject,
                      stderr=run.stderr[:2000] if run.exit_code not in (0,) else None)
        if run.exit_code not in (0, 2):
            log.warning("%s hook %r failed (exit %s): %s", event, run.hook.command, run.exit_code,
                        run.stderr.strip()[:500])
    return result


def combine(event: HookEvent, runs: list[HookRun]) -> HookResult:
    result = HookResult(runs=runs)
    messages: list[str] = []
    rank = {"deny": 3, "ask": 2, "allow": 1}
    for run in runs:
        data, spec = run.json, run.specific
        if run.exit_code == 2:
            result.blocked = True
            messages.append(run.stderr.strip() or f"blocked by hook {run.hook.command!r}")
            continue
        if run.exit_code != 0:
            continue
        decision = spec.get("permissionDecision")
        reason = spec.get("permissionDecisionReason") or data.get("reason") or ""
        legacy = data.get("decision")
        if event == "PreToolUse":
            if legacy == "approve":
                decision = "allow"
            elif legacy == "block":
                decision = "deny"
            if decision in rank and rank[str(decision)] > rank.get(result.permission or "", 0):
                result.permission = decision
            if decision == "deny":
                result.blocked = True
                messages.append(str(reason) or f"denied by hook {run.hook.command!r}")
            elif decision in ("ask", "allow") and reason:
                messages.append(str(reason))
        elif legacy == "block":
            result.blocked = True
            messages.append(str(reason) or f"blocked by hook {run.hook.command!r}")
        context = spec.get("additionalContext")
        if isinstance(context, str) and context.strip():
            result.context.append(context.strip())
        elif event in ("UserPromptSubmit", "SessionStart") and not data and run.stdout.strip():
            result.context.append(run.stdout.strip())
        if data.get("continue") is False:
            result.stop = True
            result.stop_reason = str(data.get("stopReason") or "")
        if isinstance(data.get("systemMessage"), str):
            result.system_messages.append(data["systemMessage"])
    if result.blocked and event == "PreToolUse":
        result.permission = "deny"
    result.message = "\n".join(m for m in messages if m)
    return result


def _transcript_path(session: Session) -> Any:
    try:
        session.store.flush()  # the hook reads the transcript as it is now
        return session.store.path(session.id)
    except (AttributeError, ValueError):
        return ""


# ---- the functions the dispatcher and the loop call -----------------------------------------------

async def run_pre_tool_use(session: Session, tool_call_id: str, tool_name: str,
                           tool_input: dict[str, Any]) -> HookVerdict | None:
    """Before ``tool.check_permission``. Raises ToolError when a hook blocks the call; otherwise returns
    the hooks' allow/ask for the gate (an allow skips the question, never a deny rule)."""
    result = await run_event(session, "PreToolUse", tool_name,
                             {"tool_name": tool_name, "tool_input": tool_input, "tool_use_id": tool_call_id})
    if result.blocked:
        reason = result.message or "blocked by a PreToolUse hook"
        session.audit("permission", tool=tool_name, toolCallId=tool_call_id, verdict="deny",
                      reason=reason, decided_by="hook", mode=session.mode)
        raise ToolError(f"A PreToolUse hook blocked this {tool_name} call: {reason}\n"
                        "The call did not run. Do not retry it unchanged; adjust your approach.")
    if result.permission in ("allow", "ask"):
        return HookVerdict(result.permission, result.message)
    return None


async def run_post_tool_use(session: Session, tool_call_id: str, tool_name: str, tool_input: dict[str, Any],
                            tool_response: Any) -> str | None:
    """After a tool ran. Returns text to append to the tool's result for the model, or None."""
    result = await run_event(session, "PostToolUse", tool_name,
                             {"tool_name": tool_name, "tool_input": tool_input,
                              "tool_response": tool_response, "tool_use_id": tool_call_id})
    parts: list[str] = []
    if result.blocked and result.message:
        parts.append(f"PostToolUse hook feedback: {result.message}")
    parts.extend(result.context)
    return "\n".join(parts) or None


async def run_user_prompt_submit(session: Session, prompt: str) -> HookResult:
    """Before a prompt reaches the model. ``blocked``: drop the prompt and show ``message`` to the user;
    else ``context`` items go to the model with the prompt."""
    return await run_event(session, "UserPromptSubmit", None, {"prompt": prompt})


async def run_stop(session: Session, stop_hook_active: bool = False) -> str | None:
    """When the agent is about to end its turn. A returned reason means "keep going": send it to the model
    as the next user message (with ``stop_hook_active=True`` on the next call, to avoid loops)."""
    result = await run_event(session, "Stop", None, {"stop_hook_active": stop_hook_active})
    if result.blocked and not result.stop:
        return result.message or "A Stop hook asked you to continue."
    return None


async def run_session_start(session: Session, source: str = "startup") -> list[str]:
    """When a session starts (``startup``), is loaded (``resume``), cleared or compacted: context items."""
    result = await run_event(session, "SessionStart", source, {"source": source})
    return result.context

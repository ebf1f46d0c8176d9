"""One conversation: its roots, mode, history, services, the port back to its client and its log.

Transport-free and tool-free: this module sits just above ``sidecar.errors`` and ``sidecar.store``.
A Session talks to its client only through ``ClientPort`` (typed methods over the transport's
``ClientChannel``) and writes its log only through ``SessionLog``. Services that higher layers attach
(the permission gate, the read ledger, shells …) are set by the composition root, not created here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, cast, runtime_checkable

from sidecar.client_messages import (
    ApplyEditParams,
    ApplyEditResult,
    AskUserParams,
    AskUserResult,
    DiagnosticsResult,
    ElicitationParams,
    ElicitationResult,
    FileDiagnostics,
    JsonObject,
    LspQueryParams,
    LspQueryResult,
    ModelRetryParams,
    PermissionOption,
    PermissionToolCall,
    ReviewEditParams,
    ReviewEditResult,
    SelectedOutcome,
    TerminalExitStatus,
    TerminalOutput,
)
from sidecar.errors import ClientGone, ClientRequestError, RpcError
from sidecar.permission_types import Decision, HookVerdict, PermissionRequest, UserAnswer, within
from sidecar.store import SessionStore
from sidecar.textspan import common_prefix, common_suffix

log = logging.getLogger(__name__)

Mode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
MODES: tuple[Mode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")
# Updates that describe the session's state, not its transcript: sent again on every start/load.
# Not replayed: sent again on load, or (config options) answered by ``session/load`` itself.
UNLOGGED_UPDATES = frozenset({"available_commands_update", "config_option_update"})


# What a title or a question never shows raw: C0/C1 controls and DEL (a newline in a file name would make
# "Create a⏎README.md (unchanged, already approved)" look like two lines), Unicode line/paragraph
# separators and the bidirectional overrides/isolates (text that reads differently from what it is).
_HIDDEN_CHARS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_HIDDEN_CHARS.update({c: f"\\u{c:04x}" for c in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A),
                                                   0x200E, 0x200F, 0x061C)})
_HIDDEN_CHARS.update({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})


def shown_text(text: str) -> str:
    """``text`` with every control, separator and bidi character escaped (``\\n``, ``\\x1b``, ``\\u202e``):
    what a title, a question or a one-line listing shows the user."""
    return text if text.isprintable() else text.translate(_HIDDEN_CHARS)


ServiceT = TypeVar("ServiceT")


class ServiceKey(Generic[ServiceT]):
    """The typed name of a session service, declared next to the service's type in the layer that owns
    it (``LEDGER = ServiceKey[ReadLedger]("ledger", ReadLedger)`` in ``sidecar.workspace.ledger``), so
    the session names no type of a layer above it and every reader gets the service's type.

    ``create``: how ``Session.service`` makes it on first use (without it, whoever assembles the session
    provides it). ``shared``: one object of the server's for every session, never closed with a session.
    """

    __slots__ = ("create", "name", "shared")

    def __init__(self, name: str, create: Callable[[Session], ServiceT] | None = None, *,
                 shared: bool = False) -> None:
        self.name = name
        self.create = create
        self.shared = shared

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


@dataclass
class ConnectionState:
    """What one connection knows of its client beyond its capabilities: set by the transport and by the
    client's notifications, read by the port and the core. Every channel holds one (``channel.state``)."""

    # Whether the editor's agent panel is showing (``_sidecar/panel_visibility``): hidden, the user is
    # told of a finished turn with ``_sidecar/notify``.
    panel_visible: bool = True
    # The editor's own Workspace Trust (``initialize``'s ``_meta.sidecar.workspaceTrust``, LSP
    # ``initializationOptions.workspaceTrust``, then ``_sidecar/workspace_trust``); None: it did not say.
    workspace_trust: bool | None = None
    # The client applies ``workspace/applyEdit`` to its open buffers (LSP's ``workspace.applyEdit``).
    applies_buffer_edits: bool = False
    # LSP only: the client sent ``initializationOptions.acp`` (ours), so it answers
    # ``session/request_permission``; a plain LSP client is asked with ``window/showMessageRequest``.
    supports_acp_permissions: bool = False


class ClientChannel(Protocol):
    """The way back to the editor. Implemented by each transport adapter (and by the tests' fakes)."""

    client_capabilities: dict[str, Any]
    state: ConnectionState

    async def request(self, method: str, params: dict[str, Any]) -> object:
        """Send a request and await its result (the raw JSON; ``ClientPort`` reads it). Cancelling the
        awaiting task forgets the request (a late reply is dropped, never a crash)."""
        ...

    async def notify(self, method: str, params: dict[str, Any]) -> None: ...


@runtime_checkable
class AsksPermissionItself(Protocol):
    """A channel whose transport has its own way to ask (the LSP channel falls back to
    ``window/showMessageRequest`` for a plain LSP client); ``ClientPort.request_permission`` uses it."""

    async def request_permission(self, params: dict[str, Any]) -> object: ...


# How long the editor may take to answer ``fs/read_text_file`` / ``fs/write_text_file`` (seconds).
CLIENT_FS_TIMEOUT = float(os.environ.get("SIDECAR_CLIENT_FS_TIMEOUT") or 30)


def sidecar_capability(channel: ClientChannel, name: str) -> bool:
    """Whether the client advertised ``clientCapabilities._meta.sidecar.<name>`` (docs/contract.md §3.3)."""
    meta = channel.client_capabilities.get("_meta") or {}
    sidecar = meta.get("sidecar") or {}
    return bool(sidecar.get(name))


class ClientPort:
    """What the agent asks of the editor, one typed method per request (docs/contract.md §3.2, §3.3).

    Every call site goes through here, never through raw method strings on the channel. Params and
    results are the TypedDicts of ``sidecar.client_messages`` (mirroring ``extension/src/protocol.ts``):
    each method reads the client's raw answer into its result type here, once. The error contract: every
    request method raises ``ClientRequestError`` (``sidecar.errors``) when the client answers an error,
    does not answer in time, goes away, or answers without the fields the method promises; nothing else
    escapes (a cancelled caller still gets ``CancelledError``). Notifications other than ``update`` never
    raise: nobody waits for them.
    """

    def __init__(self, session_id: str, channel: ClientChannel) -> None:
        self.session_id = session_id
        self.channel = channel

    def capability(self, name: str) -> bool:
        return sidecar_capability(self.channel, name)

    async def _request(self, method: str, params: Mapping[str, object], *, timeout: float | None = None) -> object:
        """The channel's raw answer to ``method``, or ``ClientRequestError`` saying why there is none."""
        return await self._answer(method, self.channel.request(method, dict(params)), timeout)

    @staticmethod
    async def _answer(method: str, answering: Awaitable[object], timeout: float | None = None) -> object:
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a turn's cancel that arrives
            # together with the answer.
            async with asyncio.timeout(timeout):
                return await answering
        except TimeoutError:
            raise ClientRequestError(method, "timeout", f"no answer within {timeout:g} s") from None
        except ClientGone:
            raise ClientRequestError(method, "gone", "the editor's connection closed") from None
        except RpcError as exc:
            raise ClientRequestError(method, "error", exc.message, exc.code) from None
        except (ConnectionError, OSError) as exc:
            raise ClientRequestError(method, "gone", f"the editor's connection closed ({exc})") from None

    async def update(self, update: JsonObject) -> None:
        """ACP ``session/update``."""
        title = update.get("title")
        if isinstance(title, str) and not title.isprintable():
            update = {**update, "title": shown_text(title)}  # a tool call's title: one line
        await self.channel.notify("session/update", {"sessionId": self.session_id, "update": update})

    async def request_permission(self, tool_call: PermissionToolCall,
                                 options: Sequence[PermissionOption]) -> SelectedOutcome | None:
        """ACP ``session/request_permission``: the option the user selected, or None when they cancelled.
        The question's title and its options' names are shown with control characters escaped."""
        tool_call = {**tool_call, "title": shown_text(tool_call["title"])}
        shown = [{**o, "name": shown_text(o["name"])} for o in options]
        params = {"sessionId": self.session_id, "toolCall": tool_call, "options": shown}
        channel = self.channel
        result = await self._answer("session/request_permission", channel.request_permission(params)
                                    if isinstance(channel, AsksPermissionItself)
                                    else channel.request("session/request_permission", params))
        outcome = _field(result, "outcome")
        if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
            return None
        selected = SelectedOutcome(optionId=str(outcome.get("optionId", "")))
        feedback = _field(outcome.get("_meta"), "feedback")
        if isinstance(feedback, str):
            selected["feedback"] = feedback
        return selected

    async def review_edit(self, params: ReviewEditParams) -> ReviewEditResult:
        """``_sidecar/review_edit`` (only when the client advertised ``reviewEdit``). An answer without a
        known outcome is ``cancelled``."""
        result = await self._request("_sidecar/review_edit", {"sessionId": self.session_id, **params})
        outcome = _field(result, "outcome")
        review = ReviewEditResult(outcome=outcome if outcome in ("accepted", "rejected") else "cancelled")
        hunks = _field(result, "acceptedHunks")
        if isinstance(hunks, list):
            review["acceptedHunks"] = [h for h in hunks if isinstance(h, int) and not isinstance(h, bool)]
        final_text, feedback = _field(result, "finalText"), _field(result, "feedback")
        if isinstance(final_text, str):
            review["finalText"] = final_text
        if isinstance(feedback, str):
            review["feedback"] = feedback
        return review

    async def ask_user(self, params: AskUserParams) -> AskUserResult:
        """``_sidecar/ask_user`` (only when the client advertised ``askUser``)."""
        result = await self._request("_sidecar/ask_user", {"sessionId": self.session_id, **params})
        if _field(result, "outcome") != "answered":
            return AskUserResult(outcome="cancelled", answers={})
        raw = _field(result, "answers")
        answers: dict[str, list[str]] = {}
        for question, value in (raw.items() if isinstance(raw, dict) else ()):
            value = [value] if isinstance(value, str) else value
            answers[str(question)] = [str(v) for v in value] if isinstance(value, list) else []
        return AskUserResult(outcome="answered", answers=answers)

    async def elicit(self, params: ElicitationParams) -> ElicitationResult:
        """ACP ``elicitation/create`` (clients that advertise ``elicitation``)."""
        result = await self._request("elicitation/create", {"sessionId": self.session_id, **params})
        action = _field(result, "action")
        content = _field(result, "content")
        if action != "accept":
            return ElicitationResult(action="decline" if action == "decline" else "cancel", content={})
        return ElicitationResult(action="accept", content=content if isinstance(content, dict) else {})

    def can_edit_buffers(self) -> bool:
        """Whether the editor applies edits to its open buffers (LSP ``workspace/applyEdit``)."""
        return self.channel.state.applies_buffer_edits

    async def apply_buffer_edit(self, params: ApplyEditParams) -> ApplyEditResult:
        """``workspace/applyEdit``: the editor changes its buffer (undoable there); disk is untouched."""
        result = await self._request("workspace/applyEdit", params)
        applied = ApplyEditResult(applied=bool(_field(result, "applied")))
        reason = _field(result, "failureReason")
        if isinstance(reason, str) and reason:
            applied["failureReason"] = reason
        return applied

    def fs_capability(self, name: str) -> bool:
        """Whether the client advertised ``clientCapabilities.fs.<name>`` (``readTextFile``,
        ``writeTextFile``): then its files are read and written through it (docs/protocol.md)."""
        fs = self.channel.client_capabilities.get("fs")
        return isinstance(fs, dict) and fs.get(name) is True

    async def read_text_file(self, path: str, *, line: int | None = None, limit: int | None = None) -> str:
        """ACP ``fs/read_text_file``: the file's text as the editor has it (an unsaved buffer included)."""
        params: dict[str, object] = {"sessionId": self.session_id, "path": path}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        result = await self._request("fs/read_text_file", params, timeout=CLIENT_FS_TIMEOUT)
        content = _field(result, "content")
        if not isinstance(content, str):
            raise ClientRequestError("fs/read_text_file", "invalid", "the answer has no text content")
        return content

    async def write_text_file(self, path: str, content: str) -> None:
        """ACP ``fs/write_text_file``: the editor takes the new text (into its buffer, undoable there)."""
        await self._request("fs/write_text_file", {"sessionId": self.session_id, "path": path, "content": content},
                            timeout=CLIENT_FS_TIMEOUT)

    async def lsp_query(self, params: LspQueryParams) -> LspQueryResult:
        """``_sidecar/lsp_query``: the editor's own language servers answer."""
        return LspQueryResult(result=_field(await self._request("_sidecar/lsp_query", params), "result"))

    async def diagnostics(self, uris: list[str]) -> DiagnosticsResult:
        """``_sidecar/diagnostics`` for the given URIs: per file the editor knows, its diagnostics."""
        items = _field(await self._request("_sidecar/diagnostics", {"uris": uris}), "items")
        if not isinstance(items, list):
            raise ClientRequestError("_sidecar/diagnostics", "invalid", "the answer has no items")
        files: list[FileDiagnostics] = []
        for item in items:
            if isinstance(item, dict):
                diags = item.get("diagnostics")
                files.append(FileDiagnostics(uri=str(item.get("uri", "")), diagnostics=[
                    d for d in diags if isinstance(d, dict)] if isinstance(diags, list) else []))
        return DiagnosticsResult(items=files)

    # ---- the client's terminals (ACP ``terminal/*``, only when it advertised ``terminal: true``) -----
    def offers_terminal(self) -> bool:
        """Whether the client runs commands for us (``clientCapabilities.terminal``, normalised by the core)."""
        return self.channel.client_capabilities.get("terminal") is True

    async def create_terminal(self, command: str, args: list[str], cwd: str, output_byte_limit: int) -> str:
        """``terminal/create``: the client starts ``command args`` and answers at once; its terminal id."""
        result = await self._request("terminal/create", {
            "sessionId": self.session_id, "command": command, "args": args, "env": [], "cwd": cwd,
            "outputByteLimit": output_byte_limit})
        terminal_id = _field(result, "terminalId")
        if not isinstance(terminal_id, str) or not terminal_id:
            raise ClientRequestError("terminal/create", "invalid", f"answered without a terminalId: {result!r}"[:300])
        return terminal_id

    async def terminal_output(self, terminal_id: str) -> TerminalOutput:
        """``terminal/output``: the output so far, whether the client dropped its start, the exit status
        once the command ended."""
        result = await self._request("terminal/output", {"sessionId": self.session_id, "terminalId": terminal_id})
        output = _field(result, "output")
        if not isinstance(output, str):
            raise ClientRequestError("terminal/output", "invalid", f"answered without output: {result!r}"[:300])
        out = TerminalOutput(output=output, truncated=bool(_field(result, "truncated")))
        status = _field(result, "exitStatus")
        if isinstance(status, dict):
            out["exitStatus"] = _exit_status(status)
        return out

    async def wait_for_terminal_exit(self, terminal_id: str) -> TerminalExitStatus:
        """``terminal/wait_for_exit``: the exit code or signal once the command ended."""
        result = await self._request("terminal/wait_for_exit",
                                     {"sessionId": self.session_id, "terminalId": terminal_id})
        return _exit_status(result if isinstance(result, dict) else {})

    async def kill_terminal(self, terminal_id: str) -> None:
        """``terminal/kill``: the command stops; the terminal stays readable until released."""
        await self._request("terminal/kill", {"sessionId": self.session_id, "terminalId": terminal_id})

    async def release_terminal(self, terminal_id: str) -> None:
        """``terminal/release``: the client may forget it (still shown where a tool call embeds it)."""
        await self._request("terminal/release", {"sessionId": self.session_id, "terminalId": terminal_id})

    async def model_retry(self, params: ModelRetryParams) -> None:
        """``_sidecar/model_retry``: a model request failed and will be retried (docs/protocol.md)."""
        try:
            await self.channel.notify("_sidecar/model_retry", {"sessionId": self.session_id, **params})
        except Exception:
            log.debug("retry notification failed", exc_info=True)

    async def notify_user(self, kind: str, message: str, title: str) -> None:
        """``_sidecar/notify`` when the client asked for it (``notify``) and its panel is hidden."""
        if not self.capability("notify") or self.channel.state.panel_visible:
            return
        try:
            await self.channel.notify("_sidecar/notify", {"sessionId": self.session_id, "kind": kind,
                                                          "message": message, "title": shown_text(title)})
        except Exception:
            log.debug("notify failed", exc_info=True)


def _field(answer: object, name: str) -> object:
    """``answer[name]`` when the answer is a JSON object that has it, else None."""
    return answer.get(name) if isinstance(answer, dict) else None


def _exit_status(raw: Mapping[str, object]) -> TerminalExitStatus:
    code, sig = raw.get("exitCode"), raw.get("signal")
    return TerminalExitStatus(exitCode=code if isinstance(code, int) and not isinstance(code, bool) else None,
                              signal=sig if isinstance(sig, str) and sig else None)


class SessionLog:
    """The session's JSONL log (``sidecar.store``): every write of a session goes through here."""

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        # The last large diff logged and its excerpt: a tool call's pending and completed updates carry
        # the same two texts, so the second one reuses the excerpt (held only until the next update).
        self._excerpt: tuple[str, str, dict[str, Any]] | None = None

    def header(self, cwd: Path, additional_directories: list[Path]) -> None:
        self.store.append(self.session_id, {"type": "session", "id": self.session_id, "cwd": str(cwd),
                                            "additionalDirectories": [str(d) for d in additional_directories],
                                            "created": time.time()})

    def message(self, message: dict[str, Any]) -> None:
        self.store.append(self.session_id, {"type": "message", "message": message})

    def truncate(self, length: int) -> None:
        """The conversation was cut back to its first ``length`` messages (rewind, compaction)."""
        self.store.append(self.session_id, {"type": "truncate", "length": length})

    def mode(self, mode: str) -> None:
        self.store.append(self.session_id, {"type": "mode", "mode": mode})

    def config(self, config_id: str, value: str) -> None:
        """A session config option (model, effort) set; the last value of each is restored on load."""
        self.store.append(self.session_id, {"type": "config", "configId": config_id, "value": value})

    def title(self, title: str) -> None:
        self.store.append(self.session_id, {"type": "title", "title": title})

    def todos(self, todos: list[dict[str, Any]]) -> None:
        self.store.append(self.session_id, {"type": "todos", "todos": todos})

    def audit(self, event: str, **fields: Any) -> None:
        self.store.append(self.session_id, {"type": "audit", "event": event, "time": time.time(), **fields})

    # What the client was shown, so ``session/load`` replays it as it was (docs/protocol.md, "Replay").
    def update(self, update: dict[str, Any]) -> None:
        """A ``session/update`` the client received (a large diff kept as the excerpt that changed)."""
        content = update.get("content")
        last, self._excerpt = self._excerpt, None
        if isinstance(content, list) and any(isinstance(c, dict) and c.get("type") == "diff" for c in content):
            update = {**update, "content": [self._excerpt_of(c, last) if isinstance(c, dict)
                                            and c.get("type") == "diff" else c for c in content]}
        content = update.get("content")
        if isinstance(content, list) and any(isinstance(c, dict) and c.get("type") == "terminal" for c in content):
            update = {**update, "content": [r for c in content for r in replayed_terminal(c)]}
            content = update.get("content")
        if isinstance(content, list) and any(_long_text(c) for c in content):
            update = {**update, "content": [_replay_excerpt(c) if _long_text(c) else c for c in content]}
        self.store.append(self.session_id, {"type": "update", "update": update})

    def _excerpt_of(self, item: dict[str, Any], last: tuple[str, str, dict[str, Any]] | None) -> dict[str, Any]:
        old, new = item.get("oldText"), item.get("newText")
        if last is not None and old is last[0] and new is last[1]:
            excerpt = last[2]
        else:
            excerpt = diff_excerpt(item)
            if excerpt is item:
                return item
        if isinstance(old, str) and isinstance(new, str):
            self._excerpt = (old, new, excerpt)
        return {**item, **{k: excerpt[k] for k in ("oldText", "newText", "_meta")}}

    def prompt(self, prompt_id: str, blocks: list[Any], history_length: int) -> None:
        """A user prompt as the client sent it (ACP content blocks), before anything of its turn."""
        self.store.append(self.session_id, {"type": "prompt", "id": prompt_id, "prompt": blocks,
                                            "historyLength": history_length, "time": time.time()})

    def turn_end(self, prompt_id: str, stop_reason: str, *, user_message_id: str | None = None,
                 error: dict[str, Any] | None = None, spend: dict[str, Any] | None = None,
                 session_spend: dict[str, Any] | None = None) -> None:
        """How the prompt's turn ended: its stop reason, or the error the client was answered with, and
        what it spent as the answer said (``spend``: ``UsageMeter.turn_record``, the turn's tokens and
        cost and the session's), or, for an answer that said nothing of it (an error), the session's
        total only (``sessionSpend``, so a reload keeps it)."""
        event: dict[str, Any] = {"type": "turn_end", "id": prompt_id, "stopReason": stop_reason}
        if user_message_id:
            event["userMessageId"] = user_message_id
        if error is not None:
            event["error"] = error
        if spend is not None:
            event["spend"] = spend
        elif session_spend is not None:
            event["sessionSpend"] = session_spend
        self.store.append(self.session_id, event)


# A text shown in a tool call's card longer than this is logged for the replay as its start and end: the
# whole text is in the conversation's tool result already (a whole-file Read of 4 MB was logged twice).
REPLAY_TEXT_MAX = 100_000


def _long_text(item: Any) -> bool:
    inner = item.get("content") if isinstance(item, dict) and item.get("type") == "content" else None
    return isinstance(inner, dict) and isinstance(inner.get("text"), str) and len(inner["text"]) > REPLAY_TEXT_MAX


def _replay_excerpt(item: dict[str, Any]) -> dict[str, Any]:
    """The card's text as the replay shows it: two thirds from the start, one third from the end."""
    text: str = item["content"]["text"]
    head, tail = text[: REPLAY_TEXT_MAX * 2 // 3], text[-(REPLAY_TEXT_MAX // 3):]
    left_out = len(text) - len(head) - len(tail)
    note = f"\n… [{left_out} characters of this output are not kept for the replay] …\n"
    return {**item, "content": {**item["content"], "text": head + note + tail}}


def replayed_terminal(item: Any) -> list[Any]:
    """A client terminal embedded in a tool call is gone when the session is loaded again (its id means
    nothing to the next client): the log keeps the output it showed (``_meta.sidecar.output``, set by the
    Bash tool on its final update) as text, and drops the terminal from the updates without it."""
    if not isinstance(item, dict) or item.get("type") != "terminal":
        return [item]
    meta = item.get("_meta")
    output = ((meta or {}).get("sidecar") or {}).get("output") if isinstance(meta, dict) else None
    return [{"type": "content", "content": {"type": "text", "text": output}}] if isinstance(output, str) else []


# A diff whose two texts together are longer than this is logged as the lines that changed with three
# lines of context (an Edit of a 22 MB file wrote 44 MB to the log per call): the replay shows the same
# change, the excerpt's first line number in ``_meta.sidecar.excerpt.fromLine``. Lines end at ``\n`` (as
# in every diff of the sidecar, and as the editor counts them: a form feed is no line break there).
LOGGED_DIFF_CAP = 256 * 1024
EXCERPT_CONTEXT_LINES = 3


def diff_excerpt(item: dict[str, Any]) -> dict[str, Any]:
    old = item.get("oldText") or ""
    new = item.get("newText") or ""
    if not isinstance(old, str) or not isinstance(new, str) or len(old) + len(new) <= LOGGED_DIFF_CAP:
        return item
    # Where the texts differ, found by block compares (an Edit of a 1,000,000-line file spent ~350 ms
    # here splitting both texts into lines); then widened to whole lines and the context around them.
    same = common_prefix(old, new)
    if same == len(old) == len(new):
        first = end_old = end_new = len(old)
    else:
        first = old.rfind("\n", 0, same) + 1  # the start of the line the first difference is on
        tail = common_suffix(old, new, min(len(old), len(new)) - first)
        # The equal lines at the end: the shared suffix from a point that starts a line in both texts.
        q_old, q_new = len(old) - tail, len(new) - tail
        if not (_line_start(old, q_old) and _line_start(new, q_new)):
            nl = old.find("\n", q_old, len(old))
            tail = 0 if nl < 0 else len(old) - nl - 1
        end_old, end_new = len(old) - tail, len(new) - tail
    start = first
    for _ in range(EXCERPT_CONTEXT_LINES):
        if start == 0:
            break
        start = old.rfind("\n", 0, start - 1) + 1
    for _ in range(EXCERPT_CONTEXT_LINES):
        end_old, end_new = _next_line(old, end_old), _next_line(new, end_new)
    meta = {"excerpt": {"fromLine": old.count("\n", 0, start) + 1, "oldLength": len(old), "newLength": len(new)}}
    return {**item, "oldText": old[start:end_old] if item.get("oldText") is not None else None,
            "newText": new[start:end_new], "_meta": {"sidecar": meta}}


def _line_start(text: str, pos: int) -> bool:
    return pos == 0 or text[pos - 1] == "\n"


def _next_line(text: str, pos: int) -> int:
    """The start of the line after the one that starts at ``pos`` (the end of the text at most)."""
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


class CallContext(Protocol):
    """What the gate needs of the call it governs (``sidecar.tools.context.ToolContext`` is one)."""

    @property
    def session(self) -> Session: ...

    @property
    def tool_call_id(self) -> str: ...

    @property
    def agent_label(self) -> str | None: ...

    @property
    def hook_verdict(self) -> HookVerdict | None: ...

    @property
    def shown(self) -> dict[str, Any]:
        """The call as the editor was shown it: ``kind``, ``locations`` (empty when unknown)."""
        ...


# Asks the user about a request: the gate's own question (``PermissionGate.ask_user``) or one a caller
# brings (the edit review's diff question); ``require`` decides before it and audits and enforces after.
Asker = Callable[[PermissionRequest, CallContext], Awaitable[UserAnswer]]


class PermissionGatePort(Protocol):
    """The permission gate as its users see it (``sidecar.permissions.gate.PermissionGate`` is the one):
    declared here, below the gate, so ``Session.permissions`` is typed and a reader goes from a tool's
    ``require`` to this surface, and from it to the gate. Its vocabulary is ``sidecar.permission_types``."""

    # Called before every question to the user (features: the "waiting for you" notification).
    on_ask: list[Callable[[PermissionRequest, CallContext], Awaitable[None]]]

    async def require(self, request: PermissionRequest, ctx: CallContext, ask: Asker | None = None) -> Decision:
        """Returns when the call may proceed (asking the user when the verdict is "ask"); ``ToolError``
        with the refusal's message otherwise."""
        ...

    def decide(self, request: PermissionRequest, hook: HookVerdict | None = None) -> Decision:
        """The verdict without asking anyone (rules, hooks' verdicts, the mode)."""
        ...

    async def ask_user(self, request: PermissionRequest, ctx: CallContext,
                       options: list[PermissionOption] | None = None) -> UserAnswer:
        """Ask the user; with ``options`` given, the caller interprets ``UserAnswer.option_id``."""
        ...

    def read_denied(self) -> Callable[[Path], bool] | None:
        """A test for "a Read deny rule names this file", or None when no such rule exists."""
        ...

    def initial_mode(self, current: str = "default", new: bool = True) -> Mode: ...

    def bypass_allowed(self) -> bool: ...

    def trust_changed(self) -> None:
        """The workspace became trusted: its settings' directories and default mode now apply."""
        ...


@dataclass
class Session:
    id: str
    cwd: Path
    channel: ClientChannel
    store: SessionStore
    additional_directories: list[Path] = field(default_factory=list)
    mode: Mode = "default"
    # Conversation in Messages API shape: [{"role": ..., "content": [...]}].
    history: list[dict[str, Any]] = field(default_factory=list)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    title: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    # Short notices queued for the next model request ("X was modified ...").
    pending_notices: list[str] = field(default_factory=list)
    # The text every request of the main agent starts with (``sidecar.agent.prompt``, built when the
    # session starts and again when its workspace becomes trusted); sub-agents extend it.
    system_prompt: str = ""
    # Per-turn state, read and written by the loop, the tools and the features:
    # the last reply's token usage (``{"used": n, **usage}``) and whether it still describes the
    # conversation (not after a compaction) — compaction's estimate of the next request;
    last_usage: dict[str, Any] | None = None
    usage_valid: bool = False
    # TodoWrite's list (None: never written, or cleared); the Brief tool's / Config's brief mode.
    todos: list[dict[str, Any]] | None = None
    brief: bool = False
    # The user chose the mode (``session/set_mode``): the settings' mode applied once trust is granted
    # before the first prompt no longer replaces it.
    mode_chosen: bool = False
    # Services higher layers attach (ledger, shells, the model client …), reached through their typed
    # keys only (``service``, ``find_service``, ``provide``).
    _services: dict[ServiceKey[Any], Any] = field(default_factory=dict, init=False, repr=False)
    prompt_task: asyncio.Task[Any] | None = None
    # A session/prompt is being handled, from its acceptance to its answer: the hooks before its turn (the
    # trust question, skills) included, where no ``prompt_task`` runs yet.
    prompting: bool = False
    cancel_requested: bool = False
    # The permission gate (``sidecar.permissions.gate.PermissionGate``), attached by the composition root
    # (``govern``): reached as ``session.permissions``, typed by the surface its users call.
    _permissions: PermissionGatePort | None = field(default=None, init=False, repr=False)

    def running_prompt(self) -> bool:
        """A prompt is under way: a second one is refused, the session is not reloaded under it."""
        return self.prompting or (self.prompt_task is not None and not self.prompt_task.done())

    def __post_init__(self) -> None:
        self.cwd = self.cwd.resolve()
        self.client = ClientPort(self.id, self.channel)
        self.log = SessionLog(self.store, self.id)

    @property
    def permissions(self) -> PermissionGatePort:
        if self._permissions is None:  # an AttributeError: ``getattr(session, "permissions", None)`` is None
            raise AttributeError(f"session {self.id} has no permission gate (sidecar.permissions.gate.govern "
                                 "attaches one)")
        return self._permissions

    @permissions.setter
    def permissions(self, gate: PermissionGatePort) -> None:
        self._permissions = gate

    # ---- workspace --------------------------------------------------------------------
    @property
    def roots(self) -> list[Path]:
        return [self.cwd, *[d.resolve() for d in self.additional_directories]]

    def within_roots(self, path: Path) -> bool:
        return within(path, self.roots)

    # ---- services (``ServiceKey``: declared by the layer that owns each) --------------------
    def service(self, key: ServiceKey[ServiceT]) -> ServiceT:
        """The session's service under ``key``, made by the key's ``create`` on first use; a key without
        one that nobody provided is a wiring mistake (``LookupError``)."""
        if key in self._services:
            return cast(ServiceT, self._services[key])
        if key.create is None:
            raise LookupError(f"session {self.id} has no {key.name!r} service")
        made = self._services[key] = key.create(self)
        return made

    def find_service(self, key: ServiceKey[ServiceT]) -> ServiceT | None:
        """The service under ``key`` if there is one; never makes it."""
        return cast("ServiceT | None", self._services.get(key))

    def provide(self, key: ServiceKey[ServiceT], service: ServiceT) -> ServiceT:
        """Set (or replace) the service under ``key``."""
        self._services[key] = service
        return service

    def owned_services(self) -> list[tuple[str, Any]]:
        """The services this session owns (not the server's shared ones), by name: what closes with it."""
        return [(key.name, service) for key, service in self._services.items() if not key.shared]

    def add_notice(self, text: str) -> None:
        if text not in self.pending_notices:
            self.pending_notices.append(text)

    # ---- talking to the client --------------------------------------------------------
    async def send_update(self, update: dict[str, Any]) -> None:
        """Tell the client, and keep what it was shown in the log (state updates excepted)."""
        if update.get("sessionUpdate") not in UNLOGGED_UPDATES:
            self.log.update(update)
        await self.client.update(update)

    def has_client_capability(self, name: str) -> bool:
        return self.client.capability(name)

    async def set_mode(self, mode: Mode, *, by: str = "user") -> None:
        """The one way to change the mode: state, log, audit, and the client told."""
        self.mode = mode
        if by == "user":
            self.mode_chosen = True
        self.log.mode(mode)
        self.log.audit("mode", mode=mode, by=by)
        await self.send_update({"sessionUpdate": "current_mode_update", "currentModeId": mode})

    # ---- persistence ------------------------------------------------------------------
    def append_message(self, message: dict[str, Any]) -> None:
        self.history.append(message)
        self.updated_at = time.time()
        self.log.message(message)

    def audit(self, event: str, **fields: Any) -> None:
        self.log.audit(event, **fields)


def new_session_id() -> str:
    return f"sess_{uuid.uuid4().hex[:16]}"

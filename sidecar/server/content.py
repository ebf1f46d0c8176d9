"""Converting between ACP content blocks and Messages API content."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from sidecar.secrets import redact

# Embedded resources the panel composes from the editor's state (``@problems``, ``@terminal``): no file.
EDITOR_CONTEXT = "sidecar://"


def uri_to_path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def prompt_to_api(blocks: list[Any]) -> list[dict[str, Any]]:
    """ACP prompt ContentBlocks → Messages API blocks. Mentions become text the model can act on."""
    return [api for api in map(block_to_api, blocks) if api is not None]


def block_to_api(block: Any) -> dict[str, Any] | None:
    """One ACP prompt ContentBlock as a Messages API block; None for one that gives the model nothing."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and block.get("text"):
        return {"type": "text", "text": str(block["text"])}
    if kind == "image" and block.get("data"):
        return {"type": "image", "source": {"type": "base64", "media_type": block.get("mimeType", "image/png"),
                                            "data": block["data"]}}
    if kind == "resource_link":
        path = uri_to_path(str(block.get("uri", "")))
        return {"type": "text", "text": f"<mentioned-file path=\"{path}\" />"}
    if kind == "resource":
        res = block.get("resource") or {}
        uri = str(res.get("uri", ""))
        if "text" not in res:
            return None
        if uri.startswith(EDITOR_CONTEXT):  # the editor's problems, a terminal's output: redacted here
            source = re.sub(r"[^A-Za-z0-9/_.-]", "", uri[len(EDITOR_CONTEXT):])
            return {"type": "text", "text": f"<context source=\"{source}\">\n{redact(str(res['text']))}\n</context>"}
        return {"type": "text", "text": f"<context path=\"{uri_to_path(uri)}\">\n{res['text']}\n</context>"}
    return None


def prompt_title(blocks: list[Any], content: list[dict[str, Any]]) -> str:
    """A new session's title: the typed text's first line; for a prompt of mentions alone, the first one's
    name (``Git changes``, a URL); else the first text the model gets."""
    typed = [str(b.get("text") or "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    named = [str(b.get("name") or "") for b in blocks if isinstance(b, dict) and b.get("type") == "resource_link"]
    given = [str(b.get("text", "")) for b in content if b.get("type") == "text"]
    first = next((t for t in [*typed, *named, *given] if t.strip()), "")
    return first.strip().splitlines()[0][:80] if first.strip() else "Untitled"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


# A tool call's title, kind and locations for an old log's replay (the tool registry answers).
Describe = Callable[[str, dict[str, Any]], dict[str, Any]]

_MENTION = re.compile(r'^<mentioned-file path="(?P<path>[^"]*)" />$')
_EDITOR_CONTEXT = re.compile(r'^<context source="(?P<source>[^"]*)">\n(?P<text>.*)\n</context>$', re.S)
_CONTEXT = re.compile(r'^<context path="(?P<path>[^"]*)">\n(?P<text>.*)\n</context>$', re.S)


def _user_block(block: dict[str, Any]) -> dict[str, Any] | None:
    """A saved user block as the ACP block the client sent (mentions back to resource links)."""
    kind = block.get("type")
    if kind == "image":
        source = block.get("source") or {}
        return {"type": "image", "data": source.get("data", ""), "mimeType": source.get("media_type", "image/png")}
    if kind != "text":
        return None
    text = str(block.get("text", ""))
    if text.startswith("<system-reminder>"):
        return None
    if m := _MENTION.match(text):
        path = m["path"]
        uri = Path(path).as_uri() if path.startswith("/") else path
        return {"type": "resource_link", "uri": uri, "name": Path(path).name}
    if m := _EDITOR_CONTEXT.match(text):
        return {"type": "resource", "resource": {"uri": EDITOR_CONTEXT + m["source"], "text": m["text"]}}
    if m := _CONTEXT.match(text):
        path = m["path"]
        uri = Path(path).as_uri() if path.startswith("/") else path
        return {"type": "resource", "resource": {"uri": uri, "text": m["text"]}}
    return {"type": "text", "text": text}


def replay_updates(messages: list[dict[str, Any]], describe: Describe | None = None) -> list[dict[str, Any]]:
    """A conversation saved without its updates (a log from before 0.2) as the session/update stream
    a client would have seen: the best that can be rebuilt from the Messages API history alone."""
    updates: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
        for block in blocks:
            kind = block.get("type")
            if message.get("role") == "user":
                if kind == "tool_result":
                    updates.append({"sessionUpdate": "tool_call_update", "toolCallId": block.get("tool_use_id"),
                                    "status": "failed" if block.get("is_error") else "completed",
                                    "content": [{"type": "content", "content": {
                                        "type": "text", "text": _text_of(block.get("content"))}}]})
                elif (sent := _user_block(block)) is not None:
                    # One saved user message is one message in the client, never merged with the next.
                    updates.append({"sessionUpdate": "user_message_chunk", "content": sent,
                                    "messageId": f"legacy_{index}"})
            elif kind == "text":
                updates.append({"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": block.get("text", "")}})
            elif kind == "thinking":
                updates.append({"sessionUpdate": "agent_thought_chunk",
                                "content": {"type": "text", "text": block.get("thinking", "")}})
            elif kind == "tool_use":
                name = str(block.get("name"))
                given = block.get("input")
                raw_input: dict[str, Any] = given if isinstance(given, dict) else {}
                shown: dict[str, Any] = {"title": name, "kind": "other", "locations": []}
                if describe is not None:
                    shown.update(describe(name, raw_input))
                updates.append({"sessionUpdate": "tool_call", "toolCallId": block.get("id"), **shown,
                                "status": "pending", "rawInput": raw_input,
                                "_meta": {"sidecar": {"tool": name}}})
    return updates


def turn_end_update(stop_reason: str, error: dict[str, Any] | None = None,
                    spend: dict[str, Any] | None = None) -> dict[str, Any]:
    """The marker that ends a replayed turn: what the live client learnt from the prompt's answer.

    An ``agent_message_chunk`` any ACP client shows (the text), with ``_meta.sidecar.turnEnd`` for
    clients that draw their own turn end (the Sidecar panel draws it as it did live).
    """
    if error is not None:
        text = f"\n\n{error.get('message', 'The turn failed.')}"
    elif stop_reason == "cancelled":
        text = "\n\n_Stopped._"
    elif stop_reason == "end_turn":
        text = ""
    else:
        text = f"\n\n_Turn ended: {stop_reason}_"
    end: dict[str, Any] = {"stopReason": stop_reason}
    if error is not None:
        end["error"] = error
    if spend is not None:
        end["spend"] = spend
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text},
            "_meta": {"sidecar": {"turnEnd": end}}}


def prompt_updates(prompt_id: str, blocks: list[Any], user_message_id: str | None) -> list[dict[str, Any]]:
    """A prompt as the client sent it: one ``user_message_chunk`` per block, all of one message."""
    meta: dict[str, Any] = {"promptId": prompt_id}
    if user_message_id:
        meta["userMessageId"] = user_message_id
    return [{"sessionUpdate": "user_message_chunk", "content": block, "messageId": prompt_id,
             "_meta": {"sidecar": meta}} for block in blocks if isinstance(block, dict)]


def replay_log(events: list[dict[str, Any]], describe: Describe | None = None) -> list[dict[str, Any]] | None:
    """The session/update stream the client was shown, from the log's ``prompt``/``update``/``turn_end``
    records; ``None`` for a log without them (written before 0.2: ``replay_updates`` rebuilds it).

    Messages written before the first prompt record (a log continued by this release) are rebuilt as
    ``replay_updates`` does. A rewind of the conversation (a ``truncate`` followed by its ``rewind``
    audit) drops the turns from the rewound prompt on; a compaction drops nothing the user saw.

    The line the client drew for a rewind or an undone one (its own words from the result: "Restored
    new.txt.") is replayed from the ``rewind``/``rewind_undone`` audit as a ``restore_notice_update``: for a
    files-only restore of a message and its undo right after that message's prompt, as the client put it;
    otherwise where it came (the end of the transcript then).
    """
    if not any(e.get("type") == "prompt" for e in events):
        return None
    ends = {str(e.get("id")): e for e in events if e.get("type") == "turn_end"}
    legacy: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    seen_prompt = False
    # Each turn: (user message id, its updates); updates before the first prompt are a preamble turn.
    turns: list[tuple[str | None, list[dict[str, Any]]]] = [(None, [])]
    # The restore lines shown under a message (after its prompt's chunks), by user message id.
    beside: dict[str, list[dict[str, Any]]] = {}
    prompt_chunks: dict[str, int] = {}
    previous: dict[str, Any] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message" and not seen_prompt:
            messages.append(event.get("message") or {})
        elif kind == "truncate" and not seen_prompt:
            messages = messages[: int(event.get("length", len(messages)))]
        elif kind == "prompt":
            if not seen_prompt:
                seen_prompt = True
                legacy = replay_updates(messages, describe)
            prompt_id = str(event.get("id"))
            end = ends.get(prompt_id) or {}
            user_message_id = end.get("userMessageId")
            chunks = prompt_updates(prompt_id, list(event.get("prompt") or []), user_message_id)
            turns.append((user_message_id, chunks))
            if user_message_id:
                prompt_chunks[str(user_message_id)] = len(chunks)
        elif kind == "update" and isinstance(event.get("update"), dict):
            turns[-1][1].append(event["update"])
        elif kind == "turn_end":
            spend = event.get("spend")
            turns[-1][1].append(turn_end_update(str(event.get("stopReason")), event.get("error"),
                                                spend if isinstance(spend, dict) else None))
        elif kind == "audit" and event.get("event") in ("rewind", "rewind_undone"):
            target = event.get("toMessageId")
            conversation = event.get("event") == "rewind" and previous.get("type") == "truncate"
            if conversation:
                cut = next((i for i, (mid, _) in enumerate(turns) if mid is not None and mid == target), None)
                if cut is not None:
                    del turns[cut:]
            notice = restore_notice_update(event, conversation)
            if notice is None:
                pass
            elif not conversation and not event.get("toolCallId") and str(target) in prompt_chunks:
                beside.setdefault(str(target), []).append(notice)
            else:
                turns[-1][1].append(notice)
        previous = event
    out = list(legacy)
    for mid, updates in turns:
        at = prompt_chunks.get(mid, 0) if mid is not None else 0
        out += [*updates[:at], *beside.get(str(mid), []), *updates[at:]]
    return out


def restore_notice_update(audit: dict[str, Any], conversation: bool) -> dict[str, Any] | None:
    """The line a client drew for a rewind (``event: "rewind"``) or an undone one, as a replayed
    ``agent_message_chunk`` with no text of its own and ``_meta.sidecar.restoreNotice`` = ``{kind:
    "rewind"|"undo", restored, restoredInEditor, conflicts, files, conversation, toMessageId,
    toolCallId?}`` (the Sidecar panel words it as it did live); None for a rewind the client showed no
    line for (the conversation alone, nothing restored)."""
    restored = [str(p) for p in audit.get("restored") or []]
    in_editor = [str(p) for p in audit.get("restoredInEditor") or []]
    conflicts = [c for c in audit.get("conflicts") or [] if isinstance(c, dict)]
    # ``files`` is not in older logs: there a rewind that restored or left a file counts as one of files.
    files = audit.get("files") is True or (audit.get("files") is None and bool(restored or in_editor or conflicts))
    kind = "undo" if audit.get("event") == "rewind_undone" else "rewind"
    if kind == "rewind" and not files and not restored and not in_editor and not conflicts:
        return None
    notice: dict[str, Any] = {"kind": kind, "restored": restored, "restoredInEditor": in_editor,
                              "conflicts": [{"path": str(c.get("path", "")), "reason": str(c.get("reason", ""))}
                                            for c in conflicts],
                              "files": files, "conversation": conversation}
    if audit.get("toMessageId"):
        notice["toMessageId"] = str(audit["toMessageId"])
    if audit.get("toolCallId"):
        notice["toolCallId"] = str(audit["toolCallId"])
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""},
            "_meta": {"sidecar": {"restoreNotice": notice}}}

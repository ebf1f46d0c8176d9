"""Converting between ACP content blocks and Messages API content."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse


def uri_to_path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def prompt_to_api(blocks: list[Any]) -> list[dict[str, Any]]:
    """ACP prompt ContentBlocks → Messages API blocks. Mentions become text the model can act on."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            out.append({"type": "text", "text": str(block["text"])})
        elif kind == "image" and block.get("data"):
            out.append({"type": "image", "source": {"type": "base64", "media_type": block.get("mimeType", "image/png"),
                                                    "data": block["data"]}})
        elif kind == "resource_link":
            path = uri_to_path(str(block.get("uri", "")))
            out.append({"type": "text", "text": f"<mentioned-file path=\"{path}\" />"})
        elif kind == "resource":
            res = block.get("resource") or {}
            path = uri_to_path(str(res.get("uri", "")))
            if "text" in res:
                out.append({"type": "text",
                            "text": f"<context path=\"{path}\">\n{res['text']}\n</context>"})
    return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def replay_updates(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A saved conversation as the session/update stream a client would have seen (for session/load)."""
    updates: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
        for block in blocks:
            kind = block.get("type")
            if message.get("role") == "user":
                if kind == "text" and not str(block.get("text", "")).startswith("<system-reminder>"):
                    updates.append({"sessionUpdate": "user_message_chunk",
                                    "content": {"type": "text", "text": block["text"]}})
                elif kind == "tool_result":
                    updates.append({"sessionUpdate": "tool_call_update", "toolCallId": block.get("tool_use_id"),
                                    "status": "failed" if block.get("is_error") else "completed",
                                    "content": [{"type": "content", "content": {
                                        "type": "text", "text": _text_of(block.get("content"))}}]})
            elif kind == "text":
                updates.append({"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": block.get("text", "")}})
            elif kind == "thinking":
                updates.append({"sessionUpdate": "agent_thought_chunk",
                                "content": {"type": "text", "text": block.get("thinking", "")}})
            elif kind == "tool_use":
                updates.append({"sessionUpdate": "tool_call", "toolCallId": block.get("id"),
                                "title": block.get("name"), "kind": "other", "status": "pending",
                                "rawInput": block.get("input") or {},
                                "_meta": {"sidecar": {"tool": block.get("name")}}})
    return updates

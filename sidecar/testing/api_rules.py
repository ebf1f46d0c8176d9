"""Request validation for the scripted Messages API server: what the real API rejects, it rejects.

:func:`validate` takes a request body (and its raw bytes) and returns the first :class:`Rejection` the real
Messages API would answer with (HTTP status, error type, message in the API's own wording where it is
known), or ``None`` when the request would be accepted. Each check belongs to a named rule (see
:data:`RULES`) so a server can relax one rule without dropping the others. The rules and their sources are
listed in ``docs/scripted-model.md``.

Thinking signatures: :class:`SignatureBook` remembers the signatures a server issued (and derives its default
signatures from the thinking text with a keyed hash), so a thinking block sent back with edited text, an
edited or a foreign signature is rejected as the API rejects it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import struct
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "MAX_OUTPUT_TOKENS",
    "MAX_REQUEST_BYTES",
    "RULES",
    "Rejection",
    "SignatureBook",
    "max_output_tokens",
    "validate",
]

MAX_REQUEST_BYTES = 32 * 1024 * 1024
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGE_SIDE = 8000
MAX_IMAGE_SIDE_MANY = 2000
MANY_IMAGES = 20
MAX_PDF_PAGES = 100
MAX_CACHE_BREAKPOINTS = 4
MIN_THINKING_BUDGET = 1024
TOOL_NAME_PATTERN = "^[a-zA-Z0-9_-]{1,64}$"
TOOL_ID_PATTERN = "^[a-zA-Z0-9_-]+$"
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")

# Largest `max_tokens` per model (the models overview table); dated ids fall back to their alias.
MAX_OUTPUT_TOKENS: dict[str, int] = {
    "claude-opus-4-8": 128_000,
    "claude-opus-4-7": 128_000,
    "claude-opus-4-6": 128_000,
    "claude-sonnet-4-6": 64_000,
    "claude-opus-4-5": 64_000,
    "claude-sonnet-4-5": 64_000,
    "claude-haiku-4-5": 64_000,
    "claude-opus-4-1": 32_000,
    "claude-opus-4-0": 32_000,
    "claude-opus-4": 32_000,
    "claude-sonnet-4-0": 64_000,
    "claude-sonnet-4": 64_000,
    "claude-3-7-sonnet": 64_000,
    "claude-3-7-sonnet-latest": 64_000,
    "claude-3-5-haiku": 8_192,
    "claude-3-5-haiku-latest": 8_192,
    "claude-3-haiku": 4_096,
}
DEFAULT_MAX_OUTPUT_TOKENS = 128_000
"""For models not in the table (newer ids, test names): generous, so only absurd values are refused."""

RULES: tuple[str, ...] = (
    "request_size",
    "max_tokens",
    "thinking_config",
    "tool_definitions",
    "roles",
    "empty_content",
    "tool_use_ids",
    "tool_pairing",
    "cache_control",
    "thinking_blocks",
    "media",
)
"""Rule names, in the order they are checked (the first failing rule answers)."""

_TOOL_NAME_RE = re.compile(TOOL_NAME_PATTERN)
_TOOL_ID_RE = re.compile(TOOL_ID_PATTERN)
_DATE_SUFFIX = re.compile(r"-\d{8}$")
_SIGNATURE_KEY = b"scripted-model-thinking-signature"
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


@dataclass(frozen=True)
class Rejection:
    """The error the real API would answer with."""

    rule: str
    message: str
    status: int = 400
    error_type: str = "invalid_request_error"


class _Invalid(Exception):
    def __init__(self, rule: str, message: str, status: int = 400, error_type: str = "invalid_request_error"):
        super().__init__(message)
        self.rejection = Rejection(rule, message, status, error_type)


class SignatureBook:
    """Signatures a server issued for thinking blocks, to recognise them (unmodified) when sent back."""

    def __init__(self) -> None:
        self._issued: dict[str, str] = {}
        self._lock = threading.Lock()

    @staticmethod
    def derive(thinking: str) -> str:
        """The default signature of a thinking text (valid on any server instance, e.g. after a restart)."""
        digest = hmac.new(_SIGNATURE_KEY, thinking.encode(), hashlib.sha256).digest()
        return base64.b64encode(digest * 2).decode()

    def issue(self, thinking: str, signature: str | None = None) -> str:
        """The signature to send with ``thinking`` (``signature`` if the script chose one), remembered."""
        sig = signature if signature is not None else self.derive(thinking)
        with self._lock:
            self._issued[sig] = thinking
        return sig

    def valid(self, thinking: str, signature: str) -> bool:
        with self._lock:
            issued = self._issued.get(signature)
        if issued is not None:
            return issued == thinking
        return hmac.compare_digest(signature, self.derive(thinking))


def max_output_tokens(model: str) -> int:
    if model in MAX_OUTPUT_TOKENS:
        return MAX_OUTPUT_TOKENS[model]
    alias = _DATE_SUFFIX.sub("", model)
    return MAX_OUTPUT_TOKENS.get(alias, DEFAULT_MAX_OUTPUT_TOKENS)


def validate(
    body: dict[str, Any],
    raw: bytes,
    *,
    signatures: SignatureBook | None = None,
    relax: Iterable[str] = (),
    count_tokens: bool = False,
) -> Rejection | None:
    """The first rejection the Messages API would give this request, or None if it would accept it.

    ``relax`` names rules (from :data:`RULES`) not to check. ``count_tokens`` validates a
    ``/v1/messages/count_tokens`` body (no ``max_tokens``).
    """
    skip = frozenset(relax)
    unknown = skip - set(RULES)
    if unknown:
        raise ValueError(f"unknown rule(s) {sorted(unknown)}; rules are {list(RULES)}")
    checks = {
        "request_size": lambda: _request_size(raw),
        "max_tokens": lambda: None if count_tokens else _max_tokens(body),
        "thinking_config": lambda: _thinking_config(body, count_tokens),
        "tool_definitions": lambda: _tool_definitions(body),
        "roles": lambda: _roles(body),
        "empty_content": lambda: _empty_content(body),
        "tool_use_ids": lambda: _tool_use_ids(body),
        "tool_pairing": lambda: _tool_pairing(body),
        "cache_control": lambda: _cache_control(body),
        "thinking_blocks": lambda: _thinking_blocks(body, signatures or SignatureBook()),
        "media": lambda: _media(body),
    }
    for rule in RULES:
        if rule in skip:
            continue
        try:
            checks[rule]()
        except _Invalid as exc:
            return exc.rejection
    return None


# -- helpers ------------------------------------------------------------------------------------------------


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    msgs = body.get("messages")
    return [m if isinstance(m, dict) else {} for m in msgs] if isinstance(msgs, list) else []


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a string is shorthand for one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {} for b in content]
    return []


def _all_blocks(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every content block of every message, nested tool_result content included, with its API path."""
    for i, message in enumerate(_messages(body)):
        for j, block in enumerate(_blocks(message)):
            path = f"messages.{i}.content.{j}"
            yield path, block
            inner = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(inner, list):
                for k, sub in enumerate(inner):
                    if isinstance(sub, dict):
                        yield f"{path}.tool_result.content.{k}", sub


def _turns(body: dict[str, Any]) -> list[tuple[str, list[tuple[int, int, dict[str, Any]]]]]:
    """Messages grouped into turns (the API combines consecutive messages of the same role)."""
    turns: list[tuple[str, list[tuple[int, int, dict[str, Any]]]]] = []
    for i, message in enumerate(_messages(body)):
        role = str(message.get("role"))
        blocks = [(i, j, b) for j, b in enumerate(_blocks(message))]
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return turns


# -- rules --------------------------------------------------------------------------------------------------


def _request_size(raw: bytes) -> None:
    if len(raw) > MAX_REQUEST_BYTES:
        raise _Invalid("request_size", "Request exceeds the maximum allowed number of bytes.", 413, "request_too_large")


def _max_tokens(body: dict[str, Any]) -> None:
    value = body.get("max_tokens")
    if value is None:
        raise _Invalid("max_tokens", "max_tokens: Field required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid("max_tokens", "max_tokens: Input should be a valid integer")
    if value < 0:
        raise _Invalid("max_tokens", "max_tokens: Input should be greater than or equal to 0")
    model = str(body.get("model") or "")
    limit = max_output_tokens(model)
    if value > limit:
        raise _Invalid(
            "max_tokens",
            f"max_tokens: {value} > {limit}, which is the maximum allowed number of output tokens for {model}",
        )


def _thinking_config(body: dict[str, Any], count_tokens: bool) -> None:
    output_config = body.get("output_config")
    if isinstance(output_config, dict) and output_config.get("effort") is not None:
        if output_config["effort"] not in ("low", "medium", "high", "xhigh", "max"):
            raise _Invalid(
                "thinking_config", "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
            )
    config = body.get("thinking")
    if config is None:
        return
    if not isinstance(config, dict):
        raise _Invalid("thinking_config", "thinking: Input should be a valid dictionary or object")
    kind = config.get("type")
    if kind == "adaptive" and config.get("display") not in (None, "summarized", "omitted"):
        raise _Invalid("thinking_config", "thinking.adaptive.display: Input should be 'summarized' or 'omitted'")
    if kind in ("disabled", "adaptive", "between_tools"):
        return
    if kind != "enabled":
        raise _Invalid(
            "thinking_config",
            f"thinking: Input tag '{kind}' found using 'type' does not match any of the expected tags: "
            "'enabled', 'disabled', 'adaptive'",
        )
    budget = config.get("budget_tokens")
    if budget is None:
        raise _Invalid("thinking_config", "thinking.enabled.budget_tokens: Field required")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise _Invalid("thinking_config", "thinking.enabled.budget_tokens: Input should be a valid integer")
    if budget < MIN_THINKING_BUDGET:
        raise _Invalid(
            "thinking_config",
            f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_THINKING_BUDGET}",
        )
    max_tokens = body.get("max_tokens")
    if not count_tokens and isinstance(max_tokens, int) and budget >= max_tokens:
        raise _Invalid(
            "thinking_config",
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
            "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
        )


def _tool_definitions(body: dict[str, Any]) -> None:
    tools = body.get("tools")
    if tools is None:
        return
    if not isinstance(tools, list):
        raise _Invalid("tool_definitions", "tools: Input should be a valid list")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _Invalid("tool_definitions", f"tools.{i}: Input should be a valid dictionary or object")
        kind = tool.get("type")
        custom = kind in (None, "custom")
        where = f"tools.{i}.custom" if custom else f"tools.{i}.{kind}"
        name = tool.get("name")
        if not isinstance(name, str):
            raise _Invalid("tool_definitions", f"{where}.name: Field required")
        if custom and not _TOOL_NAME_RE.match(name):
            raise _Invalid("tool_definitions", f"{where}.name: String should match pattern '{TOOL_NAME_PATTERN}'")
        if custom:
            schema = tool.get("input_schema")
            if schema is None:
                raise _Invalid("tool_definitions", f"{where}.input_schema: Field required")
            if not isinstance(schema, dict):
                raise _Invalid(
                    "tool_definitions", f"{where}.input_schema: Input should be a valid dictionary or object"
                )
            if schema.get("type") != "object":
                raise _Invalid("tool_definitions", f"{where}.input_schema.type: Input should be 'object'")
        if name in seen:
            raise _Invalid("tool_definitions", "tools: Tool names must be unique.")
        seen.add(name)


def _roles(body: dict[str, Any]) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _Invalid("roles", "messages: Field required")
    if not messages:
        raise _Invalid("roles", "messages: at least one message is required")
    for i, message in enumerate(_messages(body)):
        if message.get("role") not in ("user", "assistant"):
            raise _Invalid("roles", f"messages.{i}.role: Input should be 'user' or 'assistant'")
    if _messages(body)[0].get("role") != "user":
        raise _Invalid("roles", 'messages: first message must use the "user" role')


def _empty_content(body: dict[str, Any]) -> None:
    system = body.get("system")
    if isinstance(system, list):
        for block in system:
            if isinstance(block, dict) and block.get("type") == "text" and not block.get("text"):
                raise _Invalid("empty_content", "system: text content blocks must be non-empty")
    messages = _messages(body)
    last = len(messages) - 1
    for i, message in enumerate(messages):
        final_assistant = i == last and message.get("role") == "assistant"
        content = message.get("content")
        if not final_assistant and (content in ("", []) or content is None):
            raise _Invalid(
                "empty_content",
                f"messages.{i}: all messages must have non-empty content except for the optional final "
                "assistant message",
            )
    for path, block in _all_blocks(body):
        if block.get("type") != "text":
            continue
        text = block.get("text")
        index = int(path.split(".")[1])
        final_assistant = index == last and messages[index].get("role") == "assistant"
        if not isinstance(text, str) or text == "":
            raise _Invalid("empty_content", "messages: text content blocks must be non-empty")
        if not text.strip() and not final_assistant:
            raise _Invalid("empty_content", "messages: text content blocks must contain non-whitespace text")
    if messages and messages[last].get("role") == "assistant":
        blocks = _blocks(messages[last])
        tail = blocks[-1] if blocks else {}
        text = tail.get("text") if tail.get("type") == "text" else None
        if isinstance(text, str) and text != text.rstrip():
            raise _Invalid("empty_content", "messages: final assistant content cannot end with trailing whitespace")


def _tool_use_ids(body: dict[str, Any]) -> None:
    seen: set[str] = set()
    for path, block in _all_blocks(body):
        kind = block.get("type")
        if kind == "tool_use":
            tool_id = block.get("id")
            if not isinstance(tool_id, str) or not _TOOL_ID_RE.match(tool_id):
                raise _Invalid("tool_use_ids", f"{path}.tool_use.id: String should match pattern '{TOOL_ID_PATTERN}'")
            if tool_id in seen:
                raise _Invalid("tool_use_ids", f"{path}: `tool_use` ids must be unique")
            seen.add(tool_id)
        elif kind == "tool_result":
            ref = block.get("tool_use_id")
            if not isinstance(ref, str) or not _TOOL_ID_RE.match(ref):
                raise _Invalid(
                    "tool_use_ids", f"{path}.tool_result.tool_use_id: String should match pattern '{TOOL_ID_PATTERN}'"
                )


def _tool_pairing(body: dict[str, Any]) -> None:
    previous_ids: list[str] = []
    turns = _turns(body)
    for t, (role, blocks) in enumerate(turns):
        if role == "assistant":
            uses = [(i, str(b.get("id"))) for i, _j, b in blocks if b.get("type") == "tool_use"]
            previous_ids = [tool_id for _i, tool_id in uses]
            if not uses:
                continue
            following = turns[t + 1][1] if t + 1 < len(turns) and turns[t + 1][0] == "user" else []
            answered: set[str] = set()
            for _i, _j, b in following:  # only the tool_result blocks at the start of the next user turn count
                if b.get("type") != "tool_result":
                    break
                answered.add(str(b.get("tool_use_id")))
            missing = [tool_id for _i, tool_id in uses if tool_id not in answered]
            if missing:
                at = uses[-1][0]
                raise _Invalid(
                    "tool_pairing",
                    f"messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                    "in the next message.",
                )
        else:
            for i, j, b in blocks:
                if b.get("type") == "tool_result" and str(b.get("tool_use_id")) not in previous_ids:
                    raise _Invalid(
                        "tool_pairing",
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                        "block in the previous message.",
                    )
            previous_ids = []


def _cache_control(body: dict[str, Any]) -> None:
    count = 0
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("cache_control"):
            count += 1
    system = body.get("system")
    if isinstance(system, list):
        count += sum(1 for b in system if isinstance(b, dict) and b.get("cache_control"))
    count += sum(1 for _path, block in _all_blocks(body) if block.get("cache_control"))
    if body.get("cache_control"):  # top-level automatic caching uses a breakpoint too
        count += 1
    if count > MAX_CACHE_BREAKPOINTS:
        raise _Invalid(
            "cache_control",
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {count}.",
        )


def _thinking_blocks(body: dict[str, Any], book: SignatureBook) -> None:
    messages = _messages(body)
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        for j, block in enumerate(_blocks(message)):
            if block.get("type") == "thinking":
                signature = block.get("signature")
                if not isinstance(signature, str) or not signature:
                    raise _Invalid("thinking_blocks", f"messages.{i}.content.{j}.thinking.signature: Field required")
                if not book.valid(str(block.get("thinking", "")), signature):
                    raise _Invalid(
                        "thinking_blocks", f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                    )
            elif block.get("type") == "redacted_thinking" and not block.get("data"):
                raise _Invalid("thinking_blocks", f"messages.{i}.content.{j}.redacted_thinking.data: Field required")
    config = body.get("thinking")
    if not (isinstance(config, dict) and config.get("type") == "enabled") or len(messages) < 2:
        return
    last, before = messages[-1], messages[-2]
    results = [b for b in _blocks(last) if b.get("type") == "tool_result"]
    if last.get("role") != "user" or not results or before.get("role") != "assistant":
        return
    first = (_blocks(before) or [{}])[0].get("type")
    if first not in ("thinking", "redacted_thinking"):
        raise _Invalid(
            "thinking_blocks",
            f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block "
            "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
            "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult "
            "our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
        )


def _media(body: dict[str, Any]) -> None:
    images = [(p, b) for p, b in _all_blocks(body) if b.get("type") == "image"]
    side_limit = MAX_IMAGE_SIDE_MANY if len(images) > MANY_IMAGES else MAX_IMAGE_SIDE
    for path, block in images:
        _image(path, block, side_limit, many=len(images) > MANY_IMAGES)
    for path, block in _all_blocks(body):
        if block.get("type") == "document":
            _document(path, block)


def _decode(where: str, data: object) -> bytes:
    if not isinstance(data, str):
        raise _Invalid("media", f"{where}.data: Input should be a valid string")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _Invalid("media", f"{where}.data: Invalid base64 data") from None


def _image(path: str, block: dict[str, Any], side_limit: int, *, many: bool) -> None:
    source = block.get("source")
    if not isinstance(source, dict):
        raise _Invalid("media", f"{path}.image.source: Field required")
    if source.get("type") != "base64":
        return  # url and file sources are fetched by the API; nothing to check here
    where = f"{path}.image.source.base64"
    media_type = source.get("media_type")
    if media_type not in IMAGE_MEDIA_TYPES:
        raise _Invalid(
            "media", f"{where}.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
        )
    data = source.get("data")
    if isinstance(data, str) and len(data) > MAX_IMAGE_BYTES:
        raise _Invalid("media", f"{where}: image exceeds 5 MB maximum: {len(data)} bytes > {MAX_IMAGE_BYTES} bytes")
    raw = _decode(where, data)
    if _sniff_image(raw) != media_type:
        raise _Invalid("media", f"{where}.data: Image does not match the provided media type {media_type}")
    size = _image_size(raw)
    if size is not None and max(size) > side_limit:
        suffix = " for many-image requests" if many else ""
        raise _Invalid(
            "media",
            f"{where}.data: At least one of the image dimensions exceed max allowed size{suffix}: {side_limit} pixels",
        )


def _document(path: str, block: dict[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, dict):
        raise _Invalid("media", f"{path}.document.source: Field required")
    kind = source.get("type")
    if kind == "base64":
        where = f"{path}.document.source.base64"
        if source.get("media_type") != "application/pdf":
            raise _Invalid("media", f"{where}.media_type: Input should be 'application/pdf'")
        raw = _decode(where, source.get("data"))
        if not raw.startswith(b"%PDF-"):
            raise _Invalid("media", f"{where}.data: The PDF specified was not valid.")
        pages = len(_PDF_PAGE.findall(raw))
        if pages > MAX_PDF_PAGES:
            raise _Invalid("media", f"{where}.data: A maximum of {MAX_PDF_PAGES} PDF pages may be provided.")
    elif kind == "text":
        if source.get("media_type") != "text/plain":
            raise _Invalid("media", f"{path}.document.source.text.media_type: Input should be 'text/plain'")
        if not isinstance(source.get("data"), str):
            raise _Invalid("media", f"{path}.document.source.text.data: Input should be a valid string")


def _sniff_image(raw: bytes) -> str | None:
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


def _image_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) from the image header, or None when it cannot be read."""
    try:
        if raw.startswith(b"\x89PNG") and raw[12:16] == b"IHDR":
            w, h = struct.unpack(">II", raw[16:24])
            return int(w), int(h)
        if raw[:3] == b"GIF":
            w, h = struct.unpack("<HH", raw[6:10])
            return int(w), int(h)
        if raw[:4] == b"RIFF":
            chunk = raw[12:16]
            if chunk == b"VP8X":
                return int.from_bytes(raw[24:27], "little") + 1, int.from_bytes(raw[27:30], "little") + 1
            if chunk == b"VP8L":
                bits = int.from_bytes(raw[21:25], "little")
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", raw[26:30])
                return int(w) & 0x3FFF, int(h) & 0x3FFF
        if raw.startswith(b"\xff\xd8"):
            return _jpeg_size(raw)
    except struct.error:
        return None
    return None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    pos = 2
    while pos + 9 < len(raw):
        if raw[pos] != 0xFF:
            return None
        marker = raw[pos + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        length = int.from_bytes(raw[pos + 2 : pos + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", raw[pos + 5 : pos + 9])
            return int(w), int(h)
        pos += 2 + length
    return None

"""The strict scripted server: one test per rule of the real Messages API, over real loopback HTTP.

Each test sends the form the API rejects (and asserts the 400 and the API's wording) and the form it
accepts (and asserts the 200). Rules and sources: docs/scripted-model.md.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

from sidecar.testing.api_rules import RULES, max_output_tokens
from sidecar.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.api_rejections_expected

MODEL = "claude-sonnet-4-6"
HELLO = [{"role": "user", "content": "hello"}]
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def post(server: ScriptedModelServer, path: str = "/v1/messages", **body: Any) -> httpx.Response:
    payload = {"model": MODEL, "max_tokens": 100, "messages": HELLO, **body}
    return httpx.post(f"{server.base_url}{path}", json=payload, headers={"x-api-key": "k"}, timeout=30)


def rejected(response: httpx.Response, message: str, status: int = 400) -> None:
    assert response.status_code == status, response.text
    error = response.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == ("invalid_request_error" if status == 400 else "request_too_large")
    assert error["error"]["message"] == message


def accepted(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    assert response.json()["type"] == "message"


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": t, **extra}


def tool_use(tool_id: str, name: str = "Read") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"path": "a"}}


def result(tool_id: str, content: Any = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


def tool(name: str, schema: Any = SCHEMA) -> dict[str, Any]:
    return {"name": name, "description": "d", "input_schema": schema}


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def image(data: bytes, media_type: str = "image/png") -> dict[str, Any]:
    source = {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


# -- tool_use / tool_result pairing ---------------------------------------------------------------------------


def test_tool_use_must_be_answered_by_tool_result_at_start_of_next_user_message(server: ScriptedModelServer) -> None:
    ask = [*HELLO, {"role": "assistant", "content": [text("Reading."), tool_use("toolu_01"), tool_use("toolu_02")]}]
    unanswered = [*ask, {"role": "user", "content": [result("toolu_01"), text("and the other?")]}]
    rejected(
        post(server, messages=unanswered),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_02. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    )
    text_first = [*ask, {"role": "user", "content": [text("here"), result("toolu_01"), result("toolu_02")]}]
    rejected(
        post(server, messages=text_first),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01, toolu_02. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    )
    no_user_after = ask
    assert post(server, messages=no_user_after).status_code == 400
    accepted(post(server, messages=[*ask, {"role": "user", "content": [result("toolu_01"), result("toolu_02")]}]))
    accepted(
        post(server, messages=[*ask, {"role": "user", "content": [result("toolu_02"), result("toolu_01"), text("x")]}])
    )


def test_orphan_tool_result_is_rejected(server: ScriptedModelServer) -> None:
    ask = [*HELLO, {"role": "assistant", "content": [tool_use("toolu_01")]}]
    orphan = [*ask, {"role": "user", "content": [result("toolu_01"), result("toolu_99")]}]
    rejected(
        post(server, messages=orphan),
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_99. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    )
    first = [{"role": "user", "content": [result("toolu_01")]}]
    rejected(
        post(server, messages=first),
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    )
    accepted(post(server, messages=[*ask, {"role": "user", "content": [result("toolu_01")]}]))


# -- roles ----------------------------------------------------------------------------------------------------


def test_roles_first_message_user_and_consecutive_turns_combined(server: ScriptedModelServer) -> None:
    rejected(
        post(server, messages=[{"role": "assistant", "content": "hi"}, *HELLO]),
        'messages: first message must use the "user" role',
    )
    rejected(
        post(server, messages=[*HELLO, {"role": "system", "content": "x"}]),
        "messages.1.role: Input should be 'user' or 'assistant'",
    )
    rejected(post(server, messages=[]), "messages: at least one message is required")
    # the API combines consecutive same-role messages into one turn: not an error
    accepted(post(server, messages=[*HELLO, {"role": "user", "content": "again"}]))
    two_assistant = [
        *HELLO,
        {"role": "assistant", "content": [tool_use("toolu_01")]},
        {"role": "assistant", "content": [tool_use("toolu_02")]},
        {"role": "user", "content": [result("toolu_01"), result("toolu_02")]},
    ]
    accepted(post(server, messages=two_assistant))


# -- cache_control --------------------------------------------------------------------------------------------


def test_at_most_four_cache_control_breakpoints(server: ScriptedModelServer) -> None:
    cache = {"cache_control": {"type": "ephemeral"}}
    system = [text("sys", **cache)]
    tools = [{**tool("Read"), **cache}]
    user = {"role": "user", "content": [text("a", **cache), text("b", **cache)]}
    accepted(post(server, system=system, tools=tools, messages=[user]))
    user5 = {"role": "user", "content": [text("a", **cache), text("b", **cache), text("c", **cache)]}
    rejected(
        post(server, system=system, tools=tools, messages=[user5]),
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    )
    nested = {"role": "user", "content": [result("toolu_01", [text("r", **cache)])]}
    ask = {"role": "assistant", "content": [tool_use("toolu_01")]}
    rejected(
        post(server, system=system, tools=tools, messages=[user5, ask, nested]),
        "A maximum of 4 blocks with cache_control may be provided. Found 6.",
    )


# -- empty content --------------------------------------------------------------------------------------------


def test_empty_and_whitespace_text_blocks_are_rejected(server: ScriptedModelServer) -> None:
    rejected(
        post(server, messages=[{"role": "user", "content": [text("")]}]),
        "messages: text content blocks must be non-empty",
    )
    rejected(
        post(server, messages=[{"role": "user", "content": [text("ok"), text(" \n")]}]),
        "messages: text content blocks must contain non-whitespace text",
    )
    rejected(
        post(server, messages=[{"role": "user", "content": ""}]),
        "messages.0: all messages must have non-empty content except for the optional final assistant message",
    )
    rejected(
        post(server, messages=[*HELLO, {"role": "assistant", "content": []}, {"role": "user", "content": "x"}]),
        "messages.1: all messages must have non-empty content except for the optional final assistant message",
    )
    ask = {"role": "assistant", "content": [tool_use("toolu_01")]}
    empty_in_result = {"role": "user", "content": [result("toolu_01", [text("")])]}
    rejected(post(server, messages=[*HELLO, ask, empty_in_result]), "messages: text content blocks must be non-empty")
    rejected(post(server, system=[text("")]), "system: text content blocks must be non-empty")
    accepted(post(server, messages=[*HELLO, ask, {"role": "user", "content": [result("toolu_01", "")]}]))


def test_final_assistant_content_cannot_end_with_whitespace(server: ScriptedModelServer) -> None:
    rejected(
        post(server, messages=[*HELLO, {"role": "assistant", "content": "The answer is "}]),
        "messages: final assistant content cannot end with trailing whitespace",
    )
    rejected(
        post(server, messages=[*HELLO, {"role": "assistant", "content": [text("  ")]}]),
        "messages: final assistant content cannot end with trailing whitespace",
    )
    accepted(post(server, messages=[*HELLO, {"role": "assistant", "content": "The answer is"}]))
    accepted(post(server, messages=[*HELLO, {"role": "assistant", "content": "ok "}, {"role": "user", "content": "y"}]))


# -- tools ----------------------------------------------------------------------------------------------------


def test_tool_names_match_the_pattern_mcp_names_included(server: ScriptedModelServer) -> None:
    pattern = "'^[a-zA-Z0-9_-]{1,64}$'"
    accepted(post(server, tools=[tool("Read"), tool("mcp__my-server__get_issue"), tool("a" * 64)]))
    rejected(
        post(server, tools=[tool("Read"), tool("mcp/my-server.get_issue")]),
        f"tools.1.custom.name: String should match pattern {pattern}",
    )
    rejected(post(server, tools=[tool("a" * 65)]), f"tools.0.custom.name: String should match pattern {pattern}")
    rejected(post(server, tools=[tool("")]), f"tools.0.custom.name: String should match pattern {pattern}")


def test_tool_names_are_unique(server: ScriptedModelServer) -> None:
    rejected(post(server, tools=[tool("Read"), tool("Edit"), tool("Read")]), "tools: Tool names must be unique.")
    server_tool = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    accepted(post(server, tools=[tool("Read"), server_tool]))
    rejected(post(server, tools=[tool("web_search"), server_tool]), "tools: Tool names must be unique.")


def test_input_schema_is_an_object_schema(server: ScriptedModelServer) -> None:
    rejected(
        post(server, tools=[tool("Read", {"type": "array", "items": {}})]),
        "tools.0.custom.input_schema.type: Input should be 'object'",
    )
    rejected(
        post(server, tools=[tool("Read", {"properties": {}})]),
        "tools.0.custom.input_schema.type: Input should be 'object'",
    )
    rejected(post(server, tools=[{"name": "Read"}]), "tools.0.custom.input_schema: Field required")
    accepted(post(server, tools=[tool("Read", {"type": "object"})]))


def test_tool_use_ids_match_the_pattern(server: ScriptedModelServer) -> None:
    pattern = "'^[a-zA-Z0-9_-]+$'"
    bad = [
        *HELLO,
        {"role": "assistant", "content": [tool_use("toolu.01")]},
        {"role": "user", "content": [result("toolu.01")]},
    ]
    rejected(post(server, messages=bad), f"messages.1.content.0.tool_use.id: String should match pattern {pattern}")
    twice = [
        *HELLO,
        {"role": "assistant", "content": [tool_use("toolu_01"), tool_use("toolu_01")]},
        {"role": "user", "content": [result("toolu_01")]},
    ]
    rejected(post(server, messages=twice), "messages.1.content.1: `tool_use` ids must be unique")
    good = [
        *HELLO,
        {"role": "assistant", "content": [tool_use("toolu_01A-b_c")]},
        {"role": "user", "content": [result("toolu_01A-b_c")]},
    ]
    accepted(post(server, messages=good))


# -- thinking -------------------------------------------------------------------------------------------------


def test_thinking_blocks_go_back_unmodified_with_their_signature(server: ScriptedModelServer) -> None:
    server.add_turns(
        [
            {"content": [{"type": "thinking", "thinking": "Let me read it."}, tool_use("toolu_01")]},
            {"content": [{"type": "thinking", "thinking": "scripted", "signature": "c2lnbmVkLWJ5LXNjcmlwdA=="}]},
        ]
    )
    sdk = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
    thinking: dict[str, Any] = {"type": "enabled", "budget_tokens": 2000}
    first = sdk.messages.create(model=MODEL, max_tokens=4000, messages=HELLO, thinking=thinking)  # type: ignore[arg-type]
    blocks = [b.model_dump(exclude_none=True) for b in first.content]
    loop = [*HELLO, {"role": "assistant", "content": blocks}, {"role": "user", "content": [result("toolu_01")]}]
    second = sdk.messages.create(model=MODEL, max_tokens=4000, messages=loop, thinking=thinking)  # type: ignore[arg-type]
    assert second.content[0].type == "thinking"

    edited = [dict(blocks[0], thinking="Let me write it."), blocks[1]]
    edited_loop = [*HELLO, {"role": "assistant", "content": edited}, loop[2]]
    with pytest.raises(anthropic.BadRequestError) as exc:
        sdk.messages.create(model=MODEL, max_tokens=4000, messages=edited_loop, thinking=thinking)  # type: ignore[arg-type]
    assert exc.value.body["error"]["message"] == "messages.1.content.0: Invalid `signature` in `thinking` block"  # type: ignore[index]

    forged = [dict(blocks[0], signature=base64.b64encode(b"forged" * 10).decode()), blocks[1]]
    rejected(
        post(server, messages=[*HELLO, {"role": "assistant", "content": forged}, loop[2]]),
        "messages.1.content.0: Invalid `signature` in `thinking` block",
    )
    unsigned = [{"type": "thinking", "thinking": "x"}, blocks[1]]
    rejected(
        post(server, messages=[*HELLO, {"role": "assistant", "content": unsigned}, loop[2]]),
        "messages.1.content.0.thinking.signature: Field required",
    )
    # a signature the script chose is remembered too
    scripted = second.content[0].model_dump(exclude_none=True)
    accepted(
        post(server, messages=[*HELLO, {"role": "assistant", "content": [scripted]}, {"role": "user", "content": "y"}])
    )
    # a signature this server derives is valid on another instance (a session restored after a restart)
    with ScriptedModelServer() as other:
        accepted(post(other, messages=loop, max_tokens=4000, thinking=thinking))


def test_enabled_thinking_tool_loop_must_start_with_the_thinking_block(server: ScriptedModelServer) -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024}
    stripped = [
        *HELLO,
        {"role": "assistant", "content": [tool_use("toolu_01")]},
        {"role": "user", "content": [result("toolu_01")]},
    ]
    response = post(server, messages=stripped, max_tokens=2000, thinking=thinking)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. "
        "When `thinking` is enabled, a final `assistant` message must start with a thinking block"
    )
    accepted(post(server, messages=stripped, max_tokens=2000))  # without thinking the same history is fine


def test_thinking_config_budget_rules(server: ScriptedModelServer) -> None:
    rejected(
        post(server, max_tokens=4000, thinking={"type": "enabled", "budget_tokens": 1000}),
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
    )
    rejected(
        post(server, max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 2000}),
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
    )
    rejected(post(server, thinking={"type": "enabled"}), "thinking.enabled.budget_tokens: Field required")
    accepted(post(server, max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024}))
    accepted(post(server, max_tokens=100, thinking={"type": "adaptive"}))
    accepted(post(server, max_tokens=100, thinking={"type": "disabled"}))


# -- images and documents -------------------------------------------------------------------------------------


def test_image_media_types_and_content(server: ScriptedModelServer) -> None:
    def user(block: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [block, text("what is this?")]}]

    accepted(post(server, messages=user(image(png(2, 2)))))
    rejected(
        post(server, messages=user(image(b"BM....", "image/bmp"))),
        "messages.0.content.0.image.source.base64.media_type: Input should be "
        "'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
    )
    rejected(
        post(server, messages=user(image(png(2, 2), "image/jpeg"))),
        "messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/jpeg",
    )
    ask = {"role": "assistant", "content": [tool_use("toolu_01")]}
    in_result = {"role": "user", "content": [result("toolu_01", [image(b"GIF89a\x01\x00\x01\x00", "image/png")])]}
    rejected(
        post(server, messages=[*HELLO, ask, in_result]),
        "messages.2.content.0.tool_result.content.0.image.source.base64.data: "
        "Image does not match the provided media type image/png",
    )
    accepted(
        post(
            server,
            messages=[
                *HELLO,
                ask,
                {"role": "user", "content": [result("toolu_01", [image(b"GIF89a\x01\x00\x01\x00", "image/gif")])]},
            ],
        )
    )


def test_image_size_and_dimension_limits(server: ScriptedModelServer) -> None:
    big = png(10, 10) + b"\x00" * (4 * 1024 * 1024)  # base64 of this is over 5 MB
    encoded = len(base64.b64encode(big))
    rejected(
        post(server, messages=[{"role": "user", "content": [image(big)]}]),
        f"messages.0.content.0.image.source.base64: image exceeds 5 MB maximum: {encoded} bytes > 5242880 bytes",
    )
    rejected(
        post(server, messages=[{"role": "user", "content": [image(png(8001, 10))]}]),
        "messages.0.content.0.image.source.base64.data: At least one of the image dimensions exceed max allowed "
        "size: 8000 pixels",
    )
    accepted(post(server, messages=[{"role": "user", "content": [image(png(8000, 10))]}]))
    many = [image(png(2001, 2)) for _ in range(21)]
    rejected(
        post(server, messages=[{"role": "user", "content": many}]),
        "messages.0.content.0.image.source.base64.data: At least one of the image dimensions exceed max allowed "
        "size for many-image requests: 2000 pixels",
    )
    accepted(post(server, messages=[{"role": "user", "content": [image(png(2000, 2)) for _ in range(21)]}]))


def test_document_blocks(server: ScriptedModelServer) -> None:
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 1 >> endobj\n2 0 obj << /Type /Page >> endobj\n%%EOF\n"
    doc = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(pdf).decode()},
    }
    accepted(post(server, messages=[{"role": "user", "content": [doc, text("summarise")]}]))
    wrong = {**doc, "source": {**doc["source"], "media_type": "application/msword"}}
    rejected(
        post(server, messages=[{"role": "user", "content": [wrong]}]),
        "messages.0.content.0.document.source.base64.media_type: Input should be 'application/pdf'",
    )
    pages = b"%PDF-1.4\n" + b"<< /Type /Page >>\n" * 101
    long_doc = {**doc, "source": {**doc["source"], "data": base64.b64encode(pages).decode()}}
    rejected(
        post(server, messages=[{"role": "user", "content": [long_doc]}]),
        "messages.0.content.0.document.source.base64.data: A maximum of 100 PDF pages may be provided.",
    )
    plain = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}}
    accepted(post(server, messages=[{"role": "user", "content": [plain]}]))


# -- max_tokens and request size ------------------------------------------------------------------------------


def test_max_tokens_within_the_models_limit(server: ScriptedModelServer) -> None:
    rejected(
        post(server, model="claude-opus-4-5-20251101", max_tokens=128_001),
        "max_tokens: 128001 > 64000, which is the maximum allowed number of output tokens for claude-opus-4-5-20251101",
    )
    accepted(post(server, model="claude-opus-4-5-20251101", max_tokens=64_000))
    accepted(post(server, model="claude-opus-4-6", max_tokens=128_000))
    assert max_output_tokens("claude-opus-4-1-20250805") == 32_000
    unknown = "claude-sonnet-5-5"
    accepted(post(server, model=unknown, max_tokens=128_000))
    rejected(
        post(server, model=unknown, max_tokens=1_000_000),
        f"max_tokens: 1000000 > 128000, which is the maximum allowed number of output tokens for {unknown}",
    )
    body = {"model": MODEL, "messages": HELLO}
    response = httpx.post(f"{server.base_url}/v1/messages", json=body, timeout=10)
    rejected(response, "max_tokens: Field required")


def test_request_size_limit_is_32_mb(server: ScriptedModelServer) -> None:
    filler = "x" * (32 * 1024 * 1024)
    rejected(
        post(server, messages=[{"role": "user", "content": filler}]),
        "Request exceeds the maximum allowed number of bytes.",
        status=413,
    )
    accepted(post(server, messages=[{"role": "user", "content": "x" * (1024 * 1024)}]))


# -- server behaviour ------------------------------------------------------------------------------------------


def test_rejection_is_recorded_does_not_consume_a_turn_and_the_sdk_raises(server: ScriptedModelServer) -> None:
    server.add_turn({"content": [text("the answer")]})
    sdk = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=2)
    with pytest.raises(anthropic.BadRequestError) as exc:
        sdk.messages.create(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}]
        )
    assert exc.value.status_code == 400
    assert exc.value.body["error"]["message"] == "messages: text content blocks must be non-empty"  # type: ignore[index]
    assert server.pending_turns == 1  # not consumed, and the SDK did not retry a 400
    assert len(server.message_requests()) == 1
    assert [r.rule for r in server.rejections] == ["empty_content"]
    reply = sdk.messages.create(model=MODEL, max_tokens=100, messages=HELLO)  # type: ignore[arg-type]
    assert reply.content[0].text == "the answer"  # type: ignore[union-attr]


def test_count_tokens_is_validated_too(server: ScriptedModelServer) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": [result("toolu_01")]}]}
    response = httpx.post(f"{server.base_url}/v1/messages/count_tokens", json=body, timeout=10)
    assert response.status_code == 400
    assert "unexpected `tool_use_id`" in response.json()["error"]["message"]
    ok = httpx.post(f"{server.base_url}/v1/messages/count_tokens", json={"model": MODEL, "messages": HELLO}, timeout=10)
    assert ok.status_code == 200 and ok.json()["input_tokens"] > 0


def test_rules_can_be_relaxed_one_by_one_or_all() -> None:
    cache = {"cache_control": {"type": "ephemeral"}}
    five = [{"role": "user", "content": [text(str(i), **cache) for i in range(5)]}]
    with ScriptedModelServer(relax=["cache_control"]) as relaxed:
        accepted(post(relaxed, messages=five))
        rejected(
            post(relaxed, messages=[{"role": "user", "content": ""}]),
            "messages.0: all messages must have non-empty content except for the optional final assistant message",
        )
    with ScriptedModelServer(strict=False) as lenient:
        accepted(post(lenient, messages=[{"role": "user", "content": [result("toolu_x")]}], max_tokens=10**7))
        assert lenient.rejections == []
    with pytest.raises(ValueError, match="unknown rule"):
        ScriptedModelServer(relax=["no_such_rule"])
    assert "tool_pairing" in RULES

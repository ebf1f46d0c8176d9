"""Thinking, effort and max_tokens per model, as the scripted model records them; thinking blocks go back
unmodified through a tool loop (the strict scripted server rejects an edited or missing signature)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar

THOUGHT = "The user wants notes.txt; I will read it first, then answer with its second line."


def capability(supported: bool) -> dict[str, bool]:
    return {"supported": supported}


def model_info(*, adaptive: bool, enabled: bool, efforts: tuple[str, ...], context: int, output: int) -> dict[str, Any]:
    """A Models API object with the fields the SDK's ModelInfo requires."""
    no = capability(False)
    return {
        "display_name": "Acme", "created_at": "2026-01-01T00:00:00Z", "lifecycle": "active",
        "max_input_tokens": context, "max_tokens": output,
        "capabilities": {
            "batch": no, "citations": no, "code_execution": no, "image_input": no, "pdf_input": no,
            "structured_outputs": no,
            "context_management": {"supported": False},
            "server_tools": {"supported": False},
            "effort": {"supported": bool(efforts), **{e: capability(e in efforts) for e in
                                                      ("low", "medium", "high", "xhigh", "max")}},
            "thinking": {"supported": adaptive or enabled, "types": {
                "adaptive": capability(adaptive), "enabled": capability(enabled),
                "disabled": capability(True), "between_tools": capability(False)}},
        },
    }


async def test_adaptive_thinking_with_the_configured_effort_and_the_signed_block_sent_back(
        make_sidecar: MakeSidecar, model_server: ScriptedModelServer, workspace: Path) -> None:
    harness = await make_sidecar(env={"SIDECAR_EFFORT": "high"})
    model_server.add_turns([
        {"content": [{"type": "thinking", "thinking": THOUGHT},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "notes.txt")}}]},
        {"content": [{"type": "text", "text": "The second line is beta."}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "what is the second line of notes.txt?") == "end_turn"

    first, second = model_server.message_requests()
    assert first.body["model"] == "claude-sonnet-5-5"
    assert first.body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert first.body["output_config"] == {"effort": "high"}
    assert first.body["max_tokens"] == 32_000
    # The tool loop: the assistant turn goes back with the thinking block first, text and signature intact.
    assistant = second.body["messages"][1]
    signature = model_server.signatures.derive(THOUGHT)
    assert assistant["content"][0] == {"type": "thinking", "thinking": THOUGHT, "signature": signature}
    assert model_server.rejections == []
    assert "beta" in json.dumps(second.tool_results())
    # The user sees the thinking as a thought (the panel shows it collapsed), not as the answer.
    thoughts = "".join(u["content"]["text"] for u in harness.process.updates_for(session, "agent_thought_chunk"))
    assert thoughts == THOUGHT
    assert THOUGHT not in harness.text(session)


async def test_no_thinking_and_no_effort_for_models_without_them(
        make_sidecar: MakeSidecar, model_server: ScriptedModelServer, workspace: Path) -> None:
    for model, max_tokens in (("claude-3-5-haiku-20241022", 8_192), ("local-llama-70b", 16_000)):
        harness = await make_sidecar(settings={"model": model}, env={"SIDECAR_EFFORT": "high"})
        model_server.add_turns([{"content": [{"type": "text", "text": "hello"}]}])
        assert await harness.prompt(await harness.new_session(workspace), "hi") == "end_turn"
        body = model_server.message_requests()[-1].body
        assert body["model"] == model
        assert "thinking" not in body and "output_config" not in body
        assert body["max_tokens"] == max_tokens


async def test_the_models_api_answer_wins_over_the_table(
        make_sidecar: MakeSidecar, model_server: ScriptedModelServer, workspace: Path) -> None:
    # A model the table does not know: the Models API says adaptive thinking, efforts up to high, 300K context.
    model_server.models["acme-coder-1"] = model_info(adaptive=True, enabled=False, efforts=("low", "medium", "high"),
                                                     context=300_000, output=20_000)
    # One the table knows as adaptive: this endpoint says budget thinking only, no effort.
    model_server.models["claude-opus-4-8"] = model_info(adaptive=False, enabled=True, efforts=(),
                                                        context=200_000, output=64_000)
    harness = await make_sidecar(settings={"model": "acme-coder-1"}, env={"SIDECAR_EFFORT": "max"})
    model_server.add_turns([{"content": [{"type": "text", "text": "hello"}]}])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "hi") == "end_turn"
    body = model_server.message_requests()[-1].body
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "high"}  # max is not offered: the nearest lower level
    assert body["max_tokens"] == 20_000
    assert [u["size"] for u in harness.process.updates_for(session, "usage_update")] == [300_000]
    assert model_server.model_lookups == ["acme-coder-1"]  # asked once

    harness = await make_sidecar(settings={"model": "claude-opus-4-8", "effort": "medium"})
    model_server.add_turns([{"content": [{"type": "text", "text": "hello"}]}])
    assert await harness.prompt(await harness.new_session(workspace), "hi") == "end_turn"
    body = model_server.message_requests()[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert "output_config" not in body
    assert body["max_tokens"] == 32_000


async def test_the_models_api_is_asked_after_initialize_so_the_first_prompt_does_not_wait_for_it(
        make_sidecar: MakeSidecar, model_server: ScriptedModelServer, workspace: Path) -> None:
    model_server.models["acme-coder-2"] = model_info(adaptive=True, enabled=False, efforts=("low", "medium", "high"),
                                                     context=250_000, output=12_000)
    harness = await make_sidecar(settings={"model": "acme-coder-2"})
    for _ in range(1200):  # the warm-up thread asks once the SDK is imported (seconds on a loaded machine)
        if model_server.model_lookups:
            break
        await asyncio.sleep(0.05)
    assert model_server.model_lookups == ["acme-coder-2"]  # before any session or prompt
    model_server.add_turns([{"content": [{"type": "text", "text": "hello"}]}])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "hi") == "end_turn"
    assert model_server.message_requests()[-1].body["max_tokens"] == 12_000  # the answer it got is used
    assert model_server.model_lookups == ["acme-coder-2"]  # and not asked again


async def test_compaction_sends_thinking_blocks_back_unmodified(
        make_sidecar: MakeSidecar, model_server: ScriptedModelServer, workspace: Path) -> None:
    for model, thinking in (("claude-sonnet-5-5", {"type": "adaptive", "display": "summarized"}),
                            ("claude-haiku-4-5", None)):  # budget thinking: the summary request drops it
        harness = await make_sidecar(settings={"model": model})
        model_server.add_turns([
            {"content": [{"type": "thinking", "thinking": THOUGHT},
                         {"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "notes.txt")}}]},
            {"content": [{"type": "thinking", "thinking": "Now answer."},
                         {"type": "text", "text": "The second line is beta."}]},
            {"content": [{"type": "text", "text": "SUMMARY: the user asked about notes.txt."}]},
        ])
        session = await harness.new_session(workspace)
        assert await harness.prompt(session, "what is the second line of notes.txt?") == "end_turn"
        before = len(model_server.message_requests())
        await harness.prompt(session, "/compact")
        summary = model_server.message_requests()[before]
        assert summary.body.get("thinking") == thinking
        blocks = [b for m in summary.body["messages"] if m["role"] == "assistant" for b in m["content"]
                  if b["type"] == "thinking"]
        assert blocks == [
            {"type": "thinking", "thinking": THOUGHT, "signature": model_server.signatures.derive(THOUGHT)},
            {"type": "thinking", "thinking": "Now answer.", "signature": model_server.signatures.derive("Now answer.")},
        ]
        assert model_server.rejections == []

"""Cost per turn and per session: each model request's usage priced per model (sidecar.model.pricing), in
the prompt's answer, the usage updates, the log (a reload keeps the session's total) and the replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.model.pricing import PRICES, Price, Tokens, UsageMeter, parse_prices, price_of
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar

USAGE = {"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 10_000,
         "cache_creation_input_tokens": 2000}


def test_a_price_is_found_by_model_id_with_or_without_a_date_and_the_user_s_row_wins() -> None:
    sonnet = PRICES["claude-sonnet-5-5"]
    assert sonnet == Price(3.0, 15.0, 3.75, 0.3)
    assert price_of("claude-sonnet-5-5-20260101") == sonnet
    assert price_of("claude-opus-4-8[1m]") == PRICES["claude-opus-4-8"]
    assert price_of("llama-local") is None
    mine = parse_prices({"llama-local": {"input": 0.5, "output": 1}, "claude-sonnet-5-5": {
        "input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 1}})
    assert price_of("llama-local", mine) == Price(0.5, 1.0, 0.625, 0.05)
    assert price_of("claude-sonnet-5-5", mine) == Price(1.0, 2.0, 1.0, 0.0)
    # 1000 in × $3 + 200 out × $15 + 10k cache reads × $0.30 + 2k cache writes × $3.75, per million.
    assert Tokens.of(USAGE).cost(sonnet) == pytest.approx(0.0165)


@pytest.mark.parametrize("setting", [
    {"m": {"input": 1}}, {"m": {"input": "x", "output": 1}}, {"m": {"input": -1, "output": 1}}, {"m": 3},
    "not json", ["m"]])
def test_a_bad_price_setting_is_left_out(setting: Any) -> None:
    assert parse_prices(setting) == {}


def test_a_turn_with_an_unpriced_request_shows_tokens_only_and_so_does_the_session() -> None:
    meter = UsageMeter()
    meter.add("claude-sonnet-5-5", USAGE)
    assert meter.turn_record()["cost"] == {"amount": 0.0165, "currency": "USD"}
    meter.begin_turn()
    meter.add("llama-local", {"input_tokens": 5, "output_tokens": 7})
    record = meter.turn_record()
    assert "cost" not in record and "cost" not in record["session"]
    assert record["usage"] == {"totalTokens": 12, "inputTokens": 5, "outputTokens": 7, "cachedReadTokens": 0,
                               "cachedWriteTokens": 0}
    assert record["session"]["usage"]["totalTokens"] == 13_200 + 12


async def test_the_prompt_answer_carries_the_turn_s_and_the_session_s_cost_and_a_reload_keeps_it(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "notes.txt")}}],
         "usage": USAGE},
        {"content": [{"type": "text", "text": "read it"}], "usage": USAGE},
        {"content": [{"type": "text", "text": "second"}], "usage": {**USAGE, "cache_read_input_tokens": 0,
                                                                    "cache_creation_input_tokens": 0}},
    ])
    harness = await make_sidecar(settings={"model": "claude-sonnet-5-5"})
    session = await harness.new_session(workspace)
    first = await harness.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "read notes"}]})
    # Two requests in the turn: twice the usage, twice $0.0165.
    assert first["usage"] == {"totalTokens": 26_400, "inputTokens": 2000, "outputTokens": 400,
                              "cachedReadTokens": 20_000, "cachedWriteTokens": 4000}
    spend = first["_meta"]["sidecar"]["spend"]
    assert spend["cost"] == {"amount": 0.033, "currency": "USD"}
    assert spend["session"]["cost"] == {"amount": 0.033, "currency": "USD"}
    usage_updates = [u["update"] for u in harness.process.updates if u["update"]["sessionUpdate"] == "usage_update"]
    assert [u["cost"] for u in usage_updates] == [{"amount": 0.0165, "currency": "USD"},
                                                  {"amount": 0.033, "currency": "USD"}]
    await harness.process.close()

    # A new process loads the session: the next turn's session total goes on from $0.033.
    second = await make_sidecar(settings={"model": "claude-sonnet-5-5"})
    before = len(second.process.updates)
    await second.process.request("session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    ends = [u["update"]["_meta"]["sidecar"]["turnEnd"] for u in second.process.updates[before:]
            if (u["update"].get("_meta") or {}).get("sidecar", {}).get("turnEnd")]
    assert ends == [{"stopReason": "end_turn", "spend": spend}]  # the replayed turn's footer
    result = await second.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "again"}]})
    # 1000 in × $3 + 200 out × $15 = $0.006; the session: $0.039.
    assert result["_meta"]["sidecar"]["spend"]["cost"] == {"amount": 0.006, "currency": "USD"}
    assert result["_meta"]["sidecar"]["spend"]["session"]["cost"] == {"amount": 0.039, "currency": "USD"}


async def test_a_model_without_a_price_shows_tokens_and_the_user_s_price_setting_prices_it(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    model_server.add_turns([{"content": [{"type": "text", "text": "hi"}], "usage": USAGE}] * 2)
    unpriced = await make_sidecar(settings={"model": "llama-local"})
    session = await unpriced.new_session(workspace)
    result = await unpriced.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "hello"}]})
    spend = result["_meta"]["sidecar"]["spend"]
    assert "cost" not in spend and "cost" not in spend["session"] and spend["usage"]["totalTokens"] == 13_200

    priced = await make_sidecar(settings={"model": "llama-local", "prices": {
        "llama-local": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}})
    session = await priced.new_session(workspace)
    result = await priced.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "hello"}]})
    # 1000 × $1 + 200 × $2 per million.
    assert result["_meta"]["sidecar"]["spend"]["cost"] == {"amount": 0.0014, "currency": "USD"}


async def test_a_compaction_summary_counts_in_the_turn_that_asked_for_it(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    model_server.add_turns([{"content": [{"type": "text", "text": "first"}], "usage": USAGE},
                            {"content": [{"type": "text", "text": "the summary"}], "usage": USAGE}])
    harness = await make_sidecar(settings={"model": "claude-sonnet-5-5"})
    session = await harness.new_session(workspace)
    await harness.process.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
    result = await harness.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "/compact"}]})
    assert "summary" in str(model_server.message_requests()[-1].body["messages"][-1])
    spend = result["_meta"]["sidecar"]["spend"]
    assert spend["cost"] == {"amount": 0.0165, "currency": "USD"}
    assert spend["session"]["cost"] == {"amount": 0.033, "currency": "USD"}

"""Per-model capabilities and the request fields made from them (sidecar.model.capabilities)."""

from __future__ import annotations

import pytest

from sidecar.model import capabilities as caps
from sidecar.model.settings import ModelSettings


def test_table_lookup_follows_aliases_and_knows_nothing_else() -> None:
    assert caps.table_lookup("claude-haiku-4-5-20251001") == caps.TABLE["claude-haiku-4-5"]
    assert caps.table_lookup("claude-opus-4-8[1m]") == caps.TABLE["claude-opus-4-8"]
    assert caps.table_lookup("llama-3-70b") is caps.UNKNOWN
    assert caps.UNKNOWN.thinking == "none" and caps.UNKNOWN.max_output_tokens == 16_000


def test_effort_falls_back_to_the_nearest_lower_level() -> None:
    haiku = caps.TABLE["claude-haiku-5-5"]  # no xhigh
    assert haiku.effort_for("xhigh") == "high"
    assert haiku.effort_for("max") == "max"
    only_high = caps.ModelCapabilities(1, 1, "adaptive", ("high",))
    assert only_high.effort_for("low") == "high"  # nothing lower: the nearest higher
    assert caps.TABLE["claude-sonnet-4-5"].effort_for("high") is None  # no effort at all


def test_request_options_per_kind() -> None:
    assert caps.request_options(caps.TABLE["claude-sonnet-5-5"], effort=None) == {
        "max_tokens": 32_000, "thinking": {"type": "adaptive", "display": "summarized"},
        "output_config": {"effort": "medium"}}
    assert caps.request_options(caps.TABLE["claude-haiku-4-5"], effort="high") == {
        "max_tokens": 32_000, "thinking": {"type": "enabled", "budget_tokens": 16_000}}
    # A small max_tokens leaves room for the answer; too small for any budget: no thinking.
    assert caps.request_options(caps.TABLE["claude-haiku-4-5"], effort="max", max_tokens=12_000)["thinking"] == {
        "type": "enabled", "budget_tokens": 12_000 - caps.BUDGET_HEADROOM}
    assert "thinking" not in caps.request_options(caps.TABLE["claude-haiku-4-5"], effort="low", max_tokens=5_000)
    # The user's max_tokens is kept within the model's limit.
    assert caps.request_options(caps.TABLE["claude-3-5-haiku"], effort=None, max_tokens=50_000) == {"max_tokens": 8_192}
    assert caps.request_options(caps.TABLE["claude-sonnet-5-5"], effort="low", thinking=False) == {
        "max_tokens": 32_000, "output_config": {"effort": "low"}}


def test_settings_effort_and_thinking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIDECAR_EFFORT", "extreme")
    monkeypatch.setenv("SIDECAR_THINKING", "off")
    s = ModelSettings.from_env({"model": "claude-opus-4-6"})
    assert s.effort is None and s.thinking is False  # an unknown level is logged; the default applies
    assert s.request_options() == {"max_tokens": 32_000, "output_config": {"effort": "medium"}}
    assert s.context_window == 1_000_000
    s = ModelSettings.from_env({"model": "claude-opus-4-6", "effort": "HIGH", "thinking": True,
                                "contextWindow": 300_000, "maxTokens": 200_000})
    assert s.effort == "high" and s.context_window == 300_000 and s.max_tokens == 128_000
    with pytest.raises(ValueError, match="effort must be one of low, medium, high, xhigh, max"):
        caps.parse_effort("extreme")


async def test_lookups_of_one_model_at_the_same_time_ask_the_models_api_once() -> None:
    """The warm-up thread's lookup and a first prompt's (or two sessions') overlap: one request, one answer."""
    import asyncio
    import threading

    from sidecar.model.client import make_client, prefetch_capabilities
    from sidecar.testing.scripted_server import ScriptedModelServer

    server = ScriptedModelServer().start()
    try:
        settings = ModelSettings.from_env({"model": "local-concurrent-1", "apiBaseUrl": server.base_url})
        client = make_client(settings)
        warm = threading.Thread(target=prefetch_capabilities, args=(settings,))
        warm.start()  # as the warm-up does, in its own thread and event loop
        answers = await asyncio.gather(*(caps.fetch(client, "local-concurrent-1", settings.endpoint) for _ in range(3)))
        await asyncio.to_thread(warm.join, 30)
        await client.close()
        assert server.model_lookups == ["local-concurrent-1"]
        assert answers == [caps.UNKNOWN] * 3  # this endpoint has no Models API (404): the table's answer
        assert caps.fetched("local-concurrent-1", settings.endpoint)
    finally:
        server.stop()

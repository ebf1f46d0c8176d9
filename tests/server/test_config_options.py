"""The model picker: ACP session config options (``model``, ``effort``) over the real stdio transport.

Every choice is checked where a user would notice it: the ``configOptions`` the editor is answered and
sent, and the model and thinking fields of the next request the scripted Messages API server receives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError
from sidecar.model.settings import DEFAULT_MODEL
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness, start_harness


def _option(options: list[dict[str, Any]], option_id: str) -> dict[str, Any] | None:
    return next((o for o in options if o["id"] == option_id), None)


def _current(options: list[dict[str, Any]]) -> dict[str, str]:
    return {o["id"]: o["currentValue"] for o in options}


async def _set(harness: Harness, session: str, config_id: str, value: Any) -> list[dict[str, Any]]:
    result = await harness.process.request("session/set_config_option",
                                           {"sessionId": session, "configId": config_id, "value": value})
    options: list[dict[str, Any]] = result["configOptions"]
    return options


def _reply(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


async def test_new_session_offers_model_and_effort(acp_sidecar: Harness, workspace: Path) -> None:
    result = await acp_sidecar.process.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    model = _option(result["configOptions"], "model")
    effort = _option(result["configOptions"], "effort")
    assert model is not None and effort is not None
    assert model["type"] == "select" and model["category"] == "model"
    assert model["currentValue"] == DEFAULT_MODEL
    names = {o["value"]: o["name"] for o in model["options"]}
    assert names["claude-opus-4-8"] == "Claude Opus 4.8" and names["claude-3-7-sonnet"] == "Claude 3.7 Sonnet"
    assert effort["category"] == "thought_level" and effort["currentValue"] == "medium"
    assert [o["value"] for o in effort["options"]] == ["low", "medium", "high", "xhigh", "max"]


async def test_a_picked_model_and_effort_shape_the_next_request(acp_sidecar: Harness, workspace: Path,
                                                                model_server: ScriptedModelServer) -> None:
    model_server.add_turns([_reply("Default."), _reply("Picked.")])
    session = await acp_sidecar.new_session(workspace)
    other = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "Before") == "end_turn"
    before = model_server.message_requests()[-1].body
    assert before["model"] == DEFAULT_MODEL
    assert before["thinking"]["type"] == "adaptive" and before["output_config"] == {"effort": "medium"}

    # A budget-thinking model with three effort levels: the effort select follows the model.
    options = await _set(acp_sidecar, session, "model", "claude-opus-4-5")
    assert _current(options) == {"model": "claude-opus-4-5", "effort": "medium"}
    assert [o["value"] for o in _option(options, "effort")["options"]] == ["low", "medium", "high"]  # type: ignore[index]
    options = await _set(acp_sidecar, session, "effort", "high")
    assert _current(options) == {"model": "claude-opus-4-5", "effort": "high"}
    # The answer is the client's news: no config_option_update echoes its own request.
    assert acp_sidecar.process.updates_for(session, "config_option_update") == []

    assert await acp_sidecar.prompt(session, "After") == "end_turn"
    body = model_server.message_requests()[-1].body
    assert body["model"] == "claude-opus-4-5"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16_000}
    assert body["output_config"] == {"effort": "high"}
    # The other session's model is its own.
    listed = await acp_sidecar.process.request("session/load", {"sessionId": other, "cwd": str(workspace),
                                                                "mcpServers": []})
    assert _current(listed["configOptions"]) == {"model": DEFAULT_MODEL, "effort": "medium"}


async def test_a_model_without_effort_offers_none(acp_sidecar: Harness, workspace: Path,
                                                  model_server: ScriptedModelServer) -> None:
    model_server.add_turns([_reply("Small.")])
    session = await acp_sidecar.new_session(workspace)
    options = await _set(acp_sidecar, session, "model", "claude-3-5-haiku")
    assert [o["id"] for o in options] == ["model"]
    with pytest.raises(RemoteError) as err:
        await _set(acp_sidecar, session, "effort", "high")
    assert err.value.code == -32602 and "model" in err.value.message
    assert await acp_sidecar.prompt(session, "Hi") == "end_turn"
    body = model_server.message_requests()[-1].body
    assert body["model"] == "claude-3-5-haiku" and "thinking" not in body and "output_config" not in body


@pytest.mark.parametrize(("config_id", "value", "says"), [
    ("temperature", "hot", "this session has model, effort"),
    ("model", "gpt-9", "use one of claude-fable-5-2"),
    ("effort", "extreme", "use one of low, medium, high, xhigh, max"),
    ("model", True, "value"),
])
async def test_unknown_options_and_values_are_refused_naming_the_valid_ones(
        acp_sidecar: Harness, workspace: Path, config_id: str, value: Any, says: str) -> None:
    session = await acp_sidecar.new_session(workspace)
    with pytest.raises(RemoteError) as err:
        await _set(acp_sidecar, session, config_id, value)
    assert err.value.code == -32602 and says in err.value.message
    loaded = await acp_sidecar.process.request("session/load", {"sessionId": session, "cwd": str(workspace),
                                                                "mcpServers": []})
    assert _current(loaded["configOptions"]) == {"model": DEFAULT_MODEL, "effort": "medium"}


async def test_unknown_session_is_not_found(acp_sidecar: Harness) -> None:
    with pytest.raises(RemoteError) as err:
        await _set(acp_sidecar, "sess_0000000000000000", "model", "claude-opus-4-8")
    assert err.value.code == -32002


async def test_the_choice_survives_a_restart(acp_sidecar: Harness, sidecar_env: dict[str, str],
                                             model_server: ScriptedModelServer, workspace: Path,
                                             tmp_path: Path) -> None:
    model_server.add_turns([_reply("One."), _reply("Two.")])
    session = await acp_sidecar.new_session(workspace)
    await _set(acp_sidecar, session, "model", "claude-opus-4-8")
    await _set(acp_sidecar, session, "effort", "low")
    assert await acp_sidecar.prompt(session, "One") == "end_turn"
    await acp_sidecar.process.close()

    fresh = await start_harness("acp", sidecar_env, model_server, tmp_path)
    try:
        loaded = await fresh.process.request("session/load", {"sessionId": session, "cwd": str(workspace),
                                                              "mcpServers": []})
        assert _current(loaded["configOptions"]) == {"model": "claude-opus-4-8", "effort": "low"}
        assert fresh.process.updates_for(session, "config_option_update") == []  # state, not replayed
        assert await fresh.prompt(session, "Two") == "end_turn"
    finally:
        await fresh.process.close()
    body = model_server.message_requests()[-1].body
    assert body["model"] == "claude-opus-4-8" and body["output_config"] == {"effort": "low"}


async def test_slash_model_announces_the_change(acp_sidecar: Harness, workspace: Path,
                                                model_server: ScriptedModelServer) -> None:
    model_server.add_turns([_reply("Opus here.")])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "/model claude-opus-4-6") == "end_turn"
    updates = acp_sidecar.process.updates_for(session, "config_option_update")
    assert len(updates) == 1 and _current(updates[0]["configOptions"])["model"] == "claude-opus-4-6"
    assert await acp_sidecar.prompt(session, "/model claude-opus-4-8") == "end_turn"
    assert await acp_sidecar.prompt(session, "Hello") == "end_turn"
    assert model_server.message_requests()[-1].body["model"] == "claude-opus-4-8"


async def test_slash_model_takes_any_id_and_offers_it(acp_sidecar: Harness, workspace: Path) -> None:
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "/model my-local-model") == "end_turn"
    options = acp_sidecar.process.updates_for(session, "config_option_update")[-1]["configOptions"]
    model = _option(options, "model")
    assert model is not None and model["currentValue"] == "my-local-model"
    assert model["options"][0] == {"value": "my-local-model", "name": "my-local-model",
                                   "description": "200K context"}
    assert [o["id"] for o in options] == ["model"]  # an unknown model gets no effort


async def test_config_tool_announces_and_the_next_prompt_uses_it(acp_sidecar: Harness, workspace: Path,
                                                                 model_server: ScriptedModelServer) -> None:
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Config",
                      "input": {"setting": "model", "value": "claude-haiku-4-5"}}]},
        _reply("Switched."),
        _reply("Haiku here."),
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "Use Haiku 4.5 from now on") == "end_turn"
    assert acp_sidecar.permission_requests, "changing the model asks the user first"
    updates = acp_sidecar.process.updates_for(session, "config_option_update")
    assert len(updates) == 1 and _current(updates[0]["configOptions"])["model"] == "claude-haiku-4-5"
    # The turn that changed it finishes with the model it started with (its tool loop stays valid) …
    first, second = model_server.message_requests()
    assert first.body["model"] == second.body["model"] == DEFAULT_MODEL
    result = "".join(b["text"] for b in second.tool_results()[0]["content"])
    assert "answers from the user's next message" in result
    # … and the next prompt is the new model's.
    assert await acp_sidecar.prompt(session, "Hello") == "end_turn"
    body = model_server.message_requests()[-1].body
    assert body["model"] == "claude-haiku-4-5" and body["thinking"]["type"] == "enabled"


async def test_unstable_set_model_is_served_and_advertised(acp_sidecar: Harness, workspace: Path,
                                                           model_server: ScriptedModelServer) -> None:
    """ACP's unstable ``session/set_model`` (acpc ``--model``): ``session/new`` answers ``models`` (the
    field such a client looks for), the call picks the model the next request names, and a bad id is a
    -32602 naming the valid ones, never a silent default."""
    model_server.add_turns([_reply("Picked.")])
    result = await acp_sidecar.process.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    session = result["sessionId"]
    models = result["models"]
    assert models["currentModelId"] == DEFAULT_MODEL
    ids = [m["modelId"] for m in models["availableModels"]]
    assert ids == [o["value"] for o in _option(result["configOptions"], "model")["options"]]  # type: ignore[index]
    assert "claude-opus-4-5" in ids
    assert await acp_sidecar.process.request("session/set_model",
                                             {"sessionId": session, "modelId": "claude-opus-4-5"}) == {}
    [update] = acp_sidecar.process.updates_for(session, "config_option_update")
    assert _current(update["configOptions"])["model"] == "claude-opus-4-5"
    with pytest.raises(RemoteError) as err:
        await acp_sidecar.process.request("session/set_model", {"sessionId": session, "modelId": "gpt-9"})
    assert err.value.code == -32602 and "claude-opus-4-5" in err.value.message
    with pytest.raises(RemoteError) as err:
        await acp_sidecar.process.request("session/set_model", {"sessionId": session})
    assert err.value.code == -32602 and "modelId" in err.value.message
    assert await acp_sidecar.prompt(session, "Go") == "end_turn"
    assert model_server.message_requests()[-1].body["model"] == "claude-opus-4-5"
    loaded = await acp_sidecar.process.request("session/load", {"sessionId": session, "cwd": str(workspace),
                                                                "mcpServers": []})
    assert loaded["models"]["currentModelId"] == "claude-opus-4-5"

"""Config (changes ask the user), Brief (a reminder on every turn) and _sidecar/notify while the panel is hidden."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sidecar.model.settings import DEFAULT_MODEL
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar, result_text


def use(name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": inp}


async def test_config_and_brief(make_sidecar: MakeSidecar, workspace: Path,
                                model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar()
    model_server.add_turns([
        {"content": [use("Config", setting="model")]},
        {"content": [use("Config", setting="permissionMode", value="plan")]},
        {"content": [use("Config", setting="permissionMode", value="bypassPermissions")]},
        {"content": [use("Brief", enabled=True)]},
        {"content": [{"type": "text", "text": "ok"}]},
        {"content": [{"type": "text", "text": "Short."}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "configure") == "end_turn"
    requests = model_server.message_requests()
    assert result_text(requests[1].tool_results()[0]) == f"model = {DEFAULT_MODEL}"
    assert result_text(requests[2].tool_results()[0]) == "permissionMode changed from default to plan."
    assert len(harness.permission_requests) == 1  # reading asked nothing; the change asked once
    assert harness.permission_requests[0]["toolCall"]["title"] == "Change permissionMode: default → plan"
    assert harness.process.updates_for(session, "current_mode_update")[-1]["currentModeId"] == "plan"
    refused = requests[3].tool_results()[0]
    assert refused["is_error"] and "bypassPermissions can only be chosen by the user" in result_text(refused)
    assert await harness.prompt(session, "next") == "end_turn"
    assert "Brief mode is on" in model_server.message_requests()[-1].body["messages"][-1]["content"][-1]["text"]


async def test_notify_when_the_panel_is_hidden(make_sidecar: MakeSidecar, workspace: Path,
                                               model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar({"_meta": {"sidecar": {"notify": True, "askUser": True}}})

    async def ask_user(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": "answered", "answers": {"Go on?": ["Yes"]}}

    harness.process.handlers["_sidecar/ask_user"] = ask_user
    model_server.add_turns([
        {"content": [{"type": "text", "text": "visible"}]},
        {"content": [use("AskUserQuestion", questions=[{"question": "Go on?", "header": "Go", "multiSelect": False,
                                                        "options": [{"label": "Yes", "description": "go"},
                                                                    {"label": "No", "description": "stop"}]}])]},
        {"content": [use("Write", file_path=str(workspace / "new.txt"), content="x\n")]},
        {"content": [{"type": "text", "text": "hidden"}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "one") == "end_turn"
    assert not [n for n in harness.process.notifications if n["method"] == "_sidecar/notify"]
    await harness.process.notify("_sidecar/panel_visibility", {"visible": False})
    await asyncio.sleep(0.2)
    assert await harness.prompt(session, "two") == "end_turn"
    await asyncio.sleep(0.2)
    sent = [n["params"] for n in harness.process.notifications if n["method"] == "_sidecar/notify"]
    assert [(n["kind"], n["sessionId"]) for n in sent] == [("waiting", session), ("waiting", session),
                                                           ("turn_ended", session)]
    assert sent[0]["message"] == "The agent has a question for you"
    assert sent[1]["message"].startswith("Approval needed: ") and "new.txt" in sent[1]["message"]
    assert sent[2]["message"] == "The agent finished (end_turn)"


async def test_config_model_changes_only_its_own_session(make_sidecar: MakeSidecar, workspace: Path,
                                                         model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar()
    model_server.add_turns([
        {"content": [use("Config", setting="model", value="claude-other-model")]},
        {"content": [{"type": "text", "text": "switched"}]},
        {"content": [{"type": "text", "text": "b answers"}]},
        {"content": [{"type": "text", "text": "a answers"}]},
    ])
    first = await harness.new_session(workspace)
    second = await harness.new_session(workspace)
    assert await harness.prompt(first, "use the other model") == "end_turn"
    assert await harness.prompt(second, "hello from b") == "end_turn"
    assert await harness.prompt(first, "hello again from a") == "end_turn"
    models = [r.body["model"] for r in model_server.message_requests()]
    # The turn that changed it ends on its own model (tests/server/test_config_options.py says why), then
    # session b keeps the default, and session a's next prompt is the other model's.
    assert models == [DEFAULT_MODEL, DEFAULT_MODEL, DEFAULT_MODEL, "claude-other-model"]

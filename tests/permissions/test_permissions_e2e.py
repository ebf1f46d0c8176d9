"""End to end (ACP, scripted model): a spawned ``sidecar serve --acp`` asks, reviews and refuses as the
issue's "Must show" list says; what lands on disk and what the model reads are checked exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from sidecar.tools.builtin import builtin_tools
from tests.conftest import Harness, start_harness

OLD = "".join(f"line {i}\n" for i in range(1, 21))
REVIEW_CAPS = {"_meta": {"sidecar": {"reviewEdit": True}}}
HAS_BASH = "Bash" in {t.name for t in builtin_tools()}
needs_bash = pytest.mark.skipif(not HAS_BASH, reason="the Bash tool is not registered yet")


def result_text(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def edit_turns(path: Path, old: str, new: str) -> list[dict[str, Any]]:
    return [
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(path)}}]},
        {"content": [{"type": "tool_use", "name": "Edit",
                      "input": {"file_path": str(path), "old_string": old, "new_string": new}}]},
        {"content": [{"type": "text", "text": "done"}]},
    ]


def last_result(model: ScriptedModelServer) -> dict[str, Any]:
    return model.message_requests()[-1].tool_results()[-1]


@pytest.fixture
async def reviewing(sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path) -> Any:
    harness = await start_harness("acp", sidecar_env, model_server, tmp_path, client_capabilities=REVIEW_CAPS)
    yield harness
    await harness.process.close()


@pytest.fixture
def long_file(workspace: Path) -> Path:
    p = workspace / "numbers.txt"
    p.write_text(OLD)
    return p


async def test_default_mode_asks_for_an_edit_and_reject_feedback_reaches_the_model(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    target = workspace / "notes.txt"

    async def reject(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "reject_once",
                            "_meta": {"feedback": "keep beta as it is"}}}
    acp_sidecar.permission_policy = reject
    model_server.add_turns(edit_turns(target, "beta\n", "BETA\n"))
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "shout beta") == "end_turn"
    [asked] = acp_sidecar.permission_requests
    assert asked["toolCall"]["content"][0]["type"] == "diff"
    assert asked["toolCall"]["content"][0]["newText"] == "alpha\nBETA\ngamma\n"
    result = last_result(model_server)
    assert result.get("is_error") is True
    assert "The user said: keep beta as it is" in result_text(result)
    assert target.read_text() == "alpha\nbeta\ngamma\n"


async def test_partial_hunk_acceptance_writes_exactly_the_accepted_hunks(
        reviewing: Harness, workspace: Path, long_file: Path, model_server: ScriptedModelServer) -> None:
    proposed = OLD.replace("line 2\n", "line TWO\n").replace("line 18\n", "line EIGHTEEN\n")
    seen: list[dict[str, Any]] = []

    async def review(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"outcome": "accepted", "acceptedHunks": [1]}
    reviewing.process.handlers["_sidecar/review_edit"] = review
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(long_file)}}]},
        {"content": [{"type": "tool_use", "name": "Write",
                      "input": {"file_path": str(long_file), "content": proposed}}]},
        {"content": [{"type": "text", "text": "done"}]},
    ])
    session = await reviewing.new_session(workspace)
    assert await reviewing.prompt(session, "spell out two numbers") == "end_turn"
    assert len(seen[0]["hunks"]) == 2
    assert long_file.read_text() == OLD.replace("line 18\n", "line EIGHTEEN\n")
    text = result_text(last_result(model_server))
    assert "hunks 1 were dropped" in text and "+line TWO" in text


async def test_user_changed_proposal_lands_and_the_model_sees_the_difference(
        reviewing: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    target = workspace / "notes.txt"

    async def review(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": "accepted", "finalText": "alpha\nBeta (user)\ngamma\n"}
    reviewing.process.handlers["_sidecar/review_edit"] = review
    model_server.add_turns(edit_turns(target, "beta\n", "BETA\n"))
    session = await reviewing.new_session(workspace)
    assert await reviewing.prompt(session, "shout beta") == "end_turn"
    assert target.read_text() == "alpha\nBeta (user)\ngamma\n"
    result = last_result(model_server)
    assert not result.get("is_error")
    assert "-BETA\n+Beta (user)\n" in result_text(result)


async def test_file_changed_by_another_process_during_review_is_not_overwritten(
        reviewing: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    target = workspace / "notes.txt"

    async def review(params: dict[str, Any]) -> dict[str, Any]:
        target.write_text("alpha\nbeta\ngamma\ndelta (formatter)\n")
        return {"outcome": "accepted"}
    reviewing.process.handlers["_sidecar/review_edit"] = review
    model_server.add_turns(edit_turns(target, "beta\n", "BETA\n"))
    session = await reviewing.new_session(workspace)
    assert await reviewing.prompt(session, "shout beta") == "end_turn"
    assert target.read_text() == "alpha\nbeta\ngamma\ndelta (formatter)\n"
    result = last_result(model_server)
    assert result.get("is_error") is True
    assert "changed on disk" in result_text(result) or "modified" in result_text(result)


async def test_plan_mode_refuses_an_edit_and_exit_plan_mode_asks(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    target = workspace / "notes.txt"
    model_server.add_turns([
        *edit_turns(target, "beta\n", "BETA\n")[:2],
        {"content": [{"type": "tool_use", "name": "ExitPlanMode", "input": {"plan": "Shout beta."}}]},
        {"content": [{"type": "text", "text": "planned"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    await acp_sidecar.process.request("session/set_mode", {"sessionId": session, "modeId": "plan"})

    async def approve_plan(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "default"}}
    acp_sidecar.permission_policy = approve_plan
    assert await acp_sidecar.prompt(session, "shout beta") == "end_turn"
    edit_result, plan_result = (r.tool_results()[-1] for r in model_server.message_requests()[2:4])
    assert edit_result.get("is_error") is True and "plan mode" in result_text(edit_result)
    assert target.read_text() == "alpha\nbeta\ngamma\n"
    [asked] = acp_sidecar.permission_requests
    assert [o["optionId"] for o in asked["options"]] == ["acceptEdits", "default", "plan"]
    assert "approved your plan" in result_text(plan_result)
    modes = acp_sidecar.process.updates_for(session, "current_mode_update")
    assert modes[-1]["currentModeId"] == "default"


@needs_bash
async def test_default_mode_asks_for_a_command_and_allow_always_is_remembered(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    command = "touch made-by-agent.txt"

    async def always(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "allow_always"}}
    acp_sidecar.permission_policy = always
    bash = {"type": "tool_use", "name": "Bash", "input": {"command": command}}
    model_server.add_turns([{"content": [bash]}, {"content": [{"type": "text", "text": "1"}]},
                            {"content": [bash]}, {"content": [{"type": "text", "text": "2"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "make the file") == "end_turn"
    assert len(acp_sidecar.permission_requests) == 1
    saved = json.loads((workspace / ".claude/settings.local.json").read_text())
    assert saved["permissions"]["allow"]
    second = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(second, "again") == "end_turn"
    assert len(acp_sidecar.permission_requests) == 1  # the saved rule answered
    assert (workspace / "made-by-agent.txt").exists()


@needs_bash
async def test_a_pre_tool_use_hook_denies_a_command(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    (workspace / ".claude").mkdir()
    guard = "grep -q 'rm ' && { echo 'no deleting files' >&2; exit 2; }; exit 0"
    (workspace / ".claude/settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]}}))
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "rm notes.txt"}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "delete notes") == "end_turn"
    result = last_result(model_server)
    assert result.get("is_error") is True and "no deleting files" in result_text(result)
    # The only question: trusting the workspace whose hook this is (the harness allows it once).
    [trust] = acp_sidecar.permission_requests
    assert trust["toolCall"]["_meta"]["sidecar"]["trust"] == "workspace"
    assert f"hook PreToolUse (.claude/settings.json): {guard}" in trust["toolCall"]["rawInput"]["items"]
    assert (workspace / "notes.txt").exists()


async def test_a_settings_file_changed_between_turns_applies_to_the_next_call(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    """The settings are handed out again while unchanged (issue 29); a change between turns is seen on the
    next call: a deny rule added, then the same-sized file naming another file."""
    notes = workspace / "notes.txt"
    read = {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(notes)}}]}
    model_server.add_turns([read, {"content": [{"type": "text", "text": "1"}]}] * 3)
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "read it") == "end_turn"
    assert last_result(model_server).get("is_error") is not True
    local = workspace / ".claude/settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps({"permissions": {"deny": ["Read(./notes.txt)"]}}))
    assert await acp_sidecar.prompt(session, "read it again") == "end_turn"
    denied = last_result(model_server)
    assert denied.get("is_error") is True
    assert result_text(denied).startswith("Permission to use Read was denied: ")
    assert "Read(./notes.txt)" in result_text(denied)
    local.write_text(json.dumps({"permissions": {"deny": ["Read(./other.txt)"]}}))  # same size, in place
    assert await acp_sidecar.prompt(session, "and again") == "end_turn"
    allowed = last_result(model_server)
    assert allowed.get("is_error") is not True  # it ran (and knew the file was read in turn 1)
    assert result_text(allowed).startswith("File unchanged since last read: lines 1-2000 of notes.txt")

"""AskUserQuestion and TodoWrite over ACP with the scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar, result_text

QUESTION = {"question": "Which database should the service use?", "header": "Database", "multiSelect": False,
            "options": [{"label": "PostgreSQL (Recommended)", "description": "Relational, already deployed"},
                        {"label": "SQLite", "description": "A file, no server"}]}
ASK_USER = {"_meta": {"sidecar": {"askUser": True}}}


async def test_question_answered_through_the_extension(make_sidecar: MakeSidecar, workspace: Path,
                                                       model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar(ASK_USER)
    asked: list[dict[str, Any]] = []

    async def ask_user(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"outcome": "answered", "answers": {QUESTION["question"]: ["SQLite"]}}

    harness.process.handlers["_sidecar/ask_user"] = ask_user
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "AskUserQuestion", "input": {"questions": [QUESTION]}}]},
        {"content": [{"type": "text", "text": "SQLite it is."}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "set up storage") == "end_turn"

    assert len(asked) == 1 and asked[0]["sessionId"] == session
    assert asked[0]["questions"] == [QUESTION]
    result = model_server.message_requests()[1].tool_results()[0]
    assert not result.get("is_error")
    assert result_text(result) == ('User has answered your questions: "Which database should the service use?"='
                                   '"SQLite". You can now continue with the user\'s answers in mind.')
    assert harness.text(session) == "SQLite it is."


async def test_question_cancelled_ends_the_turn(make_sidecar: MakeSidecar, workspace: Path,
                                                model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar(ASK_USER)

    async def ask_user(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": "cancelled", "answers": {}}

    harness.process.handlers["_sidecar/ask_user"] = ask_user
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "AskUserQuestion", "input": {"questions": [QUESTION]}}]},
        {"content": [{"type": "text", "text": "this turn must not be requested"}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "set up storage") == "end_turn"
    assert len(model_server.message_requests()) == 1  # no model call after the dismissal
    failed = [u for u in harness.process.updates_for(session, "tool_call_update") if u["status"] == "failed"]
    assert "dismissed the question" in failed[-1]["content"][0]["content"]["text"]

    # The next prompt carries the dismissal to the model and the conversation stays valid.
    assert await harness.prompt(session, "use whatever") == "end_turn"
    last = model_server.message_requests()[-1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "user"]
    assert last[2]["content"][0]["is_error"] is True


async def test_question_through_elicitation_and_permission_fallback(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    # An ACP client with form elicitation: the answer is a form.
    harness = await make_sidecar({"elicitation": {"form": {}}})
    forms: list[dict[str, Any]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        forms.append(params)
        return {"action": "accept", "content": {"q0": "Other", "q0_other": "DuckDB"}}

    harness.process.handlers["elicitation/create"] = elicit
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "AskUserQuestion", "input": {"questions": [QUESTION]}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "storage?") == "end_turn"
    schema = forms[0]["requestedSchema"]["properties"]["q0"]
    assert schema["enum"] == ["PostgreSQL (Recommended)", "SQLite", "Other"]
    assert '"DuckDB"' in result_text(model_server.message_requests()[-1].tool_results()[0])

    # A plain ACP client: the options come as a permission request.
    plain = await make_sidecar()

    async def choose(params: dict[str, Any]) -> dict[str, Any]:
        names = {o["name"]: o["optionId"] for o in params["options"]}
        assert list(names) == ["PostgreSQL (Recommended)", "SQLite", "Dismiss"]
        return {"outcome": {"outcome": "selected", "optionId": names["PostgreSQL (Recommended)"]}}

    plain.permission_policy = choose
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "AskUserQuestion", "input": {"questions": [QUESTION]}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    session = await plain.new_session(workspace)
    assert await plain.prompt(session, "storage?") == "end_turn"
    assert '"PostgreSQL (Recommended)"' in result_text(model_server.message_requests()[-1].tool_results()[0])


async def test_todo_list_published_as_a_plan(make_sidecar: MakeSidecar, workspace: Path,
                                             model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar()
    todos = [{"content": "Write the parser", "status": "completed", "activeForm": "Writing the parser"},
             {"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
             {"content": "Update the docs", "status": "pending", "activeForm": "Updating the docs"}]
    bad = [dict(t, status="in_progress") for t in todos[:2]]
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "TodoWrite", "input": {"todos": bad}}]},
        {"content": [{"type": "tool_use", "name": "TodoWrite", "input": {"todos": todos}}]},
        {"content": [{"type": "text", "text": "Planned."}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "plan it") == "end_turn"
    rejected = model_server.message_requests()[1].tool_results()[0]
    assert rejected["is_error"] and "2 tasks are in_progress" in result_text(rejected)
    plans = harness.process.updates_for(session, "plan")
    assert plans == [{"sessionUpdate": "plan", "entries": [
        {"content": "Write the parser", "priority": "medium", "status": "completed"},
        {"content": "Run the tests", "priority": "medium", "status": "in_progress"},
        {"content": "Update the docs", "priority": "medium", "status": "pending"}]}]
    ok = model_server.message_requests()[2].tool_results()[0]
    assert result_text(ok).startswith("Todos have been modified successfully.")

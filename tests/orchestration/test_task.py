"""Task sub-agents over ACP: read-only ones in parallel, a writing one asking the user, custom agent types."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sidecar.model.settings import DEFAULT_SMALL_MODEL
from sidecar.testing.scripted_server import RecordedRequest, ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar, result_text


def first_user_text(request: RecordedRequest) -> str:
    content = request.messages[0]["content"]
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


async def test_two_read_only_subagents_run_concurrently(make_sidecar: MakeSidecar, workspace: Path,
                                                       model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar()
    arrivals: list[tuple[str, int, float]] = []

    def sub(request: RecordedRequest) -> dict[str, Any]:
        which = "alpha" if "alpha" in first_user_text(request) else "beta"
        arrivals.append((which, len(request.messages), time.monotonic()))
        if len(request.messages) == 1:
            target = workspace / ("notes.txt" if which == "alpha" else "README.md")
            return {"delay": 1.0, "content": [{"type": "tool_use", "name": "Read",
                                               "input": {"file_path": str(target)}}]}
        seen = result_text(request.tool_results()[0])
        return {"content": [{"type": "text", "text": f"Report {which}: {len(seen.splitlines())} lines seen."}]}

    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Task", "input": {
            "description": "Find alpha", "prompt": "Look for alpha in notes.txt", "subagent_type": "Explore"}},
                     {"type": "tool_use", "name": "Task", "input": {
            "description": "Find beta", "prompt": "Look for beta in README.md", "subagent_type": "Explore"}}]},
        sub, sub, sub, sub,
        {"content": [{"type": "text", "text": "Both agents reported."}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "explore") == "end_turn"

    # Both sub-agents' first requests arrived before either one's second: they ran at the same time.
    firsts = [a for a in arrivals if a[1] == 1]
    seconds = [a for a in arrivals if a[1] == 3]
    assert len(firsts) == 2 and len(seconds) == 2
    assert max(t for _, _, t in firsts) < min(t for _, _, t in seconds)
    # Each sub-agent had its own history, system prompt with its instructions, and only read-only tools.
    sub_requests = [r for r in model_server.message_requests() if "agent-instructions" in str(r.body["system"])]
    assert len(sub_requests) == 4
    assert {t["name"] for t in sub_requests[0].body["tools"]} <= {"Read", "Glob", "Grep", "LSP", "WebFetch",
                                                                  "WebSearch"}
    # Reports come back as the results, in call order.
    final = model_server.message_requests()[-1].tool_results()
    assert [result_text(r) for r in final] == ["Report alpha: 3 lines seen.", "Report beta: 3 lines seen."]
    titles = [u["title"] for u in harness.process.updates_for(session, "tool_call")]
    assert "[Explore: Find alpha] Read " + str(workspace / "notes.txt") in " | ".join(titles) or any(
        t.startswith("[Explore: Find alpha]") for t in titles)
    # Each sub-agent call names its tool and the Task call it runs under (the editor nests it there).
    calls = harness.process.updates_for(session, "tool_call")
    tasks = [u["toolCallId"] for u in calls if u["_meta"]["sidecar"]["tool"] == "Task"]
    reads = [u for u in calls if u["_meta"]["sidecar"]["tool"] == "Read"]
    assert len(tasks) == 2 and len(reads) == 2
    assert sorted(u["_meta"]["sidecar"]["parentToolCallId"] for u in reads) == sorted(tasks)
    assert all("parentToolCallId" not in u["_meta"]["sidecar"] for u in calls if u["toolCallId"] in tasks)


async def test_subagent_edit_asks_the_user_with_its_label(make_sidecar: MakeSidecar, workspace: Path,
                                                         model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar()
    hello = workspace / "hello.py"
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Task", "input": {
            "description": "Fix greeting", "prompt": "Make greet say Hi", "subagent_type": "general-purpose"}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(hello)}}]},
        {"content": [{"type": "tool_use", "name": "Edit", "input": {
            "file_path": str(hello), "old_string": "Hello", "new_string": "Hi"}}]},
        {"content": [{"type": "text", "text": "Changed Hello to Hi in hello.py."}]},
        {"content": [{"type": "text", "text": "Done."}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "fix it") == "end_turn"

    assert len(harness.permission_requests) == 1
    asked = harness.permission_requests[0]
    assert asked["toolCall"]["title"].startswith("[general-purpose: Fix greeting] ")
    assert hello.read_text() == 'def greet(name):\n    return f"Hi, {name}!"\n'
    report = model_server.message_requests()[-1].tool_results()[0]
    assert result_text(report) == "Changed Hello to Hi in hello.py."
    # The sub-agent's own turns did not enter the session's conversation.
    last = model_server.message_requests()[-1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user"]


async def test_custom_agent_type_from_claude_agents(make_sidecar: MakeSidecar, workspace: Path,
                                                   model_server: ScriptedModelServer) -> None:
    agents = workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews code for bugs.\n"
                                        "tools: Read, Grep\nmodel: haiku\n---\nYou review code. Be terse.\n")
    harness = await make_sidecar()
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Task", "input": {
            "description": "Review", "prompt": "Review hello.py", "subagent_type": "reviewer"}},
                     {"type": "tool_use", "name": "Task", "input": {
            "description": "Nope", "prompt": "x", "subagent_type": "wizard"}}]},
        {"content": [{"type": "text", "text": "No bugs."}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "review") == "end_turn"
    first = model_server.message_requests()[0]
    task_def = next(t for t in first.body["tools"] if t["name"] == "Task")
    assert "- reviewer: Reviews code for bugs. (Tools: Read, Grep)" in task_def["description"]
    sub = model_server.message_requests()[1]
    assert sub.body["model"] == DEFAULT_SMALL_MODEL
    assert [t["name"] for t in sub.body["tools"]] == ["Read", "Grep"]
    assert "You review code. Be terse." in sub.body["system"][0]["text"]
    ok, unknown = model_server.message_requests()[-1].tool_results()
    assert result_text(ok) == "No bugs."
    assert unknown["is_error"] and "Unknown subagent_type 'wizard'" in result_text(unknown)


async def test_background_subagent_with_task_output_and_stop(make_sidecar: MakeSidecar, workspace: Path,
                                                             model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar()
    main_turns = [
        {"content": [{"type": "tool_use", "name": "Task", "input": {
            "description": "Slow look", "prompt": "Read notes.txt", "subagent_type": "Explore",
            "run_in_background": True}}]},
        {"content": [{"type": "tool_use", "name": "TaskOutput", "input": {"task_id": "agent_1"}}]},
        {"content": [{"type": "tool_use", "name": "TaskStop", "input": {"task_id": "agent_1"}},
                     {"type": "tool_use", "name": "TaskOutput", "input": {"task_id": "agent_9"}}]},
        {"content": [{"type": "text", "text": "Done."}]},
    ]

    def respond(request: RecordedRequest) -> dict[str, Any]:
        if "agent-instructions" in str(request.body["system"]):
            if len(request.messages) == 1:
                return {"delay": 0.5, "content": [{"type": "tool_use", "name": "Read",
                                                   "input": {"file_path": str(workspace / "notes.txt")}}]}
            return {"content": [{"type": "text", "text": "notes.txt lists alpha, beta, gamma."}]}
        return main_turns.pop(0)

    model_server.add_turns([respond] * 6)
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "look in the background") == "end_turn"
    main = [r for r in model_server.message_requests() if "agent-instructions" not in str(r.body["system"])]
    started = result_text(main[1].tool_results()[0])
    assert started.startswith("Started Explore: Slow look in the background with task_id agent_1.")
    assert result_text(main[2].tool_results()[0]) == "notes.txt lists alpha, beta, gamma."
    stopped, unknown = main[3].tool_results()
    assert result_text(stopped) == "Explore: Slow look (agent_1) had already finished."
    assert unknown["is_error"] and "No background agent 'agent_9'. Known task ids: agent_1." == result_text(unknown)

"""Full turns over both transports: prompt → streamed text → tool call → result in the next request → end."""

from __future__ import annotations

import json
from pathlib import Path

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import TEST_API_KEY, Harness


async def test_full_turn_with_a_tool_call(any_transport: Harness, workspace: Path,
                                          model_server: ScriptedModelServer) -> None:
    target = workspace / "notes.txt"
    model_server.add_turns([
        {"content": [{"type": "text", "text": "Let me read the notes."},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": str(target)}}]},
        {"content": [{"type": "text", "text": "The notes list alpha, beta and gamma."}]},
    ])
    session = await any_transport.new_session(workspace)
    stop = await any_transport.prompt(session, "What is in notes.txt?")

    assert stop == "end_turn"
    assert any_transport.text(session) == "Let me read the notes.The notes list alpha, beta and gamma."
    requests = model_server.message_requests()
    assert len(requests) == 2
    results = requests[1].tool_results()
    assert len(results) == 1 and not results[0].get("is_error")
    result_text = "".join(b["text"] for b in results[0]["content"])
    assert "     1\talpha" in result_text and "     3\tgamma" in result_text
    # The editor saw the call and its completion.
    kinds = [u["sessionUpdate"] for u in any_transport.process.updates_for(session)]
    assert "tool_call" in kinds and "usage_update" in kinds
    final = [u for u in any_transport.process.updates_for(session, "tool_call_update") if u["status"] == "completed"]
    assert final and final[-1]["toolCallId"] == results[0]["tool_use_id"]


async def test_request_prefix_is_stable_and_cached(acp_sidecar: Harness, workspace: Path,
                                                   model_server: ScriptedModelServer) -> None:
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "README.md")}}]},
        {"content": [{"type": "text", "text": "done"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "read the readme") == "end_turn"
    first, second = model_server.message_requests()
    assert first.body["system"] == second.body["system"]
    assert first.body["tools"] == second.body["tools"]
    assert second.body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert second.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert second.body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # The first request's messages are a prefix of the second's (bar the moving cache breakpoint).
    strip = [json.loads(json.dumps(m).replace(', "cache_control": {"type": "ephemeral"}', ""))
             for m in second.body["messages"]]
    first_msgs = [json.loads(json.dumps(m).replace(', "cache_control": {"type": "ephemeral"}', ""))
                  for m in first.body["messages"]]
    assert strip[: len(first_msgs)] == first_msgs
    assert first.api_key == TEST_API_KEY


async def test_unknown_tool_and_bad_input_reach_the_model_as_errors(acp_sidecar: Harness, workspace: Path,
                                                                    model_server: ScriptedModelServer) -> None:
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Teleport", "input": {}},
                     {"type": "tool_use", "name": "Read", "input": {"path": "x"}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "go") == "end_turn"
    unknown, bad = model_server.message_requests()[1].tool_results()
    assert unknown["is_error"] and "No tool named 'Teleport'" in unknown["content"][0]["text"]
    assert "Available tools:" in unknown["content"][0]["text"]
    assert bad["is_error"] and "Invalid input for Read" in bad["content"][0]["text"]
    assert "file_path" in bad["content"][0]["text"]


async def test_modes_and_session_list_and_load(acp_sidecar: Harness, workspace: Path,
                                               model_server: ScriptedModelServer) -> None:
    model_server.add_turns([{"content": [{"type": "text", "text": "Hi there."}]}])
    session = await acp_sidecar.new_session(workspace)
    await acp_sidecar.process.request("session/set_mode", {"sessionId": session, "modeId": "plan"})
    assert acp_sidecar.process.updates_for(session, "current_mode_update")[-1]["currentModeId"] == "plan"
    assert await acp_sidecar.prompt(session, "Say hi") == "end_turn"

    listed = await acp_sidecar.process.request("session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [session]
    assert listed["sessions"][0]["title"] == "Say hi"

    before = len(acp_sidecar.process.updates)
    loaded = await acp_sidecar.process.request("session/load", {"sessionId": session, "cwd": str(workspace),
                                                                "mcpServers": []})
    assert loaded["modes"]["currentModeId"] == "plan"
    replay = [u["update"] for u in acp_sidecar.process.updates[before:]]
    users = [u for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"] for u in users] == [{"type": "text", "text": "Say hi"}]
    assert {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi there."}} in replay
    assert replay[-1]["_meta"]["sidecar"]["turnEnd"]["stopReason"] == "end_turn"


async def test_two_sessions_at_once(acp_sidecar: Harness, workspace: Path, tmp_path: Path,
                                    model_server: ScriptedModelServer) -> None:
    import asyncio

    other = tmp_path / "other"
    other.mkdir()
    model_server.add_turns([{"content": [{"type": "text", "text": "one"}], "delay": 0.3},
                            {"content": [{"type": "text", "text": "two"}], "delay": 0.3}])
    a = await acp_sidecar.new_session(workspace)
    b = await acp_sidecar.new_session(other)
    stops = await asyncio.gather(acp_sidecar.prompt(a, "first"), acp_sidecar.prompt(b, "second"))
    assert stops == ["end_turn", "end_turn"]
    assert sorted([acp_sidecar.text(a), acp_sidecar.text(b)]) == ["one", "two"]


async def test_long_output_is_bounded_and_the_saved_whole_is_readable_without_asking(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    import re

    def read_saved(request: object) -> dict[str, object]:
        text = "".join(b["text"] for b in request.tool_results()[0]["content"])  # type: ignore[attr-defined]
        saved = re.search(r"saved at (/\S+?);", text)
        assert saved, text[-2000:]
        return {"content": [{"type": "tool_use", "name": "Read",
                             "input": {"file_path": saved.group(1), "offset": 2500, "limit": 2}}]}

    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "seq 1 40000"}}]},
        read_saved,
        {"content": [{"type": "text", "text": "read it"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "count") == "end_turn"
    requests = model_server.message_requests()
    bash_result = "".join(b["text"] for b in requests[1].tool_results()[0]["content"])
    assert len(bash_result) <= 31_000 and "saved at" in bash_result
    assert bash_result.lstrip().startswith("1\n2\n3") and "40000" in bash_result
    read_result = requests[2].tool_results()[0]
    assert not read_result.get("is_error"), read_result
    assert acp_sidecar.permission_requests == []

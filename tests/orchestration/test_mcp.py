"""A real MCP server (fixtures/mcp/echo_server.py, the mcp SDK) over stdio, bridged into a session."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO
from tests.orchestration.conftest import MakeSidecar, result_text

ECHO = str(REPO / "fixtures" / "mcp" / "echo_server.py")


def echo_server(*extra: str) -> dict[str, Any]:
    return {"name": "echo", "command": sys.executable, "args": [ECHO, *extra], "env": []}


def call(name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": inp}


async def test_mcp_tool_called_denied_by_rule_and_server_death_reported(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["mcp__echo__add"]}}))
    harness = await make_sidecar()
    model_server.add_turns([
        {"content": [call("mcp__echo__echo", text="hello there")]},
        {"content": [call("mcp__echo__add", a=1, b=2)]},
        {"content": [call("ListMcpResources"), call("ReadMcpResource", server="echo", uri="echo://readme")]},
        {"content": [call("mcp__echo__die")]},
        {"content": [call("mcp__echo__echo", text="still there?")]},
        {"content": [{"type": "text", "text": "The echo server is gone."}]},
    ])
    session = await harness.new_session(workspace, mcpServers=[echo_server()])
    assert await harness.prompt(session, "use the echo server") == "end_turn"
    requests = model_server.message_requests()
    names = [t["name"] for t in requests[0].body["tools"]]
    assert {"mcp__echo__echo", "mcp__echo__add", "mcp__echo__die", "ListMcpResources", "ReadMcpResource"} <= set(names)
    echo_def = next(t for t in requests[0].body["tools"] if t["name"] == "mcp__echo__echo")
    assert echo_def["input_schema"]["required"] == ["text"] and "defer_loading" not in echo_def

    # Called after asking the user (MCP tools ask by default).
    echoed = requests[1].tool_results()[0]
    assert result_text(echoed) == "echo: hello there" and not echoed.get("is_error")
    assert harness.permission_requests[0]["toolCall"]["title"] == "echo (echo MCP server)"
    # Denied by the rule, without asking.
    denied = requests[2].tool_results()[0]
    assert denied["is_error"] and "denied by rule mcp__echo__add" in result_text(denied)
    # Resources listed and read (reading asks too).
    listed, read = requests[3].tool_results()
    assert result_text(listed) == "echo: echo://readme — readme: What this server is"
    assert result_text(read) == "The echo server echoes text."
    # The server dies: reported to the model, the session goes on.
    died = requests[4].tool_results()[0]
    assert died["is_error"] and "The MCP server 'echo' is not running" in result_text(died)
    after = requests[5].tool_results()[0]
    assert after["is_error"] and "is not running" in result_text(after)
    assert "The MCP server 'echo' stopped" in json.dumps(requests[4].body["messages"][-1])  # a notice
    assert harness.text(session) == "The echo server is gone."
    assert len(harness.permission_requests) == 3  # echo, ReadMcpResource, die; not add


async def test_sixty_mcp_tools_deferred_and_one_found_by_tool_search(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar(settings={"toolSearchBudget": 5000})
    model_server.add_turns([
        {"content": [call("ToolSearch", query="select:mcp__echo__tool_017")]},
        {"content": [call("mcp__echo__tool_017", query="ticket 17")]},
        {"content": [{"type": "text", "text": "Found it."}]},
    ])
    session = await harness.new_session(workspace, mcpServers=[echo_server("--extra", "57")])
    assert await harness.prompt(session, "look up ticket 17") == "end_turn"
    first, second, third = model_server.message_requests()

    deferred = [t["name"] for t in first.body["tools"] if t.get("defer_loading")]
    assert len(deferred) == 60 and all(n.startswith("mcp__echo__") for n in deferred)
    search = next(t for t in first.body["tools"] if t["name"] == "ToolSearch")
    assert "defer_loading" not in search and "mcp__echo__tool_017" in search["description"]
    assert first.headers.get("anthropic-beta") == "advanced-tool-use-2025-11-20"
    # The found tool is loaded by reference: the API appends its definition where the result sits.
    found = second.tool_results()[0]
    assert found["content"][0] == {"type": "tool_reference", "tool_name": "mcp__echo__tool_017"}
    assert result_text(third.tool_results()[0]) == "tool_017 answered ticket 17"
    # The cached prefix never changed: same tools and system bytes, earlier messages kept as they were.
    for later in (second, third):
        assert json.dumps(later.body["tools"]) == json.dumps(first.body["tools"])
        assert later.body["system"] == first.body["system"]
    strip = '"cache_control": {"type": "ephemeral"}'

    def msgs(r: Any) -> list[str]:
        return [json.dumps(m).replace(", " + strip, "") for m in r.body["messages"]]

    assert msgs(third)[: len(msgs(second))] == msgs(second)
    assert msgs(second)[: len(msgs(first))] == msgs(first)


async def test_mcp_json_server_and_a_failing_one(make_sidecar: MakeSidecar, workspace: Path,
                                                model_server: ScriptedModelServer) -> None:
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "proj": {"command": sys.executable, "args": [ECHO]},
        "broken": {"command": "/nonexistent/mcp-server"}}}))
    harness = await make_sidecar()
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "hi") == "end_turn"
    request = model_server.message_requests()[0]
    assert "mcp__proj__echo" in [t["name"] for t in request.body["tools"]]
    assert not any(t["name"].startswith("mcp__broken__") for t in request.body["tools"])
    assert "The MCP server 'broken' could not be started" in request.text()

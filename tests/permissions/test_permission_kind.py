"""Permission questions carry the tool call as the editor was shown it (issue 29): ``kind``, ``title``,
``locations`` and ``rawInput``, on both transports. A client that decides by kind (acpc under
``--permissions read`` approves anything whose kind is "read", and counts a missing kind as one) must see
an Edit as "edit" and a Bash command as "execute"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness, reject_once


async def test_permission_requests_carry_kind_title_locations_and_raw_input(
        any_transport: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    target = workspace / "notes.txt"
    edit = {"file_path": str(target), "old_string": "beta\n", "new_string": "BETA\n"}
    bash = {"command": "touch made-by-bash.txt", "description": "make a file"}
    write = {"file_path": str(workspace / "new.txt"), "content": "x\n"}
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(target)}}]},
        {"content": [{"type": "tool_use", "name": "Edit", "input": edit}]},
        {"content": [{"type": "tool_use", "name": "Bash", "input": bash}]},
        {"content": [{"type": "tool_use", "name": "Write", "input": write}]},
        {"content": [{"type": "text", "text": "done"}]},
    ])
    any_transport.permission_policy = reject_once  # nothing is written: the question is what is checked
    session = await any_transport.new_session(workspace)
    assert await any_transport.prompt(session, "change things") == "end_turn"
    calls: list[dict[str, Any]] = [p["toolCall"] for p in any_transport.permission_requests]
    assert [c["kind"] for c in calls] == ["edit", "execute", "edit"]
    for call, sent in zip(calls, [edit, bash, write], strict=True):  # the model's input, defaults added
        assert call["rawInput"] | sent == call["rawInput"]
    assert calls[0]["locations"] == [{"path": str(target)}]
    assert calls[2]["locations"] == [{"path": str(workspace / "new.txt")}]
    assert "touch made-by-bash.txt" in calls[1]["title"]
    # The same kind the editor was shown when the call was announced.
    announced = {u["toolCallId"]: u["kind"] for u in any_transport.process.updates_for(session, "tool_call")}
    assert [announced[c["toolCallId"]] for c in calls] == ["edit", "execute", "edit"]
    assert target.read_text() == "alpha\nbeta\ngamma\n"
    assert not (workspace / "made-by-bash.txt").exists() and not (workspace / "new.txt").exists()

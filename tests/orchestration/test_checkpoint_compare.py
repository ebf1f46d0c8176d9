"""_sidecar/sessions/compare (what a restore would change, file by file) and restore points at each writing
tool call (``toolCallId`` in compare and rewind)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar


def use(name: str, **inp: Any) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": name, "input": inp}]}


def tool_call_ids(updates: list[dict[str, Any]], tool: str) -> list[str]:
    return [u["update"]["toolCallId"] for u in updates
            if u["update"]["sessionUpdate"] == "tool_call" and u["update"]["_meta"]["sidecar"]["tool"] == tool]


async def test_compare_lists_what_a_restore_changes_per_message_and_per_tool_call(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    hello, notes, new, blob = (workspace / n for n in ("hello.py", "notes.txt", "new.txt", "blob.bin"))
    hello_before, notes_before = hello.read_text(), notes.read_text()
    model_server.add_turns([
        use("Read", file_path=str(hello)),
        use("Edit", file_path=str(hello), old_string="Hello", new_string="Howdy"),
        use("Write", file_path=str(new), content="brand new\n"),
        use("Read", file_path=str(notes)),
        use("Edit", file_path=str(notes), old_string="beta", new_string="BETA"),
        use("Bash", command="printf '\\377\\376' > blob.bin"),
        {"content": [{"type": "text", "text": "done"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    await harness.process.request("session/set_mode", {"sessionId": session, "modeId": "bypassPermissions"})
    result = await harness.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "change things"}]})
    assert result["stopReason"] == "end_turn"
    message = result["_meta"]["sidecar"]["userMessageId"]
    [edit_hello, edit_notes] = tool_call_ids(harness.process.updates, "Edit")
    [write_new] = tool_call_ids(harness.process.updates, "Write")
    hello_now = hello.read_text()
    assert "Howdy" in hello_now and blob.read_bytes() == b"\xff\xfe"
    # Each writing call's card is told it is a restore point; a Read is not one.
    points = {u["update"]["toolCallId"] for u in harness.process.updates
              if u["update"]["sessionUpdate"] == "tool_call_update"
              and (u["update"].get("_meta") or {}).get("sidecar", {}).get("metadata", {}).get("restore_point")}
    assert len(points) == 4 and {edit_hello, edit_notes, write_new} <= points

    # Before the message: every file the turn changed, with the checkpoint's text and the current one.
    compared = await harness.process.request("_sidecar/sessions/compare",
                                             {"sessionId": session, "toMessageId": message})
    assert compared == {"files": [
        {"path": str(blob), "change": "delete", "binary": True},
        {"path": str(hello), "change": "modify", "checkpoint": hello_before, "current": hello_now},
        {"path": str(new), "change": "delete", "current": "brand new\n"},
        {"path": str(notes), "change": "modify", "checkpoint": notes_before, "current": "alpha\nBETA\ngamma\n"},
    ], "conflicts": []}
    # Compare writes nothing.
    assert hello.read_text() == hello_now and new.exists()

    # Before the Write: hello.py's Edit came earlier, so it is not part of that restore. The tool call
    # alone names the point too (its turn is found from it).
    compared = await harness.process.request("_sidecar/sessions/compare", {
        "sessionId": session, "toMessageId": message, "toolCallId": write_new})
    assert await harness.process.request("_sidecar/sessions/compare", {
        "sessionId": session, "toolCallId": write_new}) == compared
    assert [(f["path"], f["change"]) for f in compared["files"]] == [
        (str(blob), "delete"), (str(new), "delete"), (str(notes), "modify")]

    # Someone else changes notes.txt: a restore would leave it alone, and compare says so.
    notes.write_text("mine\n")
    compared = await harness.process.request("_sidecar/sessions/compare", {
        "sessionId": session, "toMessageId": message, "toolCallId": edit_notes})
    assert compared == {"files": [{"path": str(blob), "change": "delete", "binary": True}], "conflicts": [
        {"path": str(notes), "reason": "changed since the agent last wrote it; a restore leaves it as it is"}]}

    # Restore to before the Write: files only; what the turn did before it stays, the conversation too.
    with pytest.raises(RemoteError, match="restores files only") as err:
        await harness.process.request("_sidecar/sessions/rewind", {
            "sessionId": session, "toMessageId": message, "toolCallId": write_new, "conversation": True})
    assert err.value.code == -32602
    rewound = await harness.process.request("_sidecar/sessions/rewind", {
        "sessionId": session, "toolCallId": write_new, "conversation": False})
    assert sorted(rewound["restored"]) == [str(blob), str(new)]
    assert rewound["conflicts"] == [{"path": str(notes), "reason": "changed since the agent last wrote it; "
                                                                    "left as it is"}]
    assert rewound["historyLength"] is None
    assert not new.exists() and not blob.exists() and hello.read_text() == hello_now
    assert notes.read_text() == "mine\n"

    # The restore points after it are gone; the one before it (hello.py's Edit) still restores.
    with pytest.raises(RemoteError, match="Unknown toolCallId") as err:
        await harness.process.request("_sidecar/sessions/compare", {
            "sessionId": session, "toMessageId": message, "toolCallId": write_new})
    assert err.value.code == -32002
    with pytest.raises(RemoteError, match="no restore point of this session was taken after it") as err:
        await harness.process.request("_sidecar/sessions/rewind", {"sessionId": session, "toolCallId": write_new,
                                                                  "conversation": False})
    assert err.value.code == -32002
    compared = await harness.process.request("_sidecar/sessions/compare", {
        "sessionId": session, "toMessageId": message, "toolCallId": edit_hello})
    assert compared == {"files": [
        {"path": str(hello), "change": "modify", "checkpoint": hello_before, "current": hello_now}],
        "conflicts": []}

    # The conversation stayed: the next request still holds the first turn.
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    assert await harness.prompt(session, "and now?") == "end_turn"
    messages = model_server.message_requests()[-1].body["messages"]
    assert messages[0]["content"][0]["text"] == "change things"


async def test_compare_of_an_unknown_message_names_the_known_ones(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    with pytest.raises(RemoteError, match="Unknown toMessageId 'msg_nope'; this session's user messages: none") as err:
        await harness.process.request("_sidecar/sessions/compare", {"sessionId": session, "toMessageId": "msg_nope"})
    assert err.value.code == -32002
    with pytest.raises(RemoteError) as err:
        await harness.process.request("_sidecar/sessions/compare", {"sessionId": session})
    assert err.value.code == -32602

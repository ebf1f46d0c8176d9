"""Checkpoints and _sidecar/sessions/rewind: files restored, conversation truncated, others' changes kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar


def use(name: str, **inp: Any) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": name, "input": inp}]}


async def test_rewind_restores_files_and_truncates(make_sidecar: MakeSidecar, workspace: Path,
                                                  model_server: ScriptedModelServer) -> None:
    hello, notes, readme, new = (workspace / n for n in ("hello.py", "notes.txt", "README.md", "new.txt"))
    originals = {p: p.read_text() for p in (hello, notes, readme)}
    model_server.add_turns([
        # Turn 1: edit hello.py, create new.txt.
        use("Read", file_path=str(hello)),
        use("Edit", file_path=str(hello), old_string="Hello", new_string="Howdy"),
        use("Write", file_path=str(new), content="brand new\n"),
        {"content": [{"type": "text", "text": "turn one done"}]},
        # Turn 2: edit notes.txt and README.md.
        use("Read", file_path=str(notes)),
        use("Edit", file_path=str(notes), old_string="beta", new_string="BETA"),
        use("Read", file_path=str(readme)),
        use("Edit", file_path=str(readme), old_string="small", new_string="tiny"),
        {"content": [{"type": "text", "text": "turn two done"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    ids = []
    for text in ("first change", "second change"):
        result = await harness.process.request("session/prompt", {
            "sessionId": session, "prompt": [{"type": "text", "text": text}]})
        assert result["stopReason"] == "end_turn"
        ids.append(result["_meta"]["sidecar"]["userMessageId"])
    assert hello.read_text() != originals[hello] and new.exists() and "BETA" in notes.read_text()
    # The user changes README.md after the agent: rewinding must not clobber that.
    readme.write_text("# Mine now\n")

    result = await harness.process.request("_sidecar/sessions/rewind", {"sessionId": session, "toMessageId": ids[0]})
    assert sorted(result["restored"]) == sorted([str(hello), str(new), str(notes)])
    assert result["conflicts"] == [{"path": str(readme),
                                    "reason": "changed since the agent last wrote it; left as it is"}]
    assert result["historyLength"] == 0
    assert hello.read_text() == originals[hello]
    assert notes.read_text() == originals[notes]
    assert not new.exists()
    assert readme.read_text() == "# Mine now\n"

    # The conversation was truncated: the next request starts afresh, and a reload replays nothing.
    model_server.add_turns([{"content": [{"type": "text", "text": "fresh"}]}])
    assert await harness.prompt(session, "start over") == "end_turn"
    messages = model_server.message_requests()[-1].body["messages"]
    assert messages[0]["content"][0]["text"] == "start over"
    assert "restored" in messages[0]["content"][-1]["text"]  # the notice about restored files
    before = len(harness.process.updates)
    await harness.process.request("session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    replayed = [u["update"] for u in harness.process.updates[before:]
                if u["update"]["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in replayed] == ["start over"]

    with pytest.raises(RemoteError, match="Unknown toMessageId 'nope'"):
        await harness.process.request("_sidecar/sessions/rewind", {"sessionId": session, "toMessageId": "nope"})

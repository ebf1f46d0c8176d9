"""An Edit into the editor's unsaved buffer (``workspace/applyEdit``) that the editor fails: the model gets
an error saying what happened and what to do, and nothing changes on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.errors import ClientGone, RpcError
from sidecar.workspace.buffers import BUFFERS, OpenBuffers
from tests.files.helpers import Agent, RecordingChannel

ON_DISK = "a = 1\n" + "".join(f"x{i} = {i}\n" for i in range(10))


class FailingEditor(RecordingChannel):
    """Answers permission questions; fails every ``workspace/applyEdit`` with ``failure``."""

    failure: Exception = RpcError(-32603, "the buffer is read-only")

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if method == "workspace/applyEdit":
            self.requests.append((method, params))
            raise self.failure
        return await super().request(method, params)


async def edit_dirty_buffer(ws: Path, tmp_path: Path, failure: Exception) -> tuple[str, bool, Path, FailingEditor]:
    agent = Agent(ws, tmp_path, mode="acceptEdits")
    editor = FailingEditor()
    editor.failure = failure
    editor.state.applies_buffer_edits = True
    agent.session.channel = agent.session.client.channel = agent.channel = editor
    try:
        f = ws / "open.py"
        f.write_text(ON_DISK)
        buffers = OpenBuffers()
        agent.session.provide(BUFFERS, buffers)
        buffers.open(f.as_uri(), ON_DISK, 1)
        buffers.change(f.as_uri(), ON_DISK + "# unsaved\n", 2)  # unsaved in the editor, far from the edit
        await agent.call("Read", file_path=str(f))
        text, err, _ = await agent.call("Edit", file_path=str(f), old_string="a = 1", new_string="a = 5")
    finally:
        await agent.close()
    return text, err, f, editor


async def test_an_apply_edit_the_editor_answers_with_an_error_is_a_tool_error(ws: Path, tmp_path: Path) -> None:
    text, err, f, editor = await edit_dirty_buffer(ws, tmp_path, RpcError(-32603, "the buffer is read-only"))
    assert err
    assert text == ("The editor did not apply the edit to open.py (workspace/applyEdit answered error -32603: the "
                    "buffer is read-only); nothing changed. Read the file again and redo the change.")
    assert [m for m, _ in editor.requests if m == "workspace/applyEdit"] == ["workspace/applyEdit"]
    assert f.read_text() == ON_DISK


async def test_an_apply_edit_lost_with_the_connection_is_a_tool_error(ws: Path, tmp_path: Path) -> None:
    text, err, f, _ = await edit_dirty_buffer(ws, tmp_path, ClientGone())
    assert err and text.startswith("The editor did not apply the edit to open.py (workspace/applyEdit failed: the "
                                   "editor's connection closed)")
    assert f.read_text() == ON_DISK

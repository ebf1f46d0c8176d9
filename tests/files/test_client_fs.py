"""The editor's files through ACP (`fs/read_text_file`, `fs/write_text_file`): a spawned `sidecar serve --acp`
whose client offers them and keeps its own "buffers" in memory, the scripted model asking for Read, Edit and
Write, and the tool results the model got back (recorded by the scripted server) asserted exactly."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness, start_harness

FS = {"fs": {"readTextFile": True, "writeTextFile": True}}


@dataclass
class Editor:
    """The client's side: open buffers (path → text) that are never saved unless a test saves them."""

    buffers: dict[str, str] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail: dict[str, str] = field(default_factory=dict)  # method → error message to answer with
    stall: set[str] = field(default_factory=set)  # methods never answered in time

    async def read(self, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(("fs/read_text_file", params))
        await self._trouble("fs/read_text_file")
        path = params["path"]
        text = self.buffers[path] if path in self.buffers else Path(path).read_bytes().decode("utf-8")
        return {"content": text}

    async def write(self, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(("fs/write_text_file", params))
        await self._trouble("fs/write_text_file")
        self.buffers[params["path"]] = params["content"]
        return {}

    async def _trouble(self, method: str) -> None:
        if method in self.stall:
            await asyncio.sleep(30)
        if method in self.fail:
            raise RuntimeError(self.fail[method])

    def methods(self) -> list[str]:
        return [m for m, _ in self.requests]


@pytest_asyncio.fixture
async def editor_sidecar(sidecar_env: dict[str, str], model_server: ScriptedModelServer,
                         tmp_path: Path) -> AsyncIterator[tuple[Harness, Editor]]:
    harness = await start_harness("acp", {**sidecar_env, "SIDECAR_CLIENT_FS_TIMEOUT": "1"}, model_server,
                                  tmp_path, client_capabilities=FS)
    editor = Editor()
    harness.process.handlers["fs/read_text_file"] = editor.read
    harness.process.handlers["fs/write_text_file"] = editor.write
    yield harness, editor
    await harness.process.close()


def _tool(tool_id: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "id": tool_id, "name": name, "input": inp}]}


def _say(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def _result(model: ScriptedModelServer, tool_id: str) -> tuple[str, bool]:
    """The text and is_error of the tool_result the model got for ``tool_id``."""
    for req in model.message_requests():
        for r in req.tool_results():
            if r.get("tool_use_id") == tool_id:
                content = r["content"]
                text = content if isinstance(content, str) else "".join(
                    b.get("text", "") for b in content if b.get("type") == "text")
                return text, bool(r.get("is_error"))
    raise AssertionError(f"no tool_result for {tool_id}")


async def _accept_edits(harness: Harness, session: str) -> None:
    await harness.process.request("session/set_mode", {"sessionId": session, "modeId": "acceptEdits"})


async def test_read_serves_the_unsaved_buffer_and_edit_lands_in_it(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    harness, editor = editor_sidecar
    notes = workspace / "notes.txt"
    on_disk = notes.read_bytes()
    editor.buffers[str(notes)] = "alpha\nBETA typed, not saved\ngamma\n"
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_r2", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="gamma", new_string="delta"),
        _say("done"),
    ])
    session = await harness.new_session(workspace)
    await _accept_edits(harness, session)
    assert await harness.prompt(session, "change gamma") == "end_turn"

    assert _result(model_server, "toolu_r1") == (
        "     1\talpha\n     2\tBETA typed, not saved\n     3\tgamma\n\nNote: this is notes.txt as it is open in "
        "the editor, with changes that are not saved to disk. Edit and Write change it in the editor; commands you "
        "run (Bash) see the version on disk until it is saved.", False)
    assert _result(model_server, "toolu_r2") == (
        "File unchanged since last read: lines 1-2000 of notes.txt are exactly as your earlier Read returned "
        "them. Use that earlier result instead of reading again.", False)
    assert _result(model_server, "toolu_e1") == (
        "The file notes.txt has been updated. Here's the result of running `cat -n` on a snippet of the edited "
        "file:\n     1\talpha\n     2\tBETA typed, not saved\n     3\tdelta\n\nNote: the editor has not saved "
        "notes.txt to disk yet; commands you run (Bash) see the version on disk until it is saved.", False)
    # The edit went to the editor, matched against its buffer; disk is byte-identical.
    writes = [p for m, p in editor.requests if m == "fs/write_text_file"]
    assert writes == [{"sessionId": session, "path": str(notes), "content": "alpha\nBETA typed, not saved\ndelta\n"}]
    assert editor.buffers[str(notes)] == "alpha\nBETA typed, not saved\ndelta\n"
    assert notes.read_bytes() == on_disk
    # Read twice, then the Edit's current text and its re-check after the review, then the write.
    assert editor.methods() == ["fs/read_text_file"] * 4 + ["fs/write_text_file"]
    # The diff the editor was shown is against the buffer.
    diffs = [c for u in harness.process.updates_for(session, "tool_call_update") for c in u.get("content") or []
             if c.get("type") == "diff"]
    assert diffs[-1]["oldText"] == "alpha\nBETA typed, not saved\ngamma\n"
    assert diffs[-1]["newText"] == "alpha\nBETA typed, not saved\ndelta\n"


async def test_saving_is_no_change_but_an_outside_rewrite_is(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    """The ledger records what the editor served: the editor saving it to disk raises no "modified" notice
    and keeps the next Edit fresh; a different text on disk (git checkout) is reported."""
    harness, editor = editor_sidecar
    notes = workspace / "notes.txt"
    hello = workspace / "hello.py"
    editor.buffers[str(notes)] = "alpha\nbeta (unsaved)\ngamma\n"
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_r2", "Read", file_path=str(hello)),
        _say("read"),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="alpha", new_string="ALPHA"),
        _say("edited"),
    ])
    session = await harness.new_session(workspace)
    await _accept_edits(harness, session)
    assert await harness.prompt(session, "read both") == "end_turn"
    await asyncio.sleep(0.3)
    notes.write_text(editor.buffers[str(notes)])  # the user saves the buffer the agent read
    hello.write_text("print('switched branch')\n")  # another text arrives on disk
    await asyncio.sleep(0.8)
    assert await harness.prompt(session, "edit notes") == "end_turn"
    last = model_server.message_requests()[-2].text()
    assert "hello.py was modified by the user or a linter; re-read before editing." in last
    assert "notes.txt was modified" not in last
    assert _result(model_server, "toolu_e1")[1] is False
    assert editor.buffers[str(notes)] == "ALPHA\nbeta (unsaved)\ngamma\n"


async def test_a_buffer_changed_since_read_is_rebased_or_refused(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    harness, editor = editor_sidecar
    f = workspace / "long.txt"
    f.write_text("".join(f"line {i}\n" for i in range(1, 31)))
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(f)),
        _say("read"),
        _tool("toolu_e1", "Edit", file_path=str(f), old_string="line 2\n", new_string="line two\n"),
        _tool("toolu_e2", "Edit", file_path=str(f), old_string="line 28\n", new_string="line twenty-eight\n"),
        _say("edited"),
    ])
    session = await harness.new_session(workspace)
    await _accept_edits(harness, session)
    assert await harness.prompt(session, "read") == "end_turn"
    # The user types on line 1 in the editor after the agent read the file.
    editor.buffers[str(f)] = "line 1 (typed)\n" + "".join(f"line {i}\n" for i in range(2, 31))
    assert await harness.prompt(session, "edit") == "end_turn"
    text, is_error = _result(model_server, "toolu_e1")
    assert is_error
    assert text == ("long.txt was modified since read (its text in the editor changed: the user, a formatter or "
                    "another process). Read it again, then redo the change against its current content. (The "
                    "change is within 3 lines of the text you are replacing, or changed how often old_string "
                    "occurs, so your edit cannot be applied on top of it safely.)")
    text, is_error = _result(model_server, "toolu_e2")
    assert not is_error
    assert text.startswith("The file long.txt has been updated. Here's the result of running `cat -n` on a snippet "
                           "of the edited file:\n    24\tline 24\n")
    assert "Note: long.txt had been changed since you read it" in text
    assert "-line 1\n+line 1 (typed)" in text
    assert editor.buffers[str(f)] == ("line 1 (typed)\n" + "".join(f"line {i}\n" for i in range(2, 28))
                                      + "line twenty-eight\nline 29\nline 30\n")
    assert f.read_text() == "".join(f"line {i}\n" for i in range(1, 31))


async def test_write_creates_and_replaces_in_the_editor_keeping_crlf(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    harness, editor = editor_sidecar
    new = workspace / "src" / "new.py"
    dos = workspace / "dos.txt"
    dos.write_bytes(b"one\r\ntwo\r\n")
    model_server.add_turns([
        _tool("toolu_w1", "Write", file_path=str(new), content="x = 1\ny = 2\n"),
        _tool("toolu_r1", "Read", file_path=str(dos)),
        _tool("toolu_w2", "Write", file_path=str(dos), content="uno\ndos\ntres\n"),
        _say("written"),
    ])
    session = await harness.new_session(workspace)
    await _accept_edits(harness, session)
    assert await harness.prompt(session, "write") == "end_turn"
    assert _result(model_server, "toolu_w1") == (
        f"File created successfully at: {new} (2 lines).\n\nNote: the editor has not saved src/new.py to disk yet; "
        "commands you run (Bash) do not see it until it is saved.", False)
    assert editor.buffers[str(new)] == "x = 1\ny = 2\n"
    assert not new.exists() and not new.parent.exists()  # the editor decides when to save it
    assert _result(model_server, "toolu_w2") == (
        "The file dos.txt has been overwritten (3 lines added, 2 removed; kept utf-8, CRLF).\n\nNote: the editor has "
        "not saved dos.txt to disk yet; commands you run (Bash) see the version on disk until it is saved.", False)
    assert editor.buffers[str(dos)] == "uno\r\ndos\r\ntres\r\n"
    assert dos.read_bytes() == b"one\r\ntwo\r\n"


async def test_a_file_created_in_the_editor_can_be_read_and_edited_before_it_is_saved(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    harness, editor = editor_sidecar
    new = workspace / "todo.md"
    model_server.add_turns([
        _tool("toolu_w1", "Write", file_path=str(new), content="- one\n- two\n"),
        _tool("toolu_e1", "Edit", file_path=str(new), old_string="- two", new_string="- two\n- three"),
        _tool("toolu_r1", "Read", file_path=str(new)),
        _tool("toolu_w2", "Write", file_path=str(new), content="- done\n"),
        _say("done"),
    ])
    session = await harness.new_session(workspace)
    await _accept_edits(harness, session)
    assert await harness.prompt(session, "plan") == "end_turn"
    unsaved = ("\n\nNote: the editor has not saved todo.md to disk yet; commands you run (Bash) do not see it until "
               "it is saved.")
    assert _result(model_server, "toolu_w1") == (f"File created successfully at: {new} (2 lines).{unsaved}", False)
    assert _result(model_server, "toolu_e1") == (
        "The file todo.md has been updated. Here's the result of running `cat -n` on a snippet of the edited "
        f"file:\n     1\t- one\n     2\t- two\n     3\t- three{unsaved}", False)
    assert _result(model_server, "toolu_r1") == (
        "     1\t- one\n     2\t- two\n     3\t- three\n\nNote: todo.md exists only in the editor so far (not "
        "saved to disk); commands you run (Bash) do not see it.", False)
    assert _result(model_server, "toolu_w2") == (
        f"The file todo.md has been overwritten (1 lines added, 3 removed).{unsaved}", False)
    assert editor.buffers[str(new)] == "- done\n"
    assert not new.exists()


async def test_failures_of_the_editor_are_tool_errors_and_nothing_is_written(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    harness, editor = editor_sidecar
    notes = workspace / "notes.txt"
    on_disk = notes.read_bytes()
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _say("could not read"),
        _tool("toolu_r2", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="beta", new_string="BETA"),
        _say("could not write"),
        _tool("toolu_e2", "Edit", file_path=str(notes), old_string="beta", new_string="BETA"),
        _say("no answer"),
        _say("still here"),
    ])
    session = await harness.new_session(workspace)
    await _accept_edits(harness, session)
    editor.fail["fs/read_text_file"] = "buffer is being reloaded"
    assert await harness.prompt(session, "read") == "end_turn"
    assert _result(model_server, "toolu_r1") == (
        "The editor could not read notes.txt: fs/read_text_file failed (buffer is being reloaded). Nothing was "
        "read. Try again; if it keeps failing, ask the user to check the file in the editor.", True)
    del editor.fail["fs/read_text_file"]
    editor.fail["fs/write_text_file"] = "the file is read-only"
    assert await harness.prompt(session, "edit") == "end_turn"
    assert _result(model_server, "toolu_r2")[1] is False
    assert _result(model_server, "toolu_e1") == (
        "The editor could not write notes.txt: fs/write_text_file failed (the file is read-only). Nothing was "
        "changed. Read the file again, then redo the change; if it keeps failing, ask the user.", True)
    del editor.fail["fs/write_text_file"]
    editor.stall.add("fs/write_text_file")
    assert await asyncio.wait_for(harness.prompt(session, "edit again"), 30) == "end_turn"
    assert _result(model_server, "toolu_e2") == (
        "The editor did not confirm writing notes.txt (fs/write_text_file: no answer within 1 s), so the change "
        "may or may not have landed. Read the file again to see its content before trying again.", True)
    # The sidecar told the editor it gave up on that request.
    write_ids = [n for n in harness.process.notifications if n.get("method") == "$/cancel_request"]
    assert len(write_ids) == 1
    assert notes.read_bytes() == on_disk
    assert await harness.prompt(session, "still there?") == "end_turn"


async def test_binary_image_and_denied_files_never_reach_the_editor(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    harness, editor = editor_sidecar
    png = workspace / "dot.png"
    png.write_bytes(base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"
                                     "hKmMIQAAAABJRU5ErkJggg=="))
    blob = workspace / "blob.bin"
    blob.write_bytes(b"\x00\x01\x02binary")
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./secret.txt)"]}}))
    (workspace / "secret.txt").write_text("hunter2\n")
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(png)),
        _tool("toolu_r2", "Read", file_path=str(blob)),
        _tool("toolu_r3", "Read", file_path=str(workspace / "secret.txt")),
        _say("done"),
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "look") == "end_turn"
    assert _result(model_server, "toolu_r1") == ("Image dot.png:", False)
    text, is_error = _result(model_server, "toolu_r2")
    assert is_error and text.startswith("blob.bin is a binary file (contains NUL bytes or a binary signature)")
    assert _result(model_server, "toolu_r3")[1] is True
    assert editor.requests == []


@pytest.mark.parametrize("caps", [{}, {"fs": {"readTextFile": False, "writeTextFile": False}}])
async def test_without_fs_capabilities_disk_is_read_and_written(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path, workspace: Path,
        caps: dict[str, Any]) -> None:
    harness = await start_harness("acp", sidecar_env, model_server, tmp_path, client_capabilities=caps)
    asked: list[str] = []

    async def refuse(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["path"])
        raise RuntimeError("not offered")

    harness.process.handlers["fs/read_text_file"] = refuse
    harness.process.handlers["fs/write_text_file"] = refuse
    notes = workspace / "notes.txt"
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="beta", new_string="BETA"),
        _say("done"),
    ])
    try:
        session = await harness.new_session(workspace)
        await _accept_edits(harness, session)
        assert await harness.prompt(session, "edit") == "end_turn"
    finally:
        await harness.process.close()
    assert _result(model_server, "toolu_r1") == ("     1\talpha\n     2\tbeta\n     3\tgamma", False)
    assert _result(model_server, "toolu_e1")[0].startswith("The file notes.txt has been updated.")
    assert notes.read_text() == "alpha\nBETA\ngamma\n"
    assert asked == []


async def test_a_crlf_file_the_editor_serves_with_lf_is_not_reported_when_saved(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    """An editor may serve `\\n` text for a CRLF file: the same text modulo line endings, so neither the Read
    nor the watcher (the user saving, a touch) may call it changed; a real change on disk still is."""
    harness, editor = editor_sidecar
    dos = workspace / "dos.txt"
    hello = workspace / "hello.py"
    dos.write_bytes(b"one\r\ntwo\r\n")
    editor.buffers[str(dos)] = "one\ntwo\n"
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(dos)),
        _tool("toolu_r2", "Read", file_path=str(hello)),
        _say("read"),
        _say("noted"),
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "read both") == "end_turn"
    assert _result(model_server, "toolu_r1") == ("     1\tone\n     2\ttwo", False)
    await asyncio.sleep(0.3)
    dos.write_bytes(b"one\r\ntwo\r\n")  # the user saves the buffer: the same text, CRLF on disk, a new mtime
    hello.write_text("print('switched branch')\n")  # another text arrives on disk: this one is reported
    await asyncio.sleep(0.8)
    assert await harness.prompt(session, "anything new?") == "end_turn"
    last = model_server.message_requests()[-1].text()
    assert "hello.py was modified by the user or a linter; re-read before editing." in last
    assert "dos.txt was modified" not in last
    assert dos.read_bytes() == b"one\r\ntwo\r\n"


COMBINATIONS = {
    "neither": {},
    "write only": {"fs": {"readTextFile": False, "writeTextFile": True}},
    "read only": {"fs": {"readTextFile": True, "writeTextFile": False}},
    "both": FS,
}


@pytest.mark.parametrize("combo", list(COMBINATIONS))
async def test_what_the_model_is_told_fits_each_combination_of_fs_capabilities(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path, workspace: Path,
        combo: str) -> None:
    """The same turn under each of the four `fs` offers: where the text comes from, where the edits land,
    and every note the model gets about it, exactly."""
    harness = await start_harness("acp", {**sidecar_env, "SIDECAR_CLIENT_FS_TIMEOUT": "5"}, model_server,
                                  tmp_path, client_capabilities=COMBINATIONS[combo])
    editor = Editor()
    harness.process.handlers["fs/read_text_file"] = editor.read
    harness.process.handlers["fs/write_text_file"] = editor.write
    notes = workspace / "notes.txt"
    dos = workspace / "dos.txt"
    new = workspace / "new.txt"
    dos.write_bytes(b"one\r\ntwo\r\n")
    editor.buffers[str(notes)] = "alpha\nBETA typed\ngamma\n"  # unsaved typing
    editor.buffers[str(dos)] = "one\ntwo\n"  # the CRLF file served with LF
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="gamma", new_string="delta"),
        _tool("toolu_r2", "Read", file_path=str(dos)),
        _tool("toolu_e2", "Edit", file_path=str(dos), old_string="two", new_string="TWO"),
        _tool("toolu_w1", "Write", file_path=str(new), content="fresh\n"),
        _say("done"),
    ])
    try:
        session = await harness.new_session(workspace)
        await _accept_edits(harness, session)
        assert await harness.prompt(session, "edit") == "end_turn"
    finally:
        await harness.process.close()
    disk_only = combo in ("neither", "write only")  # a client that only writes is not asked either
    edited = ("The file notes.txt has been updated. Here's the result of running `cat -n` on a snippet of the "
              "edited file:\n")
    edited_dos = ("The file dos.txt has been updated. Here's the result of running `cat -n` on a snippet of the "
                  "edited file:\n     1\tone\n     2\tTWO")
    created = f"File created successfully at: {new} (1 lines)."
    assert _result(model_server, "toolu_r2") == ("     1\tone\n     2\ttwo", False)  # same text modulo CRLF
    if disk_only:
        assert editor.requests == []
        assert _result(model_server, "toolu_r1") == ("     1\talpha\n     2\tbeta\n     3\tgamma", False)
        assert _result(model_server, "toolu_e1") == (edited + "     1\talpha\n     2\tbeta\n     3\tdelta", False)
        assert _result(model_server, "toolu_e2") == (edited_dos, False)
        assert _result(model_server, "toolu_w1") == (created, False)
        assert notes.read_bytes() == b"alpha\nbeta\ndelta\n"
    elif combo == "read only":
        assert _result(model_server, "toolu_r1") == (
            "     1\talpha\n     2\tBETA typed\n     3\tgamma\n\nNote: this is notes.txt as it is open in the "
            "editor, with changes that are not saved to disk. Edit and Write change the file on disk, not this "
            "text, and commands you run (Bash) see the version on disk: ask the user to save the file before you "
            "change it.", False)
        assert _result(model_server, "toolu_e1") == (
            "notes.txt has changes in the editor that are not saved to disk, and your Edit would change the file "
            "on disk (this editor does not take edits from the agent), so nothing was written. Ask the user to "
            "save the file (or revert its changes) in the editor, then Read it again and redo the change.", True)
        assert _result(model_server, "toolu_e2") == (edited_dos, False)  # disk holds the editor's text: lands
        assert _result(model_server, "toolu_w1") == (created, False)
        assert editor.methods() == ["fs/read_text_file"] * 4  # each file: the Read, the Edit's check
        assert notes.read_bytes() == b"alpha\nbeta\ngamma\n"
    else:
        assert _result(model_server, "toolu_r1") == (
            "     1\talpha\n     2\tBETA typed\n     3\tgamma\n\nNote: this is notes.txt as it is open in the "
            "editor, with changes that are not saved to disk. Edit and Write change it in the editor; commands "
            "you run (Bash) see the version on disk until it is saved.", False)
        assert _result(model_server, "toolu_e1") == (
            edited + "     1\talpha\n     2\tBETA typed\n     3\tdelta\n\nNote: the editor has not saved "
            "notes.txt to disk yet; commands you run (Bash) see the version on disk until it is saved.", False)
        assert _result(model_server, "toolu_e2") == (
            edited_dos + "\n\nNote: the editor has not saved dos.txt to disk yet; commands you run (Bash) see the "
            "version on disk until it is saved.", False)
        assert _result(model_server, "toolu_w1") == (
            created + "\n\nNote: the editor has not saved new.txt to disk yet; commands you run (Bash) do not "
            "see it until it is saved.", False)
        assert [p for m, p in editor.requests if m == "fs/write_text_file"] == [
            {"sessionId": session, "path": str(notes), "content": "alpha\nBETA typed\ndelta\n"},
            {"sessionId": session, "path": str(dos), "content": "one\nTWO\n"},
            {"sessionId": session, "path": str(new), "content": "fresh\n"}]
        assert notes.read_bytes() == b"alpha\nbeta\ngamma\n"
    if combo == "both":
        assert dos.read_bytes() == b"one\r\ntwo\r\n" and not new.exists()
    else:  # on disk, CRLF kept
        assert dos.read_bytes() == b"one\r\nTWO\r\n" and new.read_bytes() == b"fresh\n"


async def test_an_editor_that_saves_at_once_gets_no_unsaved_note(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    """Zed saves what it is sent: then the disk holds the new text and the result says nothing about it."""
    harness, editor = editor_sidecar
    notes = workspace / "notes.txt"
    plain_write = editor.write

    async def write_and_save(params: dict[str, Any]) -> dict[str, Any]:
        answer = await plain_write(params)
        Path(params["path"]).write_text(params["content"])
        return answer

    harness.process.handlers["fs/write_text_file"] = write_and_save
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="gamma", new_string="delta"),
        _say("done"),
    ])
    session = await harness.new_session(workspace)
    await _accept_edits(harness, session)
    assert await harness.prompt(session, "edit") == "end_turn"
    assert _result(model_server, "toolu_e1") == (
        "The file notes.txt has been updated. Here's the result of running `cat -n` on a snippet of the edited "
        "file:\n     1\talpha\n     2\tbeta\n     3\tdelta", False)
    assert notes.read_bytes() == b"alpha\nbeta\ndelta\n"


async def test_a_repeated_read_past_the_end_of_an_editor_buffer_says_so_again(
        editor_sidecar: tuple[Harness, Editor], workspace: Path, model_server: ScriptedModelServer) -> None:
    """Read through the editor past the buffer's last line, twice: the second answer is the first's, not
    "unchanged" (nothing was shown to reuse)."""
    harness, editor = editor_sidecar
    notes = workspace / "notes.txt"
    editor.buffers[str(notes)] = "alpha\nbeta\n"
    model_server.add_turns([
        _tool("toolu_p1", "Read", file_path=str(notes), offset=10),
        _tool("toolu_p2", "Read", file_path=str(notes), offset=10),
        _say("done"),
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "read past the end") == "end_turn"
    past_end = "notes.txt has 2 lines; offset 10 is past the end. Use an offset between 1 and 2."
    for tool_id in ("toolu_p1", "toolu_p2"):
        text, is_error = _result(model_server, tool_id)
        assert not is_error and text.startswith(past_end) and "unchanged" not in text, text

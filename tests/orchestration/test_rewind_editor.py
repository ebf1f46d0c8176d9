"""Rewind and the editor's files: what the agent changed through ``fs/write_text_file`` is handed back to the
editor the same way (its text before the agent's change, unsaved changes included), beside the disk restore;
conflicts, a refused write-back and an unsaved new file are reported; the record survives a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.files.test_client_fs import FS, Editor, _say, _tool
from tests.orchestration.conftest import MakeSidecar


def _wire(harness: Any, editor: Editor) -> None:
    harness.process.handlers["fs/read_text_file"] = editor.read
    harness.process.handlers["fs/write_text_file"] = editor.write


async def _editor_session(make_sidecar: MakeSidecar, editor: Editor, workspace: Path, mode: str) -> tuple[Any, str]:
    """A sidecar whose client serves ``editor``'s buffers (``fs/*``), and a session of ``workspace`` in ``mode``."""
    harness = await make_sidecar(client_capabilities=FS)
    _wire(harness, editor)
    session = await harness.new_session(workspace)
    await harness.process.request("session/set_mode", {"sessionId": session, "modeId": mode})
    return harness, session


async def _prompt(harness: Any, session: str, text: str) -> str:
    result = await harness.process.request("session/prompt", {"sessionId": session,
                                                              "prompt": [{"type": "text", "text": text}]})
    assert result["stopReason"] == "end_turn"
    return str(result["_meta"]["sidecar"]["userMessageId"])


async def test_rewind_hands_the_editor_back_its_text_and_reports_what_it_could_not(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    notes, readme, dos, new, gen = (workspace / n for n in ("notes.txt", "README.md", "dos.txt", "new.txt", "gen.txt"))
    dos.write_bytes(b"one\r\ntwo\r\n")
    on_disk = {p: p.read_bytes() for p in (notes, readme, dos)}
    editor = Editor()
    editor.buffers[str(notes)] = "alpha\nBETA typed\ngamma\n"  # unsaved typing: what Restore must give back
    model_server.add_turns([
        # Turn 1: through the editor (notes.txt, a new file) and on disk (Bash).
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="gamma", new_string="delta"),
        _tool("toolu_w1", "Write", file_path=str(new), content="fresh\n"),
        _tool("toolu_b1", "Bash", command="printf 'made\\n' > gen.txt"),
        _say("turn one done"),
        # Turn 2: notes.txt again, README.md and dos.txt through the editor.
        _tool("toolu_e2", "Edit", file_path=str(notes), old_string="delta", new_string="DELTA"),
        _tool("toolu_r2", "Read", file_path=str(readme)),
        _tool("toolu_e3", "Edit", file_path=str(readme), old_string="small", new_string="tiny"),
        _tool("toolu_r3", "Read", file_path=str(dos)),
        _tool("toolu_e4", "Edit", file_path=str(dos), old_string="two", new_string="TWO"),
        _say("turn two done"),
    ])
    harness, session = await _editor_session(make_sidecar, editor, workspace, "bypassPermissions")
    first = await _prompt(harness, session, "first change")
    await _prompt(harness, session, "second change")
    assert editor.buffers[str(notes)] == "alpha\nBETA typed\nDELTA\n"
    assert gen.read_bytes() == b"made\n"
    # The user types in README.md after the agent; the editor refuses the write-back of dos.txt.
    editor.buffers[str(readme)] = editor.buffers[str(readme)].replace("tiny", "tiny, mine")
    writes_before = len(editor.requests)
    plain_write = editor.write

    async def refuse_dos(params: dict[str, Any]) -> dict[str, Any]:
        if params["path"] == str(dos):
            editor.requests.append(("fs/write_text_file", params))
            raise RuntimeError("the file is read-only")
        return await plain_write(params)

    harness.process.handlers["fs/write_text_file"] = refuse_dos

    result = await harness.process.request("_sidecar/sessions/rewind", {"sessionId": session, "toMessageId": first})
    assert result["restored"] == [str(gen)]
    assert result["restoredInEditor"] == [str(notes)]
    assert result["conflicts"] == [
        {"path": str(readme), "where": "editor",
         "reason": "changed in the editor since the agent last wrote it; left as it is"},
        {"path": str(dos), "where": "editor",
         "reason": "the editor did not take its earlier text back (fs/write_text_file: the file is read-only); "
                   "left as it is"},
        {"path": str(new), "where": "editor",
         "reason": "created by the agent in the editor and not saved; an editor cannot be asked to close or delete "
                   "a file, so it was left as it is: close it there without saving"},
    ]
    assert result["historyLength"] == 0
    # The editor got back exactly the text it held before the agent's first change, unsaved typing included.
    writes = [p for m, p in editor.requests[writes_before:] if m == "fs/write_text_file"]
    assert writes == [
        {"sessionId": session, "path": str(dos), "content": "one\r\ntwo\r\n"},
        {"sessionId": session, "path": str(notes), "content": "alpha\nBETA typed\ngamma\n"},
    ]
    assert editor.buffers[str(notes)] == "alpha\nBETA typed\ngamma\n"
    assert editor.buffers[str(readme)].endswith("A tiny, mine workspace for tests.\n")
    assert editor.buffers[str(new)] == "fresh\n"
    assert not gen.exists()
    assert {p: p.read_bytes() for p in on_disk} == on_disk  # the editor's files never touched disk
    assert not new.exists()

    model_server.add_turns([_say("fresh start")])
    await _prompt(harness, session, "start over")
    text = model_server.message_requests()[-1].text()
    assert (f"The user rewound the session: restored {gen} to earlier contents and put the earlier text of {notes} "
            "back in the editor; read them again before editing.") in text


async def test_the_editor_record_survives_a_restart(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    """Persisted with the checkpoints: a later process hands the text back; one whose client takes no edits
    says why it could not, and loses nothing."""
    notes = workspace / "notes.txt"
    editor = Editor()
    editor.buffers[str(notes)] = "alpha\nbeta (unsaved)\ngamma\n"
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="gamma", new_string="delta"),
        _say("done"),
    ])
    first, session = await _editor_session(make_sidecar, editor, workspace, "acceptEdits")
    message = await _prompt(first, session, "change it")
    await first.process.close()
    assert editor.buffers[str(notes)] == "alpha\nbeta (unsaved)\ndelta\n"
    load = {"sessionId": session, "cwd": str(workspace), "mcpServers": []}

    second = await make_sidecar()  # a client without fs
    await second.process.request("session/load", load)
    result = await second.process.request("_sidecar/sessions/rewind", {
        "sessionId": session, "toMessageId": message, "conversation": False})
    assert result == {"restored": [], "restoredInEditor": [], "historyLength": None, "conflicts": [
        {"path": str(notes), "where": "editor",
         "reason": "changed by the agent in the editor, but this client does not offer fs/read_text_file and "
                   "fs/write_text_file, so its earlier text could not be handed back; left as it is"}]}
    await second.process.close()

    third = await make_sidecar(client_capabilities=FS)
    _wire(third, editor)
    await third.process.request("session/load", load)
    result = await third.process.request("_sidecar/sessions/rewind", {"sessionId": session, "toMessageId": message})
    assert result == {"restored": [], "restoredInEditor": [str(notes)], "conflicts": [], "historyLength": 0}
    assert editor.buffers[str(notes)] == "alpha\nbeta (unsaved)\ngamma\n"
    assert notes.read_bytes() == b"alpha\nbeta\ngamma\n"


async def test_an_editor_that_saves_at_once_is_restored_through_disk(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    """Zed saves what it is sent and reloads what changes on disk: the snapshots see the agent's change, the
    disk restore puts the file back, the editor then already holds the earlier text and is sent nothing."""
    notes = workspace / "notes.txt"
    editor = Editor()  # no buffers: it serves what is on disk

    async def write_and_save(params: dict[str, Any]) -> dict[str, Any]:
        editor.requests.append(("fs/write_text_file", params))
        Path(params["path"]).write_text(params["content"])
        return {}

    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="gamma", new_string="delta"),
        _say("done"),
    ])
    harness, session = await _editor_session(make_sidecar, editor, workspace, "acceptEdits")
    harness.process.handlers["fs/write_text_file"] = write_and_save
    message = await _prompt(harness, session, "change it")
    assert notes.read_bytes() == b"alpha\nbeta\ndelta\n"
    writes = len([m for m, _ in editor.requests if m == "fs/write_text_file"])
    result = await harness.process.request("_sidecar/sessions/rewind", {"sessionId": session, "toMessageId": message})
    assert result == {"restored": [str(notes)], "restoredInEditor": [str(notes)], "conflicts": [],
                      "historyLength": 0}
    assert notes.read_bytes() == b"alpha\nbeta\ngamma\n"
    assert len([m for m, _ in editor.requests if m == "fs/write_text_file"]) == writes


async def test_a_restore_undone_can_hand_the_editor_its_text_again(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    """Restore (files only) hands the editor back its text and puts a disk file back; Undo restore puts the
    disk file back as the agent left it and says the editor's side is undone there (Edit > Undo). After
    that Undo in the editor, the same restore hands the editor its earlier text again, byte for byte: the
    kept texts outlive the restore while its undo can bring their records back."""
    notes, gen = workspace / "notes.txt", workspace / "gen.txt"
    typed = "alpha\r\nBETA typed\r\ngamma \u00e9\r\n"  # unsaved, CRLF, non-ASCII: handed back exactly
    editor = Editor()
    editor.buffers[str(notes)] = typed
    model_server.add_turns([
        _tool("toolu_r1", "Read", file_path=str(notes)),
        _tool("toolu_e1", "Edit", file_path=str(notes), old_string="gamma", new_string="delta"),
        _tool("toolu_b1", "Bash", command="printf 'made\\n' > gen.txt"),
        _say("done"),
    ])
    harness, session = await _editor_session(make_sidecar, editor, workspace, "bypassPermissions")
    message = await _prompt(harness, session, "change it")
    agents = editor.buffers[str(notes)]
    assert agents == typed.replace("gamma", "delta") and gen.read_bytes() == b"made\n"
    files_only = {"sessionId": session, "toMessageId": message, "files": True, "conversation": False}

    restore = await harness.process.request("_sidecar/sessions/rewind", files_only)
    assert (restore["restored"], restore["restoredInEditor"]) == ([str(gen)], [str(notes)])
    assert editor.buffers[str(notes)] == typed and not gen.exists()
    undo = await harness.process.request("_sidecar/sessions/undo_rewind",
                                         {"sessionId": session, "undoId": restore["undoId"]})
    assert undo["restored"] == [str(gen)] and gen.read_bytes() == b"made\n"
    assert [c["path"] for c in undo["conflicts"]] == [str(notes)]
    editor.buffers[str(notes)] = agents  # the user's Edit > Undo in the editor

    again = await harness.process.request("_sidecar/sessions/rewind", files_only)
    assert again["conflicts"] == []
    assert (again["restored"], again["restoredInEditor"]) == ([str(gen)], [str(notes)])
    assert editor.buffers[str(notes)] == typed and not gen.exists()

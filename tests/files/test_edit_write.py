"""Edit, Write and NotebookEdit through the real dispatcher: read-before-edit, staleness, uniqueness,
encodings, buffers, atomicity, the formatter notice."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from sidecar.permissions.rules import parse_rule
from sidecar.workspace.buffers import BUFFERS, OpenBuffers
from sidecar.workspace.watcher import WATCHER
from tests.files.helpers import Agent


async def test_edit_requires_read_and_unique_match(agent: Agent, ws: Path) -> None:
    f = ws / "m.py"
    f.write_text("x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n")
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="y = 2", new_string="y = 20")
    assert err and text == "m.py has not been read in this session. Read it first (Read tool), then make the change."
    await agent.call("Read", file_path=str(f))
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="w = 9", new_string="w = 0")
    assert err and text.startswith("old_string was not found in m.py (0 matches).")
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="x = 1", new_string="x = 10")
    assert err and text.startswith("old_string occurs 3 times in m.py (lines 1, 3, 5); it must occur exactly once.")
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="x = 1", new_string="x = 1")
    assert err and "identical" in text
    assert f.read_text() == "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n"
    text, err, out = await agent.call("Edit", file_path=str(f), old_string="y = 2", new_string="y = 20")
    assert not err, text
    assert text.startswith("The file m.py has been updated. Here's the result of running `cat -n` on a snippet")
    assert "     2\ty = 20" in text
    assert out.editor_content == [{"type": "diff", "path": str(f), "oldText": "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n",
                                   "newText": "x = 1\ny = 20\nx = 1\nz = 3\nx = 1\n"}]
    # No re-read needed after our own edit; replace_all reports the count.
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="x = 1", new_string="x = 2",
                                    replace_all=True)
    assert not err and "(3 occurrences replaced)" in text
    assert f.read_text() == "x = 2\ny = 20\nx = 2\nz = 3\nx = 2\n"


async def test_changed_by_another_process_is_refused_and_bytes_intact(agent: Agent, ws: Path) -> None:
    f = ws / "c.txt"
    f.write_text("one\ntwo\n")
    await agent.call("Read", file_path=str(f))
    await asyncio.sleep(0.01)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", f"open({str(f)!r}, 'w').write('one\\nTWO!\\n')")
    assert await proc.wait() == 0
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="one", new_string="uno")
    assert err and "was modified since read" in text and "Read it again" in text
    assert f.read_bytes() == b"one\nTWO!\n"
    text, err, _ = await agent.call("Write", file_path=str(f), content="overwritten\n")
    assert err and "was modified since read" in text
    assert f.read_bytes() == b"one\nTWO!\n"


async def test_same_size_rewrite_in_same_mtime_is_caught(agent: Agent, ws: Path) -> None:
    f = ws / "s.txt"
    f.write_text("aaaa\n")
    st = f.stat()
    await agent.call("Read", file_path=str(f))
    f.write_text("bbbb\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="aaaa", new_string="cccc")
    assert err and "modified since read" in text
    assert f.read_text() == "bbbb\n"


async def test_crlf_utf16_bom_and_mode_kept(agent: Agent, ws: Path) -> None:
    f = ws / "win.txt"
    f.write_bytes(b"\xef\xbb\xbfline one\r\nline two\r\nline three\r\n")
    f.chmod(0o755)
    text, _, _ = await agent.call("Read", file_path=str(f))
    assert "     2\tline two\n" in text  # no \r shown
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="line two\nline three",
                                    new_string="line 2\nline 2.5\nline three")
    assert not err, text
    assert f.read_bytes() == b"\xef\xbb\xbfline one\r\nline 2\r\nline 2.5\r\nline three\r\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o755

    g = ws / "u16.txt"
    g.write_bytes("alpha\r\nbéta\r\n".encode("utf-16"))
    await agent.call("Read", file_path=str(g))
    text, err, _ = await agent.call("Edit", file_path=str(g), old_string="béta", new_string="gämma")
    assert not err, text
    assert g.read_bytes() == "alpha\r\ngämma\r\n".encode("utf-16")
    assert g.read_bytes().startswith(b"\xff\xfe")


async def test_write_new_existing_and_atomic(agent: Agent, ws: Path) -> None:
    new = ws / "deep" / "er" / "new.txt"
    text, err, out = await agent.call("Write", file_path=str(new), content="hi\nthere\n")
    assert not err and text == f"File created successfully at: {new} (2 lines)."
    assert new.read_text() == "hi\nthere\n"
    assert out.editor_content[0]["oldText"] is None
    old = ws / "old.sh"
    old.write_text("echo old\n")
    old.chmod(0o750)
    text, err, _ = await agent.call("Write", file_path=str(old), content="echo new\n")
    assert err and "has not been read" in text
    await agent.call("Read", file_path=str(old))
    text, err, _ = await agent.call("Write", file_path=str(old), content="echo new\n")
    assert not err and text.startswith("The file old.sh has been overwritten (1 lines added, 1 removed")
    assert old.read_text() == "echo new\n" and stat.S_IMODE(old.stat().st_mode) == 0o750
    assert not [p for p in ws.iterdir() if p.name.endswith(".sidecar-tmp")]


async def test_dirty_buffer_never_overwritten(agent: Agent, ws: Path) -> None:
    f = ws / "open.py"
    f.write_text("a = 1\n")
    store = OpenBuffers()
    agent.session.provide(BUFFERS, store)
    uri = f.as_uri()
    store.open(uri, "a = 1\n", 1)
    await agent.call("Read", file_path=str(f))
    store.change(uri, "a = 1\nb = 2\n", 2)
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="a = 1", new_string="a = 5")
    assert err and "unsaved changes in the editor" in text and "Ask the user to save" in text
    assert f.read_text() == "a = 1\n"
    # The buffer change marked the read stale and queued a notice.
    assert "open.py was modified by the user or a linter; re-read before editing." in agent.session.pending_notices
    f.write_text("a = 1\nb = 2\n")
    store.save(uri)
    await agent.call("Read", file_path=str(f))
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="a = 1", new_string="a = 5")
    assert not err, text


async def test_watcher_event_during_edits_rename_is_not_a_notice(
    agent: Agent, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher's event for Edit's own rename can reach the loop before the ledger records the write
    (the rename runs in a thread; seen in a loaded CI run): it must not read as someone else's change."""
    import sidecar.tools.files.edit as edit_module

    f = ws / "race.py"
    f.write_text("x=1\n")
    await agent.call("Read", file_path=str(f))
    watcher = agent.session.service(WATCHER)
    real_commit = edit_module.commit_temp

    def commit_then_event(tmp: object, path: Path) -> object:
        written = real_commit(tmp, path)  # type: ignore[arg-type]
        done = asyncio.run_coroutine_threadsafe(_deliver(watcher, path), loop)
        done.result(5)  # the event is handled on the loop before the rename's await returns
        return written

    async def _deliver(w: object, path: Path) -> None:
        w.on_disk_change(path)  # type: ignore[attr-defined]

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(edit_module, "commit_temp", commit_then_event)
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="x=1", new_string="x=2")
    assert not err, text
    assert agent.session.pending_notices == []
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="x=2", new_string="x=3")
    assert not err, text  # not marked stale either
    assert f.read_text() == "x=3\n"


async def notices(agent: Agent) -> list[str]:
    """The session's pending notices once the first has come (the watcher's progress), or after ~5 s."""
    for _ in range(250):
        if agent.session.pending_notices:
            break
        await asyncio.sleep(0.02)
    return agent.session.pending_notices


async def test_formatter_rewrites_after_edit_notice_and_refusal(agent: Agent, ws: Path) -> None:
    f = ws / "fmt.py"
    f.write_text("x=1\n")
    await agent.call("Read", file_path=str(f))
    watcher = agent.session.service(WATCHER)
    await asyncio.wait_for(watcher.ready.wait(), 5)
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="x=1", new_string="x=2")
    assert not err
    await asyncio.sleep(0.3)
    assert agent.session.pending_notices == []  # our own write raises no notice
    f.write_text("x = 2\n")  # the formatter
    assert await notices(agent) == ["fmt.py was modified by the user or a linter; re-read before editing."]
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="x = 2", new_string="x = 3")
    assert err and "was modified since read" in text
    assert f.read_text() == "x = 2\n"


async def test_changes_the_workspace_gitignore_ignores_raise_no_notice(agent: Agent, ws: Path) -> None:
    """The watcher reads the root's .gitignore with git's rules (a negation re-includes a file): a read
    file that git ignores raises no notice when it changes, one it re-includes does. The kept file's
    notice is the progress signal: the ignored files were written before it, so their events came first."""
    (ws / ".gitignore").write_text("*.log\n!keep.log\nbuild/\n")
    (ws / "build").mkdir()
    files = {name: ws / name for name in ("x.log", "build/out.py", "keep.log")}
    for f in files.values():
        f.write_text("1\n")
        await agent.call("Read", file_path=str(f))
    await asyncio.wait_for(agent.session.service(WATCHER).ready.wait(), 5)
    files["x.log"].write_text("2\n")
    files["build/out.py"].write_text("2\n")
    files["keep.log"].write_text("2\n")
    assert await notices(agent) == ["keep.log was modified by the user or a linter; re-read before editing."]


async def test_sessions_of_one_workspace_share_one_watch_and_each_gets_its_notice(ws: Path, tmp_path: Path) -> None:
    """Three sessions on one workspace: one watch (not one per session); a change to a file raises the
    notice in exactly the sessions that read it; a closed session's neighbours keep being told."""
    from sidecar.workspace import watcher as watcher_module

    a, b, c = Agent(ws, tmp_path / "a"), Agent(ws, tmp_path / "b"), Agent(ws, tmp_path / "c")
    (ws / "one.txt").write_text("1\n")
    (ws / "two.txt").write_text("2\n")
    await a.call("Read", file_path=str(ws / "one.txt"))
    await b.call("Read", file_path=str(ws / "one.txt"))
    await c.call("Read", file_path=str(ws / "two.txt"))
    for agent in (a, b, c):
        await asyncio.wait_for(agent.session.service(WATCHER).ready.wait(), 5)
    watches = watcher_module._SHARED[asyncio.get_running_loop()]
    assert len(watches) == 1 and len(next(iter(watches.values())).watchers) == 3

    (ws / "one.txt").write_text("one\n")
    assert await notices(a) == ["one.txt was modified by the user or a linter; re-read before editing."]
    assert await notices(b) == ["one.txt was modified by the user or a linter; re-read before editing."]
    assert c.session.pending_notices == []
    await a.close()
    b.session.pending_notices.clear()
    await b.call("Read", file_path=str(ws / "one.txt"))
    (ws / "one.txt").write_text("uno\n")
    (ws / "two.txt").write_text("dos\n")
    assert await notices(b) == ["one.txt was modified by the user or a linter; re-read before editing."]
    assert await notices(c) == ["two.txt was modified by the user or a linter; re-read before editing."]
    assert a.session.pending_notices == ["one.txt was modified by the user or a linter; re-read before editing."]
    await b.close()
    await c.close()
    assert watches == {}


async def test_rejected_edit_writes_nothing(ws: Path, tmp_path: Path) -> None:
    agent = Agent(ws, tmp_path)  # default mode: edits ask
    agent.channel.answer = "reject_once"
    f = ws / "r.txt"
    f.write_text("keep\n")
    await agent.call("Read", file_path=str(f))
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="keep", new_string="lose")
    assert err and "rejected" in text.lower()
    assert f.read_text() == "keep\n"
    asked = agent.channel.permission_requests()
    assert asked and asked[0]["toolCall"]["content"][0]["type"] == "diff"


async def test_notebook_edit(agent: Agent, ws: Path) -> None:
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"id": "c1", "cell_type": "code", "metadata": {}, "execution_count": 3, "source": "1+1",
                     "outputs": [{"output_type": "execute_result", "execution_count": 3, "metadata": {},
                                  "data": {"text/plain": "2"}}]}]}
    f = ws / "n.ipynb"
    f.write_text(json.dumps(nb, indent=1) + "\n")
    text, err, _ = await agent.call("NotebookEdit", notebook_path=str(f), cell_id="c1", new_source="2+2")
    assert err and "has not been read" in text
    await agent.call("Read", file_path=str(f))
    text, err, _ = await agent.call("NotebookEdit", notebook_path=str(f), cell_id="c1", new_source="2+2")
    assert not err and text == "Updated cell c1 in n.ipynb."
    cells = json.loads(f.read_text())["cells"]
    assert cells[0]["source"] == "2+2" and cells[0]["outputs"] == [] and cells[0]["execution_count"] is None
    text, err, _ = await agent.call("NotebookEdit", notebook_path=str(f), cell_id="c1", new_source="# Notes",
                                    cell_type="markdown", edit_mode="insert")
    assert not err and text.startswith("Inserted markdown cell")
    cells = json.loads(f.read_text())["cells"]
    assert [c["cell_type"] for c in cells] == ["code", "markdown"] and cells[1]["source"] == "# Notes"
    text, err, _ = await agent.call("NotebookEdit", notebook_path=str(f), cell_id="c1", new_source="",
                                    edit_mode="delete")
    assert not err
    assert [c["source"] for c in json.loads(f.read_text())["cells"]] == ["# Notes"]


async def test_edit_bytes_on_disk_latin1_utf8_and_no_temp_left(agent: Agent, ws: Path) -> None:
    """The edit writes exactly the new bytes whether they are spliced from the old buffer (Latin-1, ASCII
    UTF-8) or encoded (non-ASCII UTF-8), and leaves no temp file behind."""
    lat = ws / "lat.txt"
    lat.write_bytes("caf\xe9 one\nna\xefve two\n".encode("latin-1"))
    await agent.call("Read", file_path=str(lat))
    text, err, _ = await agent.call("Edit", file_path=str(lat), old_string="naïve two", new_string="naïf 2")
    assert not err, text
    assert lat.read_bytes() == "café one\nnaïf 2\n".encode("latin-1")
    u8 = ws / "u8.txt"
    u8.write_text("héllo\nworld\n", encoding="utf-8")
    await agent.call("Read", file_path=str(u8))
    text, err, _ = await agent.call("Edit", file_path=str(u8), old_string="world", new_string="wörld")
    assert not err, text
    assert u8.read_bytes() == "héllo\nwörld\n".encode()
    asc = ws / "asc.txt"
    asc.write_text("a = 1\nb = 2\n")
    await agent.call("Read", file_path=str(asc))
    text, err, _ = await agent.call("Edit", file_path=str(asc), old_string="b = 2", new_string="b = «2»")
    assert not err, text
    assert "     2\tb = «2»" in text
    assert asc.read_bytes() == "a = 1\nb = «2»\n".encode()
    # The next edit needs no re-read: the recorded digest is the digest of the bytes written.
    text, err, _ = await agent.call("Edit", file_path=str(asc), old_string="a = 1", new_string="a = 0")
    assert not err, text
    assert asc.read_bytes() == "a = 0\nb = «2»\n".encode()
    assert sorted(p.name for p in ws.iterdir() if "sidecar-tmp" in p.name) == []


async def test_denied_edit_in_accept_edits_writes_nothing(agent: Agent, ws: Path) -> None:
    """acceptEdits starts writing the temp file before the review; a deny rule still leaves the file and
    the directory as they were."""
    f = ws / "locked.txt"
    f.write_text("keep\n")
    await agent.call("Read", file_path=str(f))
    agent.session.permissions.session_rules.append(parse_rule("Edit(/locked.txt)", "deny", "session"))
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="keep", new_string="lose")
    assert err, text
    assert f.read_text() == "keep\n"
    assert sorted(p.name for p in ws.iterdir()) == ["locked.txt"]

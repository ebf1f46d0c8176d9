"""Checkpoints and _sidecar/sessions/rewind: files restored, conversation truncated, others' changes kept."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar


def use(name: str, **inp: Any) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": name, "input": inp}]}


async def prompts(harness: Any, session: str, *texts: str) -> list[str]:
    """Each text prompted in turn (each turn ends normally); their user message ids (the rewind ids)."""
    ids = []
    for text in texts:
        result = await harness.process.request("session/prompt", {
            "sessionId": session, "prompt": [{"type": "text", "text": text}]})
        assert result["stopReason"] == "end_turn"
        ids.append(result["_meta"]["sidecar"]["userMessageId"])
    return ids


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
    ids = await prompts(harness, session, "first change", "second change")
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


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_rewind_after_load_in_a_fresh_process_covers_bash(make_sidecar: MakeSidecar, workspace: Path,
                                                              model_server: ScriptedModelServer) -> None:
    """Checkpoints persist (shadow git under the data dir): a new sidecar process loads the session and
    rewinds an Edit, a Bash ``sed -i`` and a Bash-created file; a newer user change is reported, kept."""
    hello, notes, readme, gen = (workspace / n for n in ("hello.py", "notes.txt", "README.md", "gen/out.txt"))
    (workspace / ".gitignore").write_text("*.log\n")
    git = await asyncio.create_subprocess_exec("git", "init", "-q", cwd=workspace)
    assert await git.wait() == 0
    user_git = tree_bytes(workspace / ".git")
    originals = {p: p.read_bytes() for p in (hello, notes, readme)}
    model_server.add_turns([
        use("Read", file_path=str(hello)),
        use("Edit", file_path=str(hello), old_string="Hello", new_string="Howdy"),
        use("Bash", command="sed -i s/beta/BETA/ notes.txt"),
        use("Bash", command="mkdir -p gen && printf 'made\\n' > gen/out.txt && printf 'x\\n' > build.log"),
        {"content": [{"type": "text", "text": "turn one done"}]},
        use("Read", file_path=str(readme)),
        use("Edit", file_path=str(readme), old_string="small", new_string="tiny"),
        {"content": [{"type": "text", "text": "turn two done"}]},
    ])
    first = await make_sidecar()
    session = await first.new_session(workspace)
    await first.process.request("session/set_mode", {"sessionId": session, "modeId": "bypassPermissions"})
    ids = await prompts(first, session, "first change", "second change")
    assert b"Howdy" in hello.read_bytes() and b"BETA" in notes.read_bytes() and gen.read_bytes() == b"made\n"
    assert b"tiny" in readme.read_bytes()
    await first.process.close()
    readme.write_bytes(b"# Mine now\n")  # the user, after the agent and while no sidecar runs

    second = await make_sidecar()
    await second.process.request("session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    result = await second.process.request("_sidecar/sessions/rewind", {"sessionId": session, "toMessageId": ids[0]})
    assert sorted(result["restored"]) == sorted([str(hello), str(notes), str(gen)])
    assert result["conflicts"] == [{"path": str(readme),
                                    "reason": "changed since the agent last wrote it; left as it is"}]
    assert result["historyLength"] == 0
    assert hello.read_bytes() == originals[hello]
    assert notes.read_bytes() == originals[notes]
    assert not gen.exists()
    assert readme.read_bytes() == b"# Mine now\n"
    assert (workspace / "build.log").exists()  # ignored by .gitignore: never snapshotted, never touched
    assert tree_bytes(workspace / ".git") == user_git  # the user's repository untouched
    shadow = Path(second.process.env["XDG_DATA_HOME"]) / "sidecar" / "checkpoints" / session
    assert (shadow / "git" / "HEAD").exists() and (shadow / "checkpoints.json").exists()


async def test_rewind_reports_every_file_it_cannot_restore(make_sidecar: MakeSidecar, workspace: Path,
                                                           model_server: ScriptedModelServer) -> None:
    """A gitignored .env and a file of a nested repository are in no snapshot: the agent's writes to them
    are conflicts of the rewind (named, with the reason), never left silently."""
    import subprocess

    hello, env_file = workspace / "hello.py", workspace / ".env"
    (workspace / ".gitignore").write_text(".env\n")
    env_file.write_text("TOKEN=mine\n")
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)  # noqa: ASYNC221
    code = nested / "code.py"
    code.write_text("X = 1\n")
    model_server.add_turns([
        use("Read", file_path=str(env_file)),
        use("Write", file_path=str(env_file), content="TOKEN=agent\n"),
        use("Read", file_path=str(code)),
        use("Edit", file_path=str(code), old_string="X = 1", new_string="X = 2"),
        use("Read", file_path=str(hello)),
        use("Edit", file_path=str(hello), old_string="Hello", new_string="Howdy"),
        {"content": [{"type": "text", "text": "done"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    result = await harness.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "change them"}]})
    assert env_file.read_text() == "TOKEN=agent\n" and code.read_text() == "X = 2\n"
    rewound = await harness.process.request("_sidecar/sessions/rewind", {
        "sessionId": session, "toMessageId": result["_meta"]["sidecar"]["userMessageId"]})
    assert rewound["restored"] == [str(hello)]
    assert sorted(rewound["conflicts"], key=lambda c: c["path"]) == [
        {"path": str(env_file),
         "reason": "ignored by .gitignore, so no checkpoint holds it; left as the agent wrote it"},
        {"path": str(code), "reason": f"inside the nested git repository {nested}, which checkpoints do not "
                                      "cover; left as the agent wrote it"},
    ]


async def test_a_read_only_bash_takes_no_snapshot_and_a_writing_one_does(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    """Issue 29: a command that cannot write (read-only, and run in a read-only sandbox where there is one)
    neither waits for the turn's snapshot nor takes one (five git processes each); a writing one still
    does, and a rewind still undoes what it wrote."""
    import json

    model_server.add_turns([
        use("Bash", command="ls"),
        use("Bash", command="cat notes.txt"),
        use("Bash", command="printf 'made\\n' > made.txt"),
        {"content": [{"type": "text", "text": "done"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    await harness.process.request("session/set_mode", {"sessionId": session, "modeId": "bypassPermissions"})
    result = await harness.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "look, then make a file"}]})
    assert result["stopReason"] == "end_turn"
    texts = [r["content"][0]["text"] if isinstance(r["content"], list) else r["content"]
             for req in model_server.message_requests()[1:] for r in req.tool_results()]
    assert "notes.txt" in texts[0] and texts[1].startswith("alpha")  # the read-only commands ran
    shadow = Path(harness.process.env["XDG_DATA_HOME"]) / "sidecar" / "checkpoints" / session
    [checkpoint] = json.loads((shadow / "checkpoints.json").read_text())["checkpoints"]
    assert [kind for kind, _ in checkpoint["snapshots"]] == ["turn", "tool"]  # the printf's only
    rewound = await harness.process.request("_sidecar/sessions/rewind", {
        "sessionId": session, "toMessageId": result["_meta"]["sidecar"]["userMessageId"]})
    assert rewound["restored"] == [str(workspace / "made.txt")] and not (workspace / "made.txt").exists()


async def test_a_files_only_restore_can_be_undone_as_the_files_were_before_it(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    hello, notes, new = (workspace / n for n in ("hello.py", "notes.txt", "new.txt"))
    model_server.add_turns([
        use("Read", file_path=str(hello)),
        use("Edit", file_path=str(hello), old_string="Hello", new_string="Howdy"),
        use("Read", file_path=str(notes)),
        use("Edit", file_path=str(notes), old_string="beta", new_string="BETA"),
        use("Write", file_path=str(new), content="brand new\n"),
        {"content": [{"type": "text", "text": "done"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    result = await harness.process.request("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": "change things"}]})
    message = result["_meta"]["sidecar"]["userMessageId"]
    edited = {p: p.read_text() for p in (hello, notes, new)}

    restore = await harness.process.request("_sidecar/sessions/rewind", {
        "sessionId": session, "toMessageId": message, "files": True, "conversation": False})
    assert sorted(restore["restored"]) == sorted(map(str, (hello, notes, new))) and not new.exists()
    # The user changes one restored file before undoing: the undo leaves that one as it is.
    notes.write_text("mine\n")
    undo = await harness.process.request("_sidecar/sessions/undo_rewind", {
        "sessionId": session, "undoId": restore["undoId"]})
    assert sorted(undo["restored"]) == sorted(map(str, (hello, new)))
    assert undo["conflicts"] == [{"path": str(notes), "reason": "changed since the restore; left as it is"}]
    assert hello.read_text() == edited[hello] and new.read_text() == edited[new]
    assert notes.read_text() == "mine\n"
    with pytest.raises(RemoteError, match="Nothing to undo"):
        await harness.process.request("_sidecar/sessions/undo_rewind",
                                      {"sessionId": session, "undoId": restore["undoId"]})
    # The checkpoints are as before the restore: the same restore again puts the files back once more.
    again = await harness.process.request("_sidecar/sessions/rewind", {
        "sessionId": session, "toMessageId": message, "files": True, "conversation": False})
    assert sorted(again["restored"]) == sorted(map(str, (hello, new))) and not new.exists()
    # A restore of the conversation too has no undo.
    both = await harness.process.request("_sidecar/sessions/rewind", {"sessionId": session, "toMessageId": message})
    assert "undoId" not in both


async def test_an_undo_keeps_the_turn_snapshot_a_restore_waited_for(tmp_path: Path) -> None:
    """A restore that starts while the last turn's snapshot is still being taken (the turn was cancelled
    while its first Write waited for it: a large first snapshot) waits for it; the undo after it must give
    back the checkpoints with that snapshot, or the turn has no restore point any more."""
    import threading

    from sidecar.session import Session
    from sidecar.store import SessionStore
    from sidecar.workspace.checkpoints import Checkpoints
    from tests.permissions.perm_support import ScriptedChannel  # asks nothing: any request fails the test

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kept.txt").write_bytes(b"as the user left it\n")
    session = Session(id="sess_undo_snapshot", cwd=ws, channel=ScriptedChannel(),
                      store=SessionStore(tmp_path / "store"))
    cps = Checkpoints(session)
    # The second turn's snapshot is held until the restore waits for it (the real snapshot, later).
    entered, release = threading.Event(), threading.Event()
    take = cps.repo.snapshot
    turns: list[str] = []

    def snapshot(ref: str, message: str) -> str:
        turns.extend([message] if message.startswith("turn ") else [])
        if len(turns) == 2 and message == turns[-1]:
            entered.set()
            assert release.wait(30), "the restore never started"
        return take(ref, message)

    cps.repo.snapshot = snapshot  # type: ignore[method-assign]

    first = await cps.begin_turn()
    await cps.before_tool("Write")
    (ws / "made.txt").write_bytes(b"the agent's\n")
    (ws / "kept.txt").write_bytes(b"the agent's change\n")
    assert await cps.after_tool("Write", tool_call_id="toolu_w1")
    written = {p.name: p.read_bytes() for p in ws.iterdir()}
    second = await cps.begin_turn()
    waiting = asyncio.ensure_future(cps.before_tool("Write"))  # its Write waits for the turn's snapshot
    assert await asyncio.to_thread(entered.wait, 30)
    waiting.cancel()  # the user cancels the turn: the call never runs, the snapshot goes on
    with pytest.raises(asyncio.CancelledError):
        await waiting

    restore = asyncio.ensure_future(cps.rewind(session, {"toMessageId": first, "files": True,
                                                         "conversation": False}))
    await asyncio.sleep(0)  # the restore runs up to its wait for the turn's snapshot
    assert not restore.done()
    release.set()
    result = await restore
    assert sorted(result["restored"]) == [str(ws / "kept.txt"), str(ws / "made.txt")]
    assert (ws / "kept.txt").read_bytes() == b"as the user left it\n" and not (ws / "made.txt").exists()

    undo = await cps.undo_rewind(session, {"undoId": result["undoId"]})
    assert undo["conflicts"] == []
    assert {p.name: p.read_bytes() for p in ws.iterdir()} == written  # byte for byte
    # The second turn still has its restore point: comparing to it finds the snapshot (nothing differs).
    assert await cps.compare(session, {"toMessageId": second}) == {"files": [], "conflicts": []}
    # And the first turn's restore can be made again, to the same bytes.
    again = await cps.rewind(session, {"toMessageId": first, "files": True, "conversation": False})
    assert sorted(again["restored"]) == [str(ws / "kept.txt"), str(ws / "made.txt")]
    assert (ws / "kept.txt").read_bytes() == b"as the user left it\n" and not (ws / "made.txt").exists()


async def test_the_restore_lines_are_replayed_where_the_client_drew_them(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    """A files-only restore, its undo and a conversation rewind each left a line in the chat ("Restored
    new.txt."); session/load replays the record of each (``_meta.sidecar.restoreNotice``) where it was
    drawn: a message's restore and its undo right after that message, a conversation rewind at the end."""
    new, notes = workspace / "new.txt", workspace / "notes.txt"
    model_server.add_turns([
        use("Write", file_path=str(new), content="brand new\n"),
        {"content": [{"type": "text", "text": "one done"}]},
        use("Read", file_path=str(notes)),
        use("Edit", file_path=str(notes), old_string="beta", new_string="BETA"),
        {"content": [{"type": "text", "text": "two done"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    ids = await prompts(harness, session, "first", "second")
    rewind = "_sidecar/sessions/rewind"
    restore = await harness.process.request(rewind, {"sessionId": session, "toMessageId": ids[0], "files": True,
                                                     "conversation": False})
    await harness.process.request("_sidecar/sessions/undo_rewind", {"sessionId": session, "undoId": restore["undoId"]})
    await harness.process.request(rewind, {"sessionId": session, "toMessageId": ids[1]})  # and the conversation

    before = len(harness.process.updates)
    await harness.process.request("session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    replayed = [u["update"] for u in harness.process.updates[before:]]

    def notice(u: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = ((u.get("_meta") or {}).get("sidecar") or {}).get("restoreNotice")
        return found

    shown = [(i, n) for i, u in enumerate(replayed) if (n := notice(u)) is not None]
    assert [n for _, n in shown] == [
        {"kind": "rewind", "restored": sorted(map(str, (new, notes))), "restoredInEditor": [], "conflicts": [],
         "files": True, "conversation": False, "toMessageId": ids[0]},
        {"kind": "undo", "restored": sorted(map(str, (new, notes))), "restoredInEditor": [], "conflicts": [],
         "files": True, "conversation": False, "toMessageId": ids[0]},
        {"kind": "rewind", "restored": [str(notes)], "restoredInEditor": [], "conflicts": [], "files": True,
         "conversation": True, "toMessageId": ids[1]},
    ]
    assert all(replayed[i]["sessionUpdate"] == "agent_message_chunk" and replayed[i]["content"]["text"] == ""
               for i, _ in shown)
    # The first two right after the first prompt; the rewind's at the end (its turn is gone).
    first_prompt = [i for i, u in enumerate(replayed) if u["sessionUpdate"] == "user_message_chunk"]
    assert [i for i, _ in shown[:2]] == [first_prompt[-1] + 1, first_prompt[-1] + 2]
    assert shown[2][0] == len(replayed) - 1
    assert "second" not in [u["content"].get("text") for u in replayed if u["sessionUpdate"] == "user_message_chunk"]


async def test_a_turn_that_only_reads_runs_no_git_and_a_later_write_is_still_undone(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    """Issue 29: the turn's snapshot is taken only once the turn may write. A turn of Read, Glob, Grep and a
    read-only Bash makes no shadow repository at all; a rewind or compare to it has nothing to restore (not
    "no snapshot was taken"); the next turn's Write snapshots, and a rewind to the reading turn undoes it."""
    import json

    made = workspace / "made.txt"
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "notes.txt")}},
                     {"type": "tool_use", "name": "Glob", "input": {"pattern": "*.py"}},
                     {"type": "tool_use", "name": "Grep", "input": {"pattern": "alpha"}},
                     {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]},
        {"content": [{"type": "text", "text": "read"}]},
        use("Write", file_path=str(made), content="made\n"),
        {"content": [{"type": "text", "text": "written"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    [reading] = await prompts(harness, session, "look around")
    results = [r for req in model_server.message_requests()[1:2] for r in req.tool_results()]
    assert len(results) == 4 and not any(r.get("is_error") for r in results), results
    shadow = Path(harness.process.env["XDG_DATA_HOME"]) / "sidecar" / "checkpoints" / session
    [checkpoint] = json.loads((shadow / "checkpoints.json").read_text())["checkpoints"]
    assert checkpoint["snapshots"] == [] and not (shadow / "git").exists()  # no git ran for it
    assert await harness.process.request("_sidecar/sessions/compare", {
        "sessionId": session, "toMessageId": reading}) == {"files": [], "conflicts": []}
    nothing = await harness.process.request("_sidecar/sessions/rewind", {
        "sessionId": session, "toMessageId": reading, "files": True, "conversation": False})
    assert (nothing["restored"], nothing["conflicts"]) == ([], [])

    await prompts(harness, session, "make a file")
    assert made.read_text() == "made\n"
    checkpoints = json.loads((shadow / "checkpoints.json").read_text())["checkpoints"]
    assert [[kind for kind, _ in cp["snapshots"]] for cp in checkpoints] == [[], ["turn", "tool"]]
    rewound = await harness.process.request("_sidecar/sessions/rewind", {
        "sessionId": session, "toMessageId": reading, "files": True, "conversation": False})
    assert rewound["restored"] == [str(made)] and rewound["conflicts"] == [] and not made.exists()


async def test_a_writes_turn_snapshot_starts_while_its_input_streams(
        make_sidecar: MakeSidecar, workspace: Path, model_server: ScriptedModelServer) -> None:
    """The Write call's name streams first (``TOOL_CALL_ANNOUNCED``): the turn's snapshot is taken while its
    input still streams (here ~3 s), so the shadow repository's ref of it is written before the reply's
    last byte. Started only when the call runs, it would be written after."""
    import json
    import time

    content = "x" * 240
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Write",
                      "input": {"file_path": str(workspace / "slow.txt"), "content": content}}],
         "chunk_delay": 0.1, "json_chunk": 8},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    await prompts(harness, session, "write slowly")
    assert (workspace / "slow.txt").read_text() == content
    shadow = Path(harness.process.env["XDG_DATA_HOME"]) / "sidecar" / "checkpoints" / session
    [checkpoint] = json.loads((shadow / "checkpoints.json").read_text())["checkpoints"]
    (kind, _), _tool = checkpoint["snapshots"]
    assert kind == "turn"
    answered = model_server.message_requests()[0].answered
    assert answered is not None
    stream_end = time.time() - (time.monotonic() - answered)  # the same instant on the wall clock
    ref = shadow / "git" / "refs" / "sidecar" / "1"  # the turn's: the first snapshot of the session
    assert ref.stat().st_mtime < stream_end, (ref.stat().st_mtime, stream_end)


async def test_a_writing_call_that_never_ran_still_snapshots_after_the_turns_own(tmp_path: Path) -> None:
    """A Bash call refused or invalid never reaches ``before_tool``, but its ``after_tool`` snapshots (a hook
    may have written): the turn's snapshot comes first, so the changes before it are someone else's, and a
    rewind to the turn restores nothing of them."""
    import json

    from sidecar.session import Session
    from sidecar.store import SessionStore
    from sidecar.workspace.checkpoints import Checkpoints
    from tests.permissions.perm_support import ScriptedChannel

    ws = tmp_path / "ws"
    ws.mkdir()
    mine = ws / "mine.txt"
    mine.write_text("the user's\n")
    session = Session(id="sess_never_ran", cwd=ws, channel=ScriptedChannel(), store=SessionStore(tmp_path / "store"))
    cps = Checkpoints(session)
    first = await cps.begin_turn()
    await cps.before_tool("Write")
    (ws / "made.txt").write_text("the agent's\n")
    assert await cps.after_tool("Write", tool_call_id="toolu_w")
    second = await cps.begin_turn()
    mine.write_text("the user's, changed between turns\n")
    assert not await cps.after_tool("Bash")  # refused before it ran: no before_tool
    saved = json.loads((cps.dir / "checkpoints.json").read_text())["checkpoints"]
    assert [[kind for kind, _ in cp["snapshots"]] for cp in saved] == [["turn", "tool"], ["turn", "tool"]]
    assert await cps.compare(session, {"toMessageId": second}) == {"files": [], "conflicts": []}
    rewound = await cps.rewind(session, {"toMessageId": first, "files": True, "conversation": False})
    assert rewound["restored"] == [str(ws / "made.txt")] and rewound["conflicts"] == []
    assert mine.read_text() == "the user's, changed between turns\n"

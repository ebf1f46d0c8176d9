"""A damaged session file costs its bad lines, never the other sessions: session/list and session/load
skip (and log) what they cannot use. Real files in a temp dir, and the real server over ACP."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError
from sidecar.store import SessionStore
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import start_harness

CWD = "/work/project"


def _line(event: Any) -> bytes:
    return json.dumps(event).encode() + b"\n"


def _write(root: Path, session_id: str, *lines: bytes) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{session_id}.jsonl").write_bytes(b"".join(lines))


def _good(session_id: str, title: str) -> list[bytes]:
    return [_line({"type": "session", "id": session_id, "cwd": CWD, "additionalDirectories": []}),
            _line({"type": "title", "title": title}),
            _line({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}),
            _line({"type": "message", "message": {"role": "assistant", "content": [{"type": "text",
                                                                                     "text": "hello"}]}})]


# Each bad line, put in the middle of an otherwise good session, and what the warning says.
BAD_LINES: dict[str, tuple[bytes, str]] = {
    "latin1": (b'{"type":"title","title":"caf\xe9"}\n', "not a JSON line (UnicodeDecodeError)"),
    "not_json": (b"{oops\n", "not a JSON line"),
    "array": (_line([1, 2, 3]), "a JSON list, not an object"),
    "number": (_line(7), "a JSON int, not an object"),
    "message_without_fields": (_line({"type": "message"}), "a message without a role"),
    "message_empty": (_line({"type": "message", "message": {}}), "a message without a role"),
    "message_no_content": (_line({"type": "message", "message": {"role": "user"}}), "a message without content"),
    "truncate_text": (_line({"type": "truncate", "length": "two"}), "a truncate to a bad length two"),
    "truncate_negative": (_line({"type": "truncate", "length": -1}), "a truncate to a bad length -1"),
    "truncate_float": (_line({"type": "truncate", "length": 1.5}), "a truncate to a bad length 1.5"),
    "truncate_missing": (_line({"type": "truncate"}), "a truncate to a bad length None"),
    "mode_list": (_line({"type": "mode", "mode": ["plan"]}), "a mode change without a mode"),
    "header_bad_dirs": (_line({"type": "session", "cwd": CWD, "additionalDirectories": "/"}),
                        "a session header with fields of the wrong type"),
    "deep": (b"[" * 50_000 + b"]" * 50_000 + b"\n", "not a JSON line (RecursionError)"),
}


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_a_bad_line_is_skipped_and_reported(name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bad, why = BAD_LINES[name]
    root = tmp_path / "sessions"
    good = _good("sess_damaged", "Damaged")
    _write(root, "sess_damaged", *good[:3], bad, good[3])
    _write(root, "sess_fine", *_good("sess_fine", "Fine"))
    store = SessionStore(root)
    with caplog.at_level(logging.WARNING, logger="sidecar.store"):
        listed = store.list(CWD)
        saved = store.load("sess_damaged")
    assert sorted(s.id for s in listed) == ["sess_damaged", "sess_fine"]
    assert saved is not None
    assert saved.title == "Damaged"
    assert [m["role"] for m in saved.messages] == ["user", "assistant"]
    assert any("line 4 skipped" in r.getMessage() and why in r.getMessage() for r in caplog.records), \
        [r.getMessage() for r in caplog.records]


def test_a_torn_last_line_is_not_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "sessions"
    _write(root, "sess_torn", *_good("sess_torn", "Torn"), b'{"type":"message","mess')
    with caplog.at_level(logging.WARNING, logger="sidecar.store"):
        saved = SessionStore(root).load("sess_torn")
    assert saved is not None and len(saved.messages) == 2
    assert caplog.records == []


def test_an_unreadable_file_is_left_out_of_the_list(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "sessions"
    _write(root, "sess_fine", *_good("sess_fine", "Fine"))
    (root / "sess_dir.jsonl").mkdir()  # a directory where a file should be: reading it fails
    _write(root, "sess_binary", b"\x00\x01\x02\xff\xfe" * 1000)
    with caplog.at_level(logging.WARNING, logger="sidecar.store"):
        listed = SessionStore(root).list()
    assert [s.id for s in listed if s.cwd] == ["sess_fine"]
    assert any("sess_dir.jsonl" in r.getMessage() for r in caplog.records)


def test_a_valid_truncate_still_truncates(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    _write(root, "sess_t", *_good("sess_t", "T"), _line({"type": "truncate", "length": 1}))
    saved = SessionStore(root).load("sess_t")
    assert saved is not None and [m["role"] for m in saved.messages] == ["user"]


async def test_session_list_and_load_over_acp_survive_damaged_files(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path) -> None:
    root = tmp_path / "xdg-data" / "sidecar" / "sessions"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    cwd = str(workspace)

    def good(session_id: str, title: str) -> list[bytes]:
        return [line.replace(CWD.encode(), cwd.encode()) for line in _good(session_id, title)]

    _write(root, "sess_fine", *good("sess_fine", "Fine"))
    for name, (bad, _) in BAD_LINES.items():
        lines = good(f"sess_{name}", name)
        _write(root, f"sess_{name}", *lines[:3], bad, lines[3])
    _write(root, "sess_garbage", b"\xff" * 100 + b"\n" + b"[[[[\n")
    harness = await start_harness("acp", sidecar_env, model_server, tmp_path)
    try:
        listed = (await harness.process.request("session/list", {"cwd": cwd}))["sessions"]
        assert sorted(s["sessionId"] for s in listed) == sorted(["sess_fine", *(f"sess_{n}" for n in BAD_LINES)])
        loaded = await harness.process.request("session/load", {"sessionId": "sess_latin1", "cwd": cwd,
                                                                 "mcpServers": []})
        assert loaded["modes"]["currentModeId"] == "default"
        replayed = harness.process.updates_for("sess_latin1")
        assert [u["sessionUpdate"] for u in replayed][:2] == ["user_message_chunk", "agent_message_chunk"]
        with pytest.raises(RemoteError) as missing:
            await harness.process.request("session/load", {"sessionId": "sess_absent", "cwd": cwd,
                                                           "mcpServers": []})
        assert missing.value.code == -32002
    finally:
        await harness.process.close()
    stderr = (tmp_path / "sidecar-acp.stderr").read_text(errors="replace")
    assert "line 4 skipped" in stderr


def test_append_makes_the_store_folder_again_when_it_was_removed(tmp_path: Path) -> None:
    """The folder is made on the first write (not checked on every write after): a folder removed while
    the sidecar runs is made again by the next write, and nothing is lost from that write on."""
    root = tmp_path / "deep" / "sessions"
    store = SessionStore(root)
    store.append("sess_a", {"type": "title", "title": "one"})
    shutil.rmtree(tmp_path / "deep")
    store.append("sess_a", {"type": "title", "title": "two"})
    store.append("sess_a", {"type": "title", "title": "three"})
    lines = (root / "sess_a.jsonl").read_text().splitlines()
    assert [json.loads(line)["title"] for line in lines] == ["two", "three"]
    with pytest.raises(ValueError):
        store.append("../x", {"type": "title", "title": "bad id"})

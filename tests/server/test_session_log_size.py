"""The session log keeps a long output once (issue 29): the tool result in the conversation holds it whole;
the card's update kept for the replay holds its start and end only. A whole-file Read of 4 MB was logged
twice (and encoded twice)."""

from __future__ import annotations

import json
from pathlib import Path

from sidecar.session import REPLAY_TEXT_MAX, SessionLog
from sidecar.store import SessionStore


def test_a_long_card_text_is_logged_as_its_start_and_end(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    log = SessionLog(store, "sess_big")
    text = "".join(f"{i:>6}\tline {i}\n" for i in range(1, 200_001))
    message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}]}
    log.message(message)
    log.update({"sessionUpdate": "tool_call_update", "toolCallId": "toolu_1", "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": text}}]})
    log.update({"sessionUpdate": "tool_call_update", "toolCallId": "toolu_2", "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "short"}}]})
    lines = [json.loads(line) for line in store.path("sess_big").read_text().splitlines()]
    assert lines[0]["message"] == message  # the conversation keeps every character
    shown = lines[1]["update"]["content"][0]["content"]["text"]
    assert len(shown) < REPLAY_TEXT_MAX + 100 < len(text)
    assert shown.startswith("     1\tline 1\n") and shown.endswith("200000\tline 200000\n")
    kept = REPLAY_TEXT_MAX * 2 // 3 + REPLAY_TEXT_MAX // 3
    assert f"\n… [{len(text) - kept} characters of this output are not kept for the replay] …\n" in shown
    assert lines[2]["update"]["content"][0]["content"]["text"] == "short"
    saved = store.load("sess_big")
    assert saved is not None and saved.messages == [message]

"""session/load replays what the live client was shown (issue 12): every kind of update, in order."""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path
from typing import Any

from sidecar.client.connection import RemoteError
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness, reject_once, start_harness

FIXTURES = Path(__file__).parent / "fixtures"

# What the client knows on its own side of each prompt (its prompt, the answer) is replayed as updates.
Turn = tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]


def _strip_ids(update: dict[str, Any]) -> dict[str, Any]:
    """An update without what differs between two runs by design: prompt ids (timestamps are kept)."""
    out = dict(update)
    out.pop("messageId", None)
    meta = json.loads(json.dumps(out.get("_meta") or {}))
    meta.get("sidecar", {}).pop("promptId", None)
    meta.get("sidecar", {}).pop("userMessageId", None)
    if out.get("_meta") is not None:
        out["_meta"] = meta
    return out


def _expected(turns: list[Turn]) -> list[dict[str, Any]]:
    """The live stream with each prompt before its turn and its answer after it, as the replay shows them."""
    out: list[dict[str, Any]] = []
    for prompt, live, answer in turns:
        out += [{"sessionUpdate": "user_message_chunk", "content": b, "_meta": {"sidecar": {}}} for b in prompt]
        out += live
        out.append({"sessionUpdate": "agent_message_chunk", "_meta": {"sidecar": {"turnEnd": answer}},
                    "content": {"type": "text", "text": ""}})
    return out


async def _turn(harness: Harness, session: str, prompt: list[dict[str, Any]],
                cancel_after: float | None = None) -> Turn:
    start = len(harness.process.updates)
    request = asyncio.create_task(harness.process.request(
        "session/prompt", {"sessionId": session, "prompt": prompt}, timeout=60))
    if cancel_after is not None:  # once some of the answer was shown
        for _ in range(400):
            if any(u["update"]["sessionUpdate"] == "agent_message_chunk" for u in harness.process.updates[start:]):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(cancel_after)
        await harness.process.notify("session/cancel", {"sessionId": session})
    answer: dict[str, Any]
    try:
        result = await request
        # What the client learnt at the turn's end: the stop reason and what the turn cost.
        answer = {"stopReason": result["stopReason"], "spend": result["_meta"]["sidecar"]["spend"]}
    except RemoteError as exc:
        answer = {"stopReason": "error", "error": {"code": exc.code, "message": exc.message, "data": exc.data}}
    live = [u["update"] for u in harness.process.updates[start:] if u["sessionId"] == session]
    return prompt, [u for u in live if u["sessionUpdate"] != "available_commands_update"], answer


def _comparable(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for u in updates:
        u = _strip_ids(u)
        end = (u.get("_meta") or {}).get("sidecar", {}).get("turnEnd")
        if end is not None:  # the marker's text is the client's to draw; its data is compared
            u["content"] = {"type": "text", "text": ""}
        out.append(u)
    return out


async def test_replay_equals_live(sidecar_env: dict[str, str], model_server: ScriptedModelServer,
                                  workspace: Path, tmp_path: Path) -> None:
    notes, hello = workspace / "notes.txt", workspace / "hello.py"
    todos = [{"content": "Read", "status": "in_progress", "activeForm": "Reading"},
             {"content": "Fix", "status": "pending", "activeForm": "Fixing"}]
    model_server.add_turns([
        # 1: text, Read, Glob, a plan, Edit, a rejected Bash, a plan update
        {"content": [{"type": "text", "text": "Looking around."},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": str(notes)}},
                     {"type": "tool_use", "name": "Glob", "input": {"pattern": "*.py", "path": str(workspace)}}]},
        {"content": [{"type": "tool_use", "name": "TodoWrite", "input": {"todos": todos}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(hello)}}]},
        {"content": [{"type": "tool_use", "name": "Edit", "input": {
            "file_path": str(hello), "old_string": "Hello", "new_string": "Hi"}}]},
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf build",
                                                                     "description": "Clean"}}]},
        {"content": [{"type": "tool_use", "name": "TodoWrite", "input": {"todos": [
            dict(t, status="completed") for t in todos]}}]},
        {"content": [{"type": "text", "text": "Done: greeting **changed**."}]},
        # 2: a sub-agent with its own calls
        {"content": [{"type": "tool_use", "name": "Task", "input": {
            "description": "Find alpha", "prompt": "Look for alpha", "subagent_type": "Explore"}}]},
        {"content": [{"type": "tool_use", "name": "Grep", "input": {"pattern": "alpha", "path": str(workspace)}}]},
        {"content": [{"type": "text", "text": "alpha is in notes.txt"}]},
        {"content": [{"type": "text", "text": "The agent found it."}]},
        # 3: cancelled while streaming; 4: the next prompt is its own message
        {"content": [{"type": "text", "text": "one two three four five six seven eight"}],
         "text_chunk": 4, "chunk_delay": 0.3},
        {"content": [{"type": "text", "text": "Deploys go through CI."}]},
        # 5: the API fails on every attempt
        *[{"fault": "http", "status": 500} for _ in range(3)],
    ])
    sidecar_env = {**sidecar_env, "SIDECAR_MAX_RETRIES": "2"}
    live = await start_harness("acp", sidecar_env, model_server, tmp_path)
    turns: list[Turn] = []
    try:
        session = (await live.process.request("session/new", {"cwd": str(workspace), "mcpServers": []}))["sessionId"]
        policy = iter([reject_once])

        async def permission(params: dict[str, Any]) -> dict[str, Any]:
            if "rm -rf" in json.dumps(params["toolCall"]):
                return await next(policy)(params)
            kind = next(o for o in params["options"] if o["kind"] == "allow_once")
            return {"outcome": {"outcome": "selected", "optionId": kind["optionId"]}}

        live.permission_policy = permission
        mention = {"type": "resource_link", "uri": notes.as_uri(), "name": "notes.txt"}
        turns.append(await _turn(live, session, [{"type": "text", "text": "Tidy up\nplease"}, mention]))
        turns.append(await _turn(live, session, [{"type": "text", "text": "Where is alpha?"}]))
        turns.append(await _turn(live, session, [{"type": "text", "text": "Count slowly"}], cancel_after=0.2))
        turns.append(await _turn(live, session, [{"type": "text", "text": "Ask about deploying"}]))
        turns.append(await _turn(live, session, [{"type": "text", "text": "Once more"}]))
    finally:
        await live.process.close()

    retries = [n["params"] for n in live.process.notifications if n["method"] == "_sidecar/model_retry"]
    assert [(r["attempt"], r["maxAttempts"], r["status"], r["errorType"]) for r in retries] == [
        (1, 3, 500, "api_error"), (2, 3, 500, "api_error")]
    assert retries[0]["message"].startswith("The model API failed (HTTP 500 api_error")
    assert "attempt 2 of 3" in retries[0]["message"] and retries[0]["sessionId"] == session
    kinds = {u["sessionUpdate"] for _, updates, _ in turns for u in updates}
    assert {"agent_message_chunk", "tool_call", "tool_call_update", "plan", "usage_update"} <= kinds
    assert turns[2][2]["stopReason"] == "cancelled" and "one" in json.dumps(turns[2][1])
    assert turns[4][2]["stopReason"] == "error"
    nested = [u for u in turns[1][1] if u["sessionUpdate"] == "tool_call"
              and u["_meta"]["sidecar"].get("parentToolCallId")]
    assert nested and nested[0]["title"].startswith("[Explore")

    fresh = await start_harness("acp", sidecar_env, model_server, tmp_path)
    try:
        start = len(fresh.process.updates)
        await fresh.process.request("session/load", {"sessionId": session, "cwd": str(workspace),
                                                     "mcpServers": []})
        replay = [u["update"] for u in fresh.process.updates[start:]
                  if u["update"]["sessionUpdate"] != "available_commands_update"]
    finally:
        await fresh.process.close()

    assert _comparable(replay) == _comparable(_expected(turns))
    # Each prompt is one message of its own (a cancelled turn never swallows the next prompt).
    users = [u for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert len({u["messageId"] for u in users}) == 5
    assert users[1]["content"] == mention
    # The error was said once, readably; the replay's marker carries it.
    error = turns[4][2]["error"]
    assert error["message"].startswith("The model API answered HTTP 500 (api_error)")
    assert "after 3 attempts" in error["message"] and "{" not in error["message"]
    assert error["data"]["status"] == 500 and error["data"]["errorType"] == "api_error"
    assert not any(error["message"] in json.dumps(u) for u in turns[4][1])
    assert replay[-1]["content"]["text"].strip() == error["message"]
    stopped = [u for u in replay if (u.get("_meta") or {}).get("sidecar", {}).get("turnEnd", {}).get(
        "stopReason") == "cancelled"]
    assert stopped and "Stopped" in stopped[0]["content"]["text"]


async def test_a_log_of_the_previous_release_still_loads(sidecar_env: dict[str, str],
                                                         model_server: ScriptedModelServer,
                                                         workspace: Path, tmp_path: Path) -> None:
    """A log written by 0.1 (messages only, a cancelled prompt followed by one with a mention) replays
    one message per prompt and the mention as the resource link the client sent."""
    sessions = tmp_path / "xdg-data" / "sidecar" / "sessions"
    sessions.mkdir(parents=True)
    log = (FIXTURES / "sess_0a1b2c3d4e5f6a7b.jsonl").read_text().replace("/WORKSPACE", str(workspace))
    (sessions / "sess_0a1b2c3d4e5f6a7b.jsonl").write_text(log)
    harness = await start_harness("acp", sidecar_env, model_server, tmp_path)
    try:
        await harness.process.request("session/load", {"sessionId": "sess_0a1b2c3d4e5f6a7b",
                                                       "cwd": str(workspace), "mcpServers": []})
        replay = harness.process.updates_for("sess_0a1b2c3d4e5f6a7b")
    finally:
        await harness.process.close()
    users = [u for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"] for u in users] == [
        {"type": "text", "text": "Count slowly"},
        {"type": "text", "text": "What is in the notes?"},
        {"type": "resource_link", "uri": (workspace / "notes.txt").as_uri(), "name": "notes.txt"}]
    assert users[0]["messageId"] != users[1]["messageId"] == users[2]["messageId"]
    assert harness.text("sess_0a1b2c3d4e5f6a7b") == "one two three four five six"


async def test_no_network_is_known_within_seconds(sidecar_env: dict[str, str], model_server: ScriptedModelServer,
                                                  workspace: Path, tmp_path: Path) -> None:
    """An endpoint nobody answers: the first retry notice names it at once; the final error says what to check."""
    import contextlib
    import socket
    import time

    from rich.console import Console

    from sidecar.client.render import UpdateRenderer

    with socket.socket() as s:  # a loopback port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**sidecar_env, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "SIDECAR_MAX_RETRIES": "2"}
    harness = await start_harness("acp", env, model_server, tmp_path)
    console = Console(record=True, width=200)
    renderer = UpdateRenderer(console)
    seen: list[float] = []

    def on_notification(method: str, params: dict[str, Any]) -> None:
        if method == "_sidecar/model_retry":
            seen.append(time.monotonic())
            renderer.retry(params)

    harness.process.on_notification = on_notification
    try:
        session = await harness.new_session(workspace)
        with contextlib.suppress(RemoteError):  # the first prompt also imports the SDK (seconds on a busy machine)
            await harness.prompt(session, "warm up")
        seen.clear()
        started = time.monotonic()
        try:
            await harness.prompt(session, "hello")
            raise AssertionError("the prompt should fail")
        except RemoteError as exc:
            message, data = exc.message, exc.data
    finally:
        await harness.process.close()
    assert seen and seen[0] - started < 5
    assert f"The model API at http://127.0.0.1:{port} is unreachable" in message
    assert "after 3 attempts" in message and "Check the network" in message
    assert data["errorType"] == "connection_error" and data["retryable"] is True and "status" not in data
    printed = console.export_text()
    assert "↻ The model API failed (connection error" in printed and "attempt 2 of 3" in printed


def test_a_large_diff_is_logged_as_the_lines_that_changed(tmp_path: Path) -> None:
    from sidecar.session import SessionLog
    from sidecar.store import SessionStore

    old = "".join(f"line {i}\n" for i in range(100_000))
    new = old.replace("line 50000\n", "line fifty thousand\n")
    store = SessionStore(tmp_path)
    log = SessionLog(store, "sess_big")
    diff = {"type": "diff", "path": "/w/big.txt", "oldText": old, "newText": new}
    # A tool call's pending and completed updates carry the same diff (the second reuses the excerpt);
    # then another diff of the same file.
    log.update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "pending", "content": [diff]})
    log.update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": [diff]})
    newer = new.replace("line 70000\n", "")
    log.update({"sessionUpdate": "tool_call_update", "toolCallId": "t2", "content": [
        {"type": "diff", "path": "/w/big.txt", "oldText": new, "newText": newer}]})
    saved = store.path("sess_big").read_text()
    assert len(saved) < 6_000  # not 3 × 2 × 1.3 MB of the texts
    logged, again, other = [json.loads(line)["update"]["content"][0] for line in saved.splitlines()]
    assert again == logged
    assert other["oldText"] == "line 69997\nline 69998\nline 69999\nline 70000\nline 70001\nline 70002\nline 70003\n"
    assert other["newText"] == "line 69997\nline 69998\nline 69999\nline 70001\nline 70002\nline 70003\n"
    assert other["_meta"]["sidecar"]["excerpt"]["fromLine"] == 69998
    assert logged["oldText"] == "line 49997\nline 49998\nline 49999\nline 50000\nline 50001\nline 50002\nline 50003\n"
    assert logged["newText"] == logged["oldText"].replace("line 50000\n", "line fifty thousand\n")
    assert logged["_meta"]["sidecar"]["excerpt"] == {"fromLine": 49998, "oldLength": len(old), "newLength": len(new)}


def _excerpt_by_lines(old: str, new: str) -> tuple[str, str, int]:
    """The excerpt's definition, the slow way: split both texts at every ``\\n``, drop the equal lines at
    both ends except three either side of the change."""
    a, b = [p for p in re.split(r"(?<=\n)", old) if p], [p for p in re.split(r"(?<=\n)", new) if p]
    shorter = min(len(a), len(b))
    head = 0
    while head < shorter and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < shorter - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start, keep_tail = max(0, head - 3), max(0, tail - 3)
    return "".join(a[start:len(a) - keep_tail]), "".join(b[start:len(b) - keep_tail]), start + 1


def test_the_logged_excerpt_is_the_changed_lines_with_three_either_side_for_any_change() -> None:
    """150 random edits (inserted, deleted, replaced lines; changes inside a line; no final newline; CRLF,
    lone CR and form feeds, which are no line break here) on texts over the 256 KiB cap: the excerpt,
    found by block compares, is exactly the one of the line-by-line definition."""
    from sidecar.session import diff_excerpt

    rng = random.Random(18)
    pieces = ["a\n", "b\n", "\n", "same\n", "x\r\n", "y\rz\n", "\f\n", "tail", "a", "\n\n"]
    for case in range(150):
        lines = [f"line {i} {rng.choice(pieces)}" if rng.random() < 0.7 else rng.choice(pieces)
                 for i in range(rng.choice([14_000, 16_000]))]
        old = "".join(lines)
        if rng.random() < 0.2:
            old = old.rstrip("\n")
        new = old
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            at = rng.randrange(len(new) + 1)
            if rng.random() < 0.5:  # snap to a line start sometimes
                at = new.rfind("\n", 0, at) + 1
            cut = rng.choice([0, 0, 1, 2, 7, 40, 300])
            new = new[:at] + rng.choice(["", "q", "\n", "new line\n", "a\n", "b\n\n", "\r"]) + new[at + cut:]
        if rng.random() < 0.1:
            new = new + rng.choice(["", "\n", "end"])
        logged = diff_excerpt({"type": "diff", "path": "/w/f.txt", "oldText": old, "newText": new})
        want_old, want_new, from_line = _excerpt_by_lines(old, new)
        assert (logged["oldText"], logged["newText"]) == (want_old, want_new), case
        assert logged["_meta"]["sidecar"]["excerpt"] == {"fromLine": from_line, "oldLength": len(old),
                                                         "newLength": len(new)}, case

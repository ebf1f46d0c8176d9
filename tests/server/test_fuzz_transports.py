"""No input stops the server: malformed framing, deep nesting, huge and non-finite numbers, bad ids, and
wrong param types for every method of the method table, on both transports. After every bad input the
process answers the next valid request; a request never gets -32603 for what the client sent."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError, SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO, Harness, start_harness

JUNK_VALUES: list[Any] = [42, -1, 1.5, True, None, "", "x", "\u0000", [], [1], ["a", 2], {}, {"a": 1},
                          {"type": "text"}, 10**30]
JUNK_KEYS = ["sessionId", "cwd", "mcpServers", "additionalDirectories", "prompt", "modeId", "toMessageId",
             "files", "conversation", "protocolVersion", "clientCapabilities", "_meta", "visible"]


def _methods() -> list[str]:
    from sidecar.app import build_core
    from sidecar.store import SessionStore

    return sorted(build_core(store=SessionStore(Path("/nonexistent-sidecar-store"))).methods)


def _record_replies(process: SidecarProcess) -> list[dict[str, Any]]:
    """Every reply the sidecar sends (also those with an id nobody waits for)."""
    replies: list[dict[str, Any]] = []
    dispatch = process._dispatch

    def recording(message: dict[str, Any]) -> None:
        if "method" not in message:
            replies.append(message)
        dispatch(message)

    process._dispatch = recording  # type: ignore[method-assign]
    return replies


async def _alive(process: SidecarProcess) -> None:
    result = await process.request("session/list", {}, timeout=20)
    assert isinstance(result["sessions"], list)


def _frame(framing: str, body: bytes) -> bytes:
    return (f"Content-Length: {len(body)}\r\n\r\n".encode() + body) if framing == "lsp" else body + b"\n"


# (raw body, the error code the reply carries, the id it echoes); sent on both transports.
BAD_MESSAGES: list[tuple[bytes, int, Any]] = [
    (b"{this is not json", -32700, None),
    (b"\xff\xfe\x00garbage", -32700, None),
    (b"[1, 2]", -32600, None),
    (b"42", -32600, None),
    (b'"just a string"', -32600, None),
    (b"[" * 100_000 + b"]" * 100_000, -32700, None),
    (b'{"a":' * 5_000 + b"1" + b"}" * 5_000, -32700, None),
    (b'{"jsonrpc":"2.0","id":"deep","method":"session/list","params":' + b"[" * 500 + b"]" * 500 + b"}",
     -32700, None),
    (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"session/list"}', -32700, None),
    (b'{"jsonrpc":"2.0","id":1e400,"method":"session/list"}', -32700, None),
    (b'{"jsonrpc":"2.0","id":NaN,"method":"session/list"}', -32700, None),
    (b'{"jsonrpc":"2.0","id":"n","method":"session/list","params":{"cwd":-Infinity}}', -32700, None),
    (b'{"jsonrpc":"2.0","id":[1,2],"method":"session/list"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"session/list"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":true,"method":"session/list"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"session/list"}', -32600, None),
    (b'{"jsonrpc":"1.0","id":"old","method":"session/list"}', -32600, "old"),
    (b'{"jsonrpc":"2.0","id":"m","method":42}', -32600, "m"),
    (b'{"jsonrpc":"2.0","id":"p","method":"session/list","params":"a string"}', -32602, "p"),
    (b'{"jsonrpc":"2.0","id":"q","method":"session/list","params":[1,2]}', -32602, "q"),
    (b'{"jsonrpc":"2.0","id":"r","method":"no/such_method"}', -32601, "r"),
]
# Replies from the client that match nothing: dropped without an answer, the server stays up (a reply
# whose id is not an id at all is an invalid message: -32600 with id null).
BAD_MESSAGES += [
    (b'{"jsonrpc":"2.0","id":[1],"result":{}}', -32600, None),
    (b'{"jsonrpc":"2.0","id":{"x":1},"error":{"code":1,"message":"m"}}', -32600, None),
]
BAD_REPLIES = [
    b'{"jsonrpc":"2.0","id":999999,"result":null}',
    b'{"jsonrpc":"2.0","id":"zzz","error":"not an object"}',
]
LSP_FRAMING_JUNK = [
    b'Content-Length: abc\r\n\r\n{"jsonrpc":"2.0","id":"lost","method":"session/list"}',
    b'Content-Type: application/json\r\n\r\n{"jsonrpc":"2.0","id":"lost2","method":"session/list"}',
    b"garbage between messages\r\n",
    b"\r\n\r\n",
    b"Content-Length: 99999999999999999\r\n\r\n",
    b"X-Long: " + b"a" * 100_000 + b"\r\n\r\n",
    b"content-length:   -5\r\n\r\n",
]


@pytest.mark.parametrize("framing", ["acp", "lsp"])
async def test_no_line_stops_the_server(framing: str, sidecar_env: dict[str, str],
                                        model_server: ScriptedModelServer, tmp_path: Path) -> None:
    harness = await start_harness(framing, sidecar_env, model_server, tmp_path)
    process = harness.process
    replies = _record_replies(process)
    try:
        for body, code, echoed in BAD_MESSAGES:
            replies.clear()
            await process.send_raw(_frame(framing, body))
            await _alive(process)
            errors = [r for r in replies if "error" in r]
            assert [(e["error"]["code"], e["id"]) for e in errors] == [(code, echoed)], body[:80]
            assert all(isinstance(e["error"]["message"], str) for e in errors)
        for body in BAD_REPLIES:
            replies.clear()
            await process.send_raw(_frame(framing, body))
            await _alive(process)
            assert [r for r in replies if "error" in r] == [], body
        if framing == "lsp":
            for junk in LSP_FRAMING_JUNK:
                await process.send_raw(junk)
                await _alive(process)
    finally:
        await process.close()
    assert process.proc is not None and process.proc.returncode in (0, None)


def _junk_params(session_id: str) -> list[Any]:
    cases: list[Any] = ["a string", 7, [1, 2], True]
    for key in JUNK_KEYS:
        for value in JUNK_VALUES:
            cases.append({key: value})
            cases.append({"sessionId": session_id, key: value})
    return cases


@pytest.mark.parametrize("framing", ["acp", "lsp"])
async def test_wrong_param_types_for_every_method_are_invalid_params(
        framing: str, sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path) -> None:
    harness: Harness = await start_harness(framing, sidecar_env, model_server, tmp_path)
    process = harness.process
    workspace = tmp_path / "ws"
    workspace.mkdir()
    codes: dict[int, int] = {}
    try:
        session = await harness.new_session(workspace)
        methods = [m for m in _methods() if not (framing == "lsp" and m == "initialize")]
        assert {"session/new", "session/prompt", "session/load", "_sidecar/sessions/rewind"} <= set(methods)
        for method in methods:
            for params in _junk_params(session):
                try:
                    await process.request(method, params, timeout=20)
                    codes[0] = codes.get(0, 0) + 1
                except RemoteError as err:
                    assert err.code != -32603, f"{method} {json.dumps(params)[:200]}: {err.message}"
                    assert err.code in (-32602, -32002, -32050), (method, params, err.code, err.message)
                    codes[err.code] = codes.get(err.code, 0) + 1
            await _alive(process)
        # The junk above really reached the handlers' checks.
        assert codes.get(-32602, 0) > 500 and codes.get(-32002, 0) > 0
        # And the session still works.
        model_server.add_turns([{"content": [{"type": "text", "text": "still here"}]}])
        assert await harness.prompt(session, "hello") == "end_turn"
    finally:
        await process.close()


async def test_acp_requests_before_initialize_are_invalid_requests(
        sidecar_env: dict[str, str], tmp_path: Path) -> None:
    process = SidecarProcess(framing="acp", env=sidecar_env, cwd=str(REPO),
                             argv=[sys.executable, "-m", "sidecar", "serve", "--acp"],
                             stderr=open(tmp_path / "stderr", "wb"))
    await process.start()
    try:
        for method in ("session/new", "session/list", "session/prompt"):
            with pytest.raises(RemoteError) as err:
                await process.request(method, {"cwd": str(tmp_path), "mcpServers": []})
            assert err.value.code == -32600
            assert "initialize" in err.value.message
        await process.notify("session/cancel", {"sessionId": "sess_x"})  # ignored, no reply
        with pytest.raises(RemoteError) as bad_init:
            await process.request("initialize", {"clientCapabilities": {}})
        assert bad_init.value.code == -32602
        await process.initialize()
        await _alive(process)
    finally:
        await process.close()


def test_an_outgoing_message_with_a_non_finite_float_is_standard_json() -> None:
    """``jsonrpc.dumps`` (every ACP message out) keeps one encoder per option set: a NaN or an infinity
    goes out as null whichever options came first, and the options still apply."""
    from sidecar.server import jsonrpc

    message = {"ok": 1.5, "bad": [float("nan"), float("inf")], "text": "ü"}
    assert jsonrpc.dumps(message, ensure_ascii=False, separators=(",", ":")) == \
        '{"ok":1.5,"bad":[null,null],"text":"ü"}'
    assert jsonrpc.dumps(message) == '{"ok": 1.5, "bad": [null, null], "text": "\\u00fc"}'
    assert jsonrpc.dumps({"n": 1}, ensure_ascii=False, separators=(",", ":")) == '{"n":1}'

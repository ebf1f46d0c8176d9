"""Every error path answers with ACP's code (docs/protocol.md, Errors): one table, asserted over ACP
against the real server, the scripted model and real files."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError, SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO, Harness, start_harness


async def _wait_for(predicate: Callable[[], bool], timeout: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


Ctx = dict[str, Any]
# name → (method, params built from the context, expected code, expected data.kind or None)
TABLE: list[tuple[str, str, Callable[[Ctx], dict[str, Any]], int, str | None]] = [
    ("unknown method", "session/fly", lambda c: {}, -32601, None),
    ("initialize without protocolVersion", "initialize", lambda c: {"clientCapabilities": {}}, -32602, None),
    ("session/new cwd not a string", "session/new", lambda c: {"cwd": 42, "mcpServers": []}, -32602, None),
    ("session/new cwd relative", "session/new", lambda c: {"cwd": "rel/dir", "mcpServers": []}, -32602, None),
    ("session/new additionalDirectories junk", "session/new",
     lambda c: {"cwd": c["cwd"], "mcpServers": [], "additionalDirectories": [1]}, -32602, None),
    ("session/load without cwd", "session/load", lambda c: {"sessionId": c["session"]}, -32602, None),
    ("session/new cwd with NUL", "session/new", lambda c: {"cwd": c["cwd"] + "\0x", "mcpServers": []}, -32602, None),
    ("session/new cwd with a newline", "session/new", lambda c: {"cwd": c["cwd"] + "\nx", "mcpServers": []},
     -32602, None),
    ("session/new additionalDirectories with NUL", "session/new",
     lambda c: {"cwd": c["cwd"], "mcpServers": [], "additionalDirectories": ["/tmp\0x"]}, -32602, None),
    ("session/load cwd with NUL", "session/load",
     lambda c: {"sessionId": c["session"], "cwd": c["cwd"] + "\0", "mcpServers": []}, -32602, None),
    ("session/load cwd relative", "session/load",
     lambda c: {"sessionId": c["session"], "cwd": "rel/dir", "mcpServers": []}, -32602, None),
    ("session/load additionalDirectories relative", "session/load",
     lambda c: {"sessionId": c["session"], "cwd": c["cwd"], "mcpServers": [], "additionalDirectories": ["r"]},
     -32602, None),
    ("session/list cwd not a string", "session/list", lambda c: {"cwd": 7}, -32602, None),
    ("session/prompt without prompt", "session/prompt", lambda c: {"sessionId": c["session"]}, -32602, None),
    ("session/prompt empty prompt", "session/prompt", lambda c: {"sessionId": c["session"], "prompt": []},
     -32602, None),
    ("session/set_mode unknown mode", "session/set_mode", lambda c: {"sessionId": c["session"], "modeId": "yolo"},
     -32602, None),
    ("rewind without toMessageId", "_sidecar/sessions/rewind", lambda c: {"sessionId": c["session"]}, -32602, None),
    ("params not an object", "session/list", lambda c: [1, 2], -32602, None),  # type: ignore[dict-item]
    ("session/prompt unknown session", "session/prompt",
     lambda c: {"sessionId": "sess_nope", "prompt": [{"type": "text", "text": "hi"}]}, -32002, None),
    ("session/set_mode unknown session", "session/set_mode", lambda c: {"sessionId": "sess_nope", "modeId": "plan"},
     -32002, None),
    ("rewind unknown session", "_sidecar/sessions/rewind", lambda c: {"sessionId": "sess_nope", "toMessageId": "m"},
     -32002, None),
    ("session/load never saved", "session/load",
     lambda c: {"sessionId": "sess_never", "cwd": c["cwd"], "mcpServers": []}, -32002, None),
    ("rewind unknown message id", "_sidecar/sessions/rewind",
     lambda c: {"sessionId": c["session"], "toMessageId": "msg_nope"}, -32002, None),
    ("bypass disabled by managed settings", "session/set_mode",
     lambda c: {"sessionId": c["session"], "modeId": "bypassPermissions"}, -32050, "mode_disabled"),
]


async def _code(process: SidecarProcess, method: str, params: Any) -> tuple[int, Any]:
    with pytest.raises(RemoteError) as err:
        await process.request(method, params, timeout=30)
    assert err.value.code != -32000, "-32000 is ACP's authentication required"
    return err.value.code, err.value.data


async def test_every_error_path_has_its_code(sidecar_env: dict[str, str], model_server: ScriptedModelServer,
                                             tmp_path: Path) -> None:
    (tmp_path / "managed-settings.json").write_text(json.dumps(
        {"permissions": {"disableBypassPermissionsMode": "disable"}}))
    harness: Harness = await start_harness("acp", sidecar_env, model_server, tmp_path)
    process = harness.process
    ws = tmp_path / "ws"
    ws.mkdir()
    try:
        ctx: Ctx = {"cwd": str(ws), "session": await harness.new_session(ws)}
        for name, method, params, code, kind in TABLE:
            got, data = await _code(process, method, params(ctx))
            assert got == code, f"{name}: {got} != {code}"
            if kind is not None:
                assert data["kind"] == kind and data["retryable"] is False, name

        # The model unavailable after the retries: -32050 model_unavailable with the HTTP status.
        model_server.add_turns([{"fault": "http", "status": 400, "message": "bad request from test"}])
        got, data = await _code(process, "session/prompt",
                                {"sessionId": ctx["session"], "prompt": [{"type": "text", "text": "hi"}]})
        # (with the failed prompt's rewind id, as a result's _meta.sidecar.userMessageId would carry it)
        assert str(data.pop("userMessageId", "")).startswith("msg_")
        assert (got, data) == (-32050, {"kind": "model_unavailable", "retryable": False, "status": 400,
                                        "errorType": "invalid_request_error",
                                        "providerMessage": "bad request from test", "attempts": 1})

        # A prompt while one runs: -32050 prompt_running; $/cancel_request then ends the first one
        # with stopReason "cancelled".
        never = asyncio.Event()

        async def hold(params: dict[str, Any]) -> dict[str, Any]:
            await never.wait()
            return {"outcome": {"outcome": "cancelled"}}

        harness.permission_policy = hold
        model_server.add_turns([
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": f"touch {ws}/x"}}]},
            {"content": [{"type": "text", "text": "done"}]},
        ])
        request_id = 10_000
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        process._pending[request_id] = future
        await process.send({"jsonrpc": "2.0", "id": request_id, "method": "session/prompt",
                            "params": {"sessionId": ctx["session"], "prompt": [{"type": "text", "text": "go"}]}})
        await _wait_for(lambda: bool(harness.permission_requests))
        got, data = await _code(process, "session/prompt",
                                {"sessionId": ctx["session"], "prompt": [{"type": "text", "text": "again"}]})
        assert (got, data["kind"]) == (-32050, "prompt_running")
        got, data = await _code(process, "_sidecar/sessions/rewind",
                                {"sessionId": ctx["session"], "toMessageId": "msg_nope"})
        assert got == -32002
        await process.notify("$/cancel_request", {"requestId": request_id})
        assert (await asyncio.wait_for(future, 15))["stopReason"] == "cancelled"
        never.set()
        assert not (ws / "x").exists()
    finally:
        await process.close()


async def test_before_initialize_is_invalid_request(sidecar_env: dict[str, str], tmp_path: Path) -> None:
    process = SidecarProcess(framing="acp", env=sidecar_env, cwd=str(REPO),
                             argv=[sys.executable, "-m", "sidecar", "serve", "--acp"],
                             stderr=open(tmp_path / "stderr", "wb"))
    await process.start()
    try:
        got, _ = await _code(process, "session/list", {})
        assert got == -32600
    finally:
        await process.close()




async def test_an_error_answer_is_one_log_line_not_a_traceback(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path, workspace: Path) -> None:
    """Over LSP (the editor shows the agent's stderr in its output panel): a prompt the model API refuses
    (HTTP 400) and a request with bad params are each answered with their error and logged as one warning
    line, without pygls's traceback of the exception that carried the answer; and the HTTP client does not
    log every request at INFO."""
    model_server.add_turn({"fault": "http", "status": 400, "error_type": "invalid_request_error",
                           "message": "messages: the conversation is malformed"})
    harness = await start_harness("lsp", sidecar_env, model_server, tmp_path)
    try:
        session = await harness.new_session(workspace)
        with pytest.raises(RemoteError, match="HTTP 400"):
            await harness.prompt(session, "hi")
        with pytest.raises(RemoteError):
            await harness.process.request("session/new", {"cwd": "relative/dir", "mcpServers": []})
    finally:
        await harness.process.close()
    stderr = (tmp_path / "sidecar-lsp.stderr").read_text(errors="replace")
    assert "WARNING sidecar.server.lsp: request failed: The model API answered HTTP 400" in stderr, stderr[-3000:]
    assert "Traceback" not in stderr and "HTTP Request:" not in stderr, stderr[-3000:]

"""What the sidecar advertises in `initialize`, and `additionalDirectories` as advertised: taken by
`session/new` and `session/load`, reported by `session/list` (spawned `sidecar serve --acp`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness, start_harness


async def test_initialize_advertises_what_is_supported(sidecar_env: dict[str, str], model_server: ScriptedModelServer,
                                                       tmp_path: Path) -> None:
    harness = await start_harness("acp", sidecar_env, model_server, tmp_path)
    try:
        result = await harness.process.initialize({"fs": {"readTextFile": True, "writeTextFile": True},
                                                   "terminal": True})
    finally:
        await harness.process.close()
    caps = result["agentCapabilities"]
    assert {k: v for k, v in caps.items() if k != "_meta"} == {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        "mcpCapabilities": {"http": True, "sse": True},
        "sessionCapabilities": {"list": {}, "additionalDirectories": {}},
    }
    assert [m["id"] for m in result["authMethods"]] == ["keychain", "anthropic-api-key"]  # tests/install/test_auth.py


async def test_additional_directories_on_new_list_and_load(acp_sidecar: Harness, workspace: Path, tmp_path: Path,
                                                           model_server: ScriptedModelServer) -> None:
    first, second = tmp_path / "lib-one", tmp_path / "lib-two"
    for d in (first, second):
        d.mkdir()
        (d / "x.txt").write_text(f"{d.name}\n")
    session = await acp_sidecar.new_session(workspace, additionalDirectories=[str(first)])
    listed = (await acp_sidecar.process.request("session/list", {}))["sessions"]
    assert [(s["sessionId"], s.get("additionalDirectories")) for s in listed] == [(session, [str(first)])]
    # Loaded with another list: that list is the session's roots now (a Read there asks nothing).
    await acp_sidecar.process.request("session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": [],
                                                       "additionalDirectories": [str(second)]})
    turns: list[Any] = [
        {"content": [{"type": "tool_use", "id": "toolu_r1", "name": "Read",
                      "input": {"file_path": str(second / "x.txt")}}]},
        {"content": [{"type": "text", "text": "read"}]},
    ]
    model_server.add_turns(turns)
    assert await acp_sidecar.prompt(session, "read it") == "end_turn"
    assert acp_sidecar.permission_requests == []
    results = [r for req in model_server.message_requests() for r in req.tool_results()]
    assert results[0]["content"][0]["text"] == "     1\tlib-two"

"""The warm-up after ``initialize``: what the first turn needs is loaded ahead, and nothing an idle sidecar
does not need (docs/performance.md, "Issue 18, third pass")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO, start_harness

# Run in a fresh interpreter: which modules are loaded and which SDK types are built is per process.
WARM_UP_THEN_TURN = r"""
import asyncio, gc, json, sys
from sidecar.app import build_core
from sidecar.model.client import reply_types
from sidecar.server.core import SESSION_MODULES, import_first_turn_modules

core = build_core()
import_first_turn_modules(core.model)
after_warm_up = {
    "sdk": "anthropic" in sys.modules and "anthropic.types" in sys.modules,
    "client_made": core.model._client is not None,
    "built": [t.__name__ for t in reply_types() if t.__pydantic_complete__],
    "web_client": "httpx" in sys.modules,
    "html_parser": "selectolax" in sys.modules,
    "session_modules": [m for m in SESSION_MODULES if m not in sys.modules],
    "acp_schema": "acp.schema" in sys.modules,
    # Collections were off for the imports, and are back on, with what the imports made frozen.
    "collecting": gc.isenabled(),
    "frozen": gc.get_freeze_count(),
}
modules = set(sys.modules)
params = {"model": core.model.settings.model, "max_tokens": 256,
          "messages": [{"role": "user", "content": "read notes"}]}
reply = asyncio.run(core.model.stream(params))
print(json.dumps({**after_warm_up, "content": reply.content,
                  "imported_by_the_turn": sorted(set(sys.modules) - modules),
                  "built_by_the_turn": [t.__name__ for t in reply_types() if t.__pydantic_complete__]}))
"""


def test_warm_up_loads_the_sdk_but_not_the_web_client_nor_the_reply_types(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer) -> None:
    model_server.add_turn({"content": [
        {"type": "thinking", "thinking": "the notes file"},
        {"type": "text", "text": "Reading it."},
        {"type": "tool_use", "id": "toolu_warm_1", "name": "Read", "input": {"file_path": "/tmp/notes.txt"}}]})
    done = subprocess.run([sys.executable, "-c", WARM_UP_THEN_TURN], env=sidecar_env, cwd=str(REPO),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["sdk"] and seen["client_made"]
    assert seen["session_modules"] == []  # what session/new imports, imported ahead of it
    # The SDK's reply types are neither built ahead nor by the turn: the stream is read from its raw events.
    assert seen["built"] == [] and seen["built_by_the_turn"] == []
    assert model_server.model_lookups  # the default model's capabilities were looked up ahead too
    # The web tools' HTTP client and HTML parser wait for a web tool (7 MB and 1.8 MB of idle memory);
    assert seen["web_client"] is False and seen["html_parser"] is False
    assert seen["collecting"] is True and seen["frozen"] > 100_000
    assert seen["acp_schema"] is False  # ACP's generated schema (9 MB) waits for params that need it
    # The first turn (thinking, text, a tool call) found everything loaded.
    assert [b["type"] for b in seen["content"]] == ["thinking", "text", "tool_use"]
    assert seen["imported_by_the_turn"] == []


def test_a_transport_error_of_the_web_client_is_still_retried_when_it_was_loaded() -> None:
    import httpx

    from sidecar.model.client import _retryable

    assert _retryable(httpx.ConnectError("connection refused")) == (True, None)
    assert _retryable(ValueError("a bug of ours")) == (False, None)


# What a transport has imported when it answers ``initialize``: the server and the core, not what a session
# needs (pydantic, the agent loop, the tools, permissions), which the warm-up imports after.
STARTUP_IMPORTS = r"""
import json, sys
from sidecar.app import build_core
import sidecar.cli, sidecar.server.lsp
from sidecar.server.core import SESSION_MODULES

import asyncio, types
core = build_core()
core._warmed = True  # no warm-up thread: this checks what answering initialize itself imports
channel = types.SimpleNamespace()
answer = asyncio.run(core.initialize({"protocolVersion": 1, "clientCapabilities": {"terminal": True}}, channel))
assert answer["protocolVersion"] == 1 and channel.client_capabilities["terminal"] is True
print(json.dumps(sorted(m for m in ("pydantic", "anthropic", "acp", *SESSION_MODULES) if m in sys.modules)))
"""


def test_the_server_and_core_are_built_without_what_a_session_needs(sidecar_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-c", STARTUP_IMPORTS], env=sidecar_env, cwd=str(REPO),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


async def test_a_second_session_of_a_workspace_leaves_no_unawaited_warm_up_wait(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path, workspace: Path) -> None:
    """The stale-temp walk runs once per workspace and process. A second session of the same workspace
    returned before awaiting the warm-up wait it was handed, and Python printed "coroutine
    'SessionCore.ready' was never awaited" (a RuntimeWarning, in the editor's output panel) on every
    session after the first."""
    harness = await start_harness("acp", sidecar_env, model_server, tmp_path)
    try:
        for _ in range(3):
            await harness.new_session(workspace)
        model_server.add_turn({"content": [{"type": "text", "text": "ready"}]})
        assert await harness.prompt(await harness.new_session(workspace), "hi") == "end_turn"
    finally:
        await harness.process.close()
    stderr = (tmp_path / "sidecar-acp.stderr").read_text(errors="replace")
    assert "never awaited" not in stderr and "RuntimeWarning" not in stderr, stderr[-2000:]

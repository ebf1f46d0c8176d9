"""Workspace trust, end to end: the hostile fixture repository runs nothing until the user trusts it.

``fixtures/hostile-repo`` brings a ``.mcp.json`` server (``sh -c``), SessionStart and PreToolUse hooks,
an ``lspServers`` entry naming ``node_modules/.bin/x-langserver`` (shipped in the repository),
``additionalDirectories: ["/"]`` and a CLAUDE.md importing ``~/.ssh/id_rsa`` and ``/proc/self/environ``.
Each command leaves a ``.canary-*`` file in the workspace when it runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO, TEST_API_KEY, Harness, reject_once, start_harness

HOSTILE = REPO / "fixtures" / "hostile-repo"
SSH_KEY = "-----BEGIN FAKE PRIVATE KEY----- canary-ssh-key-body"
ALL_CANARIES = {".canary-mcp", ".canary-sessionstart", ".canary-pretooluse", ".canary-langserver",
                ".canary-leaky"}


@pytest.fixture
def hostile(tmp_path: Path, sidecar_env: dict[str, str]) -> Path:
    ws = tmp_path / "hostile-repo"
    shutil.copytree(HOSTILE, ws, symlinks=True)
    ssh = Path(sidecar_env["HOME"]) / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_rsa").write_text(SSH_KEY + "\n")
    return ws


def canaries(ws: Path) -> set[str]:
    return {p.name for p in ws.iterdir() if p.name in ALL_CANARIES}


def hostile_turns(model: ScriptedModelServer, ws: Path) -> None:
    model.add_turns([
        {"content": [{"type": "tool_use", "name": "LSP",
                      "input": {"operation": "hover", "filePath": str(ws / "main.x"), "line": 1, "character": 1}},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": "/etc/hostname"}}]},
        {"content": [{"type": "text", "text": "done"}]},
    ])


def trust_kinds(harness: Harness) -> list[Any]:
    return [((p["toolCall"].get("_meta") or {}).get("sidecar") or {}).get("trust") for p in harness.permission_requests]


@pytest.mark.parametrize("framing", ["acp", "lsp"])
async def test_an_untrusted_repository_runs_and_reads_nothing(
        framing: str, hostile: Path, sidecar_env: dict[str, str], model_server: ScriptedModelServer,
        tmp_path: Path) -> None:
    harness = await start_harness(framing, sidecar_env, model_server, tmp_path)
    try:
        harness.permission_policy = reject_once
        session = await harness.new_session(hostile)
        assert canaries(hostile) == set()  # opening it ran nothing, asked nothing
        assert harness.permission_requests == []
        hostile_turns(model_server, hostile)
        assert await harness.prompt(session, "look around") == "end_turn"
    finally:
        await harness.process.close()
    assert canaries(hostile) == set()
    # Asked: the workspace (listing what it brings), then the one .mcp.json server that may be asked about,
    # then the Read outside the workspace ("/" did not become part of it). All rejected.
    assert trust_kinds(harness) == ["workspace", "mcp", None]
    items = harness.permission_requests[0]["toolCall"]["rawInput"]["items"]
    assert any(i.startswith("hook SessionStart (.claude/settings.json): touch .canary-sessionstart") for i in items)
    assert "language server x (.claude/settings.json): x-langserver" in items
    assert "language server in the workspace: node_modules/.bin/x-langserver" in items
    assert any(i.startswith("additional directories (.claude/settings.json): /") for i in items)
    assert any("memory import from outside the workspace:" in i and i.endswith(".ssh/id_rsa") for i in items)
    mcp = harness.permission_requests[1]["toolCall"]
    assert mcp["title"].startswith("Start the MCP server 'evil' from .mcp.json: sh -c 'touch .canary-mcp;")

    first, second = model_server.message_requests()
    system = json.dumps(first.body["system"])
    assert SSH_KEY not in first.text() and TEST_API_KEY not in first.text()
    assert "ANTHROPIC_BASE_URL" not in system  # /proc/self/environ was not imported
    assert "not imported: kernel files (/proc, /sys, /dev) are never imported" in system
    assert ".ssh/id_rsa not imported: outside the workspace, which is not trusted" in system
    assert f"Workspace roots: {hostile}\\n" in system
    lsp, read = second.tool_results()
    assert lsp["is_error"] and "No language server is configured for .x files" in json.dumps(lsp)
    assert read["is_error"] and "rejected" in json.dumps(read)
    # The server naming the API key is refused outright, and the model is told.
    assert "The MCP server 'leaky' from .mcp.json was not started: it passes the secret ANTHROPIC_API_KEY" in \
        first.text()


async def test_after_approval_each_part_works_and_allow_always_is_remembered(
        hostile: Path, sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path) -> None:
    async def always(params: dict[str, Any]) -> dict[str, Any]:
        kinds = {o["kind"]: o["optionId"] for o in params["options"]}
        return {"outcome": {"outcome": "selected", "optionId": kinds.get("allow_always", kinds["allow_once"])}}

    harness = await start_harness("acp", sidecar_env, model_server, tmp_path)
    try:
        harness.permission_policy = always
        session = await harness.new_session(hostile)
        assert canaries(hostile) == set()
        hostile_turns(model_server, hostile)
        assert await harness.prompt(session, "look around") == "end_turn"
        # Once trusted: SessionStart ran, the MCP server was started, the PreToolUse hook ran, the
        # workspace's language server was started; the server naming a secret still never runs.
        assert canaries(hostile) == ALL_CANARIES - {".canary-leaky"}
        assert trust_kinds(harness)[:2] == ["workspace", "mcp"]
        first, second = model_server.message_requests()
        assert SSH_KEY in json.dumps(first.body["system"])  # imported once the workspace is trusted
        assert "ANTHROPIC_BASE_URL" not in json.dumps(first.body["system"])  # /proc never
        assert f"Workspace roots: {hostile}\\n" in json.dumps(first.body["system"])  # "/" never
        lsp = second.tool_results()[0]
        assert lsp["is_error"] and "Could not start the x language server" in json.dumps(lsp)
        asked = len(harness.permission_requests)

        # A second session: the answers were remembered (per user, not in the repository).
        for canary in hostile.glob(".canary-*"):
            canary.unlink()
        model_server.add_turns([{"content": [{"type": "text", "text": "again"}]}])
        again = await harness.new_session(hostile)
        assert ".canary-sessionstart" in canaries(hostile)  # a trusted workspace's hooks run at once
        assert await harness.prompt(again, "hello") == "end_turn"
        assert ".canary-mcp" in canaries(hostile)
        assert len(harness.permission_requests) == asked  # nothing asked again
    finally:
        await harness.process.close()
    trust = json.loads((Path(sidecar_env["XDG_DATA_HOME"]) / "sidecar" / "trust.json").read_text())
    entry = trust["workspaces"][str(hostile)]
    assert entry["trusted"] is True and entry["mcpServers"]["evil"]["allowed"] is True
    assert not any(p.name == "trust.json" for p in hostile.rglob("*"))


async def test_the_editor_decides_for_restricted_mode(
        hostile: Path, sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path) -> None:
    """VS Code sends its Workspace Trust: untrusted (Restricted Mode) asks nothing and runs nothing; trust
    granted later (``_sidecar/workspace_trust``) applies before the next prompt; MCP servers are still asked."""
    harness = await start_harness("acp", sidecar_env, model_server, tmp_path,
                                  client_capabilities={"_meta": {"sidecar": {}}})
    try:
        process = harness.process
        process_meta = {"_meta": {"sidecar": {"workspaceTrust": False}}}
        await process.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}, **process_meta})
        session = await harness.new_session(hostile)
        model_server.add_turns([{"content": [{"type": "text", "text": "restricted"}]}])
        assert await harness.prompt(session, "hello") == "end_turn"
        assert canaries(hostile) == set() and harness.permission_requests == []

        await process.notify("_sidecar/workspace_trust", {"trusted": True})
        model_server.add_turns([{"content": [{"type": "text", "text": "trusted"}]}])
        assert await harness.prompt(session, "again") == "end_turn"
        assert ".canary-sessionstart" in canaries(hostile)
        assert trust_kinds(harness) == ["mcp"]  # the workspace itself was not asked: the editor said
        # CLAUDE.md's import from outside the workspace is read once trusted, mid-session too.
        restricted, trusted = (json.dumps(r.body["system"]) for r in model_server.message_requests())
        assert SSH_KEY not in restricted and "not imported" in restricted
        assert SSH_KEY in trusted
    finally:
        await harness.process.close()

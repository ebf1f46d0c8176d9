"""Issue 16 over the terminal client: ``sidecar chat`` in the hostile fixture repository runs none of it
until the user trusts it, and after trust each part runs. Real processes: ``python -m sidecar chat``
spawns ``sidecar serve --acp``; the model is the scripted Messages API server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO, TEST_API_KEY
from tests.permissions.test_trust_e2e import ALL_CANARIES, HOSTILE, SSH_KEY, hostile_turns


def copy_hostile(tmp_path: Path, env: dict[str, str]) -> Path:
    ws = tmp_path / "hostile-repo"
    shutil.copytree(HOSTILE, ws, symlinks=True)
    ssh = Path(env["HOME"]) / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_rsa").write_text(SSH_KEY + "\n")
    return ws


def chat(ws: Path, env: dict[str, str], *flags: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sidecar", "chat", "--cwd", str(ws), *flags, "look around"],
                          cwd=REPO, env={**env, "COLUMNS": "200", "NO_COLOR": "1"}, input=stdin,
                          capture_output=True, text=True, timeout=300)


def dot_canaries(ws: Path) -> set[str]:
    return {p.name for p in ws.iterdir() if p.name.startswith(".canary")}


@pytest.mark.parametrize("last_answer", ["no\n", ""], ids=["typed-no", "stdin-closed"])
def test_chat_answered_no_runs_and_reads_nothing_from_the_hostile_repository(
        tmp_path: Path, sidecar_env: dict[str, str], model_server: ScriptedModelServer, last_answer: str) -> None:
    ws = copy_hostile(tmp_path, sidecar_env)
    hostile_turns(model_server, ws)
    # Typed answers: "3. Do not trust" (workspace), "3. Do not start it" (.mcp.json server 'evil'),
    # then "no" to the Read of /etc/hostname (rejected), or stdin closed there (cancelled, never a yes).
    done = chat(ws, sidecar_env, stdin="3\n3\n" + last_answer)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert dot_canaries(ws) == set(), out
    assert "⚠ Trust:" in out and "Do not trust" in out
    assert "Start the MCP server 'evil' from .mcp.json" in out
    first, second = model_server.message_requests()
    assert SSH_KEY not in first.text() and TEST_API_KEY not in first.text()
    system = json.dumps(first.body["system"])
    assert ".ssh/id_rsa not imported: outside the workspace, which is not trusted" in system
    assert f"Workspace roots: {ws}\\n" in system  # additionalDirectories ["/"] not applied
    lsp, read = second.tool_results()
    assert lsp["is_error"] and "No language server is configured for .x files" in json.dumps(lsp)
    assert read["is_error"]
    hostname = Path("/etc/hostname").read_text().strip()
    assert not hostname or hostname not in json.dumps(read)
    trust_file = Path(sidecar_env["XDG_DATA_HOME"]) / "sidecar" / "trust.json"
    remembered = json.loads(trust_file.read_text()).get("workspaces", {}) if trust_file.exists() else {}
    assert not (remembered.get(str(ws)) or {}).get("trusted")  # "Do not trust" leaves it untrusted


def test_chat_with_trust_runs_the_hooks_servers_and_language_server(
        tmp_path: Path, sidecar_env: dict[str, str], model_server: ScriptedModelServer) -> None:
    ws = copy_hostile(tmp_path, sidecar_env)
    hostile_turns(model_server, ws)
    # --trust answers the trust questions (workspace, 'evil'); the Read outside is still a permission: "1".
    done = chat(ws, sidecar_env, "--trust", stdin="1\n")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "(--trust)" in out
    assert {c for c in dot_canaries(ws) if c in ALL_CANARIES} == ALL_CANARIES - {".canary-leaky"}, out
    first, second = model_server.message_requests()
    assert SSH_KEY in json.dumps(first.body["system"])  # the import works once trusted
    assert "ANTHROPIC_BASE_URL" not in json.dumps(first.body["system"])  # /proc never
    lsp = second.tool_results()[0]
    assert lsp["is_error"] and "Could not start the x language server" in json.dumps(lsp)

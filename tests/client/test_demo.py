"""The README's main command: the offline demo through the terminal client, real tools, approvals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_offline_demo_fixes_the_bug_and_runs_the_tests(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SIDECAR_"))}
    env.update({"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
                "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200", "NO_COLOR": "1"})
    fixture = REPO / "sidecar" / "client" / "demo_workspace" / "calc.py"
    before = fixture.read_text()
    done = subprocess.run([sys.executable, "-m", "sidecar", "demo", "--yes"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Offline demo: scripted model" in out
    assert "Permission: Edit calc.py" in out and "-    return a - b" in out and "+    return a + b" in out
    assert "all tests passed" in out
    assert "The tests pass now" in out and "[end_turn]" not in out  # one-turn mode: exit status 0 says it ended
    assert fixture.read_text() == before  # the demo works on a copy


def test_check_command_explains_without_running(tmp_path: Path) -> None:
    marker = tmp_path / "never-created"
    done = subprocess.run([sys.executable, "-m", "sidecar", "check-command", "--json", f"touch {marker} && ls"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '"read_only": false' in done.stdout and '"decision": "ask"' in done.stdout
    assert not marker.exists()


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SIDECAR_"))}
    env.update({"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
                "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200", "NO_COLOR": "1"})
    return env


def test_chat_against_a_compatible_endpoint_that_wants_no_key(tmp_path: Path) -> None:
    from sidecar.testing.scripted_server import ScriptedModelServer

    with ScriptedModelServer([{"content": [{"type": "text", "text": "Hello from the endpoint."}]}]) as server:
        env = {**_clean_env(tmp_path), "ANTHROPIC_BASE_URL": server.base_url}
        done = subprocess.run([sys.executable, "-m", "sidecar", "chat", "--cwd", str(tmp_path), "say hi"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Hello from the endpoint." in done.stdout
        assert server.message_requests()[0].body["messages"][0]["content"][0]["text"] == "say hi"


def test_chat_without_any_model_says_what_to_set(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "sidecar", "chat", "--cwd", str(tmp_path), "hi"],
                          cwd=REPO, env=_clean_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "ANTHROPIC_API_KEY" in done.stderr and "sidecar demo" in done.stderr

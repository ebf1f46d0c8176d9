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
    fixture = REPO / "fixtures" / "demo-workspace" / "calc.py"
    before = fixture.read_text()
    done = subprocess.run([sys.executable, "-m", "sidecar", "demo", "--yes"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Offline demo: scripted model" in out
    assert "Permission: Edit calc.py" in out and "-    return a - b" in out and "+    return a + b" in out
    assert "all tests passed" in out
    assert "The tests pass now" in out and "[end_turn]" in out
    assert fixture.read_text() == before  # the demo works on a copy


def test_check_command_explains_without_running(tmp_path: Path) -> None:
    marker = tmp_path / "never-created"
    done = subprocess.run([sys.executable, "-m", "sidecar", "check-command", "--json", f"touch {marker} && ls"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '"read_only": false' in done.stdout and '"decision": "ask"' in done.stdout
    assert not marker.exists()

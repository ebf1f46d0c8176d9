"""The package as a user gets it: ``uv build``, then ``uv tool install`` of that wheel into a fresh HOME
outside the checkout, offline (``--offline --no-index``: the locked dependencies come from a wheelhouse
rebuilt from uv's cache, see ``wheelhouse.py``; an empty uv cache of its own). Then the installed command
runs ``--version``, ``demo --yes`` and ``chat --demo`` (the scripted model, the packaged demo workspace),
and an editor's ACP ``initialize`` + prompt against a scripted model on 127.0.0.1."""

from __future__ import annotations

import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from sidecar import version
from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.install.conftest import Installed


def test_archives_hold_the_package_not_the_repository(installed: Installed) -> None:
    wheel_files = zipfile.ZipFile(installed.wheel).namelist()
    assert {f.split("/")[0] for f in wheel_files} == {"sidecar", f"sidecar_agent-{version()}.dist-info"}
    assert "sidecar/client/demo_workspace/calc.py" in wheel_files
    assert not [f for f in wheel_files if "__pycache__" in f or f.endswith(".pyc")]
    with tarfile.open(installed.sdist) as sdist:
        top = {n.split("/")[1] for n in sdist.getnames() if n.count("/")}
    assert top <= {"sidecar", "README.md", "pyproject.toml", "PKG-INFO", ".gitignore"}, top


def test_installed_command_runs_from_its_own_environment(installed: Installed) -> None:
    done = subprocess.run([str(installed.sidecar), "--version"], cwd=installed.home, env=installed.env(),
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"sidecar-agent {version()}\n"), done.stderr
    where = subprocess.run([str(installed.python), "-c", "import sidecar; print(sidecar.__file__)"],
                           cwd=installed.home, env=installed.env(), capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(installed.root / "tools"), where.stdout + where.stderr


@pytest.mark.parametrize("argv", [["demo", "--yes"], ["chat", "--demo", "--yes"]])
def test_offline_demo_from_the_wheel(installed: Installed, argv: list[str]) -> None:
    done = subprocess.run([str(installed.sidecar), *argv], cwd=installed.home,
                          env=installed.env(COLUMNS="200", NO_COLOR="1"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Offline demo: scripted model" in done.stdout
    assert "-    return a - b" in done.stdout and "+    return a + b" in done.stdout
    assert "all tests passed" in done.stdout and "The tests pass now" in done.stdout


async def test_acp_initialize_and_prompt_with_the_installed_agent(installed: Installed, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with ScriptedModelServer([{"content": [{"type": "text", "text": "Hello from the installed agent."}]}]) as model:
        env = installed.env(ANTHROPIC_BASE_URL=model.base_url, ANTHROPIC_API_KEY="sk-ant-test-install")
        process = SidecarProcess(framing="acp", env=env, cwd=str(project), stderr=open(tmp_path / "err", "wb"),
                                 argv=[str(installed.sidecar), "serve", "--acp"])
        await process.start()
        try:
            init = await process.initialize()
            session = (await process.request("session/new", {"cwd": str(project), "mcpServers": []}))["sessionId"]
            result = await process.request("session/prompt", {
                "sessionId": session, "prompt": [{"type": "text", "text": "say hello"}]}, timeout=120)
            text = process.agent_text(session)
        finally:
            await process.close()
        asked = model.message_requests()
    assert init["agentInfo"]["name"] == "sidecar-agent"
    assert result["stopReason"] == "end_turn"
    assert text == "Hello from the installed agent."
    assert asked[-1].body["messages"][-1]["content"][-1]["text"] == "say hello"

"""The agent checks the extension's version (issue 26; the rule in docs/packaging.md): the editor's
``initializationOptions.client = {name, version}`` must have the agent's major.minor, else the user is told
once — ``window/showMessage`` (a warning every LSP client shows) and a warning line in the agent's log — what
differs and what to update. Over the real LSP transport, in a real ``sidecar serve``."""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import SidecarProcess
from sidecar.server.client_version import client_mismatch
from tests.conftest import REPO

VERSION = version("sidecar-agent")
MAJOR, MINOR = (int(p) for p in VERSION.split(".")[:2])
NEWER = f"{MAJOR}.{MINOR + 1}.0"


async def initialized(env: dict[str, str], tmp_path: Path, client: Any) -> tuple[SidecarProcess, Path]:
    """A sidecar initialized as the extension does, then one request answered: the warning is sent on
    ``initialized``, before that answer, so whatever it would send has arrived once the answer is here."""
    stderr_path = tmp_path / "sidecar.stderr"
    process = SidecarProcess(framing="lsp", env=env, cwd=str(REPO), stderr=open(stderr_path, "wb"),  # type: ignore[arg-type]
                             argv=[sys.executable, "-m", "sidecar", "serve"])
    await process.start()
    options: dict[str, Any] = {"acp": {"clientCapabilities": {}}, "settings": {}}
    if client is not None:
        options["client"] = client
    result = await process.request("initialize", {"processId": os.getpid(), "rootUri": None,
                                                  "capabilities": {"window": {}}, "initializationOptions": options})
    assert result["serverInfo"] == {"name": "sidecar-agent", "version": VERSION}
    await process.notify("initialized", {})
    await process.request("session/list", {})
    return process, stderr_path


def shown(process: SidecarProcess) -> list[dict[str, Any]]:
    return [n["params"] for n in process.notifications if n["method"] == "window/showMessage"]


async def test_an_extension_of_another_minor_version_is_named_with_what_to_update(
        sidecar_env: dict[str, str], tmp_path: Path) -> None:
    process, stderr = await initialized(sidecar_env, tmp_path, {"name": "sidecar-vscode", "version": NEWER,
                                                                "expectedAgentVersion": None})
    try:
        text = (f"Sidecar: the agent is {VERSION} and the extension (sidecar-vscode) is {NEWER}; they work "
                f"together only when major.minor match ({MAJOR}.{MINOR} vs {MAJOR}.{MINOR + 1}), so some "
                f'features may fail. Update the agent to {MAJOR}.{MINOR + 1}.x, or clear "sidecar.pythonPath" '
                "to use the agent the extension carries.")
        assert shown(process) == [{"type": 2, "message": text}]  # 2: MessageType.Warning
    finally:
        await process.close()
    assert text in stderr.read_text()


@pytest.mark.parametrize(("carried", "fix"), [
    # The package carries this very agent, yet says another minor (the install suite's 99.0.0 VSIX).
    (VERSION, f"This agent is the one the extension's package carries ({VERSION}), so the package pairs them "
              "wrongly: update the Sidecar extension, or reinstall it."),
    # The extension's environment still holds an older agent than the one its package carries.
    (NEWER, f"The extension's own environment holds agent {VERSION}, not the {NEWER} the extension carries: "
            'run "Sidecar: Retry Setup" to set it up again.'),
])
async def test_the_extensions_own_agent_gets_advice_for_the_extension_not_an_install(
        sidecar_env: dict[str, str], tmp_path: Path, carried: str, fix: str) -> None:
    """Started from the extension's own environment (``expectedAgentVersion`` set), the user installed no
    agent and chose no interpreter: the advice names what the extension does, no update by hand and no
    ``sidecar.pythonPath`` to clear."""
    process, _ = await initialized(sidecar_env, tmp_path, {"name": "sidecar-vscode", "version": NEWER,
                                                           "expectedAgentVersion": carried})
    try:
        [message] = shown(process)
    finally:
        await process.close()
    assert message["message"] == (
        f"Sidecar: the agent is {VERSION} and the extension (sidecar-vscode) is {NEWER}; they work together only "
        f"when major.minor match ({MAJOR}.{MINOR} vs {MAJOR}.{MINOR + 1}), so some features may fail. {fix}")


@pytest.mark.parametrize("client", [
    {"name": "sidecar-vscode", "version": f"{MAJOR}.{MINOR}.99"},  # a patch release: the same protocol
    {"name": "sidecar-vscode", "version": "banana"},  # not a version: not compared
    {"name": 7, "version": None},
    "sidecar-vscode 9.9",
    None,  # an editor that does not say
])
async def test_a_patch_apart_or_no_comparable_version_says_nothing(
        sidecar_env: dict[str, str], tmp_path: Path, client: Any) -> None:
    process, stderr = await initialized(sidecar_env, tmp_path, client)
    try:
        assert shown(process) == []
    finally:
        await process.close()
    assert "major.minor" not in stderr.read_text()
    assert "Traceback" not in stderr.read_text()


def test_an_agent_newer_than_the_extension_asks_for_the_extensions_update() -> None:
    assert client_mismatch({"name": "sidecar-vscode", "version": "0.1.4"}, "0.3.0") == (
        "Sidecar: the agent is 0.3.0 and the extension (sidecar-vscode) is 0.1.4; they work together only when "
        'major.minor match (0.3 vs 0.1), so some features may fail. Update the Sidecar extension to 0.3.x, or '
        'point "sidecar.pythonPath" at an agent 0.1.x.')
    # Another editor's extension: no VS Code setting named.
    assert client_mismatch({"name": "zed-sidecar", "version": "1.0.0"}, "0.3.0") == (
        "Sidecar: the agent is 0.3.0 and the extension (zed-sidecar) is 1.0.0; they work together only when "
        "major.minor match (0.3 vs 1.0), so some features may fail. Use an agent 1.0.x with this zed-sidecar, "
        "or a zed-sidecar 0.3.x with this agent.")
    assert client_mismatch({"name": "sidecar-vscode", "version": "0.3.1"}, "0+unknown") is None

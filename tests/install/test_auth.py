"""Where the key lives and what the user is told without one (docs/protocol.md, "Authentication").

The keychain is the real ``keyring`` API with a headless test backend (``keyring_backend.JsonFileKeyring``,
chosen through keyring's own ``PYTHON_KEYRING_BACKEND``); production uses the OS keychain keyring finds.
The agents here have no route to a public endpoint: ``HTTPS_PROXY``/``HTTP_PROXY`` point at a closed port
on 127.0.0.1, so a request that tried to leave would fail, and the tests check none was needed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.client.connection import RemoteError, SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO

KEY = "sk-ant-keychain-test-0123456789abcdef"


@pytest.fixture
def env(sidecar_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The test sidecar environment without any key, with the test keychain and no way out."""
    out = {k: v for k, v in sidecar_env.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    out.update({"PYTHON_KEYRING_BACKEND": "tests.install.keyring_backend.JsonFileKeyring",
                "TEST_KEYRING_FILE": str(tmp_path / "keychain.json"),
                "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
    return out


def sidecar(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sidecar", *args], input=stdin, env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def keychain(env: dict[str, str]) -> dict[str, str]:
    path = Path(env["TEST_KEYRING_FILE"])
    return dict(json.loads(path.read_text())) if path.is_file() else {}


def test_login_saves_the_key_and_logout_removes_it(env: dict[str, str]) -> None:
    done = sidecar(env, "login", stdin=KEY + "\n")
    assert done.returncode == 0, done.stderr
    assert "Saved the API key in the OS keychain (tests.install.keyring_backend.JsonFileKeyring)" in done.stdout
    assert KEY not in done.stdout + done.stderr
    assert keychain(env) == {"sidecar-agent\0ANTHROPIC_API_KEY": KEY}
    assert sidecar(env, "logout").stdout == "Removed the API key from the OS keychain.\n"
    assert keychain(env) == {}
    again = sidecar(env, "logout")
    assert (again.returncode, again.stdout) == (0, "No API key was saved in the OS keychain.\n")


def test_login_without_a_key_or_a_keychain_says_so(env: dict[str, str]) -> None:
    empty = sidecar(env, "login", stdin="\n")
    assert (empty.returncode, empty.stderr) == (2, "sidecar login: no key given (one line, no spaces); "
                                                   "nothing saved.\n")
    assert keychain(env) == {}
    none = sidecar({**env, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}, "login", stdin=KEY + "\n")
    assert none.returncode == 1
    assert none.stderr.startswith("sidecar login: No OS keychain is available here")
    assert "Set ANTHROPIC_API_KEY" in none.stderr and "Traceback" not in none.stderr


@pytest.fixture
async def agent(env: dict[str, str], tmp_path: Path) -> AsyncIterator[SidecarProcess]:
    process = SidecarProcess(framing="acp", env=env, cwd=str(REPO), stderr=open(tmp_path / "agent.err", "wb"))
    yield process
    await process.close()


async def start(process: SidecarProcess, **env: str) -> dict[str, Any]:
    process.env.update(env)
    await process.start()
    return await process.initialize()


async def prompt(process: SidecarProcess, workspace: Path) -> dict[str, Any]:
    session = (await process.request("session/new", {"cwd": str(workspace), "mcpServers": []}))["sessionId"]
    return dict(await process.request("session/prompt", {"sessionId": session,
                                                         "prompt": [{"type": "text", "text": "hi"}]}, timeout=60))


async def test_initialize_offers_the_keychain_and_the_environment(agent: SidecarProcess) -> None:
    init = await start(agent)
    assert [(m["id"], m.get("type")) for m in init["authMethods"]] == [("keychain", None),
                                                                       ("anthropic-api-key", "env_var")]
    assert init["authMethods"][1]["vars"] == [{"name": "ANTHROPIC_API_KEY", "label": "Anthropic API key",
                                               "secret": True}]


async def test_terminal_login_is_offered_to_a_client_that_runs_terminal_auth(agent: SidecarProcess,
                                                                            env: dict[str, str]) -> None:
    await agent.start()
    init = await agent.initialize({"auth": {"terminal": True}})
    login = init["authMethods"][-1]
    assert login == {"id": "login", "type": "terminal", "name": "Log in in a terminal (sidecar login)",
                     "description": "Type the API key once; it is kept in the OS keychain.", "args": ["login"]}
    # What the client runs for it: the agent's command with these args instead of `serve --acp`.
    assert sidecar(env, *login["args"], stdin=KEY + "\n").returncode == 0
    assert await agent.request("authenticate", {"methodId": "login"}) == {}


async def test_no_key_first_prompt_says_how_to_set_one(agent: SidecarProcess, workspace: Path) -> None:
    await start(agent)
    with pytest.raises(RemoteError) as err:
        await prompt(agent, workspace)
    assert err.value.code == -32000
    assert err.value.message == (
        "No API key is set for https://api.anthropic.com. Run `sidecar login` in a terminal to keep a key in the "
        "OS keychain, or set ANTHROPIC_API_KEY in the agent's environment (in VS Code: run “Sidecar: Set API Key”).")
    data: dict[str, Any] = err.value.data or {}
    assert data["retryable"] is False
    assert data["sidecar"] == {"reason": "auth_missing", "endpoint": "https://api.anthropic.com",
                                         "keySource": None}
    with pytest.raises(RemoteError) as denied:
        await agent.request("authenticate", {"methodId": "keychain"})
    assert denied.value.code == -32000 and "run `sidecar login`" in denied.value.message


async def test_keychain_key_is_used_after_login_and_authenticate(agent: SidecarProcess, env: dict[str, str],
                                                                 workspace: Path,
                                                                 model_server: ScriptedModelServer) -> None:
    """The key saved with ``sidecar login`` while the agent runs: ``authenticate`` succeeds and the next
    prompt goes out with it (an endpoint that wants a key: the scripted server checks ``x-api-key``)."""
    await start(agent, ANTHROPIC_BASE_URL=model_server.base_url)
    assert sidecar(env, "login", stdin=KEY + "\n").returncode == 0
    assert await agent.request("authenticate", {"methodId": "keychain"}) == {}
    model_server.add_turns([{"content": [{"type": "text", "text": "answered"}]}])
    assert (await prompt(agent, workspace))["stopReason"] == "end_turn"
    assert model_server.message_requests()[-1].api_key == KEY


async def test_refused_key_names_the_endpoint_and_the_key(agent: SidecarProcess, workspace: Path,
                                                          model_server: ScriptedModelServer) -> None:
    await start(agent, ANTHROPIC_BASE_URL=model_server.base_url, ANTHROPIC_API_KEY="sk-ant-wrong-0123456789")
    model_server.add_turns([{"fault": "http", "status": 401, "error_type": "authentication_error",
                             "message": "invalid x-api-key"}])
    with pytest.raises(RemoteError) as err:
        await prompt(agent, workspace)
    assert err.value.code == -32000
    assert err.value.message.startswith(
        f"The model API at {model_server.base_url} refused the key in ANTHROPIC_API_KEY (HTTP 401: invalid x-api-key). "
        "Check the key. Run `sidecar login`")
    data: dict[str, Any] = err.value.data or {}
    assert data["retryable"] is False
    assert data["sidecar"] == {"reason": "auth_failed", "endpoint": model_server.base_url,
                                         "keySource": "ANTHROPIC_API_KEY", "status": 401}
    assert "TypeError" not in err.value.message

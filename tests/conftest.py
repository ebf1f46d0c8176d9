"""End-to-end fixtures: a scripted model server and a spawned sidecar, driven as an editor would.

``sidecar`` is parametrised over both transports (ACP ndjson and LSP framing) where a test asks for
``any_transport``; ``acp_sidecar`` is the ACP one alone. Every sidecar runs with HOME and the XDG dirs
inside the test's tmp dir and talks only to the scripted server on 127.0.0.1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer, take_rejections

REPO = Path(__file__).resolve().parent.parent
TEST_API_KEY = "sk-ant-test-DO-NOT-LEAK-0123456789abcdef"

PermissionPolicy = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


async def allow_once(params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": _option(params, "allow_once")}}


async def reject_once(params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": _option(params, "reject_once")}}


def _option(params: dict[str, Any], kind: str) -> str:
    for option in params.get("options", []):
        if option.get("kind") == kind:
            return str(option["optionId"])
    raise AssertionError(f"no {kind} option in {params.get('options')}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "api_rejections_expected: the test sends requests the real Messages API would reject, on purpose"
    )


@pytest.fixture(autouse=True)
def _requests_the_real_api_would_accept(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every request a test's code sent to a (strict) scripted server must be one the real API accepts."""
    take_rejections()
    yield
    rejected = take_rejections()
    if rejected and request.node.get_closest_marker("api_rejections_expected") is None:
        pytest.fail("the scripted model rejected requests the real API would reject:\n" + "\n".join(rejected))


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer().start()
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "hello.py").write_text('def greet(name):\n    return f"Hello, {name}!"\n')
    (ws / "README.md").write_text("# Fixture project\n\nA small workspace for tests.\n")
    (ws / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return ws


@pytest.fixture
def sidecar_env(tmp_path: Path, model_server: ScriptedModelServer) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SIDECAR_"))}
    env.update(
        {
            "ANTHROPIC_BASE_URL": model_server.base_url,
            "ANTHROPIC_API_KEY": TEST_API_KEY,
            "HOME": str(home),
            "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
            "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
            "SIDECAR_MAX_BACKOFF": "0.2",
            "SIDECAR_MANAGED_SETTINGS": str(tmp_path / "managed-settings.json"),
            "PYTHONPATH": str(REPO),
            "NO_PROXY": "127.0.0.1,localhost",
        }
    )
    return env


def trust_workspace(env: dict[str, str], workspace: Path) -> None:
    """The user trusted ``workspace`` earlier (their remembered answer, as "Always trust" leaves it):
    its project settings (allow rules, hooks …) apply without a question."""
    from sidecar.permissions.trust import TrustStore

    TrustStore(Path(env["XDG_DATA_HOME"]) / "sidecar" / "trust.json").set_workspace(workspace.resolve(), True)


class Harness:
    """One spawned sidecar plus conveniences for the common steps of a test."""

    def __init__(self, process: SidecarProcess, model: ScriptedModelServer) -> None:
        self.process = process
        self.model = model
        self.permission_requests: list[dict[str, Any]] = []
        self.permission_policy: PermissionPolicy = allow_once

        async def on_permission(params: dict[str, Any]) -> dict[str, Any]:
            self.permission_requests.append(params)
            return await self.permission_policy(params)

        process.handlers["session/request_permission"] = on_permission

    async def new_session(self, cwd: Path, **extra: Any) -> str:
        result = await self.process.request("session/new", {"cwd": str(cwd), "mcpServers": [], **extra})
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str, timeout: float = 60) -> str:
        result = await self.process.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}, timeout=timeout
        )
        return str(result["stopReason"])

    def text(self, session_id: str) -> str:
        return self.process.agent_text(session_id)


async def start_harness(
    framing: str,
    env: dict[str, str],
    model: ScriptedModelServer,
    tmp_path: Path,
    client_capabilities: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
) -> Harness:
    stderr = open(tmp_path / f"sidecar-{framing}.stderr", "wb")
    process = SidecarProcess(
        framing=framing,
        env=env,
        cwd=str(REPO),
        stderr=stderr,  # type: ignore[arg-type]
        argv=[sys.executable, "-m", "sidecar", "serve", *(["--acp"] if framing == "acp" else [])],
    )
    await process.start()
    await process.initialize(client_capabilities, settings)
    return Harness(process, model)


@pytest_asyncio.fixture(params=["acp", "lsp"])
async def any_transport(
    request: pytest.FixtureRequest, sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path
) -> AsyncIterator[Harness]:
    harness = await start_harness(request.param, sidecar_env, model_server, tmp_path)
    yield harness
    await harness.process.close()


@pytest_asyncio.fixture
async def acp_sidecar(
    sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path
) -> AsyncIterator[Harness]:
    harness = await start_harness("acp", sidecar_env, model_server, tmp_path)
    yield harness
    await harness.process.close()

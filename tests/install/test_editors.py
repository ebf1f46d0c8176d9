"""docs/editors.md's recipes, run as written, and agent.json checked against the ACP registry's format.

Each snippet is read from the page (so page and test cannot drift). The agent is started exactly as the
snippet says — its command (looked up on a PATH that has the ``uv tool install``ed ``sidecar``, and uv for
the uvx recipe), its args, its env on top of the user's — and completes a prompt over ACP against the
scripted model on 127.0.0.1. The uvx recipe fetches ``sidecar-agent@X`` from an offline wheelhouse standing
in for PyPI (``Installed.offline_index``). The Neovim recipe is real Lua, run by ``lupa`` with
CodeCompanion's modules stubbed, and driven in CodeCompanion's order (initialize with its ``parameters``,
``authenticate`` with ``defaults.auth_method``, ``session/new``, ``session/prompt``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sidecar import version
from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.install.conftest import Installed
from tests.install.wheelhouse import REPO

EDITORS = REPO / "docs" / "editors.md"


def recipe(name: str) -> str:
    """The fenced block right after ``<!-- recipe: name -->`` in docs/editors.md."""
    found = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```\w+\n(.*?)```", EDITORS.read_text(), re.S)
    assert found, f"docs/editors.md has no recipe {name!r}"
    return found.group(1)


async def complete_a_prompt(argv: list[str], env: dict[str, str], cwd: Path, tmp_path: Path,
                            initialize: dict[str, Any] | None = None, auth_method: str | None = None,
                            mcp_servers: list[Any] | None = None) -> str:
    text = f"Answered for {argv[0]}."
    with ScriptedModelServer([{"content": [{"type": "text", "text": text}]}]) as model:
        process = SidecarProcess(framing="acp", cwd=str(cwd), argv=argv,
                                 env={**env, "ANTHROPIC_BASE_URL": model.base_url,
                                      "ANTHROPIC_API_KEY": "sk-ant-test-editors"},
                                 stderr=open(tmp_path / f"{argv[0]}.stderr", "ab"))

        async def read_text_file(params: dict[str, Any]) -> dict[str, Any]:
            return {"content": Path(params["path"]).read_text()}

        process.handlers["fs/read_text_file"] = read_text_file
        await process.start()
        try:
            init = await process.request("initialize", initialize or {"protocolVersion": 1, "clientCapabilities": {}},
                                         timeout=120)
            assert init["agentInfo"]["name"] == "sidecar-agent"
            if auth_method is not None:
                assert await process.request("authenticate", {"methodId": auth_method}) == {}
            session = (await process.request("session/new", {"cwd": str(cwd), "mcpServers": mcp_servers or []}))
            result = await process.request("session/prompt", {
                "sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hello"}]}, timeout=120)
            answer = process.agent_text(session["sessionId"])
        finally:
            await process.close()
    assert result["stopReason"] == "end_turn"
    assert answer == text
    return answer


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    (path / "main.py").write_text("print('hi')\n")
    return path


@pytest.mark.parametrize("entry", ["Sidecar", "Sidecar (uvx)"])
async def test_zed_agent_servers_recipe(installed: Installed, project: Path, tmp_path: Path, entry: str) -> None:
    server = json.loads(recipe("zed"))["agent_servers"][entry]
    assert server["type"] == "custom"
    env = installed.env(**server.get("env", {}), **(installed.offline_index() if server["command"] == "uvx" else {}))
    await complete_a_prompt([server["command"], *server["args"]], env, project, tmp_path)


async def test_jetbrains_acp_json_recipe(installed: Installed, project: Path, tmp_path: Path) -> None:
    (server,) = json.loads(recipe("jetbrains"))["agent_servers"].values()
    await complete_a_prompt([server["command"], *server["args"]], installed.env(**server.get("env", {})),
                            project, tmp_path)


def lua_to_python(value: Any) -> Any:
    from lupa import lua_type

    if lua_type(value) != "table":
        return value
    items = {k: lua_to_python(v) for k, v in value.items()}
    if items and list(items) == list(range(1, len(items) + 1)):
        return list(items.values())
    return items


def codecompanion_adapter(snippet: str, name: str) -> dict[str, Any]:
    """Run the user's config with CodeCompanion's modules stubbed; the adapter table its function returns."""
    from lupa import LuaRuntime

    lua = LuaRuntime(unpack_returned_tuples=True)
    lua.execute("""
        captured = nil
        package.preload["codecompanion"] = function() return { setup = function(cfg) captured = cfg end } end
        package.preload["codecompanion.adapters.acp.helpers"] = function()
          return { form_messages = function(self, messages, capabilities) return messages end }
        end
    """)
    lua.execute(snippet)
    config = lua.globals().captured
    assert config is not None, "the snippet never called require('codecompanion').setup"
    assert config.interactions.chat.adapter == name
    adapter = config.adapters.acp[name]()
    assert adapter.handlers.setup(adapter) is True
    return {k: lua_to_python(adapter[k]) for k in ("name", "type", "commands", "defaults", "parameters", "env")}


async def test_neovim_codecompanion_recipe(installed: Installed, project: Path, tmp_path: Path) -> None:
    adapter = codecompanion_adapter(recipe("neovim-codecompanion"), "sidecar")
    assert (adapter["name"], adapter["type"]) == ("sidecar", "acp")
    env = installed.env(**(adapter["env"] or {}))
    await complete_a_prompt(adapter["commands"]["default"], env, project, tmp_path,
                            initialize=adapter["parameters"], auth_method=adapter["defaults"]["auth_method"],
                            mcp_servers=adapter["defaults"]["mcpServers"] or [])


def test_agent_json_is_a_valid_registry_entry() -> None:
    agent = json.loads((REPO / "agent.json").read_text())
    schema = json.loads((Path(__file__).parent / "data" / "acp-registry-agent.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(agent)
    # The registry CI's own checks (build_registry.py: validate_agent, validate_distribution_versions).
    assert re.fullmatch(r"[a-z][a-z0-9-]*", agent["id"])
    assert agent["version"] == version()
    package = agent["distribution"]["uvx"]["package"]
    assert "@latest" not in package and package == f"sidecar-agent@{version()}"
    assert agent["distribution"]["uvx"]["args"] == ["serve", "--acp"]


def test_every_pinned_version_in_the_docs_is_this_one() -> None:
    for doc in (EDITORS, REPO / "README.md"):
        pins = set(re.findall(r"sidecar-agent@([0-9][^\s\"',`]*)", doc.read_text()))
        assert pins <= {version()}, f"{doc.name} pins {pins}, the package is {version()}"

"""Headless server management: missing commands, hung servers, the settings table, TypeScript."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from sidecar.errors import ToolError
from sidecar.tools.lsp.servers import (
    DEFAULT_SERVERS,
    LanguageServers,
    ServerSpec,
    find_command,
    load_server_table,
)
from sidecar.tools.lsp.service import LANGUAGE_SERVERS
from tests.lsp.conftest import copy_fixtures, isolated_home, make_session, pid_alive, run_lsp

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in isolated_home(tmp_path).items():
        monkeypatch.setenv(key, value)


async def test_a_missing_server_names_the_command_to_install(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path) / "py_project"
    session = make_session(root, tmp_path / "store")
    spec = ServerSpec("python", (".py",), (("no-such-langserver", "--stdio"),),
                      install_hint="`pip install no-such-langserver`")
    session.provide(LANGUAGE_SERVERS, LanguageServers(session, table=[spec]))
    with pytest.raises(ToolError) as err:
        await run_lsp(session, "hover", root / "app/main.py", 6, 5)
    assert err.value.message == (
        "No python language server is installed: looked for `no-such-langserver --stdio` in the project's "
        "node_modules/.bin, the sidecar's environment and PATH. Install one with "
        "`pip install no-such-langserver`, or use Grep/Read instead.")


async def test_close_kills_a_server_that_ignores_shutdown_and_its_children(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path) / "py_project"
    session = make_session(root, tmp_path / "store")
    spec = ServerSpec("python", (".py",), ((sys.executable, str(HERE / "hanging_server.py")),))
    servers = LanguageServers(session, table=[spec])
    session.provide(LANGUAGE_SERVERS, servers)
    server = await servers.server_for(root / "app/main.py")
    assert server.pid is not None
    for _ in range(100):
        if any(line.startswith("child ") for line in server.stderr_tail):
            break
        await asyncio.sleep(0.05)
    child = int(next(line for line in server.stderr_tail if line.startswith("child ")).split()[1])
    started = time.monotonic()
    await servers.close()
    assert time.monotonic() - started < 8
    assert not pid_alive(server.pid)
    for _ in range(40):  # the child is reparented to init, which reaps it shortly after the kill
        if not pid_alive(child):
            break
        await asyncio.sleep(0.05)
    assert not pid_alive(child)


def test_settings_add_a_language_and_replace_a_command(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"lspServers": {
        "rust": {"extensions": ["rs"], "command": ["rust-analyzer"]},
        "python": {"command": ["pyright-langserver", "--stdio"]},
    }}))
    table = {s.language: s for s in load_server_table(tmp_path, home=tmp_path / "home")}
    assert table["rust"].extensions == (".rs",) and table["rust"].commands == (("rust-analyzer",),)
    assert table["python"].commands == (("pyright-langserver", "--stdio"),)
    assert table["python"].extensions == (".py", ".pyi")
    assert table["typescript"] == DEFAULT_SERVERS[1]


def test_python_default_prefers_basedpyright_from_the_venv(tmp_path: Path) -> None:
    command = find_command(DEFAULT_SERVERS[0], tmp_path)
    assert command is not None
    assert Path(command[0]).name == "basedpyright-langserver" and command[1:] == ["--stdio"]


async def test_jedi_language_server_as_the_fallback(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path) / "py_project"
    session = make_session(root, tmp_path / "store")
    spec = ServerSpec("python", (".py",), (("jedi-language-server",),))
    servers = LanguageServers(session, table=[spec])
    session.provide(LANGUAGE_SERVERS, servers)
    try:
        text = await run_lsp(session, "goToDefinition", root / "app/main.py", 7, 23)
        assert "shapes/base.py:7:9: def area(self) -> float:" in text
    finally:
        await servers.close()


@pytest.mark.timeout(180)
async def test_typescript_language_server_definition_and_references(tmp_path: Path) -> None:
    ts_spec = DEFAULT_SERVERS[1]
    root = copy_fixtures(tmp_path) / "ts_project"
    if find_command(ts_spec, root) is None:
        pytest.fail("typescript-language-server is not installed: run `npm ci --prefix tools/lsp`")
    session = make_session(root, tmp_path / "store")
    try:
        text = await run_lsp(session, "goToDefinition", root / "src/main.ts", 5, 19)
        assert text == "Found 1 definition:\n\nsrc/greeter.ts:6:3: greet(name: string): string {"
        text = await run_lsp(session, "findReferences", root / "src/main.ts", 3, 17)
        assert text == ("Found 2 references in 1 file:\n\n"
                        "src/main.ts:3:17: export function welcome(who: string): string {\n"
                        'src/main.ts:8:13: console.log(welcome("world"));')
        text = await run_lsp(session, "goToImplementation", root / "src/greeter.ts", 1, 18)
        assert text == ("Found 1 implementation:\n\n"
                        "src/greeter.ts:5:14: export class LoudGreeter implements Greeter {")
    finally:
        from sidecar.tools.lsp.service import language_servers
        await language_servers(session).close()

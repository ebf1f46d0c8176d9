"""pinning.py's pieces on their own: the server's environment before trust, the cleaned pyright config."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sidecar.tools.lsp.pinning import CleanConfig, clean_env
from tests.lsp.conftest import isolated_home, make_session


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in isolated_home(tmp_path).items():
        monkeypatch.setenv(key, value)


def test_search_paths_the_repository_controls_leave_the_environment(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    (ws / "bin").mkdir(parents=True)
    session = make_session(ws, tmp_path / "store")
    env = {"PATH": os.pathsep.join([str(ws / "bin"), ".", "", "/usr/bin", "node_modules/.bin", "/bin"]),
           "PYTHONPATH": str(ws), "NODE_PATH": "/opt/node", "VIRTUAL_ENV": str(ws / ".venv"),
           "CONDA_PREFIX": "/opt/conda", "HOME": "/home/u"}
    assert clean_env(env, session) == {"PATH": "/usr/bin:/bin", "NODE_PATH": "/opt/node", "CONDA_PREFIX": "/opt/conda",
                                       "HOME": "/home/u"}


def test_the_cleaned_config_keeps_paths_inside_and_drops_those_outside(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    (ws / "lib").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "escape").symlink_to(outside)  # inside by name, outside where it leads
    (ws / "pyrightconfig.json").write_text("""{
      // JSON with comments, as pyright reads it
      "extraPaths": ["lib", "../outside", "escape", "/etc"],
      "extends": "../outside/base.json",
      "venvPath": "..", "venv": "outside",
      "include": ["src", "/home/*/secrets"],
      "typeCheckingMode": "strict",
      "executionEnvironments": [{"root": "lib", "extraPaths": ["/etc"]}, {"root": "/"}],
    }""")
    session = make_session(ws, tmp_path / "store")
    copy = CleanConfig.for_project(session)
    assert copy is not None
    try:
        written = json.loads(copy.path.read_text())
        assert written == {
            "extraPaths": [str(ws / "lib")],
            "include": [str(ws / "src")],
            "typeCheckingMode": "strict",
            "executionEnvironments": [{"root": str(ws / "lib"), "extraPaths": []}, {"root": str(ws)}],
            "exclude": [f"{ws}/**/node_modules", f"{ws}/**/__pycache__", f"{ws}/**/.*"],
            "stubPath": str(ws / "typings"),
        }
        assert "ignored the project config's extends '../outside/base.json' (not read before trust)" in copy.notes
        assert "ignored the project config's extraPaths 'escape': outside the workspace" in copy.notes
        assert not copy.path.is_relative_to(ws)
    finally:
        copy.remove()
    assert not copy.dir.exists()


def test_a_config_that_cannot_be_parsed_is_ignored_whole(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (ws / "pyrightconfig.json").write_text('{"extraPaths": ["/etc"')
    copy = CleanConfig.for_project(make_session(ws, tmp_path / "store"))
    assert copy is not None
    try:
        assert json.loads(copy.path.read_text())["include"] == [str(ws)]
        assert "extraPaths" not in json.loads(copy.path.read_text())
    finally:
        copy.remove()


@pytest.mark.timeout(180)
async def test_servers_started_before_trust_are_restarted_once_it_is_granted(tmp_path: Path) -> None:
    from sidecar.permissions.trust import trust_of
    from sidecar.tools.lsp.service import language_servers
    from tests.lsp.conftest import EditorChannel, run_lsp
    from tests.lsp.test_lsp_doors import plant_python

    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    marker = tmp_path / "planted-python-ran"
    plant_python(ws, marker)
    main = ws / "main.py"
    main.write_text("LOCAL = 'visible-value'\nprint(LOCAL)\n")

    async def allow_once(params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    channel = EditorChannel(handlers={"session/request_permission": allow_once})
    session = make_session(ws, tmp_path / "store", channel)
    trust = trust_of(session)
    assert trust is not None
    trust.trusted = None  # not trusted (yet)
    servers = language_servers(session)
    try:
        assert "LOCAL: Literal['visible-value']" in await run_lsp(session, "hover", main, 2, 7)
        first = servers.running(main)
        assert first is not None and not marker.exists()
        trust.trusted = True  # the user trusts the workspace mid-session
        assert "LOCAL: Literal['visible-value']" in await run_lsp(session, "hover", main, 2, 7)
        second = servers.running(main)
        assert second is not None and second is not first and not first.alive
        assert marker.exists()  # the workspace's interpreter, asked about and allowed
        assert [m for m, _ in channel.requests] == ["session/request_permission"]
    finally:
        await servers.close()

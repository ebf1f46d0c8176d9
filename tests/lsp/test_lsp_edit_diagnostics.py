"""Edit and Write report the errors they introduce, from a real basedpyright, in the same tool result."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.tools.lsp.service import LANGUAGE_SERVERS, language_servers
from tests.files.helpers import Agent
from tests.lsp.conftest import copy_fixtures, isolated_home

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in isolated_home(tmp_path).items():
        monkeypatch.setenv(key, value)


async def test_an_edit_that_introduces_a_type_error_returns_the_diagnostic(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path) / "py_project"
    square = root / "shapes/square.py"
    agent = Agent(root, tmp_path, mode="acceptEdits")
    try:
        text, is_error, _ = await agent.call("Read", file_path=str(square))
        assert not is_error
        text, is_error, _ = await agent.call("Edit", file_path=str(square),
                                               old_string="return self.side * self.side",
                                               new_string='return "side"')
        assert not is_error
        assert text.startswith("The file shapes/square.py has been updated.")
        assert ("\n\n<new-diagnostics>\nThe edit introduced 1 new error in shapes/square.py:\n"
                "  shapes/square.py:9:16: error: Type \"Literal['side']\" is not assignable to return type "
                "\"float\"") in text
        assert text.endswith("(basedpyright reportReturnType)\n</new-diagnostics>")
        assert square.read_text().count('return "side"') == 1

        # Fixing it reports nothing new.
        text, is_error, _ = await agent.call("Edit", file_path=str(square), old_string='return "side"',
                                             new_string="return self.side * self.side")
        assert not is_error and "<new-diagnostics>" not in text
    finally:
        await language_servers(agent.session).close()
        await agent.close()


async def test_editing_a_file_no_server_covers_adds_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    notes = root / "notes.txt"
    notes.write_text("alpha\n")
    agent = Agent(root.resolve(), tmp_path, mode="acceptEdits")
    try:
        await agent.call("Read", file_path=str(notes))
        text, is_error, _ = await agent.call("Edit", file_path=str(notes), old_string="alpha",
                                             new_string="beta")
        assert not is_error and "<new-diagnostics>" not in text
        servers = agent.session.find_service(LANGUAGE_SERVERS)
        assert servers is None or servers.running(notes) is None
    finally:
        await agent.close()


async def test_a_diagnostic_does_not_show_the_value_of_a_file_read_may_not_show(tmp_path: Path) -> None:
    root = (tmp_path / "ws").resolve()
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Read(./denied.py)"]}}')
    (root / "denied.py").write_text("from typing import Final\nKEY: Final = 'CANARY-DIAG-5d1'\n")
    main = root / "main.py"
    main.write_text("from denied import KEY\n\nx = 1\nprint(KEY, x)\n")
    agent = Agent(root, tmp_path, mode="acceptEdits")
    try:
        await agent.call("Read", file_path=str(main))
        text, is_error, _ = await agent.call("Edit", file_path=str(main), old_string="x = 1",
                                             new_string="x: int = KEY")
        assert not is_error
        assert "main.py:3:10: error: Type \"Literal['…']\" is not assignable to declared type \"int\"" in text
        assert "CANARY-DIAG" not in text
    finally:
        await language_servers(agent.session).close()
        await agent.close()

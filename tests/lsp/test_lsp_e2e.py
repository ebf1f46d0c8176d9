"""The LSP tool end to end: the model asks, a headless basedpyright answers, the result reaches the model."""

from __future__ import annotations

import shutil
from pathlib import Path

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO, Harness


async def test_go_to_definition_through_the_agent(acp_sidecar: Harness, model_server: ScriptedModelServer,
                                                  tmp_path: Path) -> None:
    project = tmp_path / "py_project"
    shutil.copytree(REPO / "fixtures" / "lsp" / "py_project", project)
    main = project / "app" / "main.py"
    # `total_area` used on line 11, column 23 (1-based) → defined on line 6.
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "LSP", "input": {
            "operation": "goToDefinition", "filePath": str(main), "line": 11, "character": 23}}]},
        {"content": [{"type": "text", "text": "It is defined in app/main.py."}]},
    ])
    session = await acp_sidecar.new_session(project)
    assert await acp_sidecar.prompt(session, "Where is total_area defined?", timeout=180) == "end_turn"
    result = model_server.message_requests()[1].tool_results()[0]
    text = "".join(b["text"] for b in result["content"])
    assert not result.get("is_error"), text
    assert "app/main.py:6:5" in text and "def total_area" in text
    assert acp_sidecar.permission_requests == []  # read-only inside the workspace: no question

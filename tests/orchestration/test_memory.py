"""Nested CLAUDE.md loaded on the first read below it (with @imports), as a reminder in the next request."""

from __future__ import annotations

from pathlib import Path

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar


async def test_nested_claude_md_loaded_on_first_read_below_it(make_sidecar: MakeSidecar, workspace: Path,
                                                             model_server: ScriptedModelServer) -> None:
    pkg = workspace / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "CLAUDE.md").write_text("Code in pkg uses tabs.\nSee @conventions.md for naming.\n")
    (pkg / "conventions.md").write_text("Functions are named verb_noun.\n")
    (pkg / "sub" / "mod.py").write_text("def run_job():\n\treturn 1\n")
    (pkg / "other.py").write_text("X = 1\n")
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "notes.txt")}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(pkg / "sub" / "mod.py")}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(pkg / "other.py")}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    harness = await make_sidecar()
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "look around") == "end_turn"
    requests = model_server.message_requests()
    assert "Code in pkg uses tabs." not in requests[0].text()  # not in the system prompt
    assert "Code in pkg uses tabs." not in requests[1].text()  # a read outside pkg loads nothing
    reminder = requests[2].body["messages"][-1]["content"][-1]
    assert reminder["type"] == "text" and reminder["text"].startswith("<system-reminder>")
    assert f"Contents of {pkg / 'CLAUDE.md'}" in reminder["text"]
    assert "Code in pkg uses tabs." in reminder["text"]
    assert "Functions are named verb_noun." in reminder["text"]  # the @import, inlined
    # Loaded once: the next read below pkg adds nothing.
    assert requests[3].text().count("Code in pkg uses tabs.") == 1


def test_project_memory_imports_in_the_system_prompt(tmp_path: Path) -> None:
    from sidecar.agent.prompt import read_memory

    (tmp_path / "docs").mkdir()
    (tmp_path / "CLAUDE.md").write_text("Project rules.\n@docs/style.md\nNot an import: `@docs/none.md`\n")
    (tmp_path / "docs" / "style.md").write_text("Use black. See @../CLAUDE.md\n")
    [(path, text)] = read_memory(tmp_path, home=tmp_path / "nohome")
    assert path == tmp_path / "CLAUDE.md"
    assert text == (f"Project rules.\n@docs/style.md\n<imported path=\"{tmp_path / 'docs' / 'style.md'}\">\n"
                    "Use black. See @../CLAUDE.md\n</imported>\nNot an import: `@docs/none.md`")

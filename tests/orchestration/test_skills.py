"""Skills: listed by description, loaded on use, embedded commands run through the Bash tool's governance."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar, result_text

SKILL = """---
name: release
description: Prepare release notes for a version.
---
Files here: !`ls hello.py notes.txt`
Marker: !`touch made-by-skill.txt`
Write the notes for $ARGUMENTS.
"""


async def test_skill_loaded_and_its_commands_governed(make_sidecar: MakeSidecar, workspace: Path,
                                                     model_server: ScriptedModelServer) -> None:
    skill_dir = workspace / ".claude" / "skills" / "release"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(SKILL)
    harness = await make_sidecar()
    asked: list[dict[str, Any]] = []

    async def reject(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        option = next(o for o in params["options"] if o["kind"] == "reject_once")
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    harness.permission_policy = reject
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Skill", "input": {"skill": "release", "args": "v2.0"}}]},
        {"content": [{"type": "text", "text": "Notes written."}]},
    ])
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "prepare the release") == "end_turn"
    first, second = model_server.message_requests()
    skill_def = next(t for t in first.body["tools"] if t["name"] == "Skill")
    assert "- release: Prepare release notes for a version." in skill_def["description"]
    assert "Write the notes for" not in first.text()  # loaded on use only

    loaded = result_text(second.tool_results()[0])
    assert loaded.startswith(f"Base directory for this skill: {skill_dir}")
    assert "Files here: hello.py\nnotes.txt" in loaded  # read-only: ran without asking
    assert "Write the notes for v2.0." in loaded
    # The changing command asked the user (through Bash's permission) and was refused: not run.
    assert len(asked) == 1 and "touch made-by-skill.txt" in str(asked[0]["toolCall"])
    assert "Marker: [command failed or refused: The user rejected this tool call" in loaded
    assert not (workspace / "made-by-skill.txt").exists()
    bash_cards = [u for u in harness.process.updates_for(session, "tool_call") if u["kind"] == "execute"]
    assert [c["rawInput"]["command"] for c in bash_cards] == ["ls hello.py notes.txt", "touch made-by-skill.txt"]

    # Published as a slash command, and /release works from the prompt box.
    for _ in range(50):
        if harness.process.updates_for(session, "available_commands_update"):
            break
        await asyncio.sleep(0.1)
    commands = harness.process.updates_for(session, "available_commands_update")[-1]["availableCommands"]
    assert [c["name"] for c in commands] == ["compact", "clear", "model", "release"]
    harness.permission_policy = reject
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    assert await harness.prompt(session, "/release v3") == "end_turn"
    prompt = model_server.message_requests()[-1].body["messages"][-1]["content"][0]["text"]
    assert prompt.startswith("<command-name>/release</command-name>") and "Write the notes for v3." in prompt

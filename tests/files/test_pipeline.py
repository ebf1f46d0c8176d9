"""The file tools in the one pipeline (issue 28): the proposal is worked out and reviewed before any
observer or write runs, and a call that stops after its review but before ``run`` leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from sidecar.tools.dispatch import BEFORE_TOOL_CALL
from tests.files.helpers import Agent


async def test_an_edit_stopped_between_review_and_run_leaves_no_temp_file(agent: Agent, ws: Path) -> None:
    """acceptEdits writes the temp file early; when a before-call observer (a checkpoint) fails after the
    approval, the call never runs and that temp file is removed."""
    f = ws / "a.txt"
    f.write_text("alpha\n")
    await agent.call("Read", file_path=str(f))
    seen: list[tuple[str, bool]] = []

    async def failing_checkpoint(tool: str, writes: bool) -> None:
        seen.append((tool, writes))
        raise RuntimeError("the checkpoint's disk is full")

    agent.session.service(BEFORE_TOOL_CALL).append(failing_checkpoint)
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="alpha", new_string="beta")
    assert err and "internal error" in text, text
    assert seen == [("Edit", True)]
    assert f.read_text() == "alpha\n"
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt"]


async def test_a_proposal_that_cannot_be_made_asks_nothing(ws: Path, tmp_path: Path) -> None:
    """old_string not found: prepare refuses, so the user is never asked about an edit that cannot land."""
    agent = Agent(ws, tmp_path, mode="default")
    try:
        f = ws / "a.txt"
        f.write_text("alpha\n")
        await agent.call("Read", file_path=str(f))
        text, err, _ = await agent.call("Edit", file_path=str(f), old_string="gamma", new_string="beta")
        assert err and "old_string was not found" in text
        assert agent.channel.permission_requests() == []
        text, err, _ = await agent.call("Edit", file_path=str(f), old_string="alpha", new_string="beta")
        assert not err, text
        [asked] = agent.channel.permission_requests()
        assert asked["toolCall"]["content"] == [{"type": "diff", "path": str(f), "oldText": "alpha\n",
                                                 "newText": "beta\n"}]
        assert f.read_text() == "beta\n"
    finally:
        await agent.close()

"""The edit review with a real Session: what lands, what the model is told, void proposals, modes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.errors import ToolError
from sidecar.permissions.review import review_edit
from tests.permissions.perm_support import ScriptedChannel, ctx_of, make_session

REVIEW_CAPS = {"_meta": {"sidecar": {"reviewEdit": True}}}
OLD = "".join(f"line {i}\n" for i in range(1, 21))
NEW = OLD.replace("line 2\n", "line TWO\n").replace("line 18\n", "line EIGHTEEN\n")


Seen = list[dict[str, Any]]


def reviewer(result: dict[str, Any], before_answer: Any = None) -> tuple[ScriptedChannel, Seen]:
    channel = ScriptedChannel(REVIEW_CAPS)
    seen: list[dict[str, Any]] = []

    async def respond(method: str, params: dict[str, Any]) -> Any:
        assert method == "_sidecar/review_edit"
        seen.append(params)
        if before_answer:
            before_answer()
        return result
    channel.responder = respond
    return channel, seen


@pytest.fixture
def target(project: Path) -> Path:
    p = project / "src/app.py"
    p.write_text(OLD)
    return p


async def test_review_request_carries_the_diff_and_hunks(project: Path, target: Path) -> None:
    channel, seen = reviewer({"outcome": "accepted"})
    session = make_session(project, channel)
    outcome = await review_edit(ctx_of(session, "toolu_7"), target, OLD, NEW)
    assert (outcome.approved, outcome.final_text, outcome.summary_for_model) == (True, NEW, "")
    params = seen[0]
    assert params["sessionId"] == session.id and params["toolCallId"] == "toolu_7"
    assert params["path"] == str(target) and params["oldText"] == OLD and params["newText"] == NEW
    assert params["hunks"] == [{"index": 0, "oldStart": 1, "oldLines": 5, "newStart": 1, "newLines": 5},
                               {"index": 1, "oldStart": 15, "oldLines": 6, "newStart": 15, "newLines": 6}]
    assert "-line 2\n+line TWO\n" in params["unifiedDiff"]


async def test_partial_acceptance_lands_exactly_the_accepted_hunks(project: Path, target: Path) -> None:
    channel, _ = reviewer({"outcome": "accepted", "acceptedHunks": [1]})
    outcome = await review_edit(ctx_of(make_session(project, channel)), target, OLD, NEW)
    assert outcome.approved and outcome.landed == "some_hunks"
    assert outcome.final_text == OLD.replace("line 18\n", "line EIGHTEEN\n")
    assert "hunks 2 of 2 were written; hunks 1 were dropped" in outcome.summary_for_model
    assert "-line 2\n+line TWO\n" in outcome.summary_for_model  # the dropped change, shown to the model


async def test_user_changed_proposal_lands_and_model_sees_it(project: Path, target: Path) -> None:
    mine = NEW.replace("line TWO\n", "line 2 (kept by the user)\n")
    channel, _ = reviewer({"outcome": "accepted", "finalText": mine})
    outcome = await review_edit(ctx_of(make_session(project, channel)), target, OLD, NEW)
    assert outcome.approved and outcome.final_text == mine and outcome.landed == "user_changed"
    assert "-line TWO\n+line 2 (kept by the user)\n" in outcome.summary_for_model


async def test_rejection_with_feedback_is_never_success(project: Path, target: Path) -> None:
    channel, _ = reviewer({"outcome": "rejected", "feedback": "keep the numbers as digits"})
    session = make_session(project, channel)
    with pytest.raises(ToolError) as err:
        await review_edit(ctx_of(session), target, OLD, NEW)
    review = session.store.audits("edit_review")  # type: ignore[attr-defined]
    assert [(r["landed"], r["feedback"]) for r in review] == [("rejected", "keep the numbers as digits")]
    assert err.value.message == (
        f"The user rejected your edit to {target.as_posix()}; nothing was written. The user said: keep the "
        "numbers as digits Do not retry the same edit; adjust your approach to what the user wants.")


async def test_file_changed_on_disk_during_review_voids_the_proposal(project: Path, target: Path) -> None:
    def formatter_runs() -> None:
        target.write_text(OLD + "formatter\n")
    channel, _ = reviewer({"outcome": "accepted"}, before_answer=formatter_runs)
    with pytest.raises(ToolError, match="was changed on disk"):
        await review_edit(ctx_of(make_session(project, channel)), target, OLD, NEW)
    assert target.read_bytes() == (OLD + "formatter\n").encode()


async def test_without_review_support_permission_carries_diff(project: Path, target: Path) -> None:
    channel = ScriptedChannel()
    channel.answer_with("allow_once")
    outcome = await review_edit(ctx_of(make_session(project, channel)), target, OLD, NEW)
    assert outcome.approved and outcome.final_text == NEW
    method, params = channel.requests[0]
    assert method == "session/request_permission"
    diff = {"type": "diff", "path": str(target), "oldText": OLD, "newText": NEW}
    assert params["toolCall"]["content"] == [diff]


async def test_accept_edits_applies_unasked_and_shows_diff(project: Path, target: Path) -> None:
    channel = ScriptedChannel(REVIEW_CAPS)
    session = make_session(project, channel, mode="acceptEdits")
    outcome = await review_edit(ctx_of(session), target, OLD, NEW)
    assert outcome.approved and channel.requests == []
    shown = [u for u in channel.updates() if u["sessionUpdate"] == "tool_call_update"]
    assert shown[0]["content"] == [{"type": "diff", "path": str(target), "oldText": OLD, "newText": NEW}]


async def test_plan_mode_refuses_the_edit(project: Path, target: Path) -> None:
    session = make_session(project, ScriptedChannel(REVIEW_CAPS), mode="plan")
    with pytest.raises(ToolError, match="plan mode"):
        await review_edit(ctx_of(session), target, OLD, NEW)


async def test_bypass_still_reviews_protected_folders(project: Path) -> None:
    settings = project / ".claude/settings.json"
    channel, seen = reviewer({"outcome": "accepted"})
    session = make_session(project, channel, mode="bypassPermissions")
    await review_edit(ctx_of(session), settings, None, "{}\n")
    assert len(seen) == 1 and seen[0]["oldText"] is None

"""Hooks from settings run as real processes; ExitPlanMode asks to leave plan mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sidecar.errors import ToolError
from sidecar.permissions.hooks import (
    matcher_matches,
    run_event,
    run_post_tool_use,
    run_pre_tool_use,
    run_stop,
    run_user_prompt_submit,
)
from sidecar.permissions.request import PermissionRequest
from sidecar.tools.plan.exit_plan_mode import ExitPlanMode, ExitPlanModeInput
from tests.permissions.perm_support import ScriptedChannel, ctx_of, make_session, write_settings


def hooks(project: Path, event: str, command: str, matcher: str | None = None, **extra: Any) -> None:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        group["matcher"] = matcher
    write_settings(project / ".claude/settings.json", {"hooks": {event: [group]}})


@pytest.mark.parametrize(("matcher", "tool", "expected"), [
    ("Bash", "Bash", True), ("Bash", "BashOutput", False), ("Edit|Write", "Write", True),
    ("Notebook.*", "NotebookEdit", True), ("mcp__.*", "mcp__gh__x", True), ("", "Read", True),
    ("*", "Read", True), ("Edit", "MultiEdit", False),
])
def test_matchers(matcher: str, tool: str, expected: bool) -> None:
    assert matcher_matches(matcher, tool) is expected


async def test_exit_code_2_blocks_with_stderr_for_the_model(project: Path) -> None:
    hooks(project, "PreToolUse", "cat > \"$CLAUDE_PROJECT_DIR/payload.json\"; echo 'no rm here' >&2; exit 2",
          matcher="Bash")
    session = make_session(project)
    with pytest.raises(ToolError) as err:
        await run_pre_tool_use(session, "toolu_1", "Bash", {"command": "rm -rf build"})
    assert err.value.message.startswith("A PreToolUse hook blocked this Bash call: no rm here\n")
    payload = json.loads((project / "payload.json").read_text())
    assert payload["tool_name"] == "Bash" and payload["tool_input"] == {"command": "rm -rf build"}
    assert payload["hook_event_name"] == "PreToolUse" and payload["cwd"] == str(project)
    # other tools are not matched
    assert await run_pre_tool_use(session, "toolu_2", "Read", {"file_path": "/x"}) is None


async def test_json_allow_skips_the_question_but_not_a_deny_rule(project: Path) -> None:
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                  "permissionDecisionReason": "CI-approved"}}
    write_settings(project / ".claude/settings.json", {
        "permissions": {"deny": ["Bash(git push *)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                                                               "command": f"echo '{json.dumps(out)}'"}]}]}})
    session = make_session(project)  # asks nobody: the channel would fail on any request
    for command, ok in (("make build", True), ("git push origin main", False)):
        ctx = ctx_of(session)
        ctx.hook_verdict = await run_pre_tool_use(session, ctx.tool_call_id, "Bash", {"command": command})
        req = PermissionRequest(tool_name="Bash", access="execute", title=command, raw_input={},
                                rule_subject=command, rule_parts=[command])
        if ok:
            assert (await session.permissions.require(req, ctx)).decided_by == "hook"
        else:
            with pytest.raises(ToolError, match="denied by rule"):
                await session.permissions.require(req, ctx)


async def test_a_slow_hook_is_killed_and_does_not_block(project: Path) -> None:
    hooks(project, "PreToolUse", "sleep 30; exit 2", timeout=0.5)
    session = make_session(project)
    assert await run_pre_tool_use(session, "toolu_1", "Bash", {"command": "ls"}) is None
    result = await run_event(session, "PreToolUse", "Bash", {"tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert result.runs[0].timed_out and not result.blocked


async def test_post_tool_use_feedback_reaches_the_model(project: Path) -> None:
    hooks(project, "PostToolUse", "echo 'lint: 2 warnings' >&2; exit 2", matcher="Edit|Write")
    note = await run_post_tool_use(make_session(project), "toolu_1", "Edit", {"file_path": "/x"}, "ok")
    assert note == "PostToolUse hook feedback: lint: 2 warnings"


async def test_user_prompt_submit_adds_context_or_blocks(project: Path) -> None:
    hooks(project, "UserPromptSubmit", "echo \"branch: main\"")
    result = await run_user_prompt_submit(make_session(project), "hello")
    assert result.context == ["branch: main"] and not result.blocked
    guard = "grep -q secret && { echo 'no secrets in prompts' >&2; exit 2; }; exit 0"
    hooks(project, "UserPromptSubmit", guard)
    blocked = await run_user_prompt_submit(make_session(project), "my secret is 42")
    assert blocked.blocked and blocked.message == "no secrets in prompts"


async def test_stop_hook_can_send_the_agent_back(project: Path) -> None:
    hooks(project, "Stop", "echo 'tests are failing; fix them' >&2; exit 2")
    assert await run_stop(make_session(project)) == "tests are failing; fix them"


async def test_hook_runs_are_audited(project: Path) -> None:
    hooks(project, "Stop", "exit 0")
    session = make_session(project)
    await run_stop(session)
    [audit] = session.store.audits("hook")  # type: ignore[attr-defined]
    assert (audit["hook_event"], audit["exit_code"], audit["source"]) == ("Stop", 0, "project")


# ---- ExitPlanMode -----------------------------------------------------------------------------

async def test_exit_plan_mode_asks_and_switches_mode(project: Path) -> None:
    channel = ScriptedChannel()
    channel.answer_with("acceptEdits")
    session = make_session(project, channel, mode="plan")
    tool, inp = ExitPlanMode(), ExitPlanModeInput(plan="1. Edit app.py\n2. Run tests")
    await tool.check_permission(inp, ctx_of(session))
    out = await tool.run(inp, ctx_of(session))
    assert session.mode == "acceptEdits"
    assert out.joined_text().startswith(
        "The user approved your plan and the session left plan mode (acceptEdits).")
    method, params = channel.requests[0]
    assert method == "session/request_permission"
    assert [o["optionId"] for o in params["options"]] == ["acceptEdits", "default", "plan"]
    assert params["toolCall"]["content"][0]["content"]["text"] == "1. Edit app.py\n2. Run tests"
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "acceptEdits"} in channel.updates()


async def test_exit_plan_mode_rejected_stays_in_plan(project: Path) -> None:
    channel = ScriptedChannel()
    channel.answer_with("plan", feedback="also update the docs")
    session = make_session(project, channel, mode="plan")
    with pytest.raises(ToolError, match=r"stays in plan mode\. The user said: also update the docs"):
        await ExitPlanMode().run(ExitPlanModeInput(plan="x"), ctx_of(session))
    assert session.mode == "plan"


async def test_exit_plan_mode_outside_plan_mode_is_an_error(project: Path) -> None:
    session = make_session(project)
    with pytest.raises(ToolError, match="only for leaving plan mode"):
        await ExitPlanMode().check_permission(ExitPlanModeInput(plan="x"), ctx_of(session))

"""The gate with a real Session: tiers, modes, asking, always-allow, fallbacks, audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sidecar.errors import ClientGone, RpcError, ToolError
from sidecar.permissions.gate import HookVerdict
from sidecar.permissions.request import PermissionRequest
from sidecar.permissions.settings import CLIENT_SETTINGS
from sidecar.server.content import replay_log
from tests.permissions.perm_support import ScriptedChannel, ctx_of, make_session, write_settings


def bash(command: str, parts: list[str] | None = None, read_only: bool = False) -> PermissionRequest:
    return PermissionRequest(tool_name="Bash", access="execute", title=command,
                             raw_input={"command": command}, rule_subject=command,
                             rule_parts=parts or [command], read_only=read_only,
                             suggested_rule=f"Bash({command.split()[0]} *)")


def edit(path: Path) -> PermissionRequest:
    return PermissionRequest(tool_name="Edit", access="write", title=f"Edit {path}",
                             raw_input={"file_path": str(path)}, paths=[path], suggested_rule="Edit(/src/**)")


def read(path: Path) -> PermissionRequest:
    return PermissionRequest(tool_name="Read", access="read", title=f"Read {path}",
                             raw_input={"file_path": str(path)}, paths=[path], read_only=True)


async def test_default_mode_reads_freely_and_asks_for_a_command(project: Path) -> None:
    channel = ScriptedChannel()
    session = make_session(project, channel)
    await session.permissions.require(read(project / "src/a.py"), ctx_of(session))
    assert channel.requests == []
    channel.answer_with("allow_once")
    decision = await session.permissions.require(bash("npm install left-pad"), ctx_of(session, "toolu_9"))
    assert decision.decided_by == "user"
    method, params = channel.requests[0]
    assert method == "session/request_permission"
    assert params["toolCall"]["toolCallId"] == "toolu_9"
    assert params["toolCall"]["rawInput"] == {"command": "npm install left-pad"}
    kinds = [o["kind"] for o in params["options"]]
    assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
    audits = session.store.audits()  # type: ignore[attr-defined]
    assert [(a["verdict"], a["decided_by"]) for a in audits] == [("allow", "default"), ("ask", "default"),
                                                                ("allow", "user")]


async def test_the_answer_goes_to_the_card_and_the_log_so_a_replay_shows_it(project: Path) -> None:
    channel = ScriptedChannel()
    channel.answer_with("allow_once")
    session = make_session(project, channel)
    await session.permissions.require(bash("npm install left-pad"), ctx_of(session, "toolu_9"))
    logged = [e["update"] for e in session.store.events if e.get("type") == "update"]  # type: ignore[attr-defined]
    assert logged == [{"sessionUpdate": "tool_call_update", "toolCallId": "toolu_9",
                       "_meta": {"sidecar": {"answer": {"optionId": "allow_once", "kind": "allow_once",
                                                        "name": "Allow once"}}}}]
    # a session/load replays the log's updates as they are: the reloaded card says "You chose: Allow once"
    replayed = replay_log([{"type": "prompt", "id": "p1", "prompt": []},
                           *session.store.events])  # type: ignore[attr-defined]
    assert replayed is not None and logged[0] in replayed
    assert channel.updates() == logged


async def test_allow_always_persists_the_rule_and_the_next_session_honours_it(project: Path) -> None:
    channel = ScriptedChannel()
    channel.answer_with("allow_always")
    session = make_session(project, channel)
    await session.permissions.require(bash("npm test --watch"), ctx_of(session))
    saved = json.loads((project / ".claude/settings.local.json").read_text())
    assert saved == {"permissions": {"allow": ["Bash(npm *)"]}}
    # a fresh session (a new process, say) reads it and does not ask
    quiet = ScriptedChannel()
    again = make_session(project, quiet)
    decision = await again.permissions.require(bash("npm test --watch"), ctx_of(again))
    assert quiet.requests == []
    assert decision.rule == "Bash(npm *)" and decision.source == "local"


async def test_allow_always_for_an_edit_lasts_only_for_the_session(project: Path) -> None:
    channel = ScriptedChannel()
    channel.answer_with("allow_always")
    session = make_session(project, channel)
    await session.permissions.require(edit(project / "src/a.py"), ctx_of(session))
    await session.permissions.require(edit(project / "src/b.py"), ctx_of(session))
    assert len(channel.requests) == 1
    assert not (project / ".claude/settings.local.json").exists()


async def test_reject_with_feedback_is_an_error_carrying_the_feedback(project: Path) -> None:
    channel = ScriptedChannel()
    channel.answer_with("reject_once", feedback="use pnpm, not npm")
    session = make_session(project, channel)
    with pytest.raises(ToolError) as err:
        await session.permissions.require(bash("npm install"), ctx_of(session))
    assert err.value.message == ("The user rejected this tool call; it did not run. The user said: use pnpm, "
                                 "not npm Do not retry the same call; adjust your approach to what the user "
                                 "wants.")


async def test_cancelled_question_is_refused(project: Path) -> None:
    channel = ScriptedChannel()

    async def cancelled(method: str, params: dict[str, Any]) -> Any:
        return {"outcome": {"outcome": "cancelled"}}
    channel.responder = cancelled
    session = make_session(project, channel)
    with pytest.raises(ToolError, match="cancelled"):
        await session.permissions.require(bash("make"), ctx_of(session))


@pytest.mark.parametrize("failure", [RpcError(-32603, "the dialog crashed"), ClientGone(), BrokenPipeError(32, "pipe")])
async def test_a_permission_request_the_editor_fails_refuses_the_call(project: Path, failure: Exception) -> None:
    """The port turns every failure into ``ClientRequestError``; the gate answers it as a cancelled question."""
    channel = ScriptedChannel()

    async def fail(method: str, params: dict[str, Any]) -> Any:
        raise failure
    channel.responder = fail
    session = make_session(project, channel)
    with pytest.raises(ToolError, match="cancelled"):
        await session.permissions.require(bash("make"), ctx_of(session))
    assert channel.methods() == ["session/request_permission"]


async def test_plan_mode_refuses_changes_but_not_reads(project: Path) -> None:
    session = make_session(project, mode="plan")
    await session.permissions.require(read(project / "src/a.py"), ctx_of(session))
    for request in (edit(project / "src/a.py"), bash("rm -rf build")):
        with pytest.raises(ToolError, match=r"plan mode.*ExitPlanMode"):
            await session.permissions.require(request, ctx_of(session))


async def test_plan_mode_asks_for_a_fetch_of_an_unapproved_domain(project: Path) -> None:
    channel = ScriptedChannel()
    session = make_session(project, channel, mode="plan")
    fetch = PermissionRequest(tool_name="WebFetch", access="fetch", title="Fetch https://example.org/",
                              raw_input={"url": "https://example.org/"}, rule_subject="domain:example.org",
                              suggested_rule="WebFetch(domain:example.org)")
    channel.answer_with("allow_once")
    decision = await session.permissions.require(fetch, ctx_of(session))
    assert decision.decided_by == "user" and len(channel.requests) == 1


@pytest.mark.parametrize(("mode", "target", "asks"), [
    ("acceptEdits", "src/a.py", False),
    ("acceptEdits", ".git/config", True),
    ("acceptEdits", ".claude/settings.json", True),
    ("acceptEdits", "/outside/x.py", True),
    ("bypassPermissions", "src/a.py", False),
    ("bypassPermissions", "/outside/x.py", False),
    ("bypassPermissions", ".vscode/settings.json", True),
    ("bypassPermissions", ".idea/workspace.xml", True),
    ("default", "src/a.py", True),
])
async def test_edit_tiers_by_mode(project: Path, mode: str, target: str, asks: bool) -> None:
    session = make_session(project, mode=mode)
    path = Path(target) if target.startswith("/") else project / target
    assert (session.permissions.decide(edit(path)).verdict == "ask") is asks


async def test_bypass_allows_commands_but_an_ask_rule_still_asks(project: Path) -> None:
    write_settings(project / ".claude/settings.json", {"permissions": {"ask": ["Bash(git push *)"]}})
    session = make_session(project, mode="bypassPermissions")
    assert session.permissions.decide(bash("rm -rf build")).verdict == "allow"
    assert session.permissions.decide(bash("git push origin main")).verdict == "ask"


async def test_managed_setting_disables_bypass(project: Path, tmp_path: Path) -> None:
    session = make_session(project)
    assert session.permissions.bypass_allowed()
    write_settings(tmp_path / "managed-settings.json",
                   {"permissions": {"disableBypassPermissionsMode": "disable"}})
    assert not session.permissions.bypass_allowed()


async def test_default_mode_and_extra_directories_come_from_settings(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "shared-lib"
    other.mkdir()
    write_settings(project / ".claude/settings.json",
                   {"permissions": {"defaultMode": "acceptEdits", "additionalDirectories": [str(other)]}})
    session = make_session(project)
    assert session.mode == "acceptEdits"
    assert session.within_roots(other.resolve() / "x.py")
    assert session.permissions.decide(read(other.resolve() / "x.py")).verdict == "allow"


async def test_a_mode_the_user_chose_outlasts_the_settings_default_mode(project: Path) -> None:
    """A loaded session whose user picked ``default`` with ``session/set_mode`` (``mode_chosen``, from the
    log) stays in it: govern, the one path every session takes, does not apply the settings' defaultMode."""
    from sidecar.permissions.gate import govern
    from sidecar.session import Session
    from tests.permissions.perm_support import MemoryStore

    write_settings(project / ".claude/settings.json", {"permissions": {"defaultMode": "plan"}})
    assert make_session(project).mode == "plan"  # the settings' mode for a session nobody chose one for
    chosen = Session(id="sess_chosen", cwd=project, channel=ScriptedChannel(), store=MemoryStore(project.parent),  # type: ignore[arg-type]
                     mode="default", mode_chosen=True)
    assert govern(chosen, trusted=True).mode == "default"


async def test_a_hook_allow_skips_the_question_but_never_a_deny_rule(project: Path) -> None:
    write_settings(project / ".claude/settings.json", {"permissions": {"deny": ["Bash(curl *)"]}})
    session = make_session(project)
    ctx = ctx_of(session)
    ctx.hook_verdict = HookVerdict("allow", "trusted by hook")
    assert (await session.permissions.require(bash("make build"), ctx)).decided_by == "hook"
    with pytest.raises(ToolError, match=r"denied by rule Bash\(curl \*\) in \.claude/settings\.json"):
        await session.permissions.require(bash("curl http://example.com"), ctx)


async def test_compound_command_needs_every_part_allowed(project: Path) -> None:
    write_settings(project / ".claude/settings.json", {"permissions": {"allow": ["Bash(npm test)"]}})
    session = make_session(project)
    ok = bash("ls && npm test", ["ls", "npm test"])
    ok.read_only_parts = ["ls"]
    assert session.permissions.decide(ok).verdict == "allow"
    risky = bash("npm test && curl x | sh", ["npm test", "curl x", "sh"])
    assert session.permissions.decide(risky).verdict == "ask"


async def test_client_settings_are_a_source(project: Path) -> None:
    session = make_session(project)
    session.provide(CLIENT_SETTINGS, {"permissions": {"deny": ["WebFetch(domain:evil.example)"]}})
    req = PermissionRequest(tool_name="WebFetch", access="fetch", title="fetch", raw_input={},
                            rule_subject="domain:evil.example")
    decision = session.permissions.decide(req)
    assert (decision.verdict, decision.source) == ("deny", "client")


class OwnAskingChannel(ScriptedChannel):
    """A transport with its own way to ask (as the LSP channel has for plain LSP clients)."""

    async def request_permission(self, params: dict[str, Any]) -> Any:
        self.requests.append(("own/request_permission", params))
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def test_a_channel_that_asks_its_own_way_is_used_for_permissions(project: Path) -> None:
    channel = OwnAskingChannel()
    session = make_session(project, channel)
    await session.permissions.require(bash("make deploy"), ctx_of(session))
    assert channel.methods() == ["own/request_permission"]
    asked = channel.requests[0][1]
    assert asked["toolCall"]["rawInput"]["command"] == "make deploy"
    assert [o["optionId"] for o in asked["options"]][:1] == ["allow_once"]

"""Table-driven tests of the rule matcher: paths, wildcards, word boundaries, domains, MCP, precedence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sidecar.permissions.request import PermissionRequest
from sidecar.permissions.rules import PathContext, Rule, evaluate, parse_rule, rule_matches
from sidecar.permissions.settings import SettingsLoader, add_rule_to_settings_file

CWD = Path("/work/proj")
HOME = Path("/home/alice")
PCTX = PathContext(cwd=CWD, project_root=CWD, home=HOME)


def file_req(tool: str, path: str, access: str = "read") -> PermissionRequest:
    return PermissionRequest(tool_name=tool, access=access, title=tool, raw_input={},  # type: ignore[arg-type]
                             paths=[Path(path)], read_only=access == "read")


def bash_req(command: str, parts: list[str] | None = None) -> PermissionRequest:
    return PermissionRequest(tool_name="Bash", access="execute", title=command,
                             raw_input={"command": command}, rule_subject=command,
                             rule_parts=parts or [command])


@pytest.mark.parametrize(("rule", "tool", "path", "access", "expected"), [
    # ./x is anchored to the cwd
    ("Read(./.env)", "Read", "/work/proj/.env", "read", True),
    ("Read(./.env)", "Read", "/work/proj/sub/.env", "read", False),
    # a bare name without a slash matches at any depth below the cwd (gitignore)
    ("Read(.env)", "Read", "/work/proj/sub/.env", "read", True),
    ("Read(.env)", "Read", "/work/proj/.env.example", "read", False),
    ("Read(*.env)", "Grep", "/work/proj/a/b/prod.env", "read", True),
    # a slash inside anchors to the cwd
    ("Edit(src/**)", "Edit", "/work/proj/src/a/b.py", "write", True),
    ("Edit(src/**)", "Write", "/work/proj/lib/src/b.py", "write", False),
    ("Edit(src/**)", "Edit", "/work/proj/srcx/b.py", "write", False),
    # /x is relative to the project root
    ("Edit(/docs/*.md)", "Edit", "/work/proj/docs/a.md", "write", True),
    ("Edit(/docs/*.md)", "Edit", "/work/proj/docs/sub/a.md", "write", False),
    ("Edit(/docs/**/*.md)", "NotebookEdit", "/work/proj/docs/sub/a.md", "write", True),
    # //abs is absolute from the filesystem root
    ("Read(//etc/**)", "Read", "/etc/passwd", "read", True),
    ("Read(//etc/**)", "Read", "/work/proj/etc/passwd", "read", False),
    # ~/ is the home directory
    ("Read(~/.ssh/**)", "Read", "/home/alice/.ssh/id_rsa", "read", True),
    ("Read(~/.ssh/**)", "Read", "/work/proj/.ssh/id_rsa", "read", False),
    # a directory pattern covers what is inside
    ("Read(./secrets)", "Read", "/work/proj/secrets/key.pem", "read", True),
    # Read rules govern reads, Edit rules writes
    ("Read(src/**)", "Edit", "/work/proj/src/a.py", "write", False),
    ("Edit(src/**)", "Read", "/work/proj/src/a.py", "read", False),
    # the bare tool name covers every path
    ("Edit", "Write", "/anywhere/x", "write", True),
    ("Read", "Glob", "/work/proj/a", "read", True),
])
def test_path_rules(rule: str, tool: str, path: str, access: str, expected: bool) -> None:
    assert rule_matches(parse_rule(rule), file_req(tool, path, access), PCTX) is expected


@pytest.mark.parametrize(("rule", "command", "expected"), [
    ("Bash(npm run test *)", "npm run test", True),
    ("Bash(npm run test *)", "npm run test --watch", True),
    ("Bash(npm run test *)", "npm run testing", False),      # word boundary
    ("Bash(npm run test:*)", "npm run test -- -u", True),     # legacy prefix form
    ("Bash(npm run test:*)", "npm run tests", False),
    ("Bash(ls *)", "ls -la", True),
    ("Bash(ls *)", "lsof", False),
    ("Bash(ls*)", "lsof", True),
    ("Bash(git status)", "git status", True),
    ("Bash(git status)", "git status --short", False),       # exact without wildcard
    ("Bash(git * main)", "git push origin main", True),
    ("Bash(git * main)", "git push origin mainline", False),
    ("Bash", "rm -rf build", True),
    ("Bash(*)", "anything at all", True),
])
def test_bash_rules(rule: str, command: str, expected: bool) -> None:
    assert rule_matches(parse_rule(rule), bash_req(command), PCTX) is expected


@pytest.mark.parametrize(("rule", "tool", "subject", "expected"), [
    ("WebFetch(domain:example.com)", "WebFetch", "domain:example.com", True),
    ("WebFetch(domain:example.com)", "WebFetch", "domain:docs.example.com", False),
    ("WebFetch(domain:*.example.com)", "WebFetch", "domain:docs.example.com", True),
    ("WebFetch(domain:*.example.com)", "WebFetch", "domain:evilexample.com", False),
    ("WebFetch", "WebFetch", "domain:anything.org", True),
    ("mcp__github", "mcp__github__create_issue", None, True),
    ("mcp__github__*", "mcp__github__create_issue", None, True),
    ("mcp__github__create_issue", "mcp__github__create_issue", None, True),
    ("mcp__github__create_issue", "mcp__github__delete_repo", None, False),
    ("mcp__github", "mcp__githubx__tool", None, False),
    ("Task(Explore)", "Task", "Explore", True),
    ("Task(Explore)", "Task", "general-purpose", False),
    ("WebSearch", "WebSearch", None, True),
])
def test_other_rules(rule: str, tool: str, subject: str | None, expected: bool) -> None:
    req = PermissionRequest(tool_name=tool, access="fetch", title=tool, raw_input={}, rule_subject=subject)
    assert rule_matches(parse_rule(rule), req, PCTX) is expected


def rules(**by_behavior: list[str]) -> list[Rule]:
    return [parse_rule(t, b, "project") for b, items in by_behavior.items() for t in items]  # type: ignore[arg-type]


@pytest.mark.parametrize(("allow", "ask", "deny", "command", "parts", "readonly", "expected"), [
    (["Bash(npm *)"], [], ["Bash(npm publish *)"], "npm publish", None, [], "deny"),
    (["Bash(npm *)"], ["Bash(npm install *)"], [], "npm install x", None, [], "ask"),
    (["Bash(npm *)"], [], [], "npm test", None, [], "allow"),
    ([], [], [], "npm test", None, [], None),
    # compound: every part must be allowed, by any rule
    (["Bash(npm test)", "Bash(make)"], [], [], "npm test && make", ["npm test", "make"], [], "allow"),
    (["Bash(npm test)"], [], [], "npm test && curl x", ["npm test", "curl x"], [], None),
    # read-only parts need no rule
    (["Bash(npm test)"], [], [], "ls && npm test", ["ls", "npm test"], ["ls"], "allow"),
    # one denied part denies the whole command
    (["Bash"], [], ["Bash(rm *)"], "echo hi; rm -rf /tmp/x", ["echo hi", "rm -rf /tmp/x"], [], "deny"),
])
def test_evaluate_order(allow: list[str], ask: list[str], deny: list[str], command: str,
                        parts: list[str] | None, readonly: list[str], expected: str | None) -> None:
    verdict = evaluate(rules(allow=allow, ask=ask, deny=deny), bash_req(command, parts), PCTX, readonly)
    assert verdict.behavior == expected


def test_one_denied_path_denies_a_multi_path_call() -> None:
    req = PermissionRequest(tool_name="Edit", access="write", title="x", raw_input={},
                            paths=[Path("/work/proj/a.py"), Path("/work/proj/.env")])
    assert evaluate(rules(allow=["Edit"], deny=["Edit(.env)"]), req, PCTX).behavior == "deny"


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_precedence_between_files_deny_anywhere_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, cwd = tmp_path / "home", tmp_path / "proj"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SIDECAR_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    write(home / ".claude/settings.json", {"permissions": {"deny": ["Bash(curl *)"], "defaultMode": "plan"}})
    write(cwd / ".claude/settings.json", {"permissions": {"allow": ["Bash(curl *)", "Bash(make *)"],
                                                          "defaultMode": "acceptEdits"}})
    write(cwd / ".claude/settings.local.json", {"permissions": {"ask": ["Bash(make deploy)"]}})
    write(tmp_path / "managed.json", {"permissions": {"disableBypassPermissionsMode": "disable"}})
    loader = SettingsLoader(cwd, {"permissions": {"allow": ["Bash(make deploy)"]}})
    settings = loader.load()
    all_rules = settings.rules()
    # the user file's deny beats the project's allow
    assert evaluate(all_rules, bash_req("curl http://x"), PCTX).behavior == "deny"
    denied_by = evaluate(all_rules, bash_req("curl http://x"), PCTX).rule
    assert denied_by is not None
    assert (denied_by.text, denied_by.source) == ("Bash(curl *)", "user")
    # ask beats allow, whichever file has it
    assert evaluate(all_rules, bash_req("make deploy"), PCTX).behavior == "ask"
    assert evaluate(all_rules, bash_req("make test"), PCTX).behavior == "allow"
    # scalars come from the most important source that sets them: project before user
    assert settings.default_mode() == "acceptEdits"
    assert settings.bypass_disabled() is True


def test_settings_file_is_reread_when_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SIDECAR_MANAGED_SETTINGS", str(tmp_path / "none.json"))
    loader = SettingsLoader(tmp_path)
    assert loader.load().rules() == []
    local = tmp_path / ".claude/settings.local.json"
    assert add_rule_to_settings_file(local, "Bash(npm test)") is True
    assert add_rule_to_settings_file(local, "Bash(npm test)") is False
    assert [r.text for r in loader.load().rules()] == ["Bash(npm test)"]
    assert json.loads(local.read_text()) == {"permissions": {"allow": ["Bash(npm test)"]}}


def test_broken_settings_file_is_reported_and_never_overwritten(tmp_path: Path) -> None:
    local = tmp_path / ".claude/settings.local.json"
    local.parent.mkdir()
    local.write_text("{ not json")
    with pytest.raises(ValueError):
        add_rule_to_settings_file(local, "Bash(ls)")
    assert local.read_text() == "{ not json"


def test_settings_handed_out_again_only_while_nothing_they_come_from_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SIDECAR_MANAGED_SETTINGS", str(tmp_path / "none.json"))
    client: dict[str, object] = {"permissions": {"allow": ["Bash(ls)"]}}
    trusted, granted = [False], ["Bash(make)"]
    loader = SettingsLoader(tmp_path, client, trusted=lambda: trusted[0], granted=lambda: granted)
    write(tmp_path / ".claude/settings.json", {"permissions": {"allow": ["Bash(make)", "Bash(curl *)"]}})
    first = loader.load()
    assert loader.load() is first  # nothing changed: the same Settings, its rules parsed once

    def texts() -> list[str]:
        return sorted(r.text for r in loader.load().rules())

    assert texts() == ["Bash(ls)", "Bash(make)"]  # untrusted: only the granted allow rule of the project
    client["permissions"] = {"allow": ["Bash(pwd)"]}  # the editor's settings changed in place
    assert texts() == ["Bash(make)", "Bash(pwd)"]
    granted.append("Bash(curl *)")
    assert texts() == ["Bash(curl *)", "Bash(make)", "Bash(pwd)"]
    granted[:] = []
    trusted[0] = True
    assert texts() == ["Bash(curl *)", "Bash(make)", "Bash(pwd)"]
    (tmp_path / ".claude/settings.json").unlink()
    assert texts() == ["Bash(pwd)"]

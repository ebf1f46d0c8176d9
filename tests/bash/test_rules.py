"""Bash(...) specifiers per subcommand, the suggested rule, and check-command end to end (a real process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.shell.rules import bash_rule_matches, suggest_rule

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("spec", "command", "expected"),
    [
        ("ls *", "ls -la", True),
        ("ls *", "ls", True),
        ("ls *", "lsof", False),
        ("ls*", "lsof", True),
        ("npm run test *", "npm run test", True),
        ("npm run test *", "npm run test -- -x", True),
        ("npm run test *", "npm run testing", False),
        ("npm run test *", "npm run build", False),
        ("npm test:*", "npm test", True),
        ("npm test:*", "npm test --watch", True),
        ("npm test:*", "npm tests", False),
        ("git status", "git status", True),
        ("git status", "git  status", True),
        ("git status", "git status -s", False),
        ("git * main", "git push origin main", True),
        ("git * main", "git push origin dev", False),
        ("*", "rm -rf x", True),
        ("", "anything", True),
        ("echo \\*", "echo *", True),
        ("echo \\*", "echo x", False),
        ("echo *", "curl -X POST x", False),
    ],
)
def test_bash_rule_matches(spec: str, command: str, expected: bool) -> None:
    assert bash_rule_matches(spec, command) is expected


@pytest.mark.parametrize(
    ("words", "rule"),
    [
        (["npm", "run", "test", "--", "-x"], "Bash(npm run test *)"),
        (["git", "commit", "-m", "x"], "Bash(git commit *)"),
        (["python", "-m", "pytest", "-q"], "Bash(python -m pytest *)"),
        (["pytest", "-q"], "Bash(pytest *)"),
        (["rm", "build/out.txt"], "Bash(rm build/out.txt)"),
        (["cargo", "test"], "Bash(cargo test *)"),
        (["docker", "compose", "up", "-d"], "Bash(docker compose up *)"),
        (["curl", "-s", "x"], "Bash(curl *)"),
    ],
)
def test_suggest_rule(words: list[str], rule: str) -> None:
    assert suggest_rule(words) == rule


def check(args: list[str], stdin: str | None = None, cwd: Path | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "sidecar", "check-command", *args],
        input=stdin,
        text=True,
        capture_output=True,
        cwd=cwd or REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {
                "permissions": {
                    "allow": ["Bash(echo *)", "Bash(npm run test *)", "Bash(git commit:*)"],
                    "ask": ["Bash(git push *)"],
                    "deny": ["Bash(rm *)", "Bash(curl *)"],
                }
            }
        )
    )
    return path


def test_check_command_stdin_json_lines(settings: Path, tmp_path: Path) -> None:
    commands = [
        "ls -la",
        "echo ok && curl -X POST http://x",
        "echo ok && wget http://x",
        "npm run test -- -k x",
        "git status | head",
        "sed -i s/a/b/ f",
        "rm -rf /",
        "git push origin main",
        "echo hi > out.txt",
        "ls && npm run test",
        "find . -delete",
        "git commit -m 'x'",
    ]
    out = check(["--cwd", str(tmp_path), "--settings", str(settings), "-"], stdin="\n".join(commands) + "\n")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["command"] for r in rows] == commands
    got = {r["command"]: (r["read_only"], r["decision"], r["rule"]) for r in rows}
    assert got["ls -la"] == (True, "allow", None)
    assert got["echo ok && curl -X POST http://x"] == (False, "deny", "Bash(curl *)")
    assert got["echo ok && wget http://x"] == (False, "ask", None)
    assert got["npm run test -- -k x"] == (False, "allow", "Bash(npm run test *)")
    assert got["git status | head"] == (True, "allow", None)
    assert got["sed -i s/a/b/ f"] == (False, "ask", None)
    assert got["rm -rf /"][:2] == (False, "deny")
    assert got["git push origin main"] == (False, "ask", "Bash(git push *)")
    assert got["echo hi > out.txt"] == (False, "ask", None)
    assert got["ls && npm run test"] == (False, "allow", "Bash(npm run test *)")
    assert got["find . -delete"] == (False, "ask", None)
    assert got["git commit -m 'x'"] == (False, "allow", "Bash(git commit:*)")
    first = rows[1]
    assert set(first) >= {"command", "read_only", "decision", "rule", "subcommands"}
    assert first["subcommands"] == [
        {"text": "echo ok", "class": "read-only"},
        {"text": "curl -X POST http://x", "class": "network"},
    ]


def test_catastrophic_denied_even_in_bypass_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions", "allow": ["Bash"]}}))
    row = json.loads(check(["--json", "--settings", str(path), "--cwd", str(tmp_path), "rm -rf ~"]))
    assert row["decision"] == "deny" and row["subcommands"][0]["class"] == "catastrophic"
    row = json.loads(check(["--json", "--settings", str(path), "--cwd", str(tmp_path), "rm -rf build"]))
    assert row["decision"] == "allow"


@pytest.mark.parametrize(("mode", "decision", "reason"), [
    ("plan", "deny", "plan mode allows no changes"),
    ("acceptEdits", "ask", "touch writes files"),  # a Bash write is no edit: acceptEdits still asks
    ("bypassPermissions", "allow", "bypassPermissions mode"),
    ("dontAsk", "ask", "touch writes files"),  # not a mode: the default's answer
])
def test_check_command_decides_in_the_settings_files_default_mode(tmp_path: Path, mode: str, decision: str,
                                                                 reason: str) -> None:
    """``--settings FILE``'s ``defaultMode`` is the mode decided in, with the gate's words for the reason."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"permissions": {"defaultMode": mode}}))
    out = check(["--settings", str(path), "--cwd", str(tmp_path), "touch x"])
    assert out.splitlines()[-1] == f"decision:  {decision}: {reason}"
    catastrophic = json.loads(check(["--json", "--settings", str(path), "--cwd", str(tmp_path), "rm -rf ~"]))
    assert (catastrophic["decision"], catastrophic["reason"]) == (
        "deny", "refused in every mode: `rm -r ~` would delete the root, a system folder or the home folder")


def test_check_command_human_output(tmp_path: Path) -> None:
    out = check(["--cwd", str(tmp_path), "--settings", "/dev/null", "cat x | grep y > out"])
    assert out.splitlines() == [
        "command:   cat x | grep y > out",
        "  read-only     cat x",
        "  read-only     grep y",
        "  write         > out",
        "read-only: no",
        "decision:  ask: output redirection writes a file",
    ]

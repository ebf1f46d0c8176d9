"""Issue 27, the Bash classifier's doors: file names that become options when bash expands a glob or a
brace, writers the option tables called read-only, git pointed outside the workspace, and "always allow"
offers wider than the request.

Each case is checked twice where it can be: with the planted thing (it must ask) and without it (the same
command is read-only), so the test fails if the check stops looking. The ACP cases run a spawned sidecar
with the workspace untrusted and every question refused, and look for the outside canary in what reaches
the model.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sidecar.agent.prompt import git_status
from sidecar.shell.classify import Where, analyze
from sidecar.shell.expand import expand_word
from sidecar.shell.gitdir import outside_places
from sidecar.shell.rules import bash_rule_matches, describe_rule, suggest_rule
from sidecar.testing.scripted_server import ScriptedModelServer
from sidecar.tools.bash.bash import Bash, BashInput
from sidecar.workspace.gitenv import safe_git_env
from tests.bash.conftest import make_ctx
from tests.conftest import Harness, reject_once

CANARY = "CANARY-27-b41d"


def _plant(ws: Path, outside: Path, names: tuple[str, ...] = ("-R", "@list", "--from-file=tree", "-fx",
                                                             "--files=list")) -> None:
    """The file names a repository can ship, and a nested symlink to a folder outside."""
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text(CANARY + "\n")
    (ws / "tree").mkdir()
    (ws / "tree" / "t.txt").write_text("tree file\n")
    (ws / "tree" / "link").symlink_to(outside)
    (ws / "list").write_text(str(outside / "secret.txt") + "\n")
    for name in names:
        (ws / name).write_text("x\n")
    (ws / "x").write_text("x\n")


ISSUE_CASES = [
    ("grep -n X *", "-R"), ("strings *", "@list"), ("strings -- *", "@list"), ("diff *", "--from-file=tree"),
    ("hexdump *", "-fx"), ("xzcat *", "--files=list"),
]
BRACE_CASES = ["diff {--from-file=/outside,x}", "grep {-R,tree}", "strings {@,}list"]


@pytest.mark.parametrize(("command", "planted"), ISSUE_CASES)
def test_a_glob_that_expands_to_an_option_or_a_response_file_asks(tmp_path: Path, command: str,
                                                                  planted: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    if not command.startswith("strings"):
        assert analyze(command, Where(ws)).read_only, "without the planted name it is read-only"
    _plant(ws, tmp_path / "outside", (planted,))
    a = analyze(command, Where(ws))
    assert not a.read_only
    reasons = " ".join(s.reason for s in a.subcommands)
    assert planted in reasons or "@FILE" in reasons, reasons


@pytest.mark.parametrize("command", BRACE_CASES)
def test_a_brace_that_builds_an_option_or_a_response_file_asks(tmp_path: Path, command: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    a = analyze(command, Where(ws))
    assert not a.read_only
    assert any("would read as an option" in s.reason or "@FILE" in s.reason for s in a.subcommands)


def test_response_file_programs_never_take_an_expansion(tmp_path: Path) -> None:
    where = Where(tmp_path)
    for command in ("strings *.o", "strings $f", "strings {a,b}.o", "strings -- *"):
        assert not analyze(command, where).read_only, command
    assert analyze("strings a.o", where).read_only


def test_expansion_is_bash_s(tmp_path: Path) -> None:
    for name in ("b.txt", "a.txt", ".hidden.txt", "c.md"):
        (tmp_path / name).write_text("")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "e.txt").write_text("")
    cases = {
        "*.txt": ["a.txt", "b.txt"], ".*.txt": [".hidden.txt"], "*/*.txt": ["d/e.txt"], "'*'.txt": ["*.txt"],
        "a{,.out}": ["a", "a.out"], "{b,a}.txt": ["b.txt", "a.txt"], "x{1..3}": ["x1", "x2", "x3"],
        "{a,{b,c}}": ["a", "b", "c"], "{x}": ["{x}"], "*.none": ["*.none"], "[ab].txt": ["a.txt", "b.txt"],
        "\\*.txt": ["*.txt"], '"a"*': ["a.txt"], "*/": ["d/"],
    }
    for raw, words in cases.items():
        assert expand_word(raw, tmp_path) == words, raw
        bash = subprocess.run(["bash", "-c", f"cd {tmp_path} && printf '%s\\n' {raw}"], capture_output=True,
                              text=True, env={"LC_ALL": "C", "PATH": os.environ["PATH"]})
        assert bash.stdout.splitlines() == words, (raw, bash.stdout)
    for raw in ("$x*", "[[:alpha:]]*", "[^a]*", "`x`*"):
        assert expand_word(raw, tmp_path) is None, raw


async def test_the_run_uses_the_words_that_were_judged(session: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    tool = Bash()
    inp = BashInput(command="cat *")
    ctx = make_ctx(session)
    await tool.validate(inp, ctx)
    await tool.check_permission(inp, ctx)
    assert ctx.prepared.read_only and ctx.prepared.run_command == "cat a.txt"
    (workspace / "-n").write_text("")  # created between the judgement and the run
    out = await tool.run(inp, ctx)
    assert out.joined_text().startswith("alpha\nExit code 0"), out.joined_text()  # not "     1\talpha"


def test_a_command_that_is_not_read_only_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("")
    a = analyze("mkdir -p b && cd b && ls *", Where(tmp_path))
    assert not a.read_only and a.run_command is None
    assert "*" in a.dynamic_paths


@pytest.mark.parametrize("command", ["shuf -r -o F a.txt", "uniq a{,.out}", "xxd a{,.hex}",
                                     "xxd -g -o -ben a.txt OUT", "date -I 0101000020"])
def test_writers_are_not_read_only(tmp_path: Path, command: str) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    assert not analyze(command, Where(tmp_path)).read_only


@pytest.mark.parametrize("command", ["shuf -r -n 2 a.txt", "uniq a.txt", "xxd a.txt", "xxd -g 4 -c 8 a.txt",
                                     "xxd -cols 8 -- a.txt", "date -Iseconds"])
def test_their_readers_still_are(tmp_path: Path, command: str) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    a = analyze(command, Where(tmp_path))
    assert a.read_only, [s.reason for s in a.subcommands]


def test_the_writers_really_write(tmp_path: Path) -> None:
    """The verdicts above are about the programs' own parsers: shown here with the real programs."""
    (tmp_path / "a.txt").write_text("a\n")
    subprocess.run(["shuf", "-r", "-n", "1", "-o", "F", "a.txt"], cwd=tmp_path, check=True)
    subprocess.run(["xxd", "-g", "-o", "-ben", "a.txt", "OUT"], cwd=tmp_path, check=True)
    assert (tmp_path / "F").exists() and (tmp_path / "OUT").exists()


# ---- git where it really points ------------------------------------------------------------------------

GIT_ENV = {**safe_git_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


def _secret_repo(root: Path) -> Path:
    secret = root / "secret"
    secret.mkdir()
    _git(secret, "init", "-q")
    (secret / "secret-file-27.txt").write_text(CANARY + "\n")
    _git(secret, "add", ".")
    _git(secret, "commit", "-qm", "s")
    return secret


def _pointed(root: Path, how: str) -> Path:
    secret = _secret_repo(root)
    ws = root / "ws"
    ws.mkdir()
    if how == "gitfile":
        (ws / ".git").write_text(f"gitdir: {secret / '.git'}\n")
    elif how == "worktree":
        _git(ws, "init", "-q")
        _git(ws, "config", "core.worktree", str(secret))
    elif how == "include":
        _git(ws, "init", "-q")
        (ws / "inc.cfg").write_text(f"[core]\n\tworktree = \"{secret}\"\n")
        with open(ws / ".git" / "config", "a") as f:
            f.write("[include]\n\tpath = ../inc.cfg\n")
    elif how == "commondir":
        _git(ws, "init", "-q")
        (ws / ".git" / "commondir").write_text(str(secret / ".git") + "\n")
    elif how == "alternates":
        _git(ws, "init", "-q")
        (ws / ".git" / "objects" / "info" / "alternates").write_text(str(secret / ".git" / "objects") + "\n")
    return ws


@pytest.mark.parametrize("how", ["gitfile", "worktree", "include", "commondir", "alternates"])
def test_git_pointed_outside_asks(tmp_path: Path, how: str) -> None:
    ws = _pointed(tmp_path, how)
    for command in ("git log -p", "git status", "git diff", "git show HEAD:secret-file-27.txt", "git grep x"):
        a = analyze(command, Where(ws))
        assert not a.read_only, (how, command)
        assert "pointed outside the workspace" in a.subcommands[0].reason
    assert analyze("git --version", Where(ws)).read_only
    if how in ("gitfile", "worktree"):  # what it would have shown: the other repository's files
        assert "secret-file-27.txt" in _git(ws, "status", "--short", "--untracked-files=all") + _git(
            ws, "ls-files")


def test_git_dir_from_the_environment_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = _secret_repo(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    assert analyze("git log", Where(ws)).read_only
    monkeypatch.setenv("GIT_DIR", str(secret / ".git"))
    assert not analyze("git log", Where(ws)).read_only
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.setenv("GIT_WORK_TREE", str(secret))
    assert not analyze("git status", Where(ws)).read_only


def test_git_s_own_links_are_not_redirections(tmp_path: Path) -> None:
    """A linked worktree and a submodule point outside by git's own hand (back-linked): read-only."""
    main = _secret_repo(tmp_path)
    _git(main, "worktree", "add", "-q", str(tmp_path / "linked"))
    assert outside_places(tmp_path / "linked", [tmp_path / "linked"]) == []
    assert analyze("git log -p", Where(tmp_path / "linked")).read_only
    (tmp_path / "o").mkdir()
    sub_origin = _secret_repo(tmp_path / "o")
    super_ = tmp_path / "super"
    super_.mkdir()
    _git(super_, "init", "-q")
    _git(super_, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_origin), "sub")
    assert outside_places(super_ / "sub", [super_ / "sub"]) == []
    # The same .git file copied into a repository elsewhere is not back-linked: it asks.
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / ".git").write_text((tmp_path / "linked" / ".git").read_text())
    assert not analyze("git log -p", Where(fake)).read_only


def test_the_system_prompt_leaves_the_status_out_until_trust(tmp_path: Path) -> None:
    ws = _pointed(tmp_path, "gitfile")
    untrusted = git_status(ws, [ws], lambda p: None if p.is_relative_to(ws) else "not trusted")
    assert "secret-file-27" not in untrusted and "left out" in untrusted
    trusted = git_status(ws, [ws], lambda p: None)
    assert "branch" in trusted


# ---- "always allow" no wider than the request -------------------------------------------------------


@pytest.mark.parametrize(("command", "rule"), [
    ("python3 -c 'print(1)'", "Bash(python3 -c 'print(1)')"),
    ('bash -lc "echo $(id)"', 'Bash(bash -lc "echo $(id)")'),
    ("node script.js", "Bash(node script.js)"),
    ("npx cowsay hi", "Bash(npx cowsay hi)"),
    ("make all", "Bash(make all)"),
    ("uv run python -c 1", "Bash(uv run python -c 1)"),
    ("docker run --rm alpine sh", "Bash(docker run --rm alpine sh)"),
    ("eval \"$x\"", "Bash(eval \"$x\")"),
    ("perl -e 'print 1' *", "Bash(perl -e 'print 1' \\*)"),
    ("uv run pytest -q", "Bash(uv run pytest *)"),
    ("python -m pytest -q", "Bash(python -m pytest *)"),
    ("git commit -m x", "Bash(git commit *)"),
])
def test_always_allow_never_covers_other_code(tmp_path: Path, command: str, rule: str) -> None:
    a = analyze(command, Where(tmp_path))
    part = next(s for s in a.subcommands if s.cls != "read-only")
    suggested = suggest_rule(part.words, part.text)
    assert suggested == rule
    assert bash_rule_matches(suggested[5:-1], part.text), "the saved rule allows the command it was offered for"
    if "*)" not in suggested:
        assert "exactly this command" in describe_rule(suggested)
        assert not bash_rule_matches(suggested[5:-1], part.text + " x")


# ---- over ACP: untrusted workspace, every question refused ------------------------------------------


def _tool_results_text(model_server: ScriptedModelServer) -> str:
    return "\n".join(r.text() for r in model_server.message_requests())


async def test_acp_planted_option_names_do_not_read_outside(acp_sidecar: Harness, workspace: Path,
                                                            model_server: ScriptedModelServer,
                                                            tmp_path: Path) -> None:
    _plant(workspace, tmp_path / "outside")
    acp_sidecar.permission_policy = reject_once
    calls = [{"type": "tool_use", "name": "Bash", "input": {"command": c}}
             for c in ("grep -n CANARY *", "strings *", "diff *", "xzcat *", "grep {-R,tree} CANARY")]
    model_server.add_turns([{"content": calls}, {"content": [{"type": "text", "text": "done"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "look") == "end_turn"
    assert CANARY not in _tool_results_text(model_server)
    asked = [r for r in acp_sidecar.permission_requests if "Bash" in str(r.get("toolCall", {}).get("rawInput"))
             or "`" in str(r.get("toolCall", {}).get("title"))]
    assert len(asked) >= 5, acp_sidecar.permission_requests


async def test_acp_git_file_naming_another_repository(acp_sidecar: Harness, workspace: Path,
                                                      model_server: ScriptedModelServer, tmp_path: Path) -> None:
    secret = _secret_repo(tmp_path)
    (workspace / ".git").write_text(f"gitdir: {secret / '.git'}\n")
    acp_sidecar.permission_policy = reject_once
    calls = [{"type": "tool_use", "name": "Bash", "input": {"command": c}}
             for c in ("git log -p", "git show HEAD:secret-file-27.txt", "git status")]
    model_server.add_turns([{"content": calls}, {"content": [{"type": "text", "text": "done"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "look") == "end_turn"
    seen = _tool_results_text(model_server)
    assert CANARY not in seen and "secret-file-27" not in seen  # neither the prompt's status nor a result
    assert "left out" in seen


async def test_acp_python_c_is_offered_only_exactly(acp_sidecar: Harness, workspace: Path,
                                                    model_server: ScriptedModelServer) -> None:
    acp_sidecar.permission_policy = reject_once
    call = {"type": "tool_use", "name": "Bash", "input": {"command": "python3 -c 'print(40 + 2)'"}}
    model_server.add_turns([{"content": [call]}, {"content": [{"type": "text", "text": "done"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "compute") == "end_turn"
    bash_asks = [r for r in acp_sidecar.permission_requests if "python3" in str(r["toolCall"].get("title"))]
    assert bash_asks, acp_sidecar.permission_requests
    names = [o["name"] for o in bash_asks[0]["options"]]
    assert not any("Bash(python3 *)" in n for n in names), names
    assert any("Bash(python3 -c 'print(40 + 2)')" in n for n in names), names
    texts = str(bash_asks[0]["toolCall"].get("content"))
    assert "exactly this command" in texts

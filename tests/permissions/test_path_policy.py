"""One path policy for every tool (issue 15): a shell command's files are judged like Read/Write paths,
Grep and Glob never return files a Read deny rule names, and a write that builds a git directory asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.permissions.request import PermissionRequest
from sidecar.permissions.rules import PathContext, path_rule_could_match_under
from sidecar.tools.bash.check_command import explain, load_rules
from sidecar.tools.files.glob import GlobInput, GlobTool, split_walk
from sidecar.tools.files.grep import GrepInput, GrepTool
from tests.permissions.perm_support import ctx_of, make_session, write_settings


def edit(path: Path) -> PermissionRequest:
    return PermissionRequest(tool_name="Write", access="write", title=f"Write {path}",
                             raw_input={"file_path": str(path)}, paths=[path])


def command(text: str, reads: list[Path] = (), unknown: list[str] = (),  # type: ignore[assignment]
            outside: bool = False) -> PermissionRequest:
    return PermissionRequest(tool_name="Bash", access="execute", title=text, raw_input={"command": text},
                             rule_subject=text, rule_parts=[text], read_only=True, read_only_parts=[text],
                             read_paths=list(reads), unknown_paths=list(unknown), unknown_paths_outside=outside)


# ---- a write that builds a git directory asks (acceptEdits and bypass) ---------------------------------

@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
async def test_write_that_builds_a_git_dir_asks(project: Path, mode: str) -> None:
    session = make_session(project, mode=mode)
    evil = project / "evil"
    assert session.permissions.decide(edit(evil / "HEAD")).verdict == "allow"  # one file alone is no repo
    evil.mkdir()
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    for target in ("config", "objects/ab/cdef", "refs/heads/main", "hooks/pre-commit"):
        decision = session.permissions.decide(edit(evil / target))
        assert decision.verdict == "ask", target
        assert "git directories" in decision.reason
    # An ordinary file named config, where there is no HEAD, is an ordinary edit.
    assert session.permissions.decide(edit(project / "src" / "config")).verdict == "allow"


async def test_head_written_next_to_objects_asks(project: Path) -> None:
    session = make_session(project, mode="acceptEdits")
    (project / "evil" / "objects").mkdir(parents=True)
    assert session.permissions.decide(edit(project / "evil" / "HEAD")).verdict == "ask"


# ---- a command's file arguments under the Read/Write path policy ----------------------------------------

async def test_command_reading_outside_the_roots_asks(project: Path, isolated_settings: Path) -> None:
    session = make_session(project)
    key = isolated_settings / ".ssh" / "id_rsa"
    decision = session.permissions.decide(command("cat ~/.ssh/id_rsa", reads=[key]))
    assert decision.verdict == "ask" and "outside the workspace roots" in decision.reason
    assert session.permissions.decide(command("cat src/a.py", reads=[project / "src/a.py"])).verdict == "allow"


async def test_read_allow_rule_covers_a_command_reading_outside(project: Path, isolated_settings: Path) -> None:
    write_settings(project / ".claude/settings.json", {"permissions": {"allow": ["Read(~/notes/**)"]}})
    session = make_session(project)
    notes = isolated_settings / "notes" / "todo.txt"
    assert session.permissions.decide(command("cat ~/notes/todo.txt", reads=[notes])).verdict == "allow"


async def test_read_deny_rule_denies_a_command_reading_the_file(project: Path) -> None:
    write_settings(project / ".claude/settings.json", {"permissions": {"deny": ["Read(./secrets/**)"]}})
    session = make_session(project)
    decision = session.permissions.decide(command("cat secrets/x", reads=[project / "secrets/x"]))
    assert decision.verdict == "deny" and "Read(./secrets/**)" in decision.reason
    # Files only known at run time cannot be checked against the deny rule: ask.
    decision = session.permissions.decide(command("cat s*/x", unknown=["s*/x"]))
    assert decision.verdict == "ask" and "Read deny rules" in decision.reason


async def test_run_time_file_that_could_be_anywhere_asks(project: Path) -> None:
    session = make_session(project)
    assert session.permissions.decide(command("cat $HOME/.ssh/id_rsa", unknown=["$HOME/.ssh/id_rsa"],
                                              outside=True)).verdict == "ask"
    assert session.permissions.decide(command("cat *.py", unknown=["*.py"])).verdict == "allow"


@pytest.mark.parametrize(("text", "decision"), [
    ("cat ~/.ssh/id_rsa", "ask"),
    ("head -5 /etc/passwd", "ask"),
    ("cat $HOME/.ssh/id_rsa", "ask"),
    ("cat secrets/x", "deny"),
    ("grep -n token secrets/x", "deny"),
    ("wc -l < secrets/x", "deny"),
    ("cat src/a.py", "allow"),
    # Whole trees read by one command: asked when a Read deny rule covers a file below them.
    ("grep -r token .", "ask"),
    ("grep -rn token", "ask"),
    ("grep --recursive token secrets", "ask"),
    ("grep -d recurse token .", "ask"),
    ("rg token", "ask"),
    ("rg -n token secrets", "ask"),
    ("git grep token", "ask"),
    ("diff -r src secrets", "ask"),
    ("cd secrets && grep -r token", "ask"),
    ("grep -r token src", "allow"),
    ("rg token src", "allow"),
    ("rg --files", "allow"),
    ("grep token src/a.py", "allow"),
])
def test_check_command_applies_the_path_policy(project: Path, text: str, decision: str) -> None:
    write_settings(project / ".claude/settings.json", {"permissions": {"deny": ["Read(./secrets/**)"]}})
    rules, mode = load_rules(None, project)
    assert explain(text, rules, project, mode)["decision"] == decision


# ---- Grep and Glob never return denied files --------------------------------------------------------

@pytest.fixture
def secret_project(project: Path) -> Path:
    (project / "secrets").mkdir()
    (project / "secrets" / "key.txt").write_text("token=abc\nother\n")
    (project / "src" / "a.py").write_text("x = 1\ntoken = read()\ny = 2\n")
    (project / ".env").write_text("token=zzz\n")
    write_settings(project / ".claude/settings.json",
                   {"permissions": {"deny": ["Read(./secrets/**)", "Read(.env)"]}})
    return project


async def grep(project: Path, **kw: object) -> str:
    session = make_session(project)
    tool, inp = GrepTool(), GrepInput(pattern="token", path=str(project), **kw)  # type: ignore[arg-type]
    return (await tool.run(inp, ctx_of(session))).joined_text()


async def test_grep_files_mode_leaves_out_denied_files(secret_project: Path) -> None:
    text = await grep(secret_project)
    assert text.startswith("Found 1 file\n") and text.endswith("src/a.py")


async def test_grep_content_and_count_leave_out_denied_files(secret_project: Path) -> None:
    a = secret_project / "src" / "a.py"
    assert await grep(secret_project, output_mode="content") == f"{a}:2:token = read()"
    assert await grep(secret_project, output_mode="content", **{"-n": False}) == f"{a}:token = read()"
    assert (await grep(secret_project, output_mode="content", **{"-C": 1})).splitlines() == [
        f"{a}-1-x = 1", f"{a}:2:token = read()", f"{a}-3-y = 2"]
    assert (await grep(secret_project, output_mode="count")).splitlines()[0] == f"{a}:1"
    assert "abc" not in await grep(secret_project, output_mode="content", **{"-C": 3})


async def test_glob_leaves_out_denied_files(secret_project: Path) -> None:
    session = make_session(secret_project)
    out = await GlobTool().run(GlobInput(pattern="**/*", path=str(secret_project)), ctx_of(session))
    names = out.joined_text().splitlines()
    assert str(secret_project / "src" / "a.py") in names
    assert not any("secrets" in n or n.endswith(".env") for n in names)
    assert out.metadata["count"] == len(names)


async def test_glob_split_in_two_walks_still_leaves_out_denied_files(secret_project: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Glob's two-ripgrep walk (taken when a core is spare) filters and counts each half the same way."""
    monkeypatch.setattr("sidecar.tools.files.glob.spare_core", lambda: True)
    (secret_project / "docs").mkdir(exist_ok=True)
    (secret_project / "docs" / "token.md").write_text("token\n")
    assert len(split_walk(secret_project)) == 2
    session = make_session(secret_project)
    out = await GlobTool().run(GlobInput(pattern="**/*", path=str(secret_project)), ctx_of(session))
    names = out.joined_text().splitlines()
    assert str(secret_project / "src" / "a.py") in names and str(secret_project / "docs" / "token.md") in names
    assert not any("secrets" in n or n.endswith(".env") for n in names)
    assert out.metadata["count"] == len(names)


@pytest.mark.parametrize(("rule", "tree", "could"), [
    ("./secrets/**", ".", True), ("./secrets/**", "secrets", True), ("./secrets/**", "secrets/deep", True),
    ("./secrets/**", "src", False), ("*.pem", "src", True), ("./src/*.key", "src", True),
    ("./src/*.key", "lib", False), ("./s*/x", "src", True), ("./s*/x", "lib", False),
    ("//etc/shadow", ".", False), ("./secrets", "secrets/deep", True),
])
def test_a_deny_rule_could_cover_files_under_a_tree(project: Path, rule: str, tree: str, could: bool) -> None:
    pctx = PathContext(cwd=project, project_root=project, home=project / "home")
    assert path_rule_could_match_under(rule, (project / tree).resolve(), pctx) is could

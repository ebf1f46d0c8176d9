"""Bash in the one tool pipeline (issues 28 and 29): the command is classified once per call, where the
session's shell is (not where the sidecar process happens to be), and the classification the loop made
for the concurrency question is the one the gate judges unless the shell moved meanwhile."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from sidecar.session import Session
from sidecar.shell.classify import Analysis, Where
from sidecar.tools.bash import bash as bash_module
from sidecar.tools.bash.bash import Bash
from sidecar.tools.bash.shells import shells_of
from sidecar.tools.dispatch import Dispatcher, ToolCall
from sidecar.tools.registry import ToolRegistry


@pytest.fixture
def analyses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path]]:
    """Every classification the Bash tool makes: (command, the directory it was judged in)."""
    made: list[tuple[str, Path]] = []
    real = bash_module.analyze

    def counted(command: str, where: Where) -> Analysis:
        made.append((command, where.cwd))
        return real(command, where)

    monkeypatch.setattr(bash_module, "analyze", counted)
    return made


def git_init(directory: Path) -> None:
    subprocess.run(["git", "init", "-q", str(directory)], check=True, capture_output=True)


async def run_call(dispatcher: Dispatcher, call: ToolCall, between: Any = None) -> tuple[bool, str, bool]:
    """announce → the loop's concurrency question → run, as the agent loop drives a call."""
    await dispatcher.announce(call)
    safe = dispatcher.is_concurrency_safe(call)
    if between is not None:
        between()
    result = await dispatcher.run(call)
    return safe, result.output.joined_text(), result.output.is_error


async def test_a_command_is_classified_once_per_call(session: Session, workspace: Path,
                                                     analyses: list[tuple[str, Path]]) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    dispatcher = Dispatcher(session, ToolRegistry([Bash()]))
    safe, text, is_error = await run_call(dispatcher, ToolCall("toolu_1", "Bash", {"command": "cat a.txt"}))
    assert safe and not is_error and text.startswith("alpha")
    assert analyses == [("cat a.txt", workspace)]
    # A command that needs approval is classified once too, and the user is asked once.
    safe, text, is_error = await run_call(dispatcher, ToolCall("toolu_2", "Bash", {"command": "touch b.txt"}))
    assert not safe and not is_error and (workspace / "b.txt").exists()
    assert analyses[1:] == [("touch b.txt", workspace)]
    asked = [p for m, p in session.channel.requests if m == "session/request_permission"]  # type: ignore[attr-defined]
    assert [p["toolCall"]["toolCallId"] for p in asked] == ["toolu_2"]


async def test_the_analysis_is_made_again_when_the_shell_moved(session: Session, workspace: Path,
                                                              analyses: list[tuple[str, Path]]) -> None:
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "a.txt").write_text("in sub\n")
    dispatcher = Dispatcher(session, ToolRegistry([Bash()]))

    def shell_moves() -> None:  # what an earlier call's `cd sub` in the same batch does
        shells_of(session).cwd = sub

    safe, text, is_error = await run_call(dispatcher, ToolCall("toolu_1", "Bash", {"command": "cat a.txt"}),
                                          between=shell_moves)
    assert safe and not is_error and text.startswith("in sub")
    # Judged again where it runs: its file arguments are the ones in sub/.
    assert analyses == [("cat a.txt", workspace), ("cat a.txt", sub)]


async def test_git_commands_are_judged_with_their_repository_settings_off_the_loop(
        session: Session, workspace: Path, analyses: list[tuple[str, Path]]) -> None:
    git_init(workspace)
    dispatcher = Dispatcher(session, ToolRegistry([Bash()]))
    safe, _, is_error = await run_call(dispatcher, ToolCall("toolu_1", "Bash", {"command": "git status"}))
    # The loop does not run git to read the repository's settings; the gate's analysis does.
    assert safe and not is_error
    assert analyses == [("git status", workspace), ("git status", workspace)]


async def test_the_concurrency_question_is_answered_where_the_session_is(
        session: Session, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The workspace's .git points outside it: its git commands are not read-only there. The sidecar
    # process sits in an ordinary repository, where `git status` would be.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git_init(elsewhere)
    outside = tmp_path / "outside-git"
    git_init(outside)
    (workspace / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    monkeypatch.chdir(elsewhere)
    dispatcher = Dispatcher(session, ToolRegistry([Bash()]))
    call = ToolCall("toolu_1", "Bash", {"command": "git status"})
    await dispatcher.announce(call)
    assert dispatcher.is_concurrency_safe(call) is False

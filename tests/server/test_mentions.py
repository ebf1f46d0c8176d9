"""The composer's mentions as the model gets them (issue 30): the editor's problems and a terminal's output
(embedded resources, redacted), and `@git` (the working tree's diff, a commit) run by the sidecar with no
program the repository names."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import TEST_API_KEY, Harness


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                               "HOME": str(cwd), "PATH": "/usr/bin:/bin"}).stdout


def repo(workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "first")


async def prompt_blocks(harness: Harness, session: str, blocks: list[dict[str, Any]]) -> str:
    result = await harness.process.request("session/prompt", {"sessionId": session, "prompt": blocks})
    return str(result["stopReason"])


async def review_git_diff(harness: Harness, workspace: Path, model: ScriptedModelServer) -> None:
    """One turn in a new session: "review" with the working tree's diff mentioned."""
    model.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    session = await harness.new_session(workspace)
    assert await prompt_blocks(harness, session, [
        {"type": "text", "text": "review"}, {"type": "resource_link", "uri": "sidecar://git/diff", "name": "git"}],
    ) == "end_turn"


def sent_texts(model: ScriptedModelServer) -> list[str]:
    content = model.message_requests()[0].last_user_message()["content"]
    return [b["text"] for b in content if b.get("type") == "text" and not b["text"].startswith("<system-reminder>")]


async def test_problems_and_terminal_reach_the_model_as_context_with_secrets_redacted(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    session = await acp_sidecar.new_session(workspace)
    problems = "2 problems (errors first):\nhello.py:2:12 error: \"nme\" is not defined (Pyright)"
    terminal = f"$ env | grep KEY\nANTHROPIC_API_KEY={TEST_API_KEY}\n(exit code 0)"
    stop = await prompt_blocks(acp_sidecar, session, [
        {"type": "text", "text": "fix these"},
        {"type": "resource", "resource": {"uri": "sidecar://problems", "text": problems, "mimeType": "text/plain"}},
        {"type": "resource", "resource": {"uri": "sidecar://terminal", "text": terminal, "mimeType": "text/plain"}},
    ])
    assert stop == "end_turn"
    assert sent_texts(model_server) == [
        "fix these",
        f"<context source=\"problems\">\n{problems}\n</context>",
        "<context source=\"terminal\">\n$ env | grep KEY\nANTHROPIC_API_KEY=[REDACTED]\n(exit code 0)\n</context>",
    ]


async def test_git_diff_mention_gives_the_stat_untracked_files_and_diff(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    repo(workspace)
    (workspace / "notes.txt").write_text("alpha\nBETA\ngamma\n")
    (workspace / "new.txt").write_text("fresh\n")
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    session = await acp_sidecar.new_session(workspace)
    stop = await prompt_blocks(acp_sidecar, session, [
        {"type": "text", "text": "review my changes"},
        {"type": "resource_link", "uri": "sidecar://git/diff", "name": "Git changes"},
    ])
    assert stop == "end_turn"
    texts = sent_texts(model_server)
    assert texts[0] == "review my changes"
    expected_body = (" notes.txt | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
                     "Untracked files (not in the diff): new.txt\n\n"
                     "diff --git a/notes.txt b/notes.txt\n")
    assert texts[1].startswith(f'<git-diff cwd="{workspace}" command="git diff HEAD">\n{expected_body}')
    assert texts[1].endswith(" alpha\n-beta\n+BETA\n gamma\n</git-diff>")
    # The chat shows the same text on a card of its own.
    updates = acp_sidecar.process.updates_for(session, "tool_call_update")
    card = [u for u in updates if u["status"] == "completed"][-1]
    assert card["content"][0]["content"]["text"].startswith(expected_body)


async def test_git_mention_runs_no_program_the_repository_names(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    repo(workspace)
    marker = workspace.parent / "ran"
    script = workspace.parent / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran \"$@\" >> {marker}\ncat\n")
    script.chmod(0o755)
    (workspace / ".gitattributes").write_text("*.txt diff=evil filter=evil\n")
    git(workspace, "add", ".gitattributes")
    git(workspace, "commit", "-q", "-m", "attrs")
    for key in ("core.fsmonitor", "diff.external", "diff.evil.textconv", "diff.evil.command", "filter.evil.clean",
                "filter.evil.smudge", "core.pager"):
        git(workspace, "config", key, str(script))
    (workspace / "notes.txt").write_text("alpha\nBETA\ngamma\n")
    await review_git_diff(acp_sidecar, workspace, model_server)
    assert not marker.exists(), marker.read_text()
    assert "-beta\n+BETA" in sent_texts(model_server)[1]


async def test_git_commit_mention_and_a_bad_one(acp_sidecar: Harness, workspace: Path,
                                               model_server: ScriptedModelServer) -> None:
    repo(workspace)
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\ndelta\n")
    git(workspace, "commit", "-q", "-am", "add delta")
    sha = git(workspace, "rev-parse", "--short", "HEAD").strip()
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await prompt_blocks(acp_sidecar, session, [
        {"type": "text", "text": "explain"},
        {"type": "resource_link", "uri": f"sidecar://git/commit/{sha}", "name": sha},
        {"type": "resource_link", "uri": "sidecar://git/commit/--output=/tmp/x", "name": "bad"},
    ]) == "end_turn"
    texts = sent_texts(model_server)
    assert texts[1].startswith(f'<git-commit cwd="{workspace}" command="git show {sha}">\ncommit ')
    assert "    add delta\n" in texts[1] and "+delta\n" in texts[1]
    assert texts[2] == (f'<git-commit cwd="{workspace}" error="true">\n\'--output=/tmp/x\' is not a commit id: '
                        "mention a commit as `@git <sha>` (4 to 40 hex digits).\n</git-commit>")
    failed = [u for u in acp_sidecar.process.updates_for(session, "tool_call_update") if u["status"] == "failed"]
    assert "is not a commit id" in failed[-1]["content"][0]["content"]["text"]


async def test_git_pointed_outside_is_left_out_before_trust(acp_sidecar: Harness, workspace: Path,
                                                            model_server: ScriptedModelServer, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "secret.txt").write_text("other repo\n")
    repo(other)
    (other / "secret.txt").write_text("changed elsewhere\n")
    (workspace / ".git").write_text(f"gitdir: {other / '.git'}\n")
    await review_git_diff(acp_sidecar, workspace, model_server)
    text = sent_texts(model_server)[1]
    assert text.startswith(f'<git-diff cwd="{workspace}" error="true">\nLeft out: git here is pointed outside the '
                           "workspace (the .git file (or link) names the git directory: ")
    assert "changed elsewhere" not in text


async def test_git_mention_outside_a_repository(acp_sidecar: Harness, workspace: Path,
                                                model_server: ScriptedModelServer) -> None:
    await review_git_diff(acp_sidecar, workspace, model_server)
    assert sent_texts(model_server)[1] == (f'<git-diff cwd="{workspace}" error="true">\n{workspace} is not in a git '
                                           "repository: there are no changes to show.\n</git-diff>")


async def test_files_a_read_deny_rule_names_are_left_out_of_the_diff(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer, sidecar_env: dict[str, str]) -> None:
    home = Path(sidecar_env["HOME"])
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Read(**/.env)"]}}')
    (workspace / ".env").write_text("TOKEN=old\n")
    repo(workspace)
    (workspace / ".env").write_text("TOKEN=hunter2-rotated\n")
    (workspace / "notes.txt").write_text("alpha\nBETA\ngamma\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".env").write_text("TOKEN=untracked-secret\n")
    await review_git_diff(acp_sidecar, workspace, model_server)
    text = sent_texts(model_server)[1]
    assert "hunter2" not in text and "untracked-secret" not in text
    assert " notes.txt | 2 +-\n 1 file changed" in text
    assert text.endswith("\n\nLeft out (a Read deny rule names them): .env, sub/.env\n</git-diff>")


async def test_a_prompt_of_mentions_alone_is_titled_by_the_first(acp_sidecar: Harness, workspace: Path,
                                                                 model_server: ScriptedModelServer) -> None:
    repo(workspace)
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await prompt_blocks(acp_sidecar, session, [
        {"type": "resource", "resource": {"uri": "sidecar://problems", "text": "No errors or warnings."}},
        {"type": "resource_link", "uri": "sidecar://git/diff", "name": "Git changes"}]) == "end_turn"
    listed = await acp_sidecar.process.request("session/list", {"cwd": str(workspace)})
    assert [s["title"] for s in listed["sessions"]] == ["Git changes"]


async def test_a_large_diff_is_cut_at_the_bound_and_says_so(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    """git's output arrives in pipe-sized chunks: the mention reads on to its bound (not just the first
    chunk), cuts there and says where, instead of a silently short diff or a git stuck on a full pipe."""
    big = workspace / "big.txt"
    big.write_text("".join(f"line {i} of the original text\n" for i in range(6000)))
    repo(workspace)
    big.write_text("".join(f"line {i} of the changed text\n" for i in range(6000)))
    await review_git_diff(acp_sidecar, workspace, model_server)
    text = sent_texts(model_server)[1]
    assert "diff --git a/big.txt b/big.txt" in text
    read = re.search(r"\[… cut at 30000 of (\d+) characters; run `git diff HEAD -- <path>` for the files cut off\]",
                     text)
    assert read is not None, text[-300:]
    assert int(read.group(1)) >= 4 * 30000  # read on to the bound, past a first pipe-sized chunk

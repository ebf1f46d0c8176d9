"""What the terminal client prints for session updates: rule offers as phrases, relative paths, Markdown
cut into blocks as it streams, the retry line gone once the model answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from sidecar.client.render import MarkdownBlocks, PathDisplay, UpdateRenderer, readable_option


@pytest.mark.parametrize(("name", "shown"), [
    ("Always allow Edit(/**) for this session", "Always allow edits in this folder for this session"),
    ("Always reject Edit(/src/app/**) for this session", "Always reject edits in src/app/ for this session"),
    ("Always allow Edit(//home/u/other/**) for this session", "Always allow edits in ~/other/ for this session"),
    ("Always allow Bash(git status *) in this project", 'Always allow "git status" commands in this project'),
    ("Always allow Bash(rm build/out.txt) in this project",
     'Always allow the command "rm build/out.txt" in this project'),
    ("Always allow WebFetch(domain:docs.python.org) in this project",
     "Always allow fetches from docs.python.org in this project"),
    ("Always allow mcp__github__create_issue in this project",
     "Always allow the tool 'create_issue' of the MCP server 'github' in this project"),
    ("Always allow mcp__github in this project", "Always allow every tool of the MCP server 'github' in this project"),
    ("Always allow Read(/home/u/proj/notes.txt) in this project", "Always allow reading notes.txt in this project"),
    ("Allow once", "Allow once"),
    ("Trust this folder", "Trust this folder"),
])
def test_rule_offers_read_as_phrases(name: str, shown: str) -> None:
    assert readable_option(name, PathDisplay(Path("/home/u/proj"), home="/home/u")) == shown


def test_paths_under_the_folder_are_relative() -> None:
    show = PathDisplay(Path("/tmp/ws"), home="/home/u")
    assert show("Read /tmp/ws/calc.py") == "Read calc.py"
    assert show("Glob **/*.py in /tmp/ws") == "Glob **/*.py in ."
    assert show("/tmp/wsx/a.py and /x/tmp/ws/b.py") == "/tmp/wsx/a.py and /x/tmp/ws/b.py"  # other paths stay
    assert show("/home/u/.bashrc") == "~/.bashrc"


@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_markdown_is_cut_into_blocks_at_blank_lines_outside_fences(step: int) -> None:
    text = "# T\n\npara one\nline two\n\n```py\na = 1\n\nb = 2\n```\nafter\n\n| a |\n|---|\n| 1 |\n\ntail"
    blocks = MarkdownBlocks()
    out: list[str] = []
    for i in range(0, len(text), step):
        out += blocks.feed(text[i:i + step])
    assert out == ["# T\n\n", "para one\nline two\n\n", "```py\na = 1\n\nb = 2\n```\n", "after\n\n",
                   "| a |\n|---|\n| 1 |\n\n"]
    assert blocks.rest() == "tail"


def test_the_retry_line_goes_when_the_model_answers() -> None:
    console = Console(force_terminal=True, width=100, record=True)
    renderer = UpdateRenderer(console, Path("/tmp/ws"))
    renderer.begin_turn()
    try:
        renderer.retry({"message": "The model API failed (HTTP 529); retrying in 1 s (attempt 2 of 7)"})
        assert "retrying in 1 s" in renderer.status_line().plain
        renderer.render({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}})
        assert "retrying" not in renderer.status_line().plain and "Writing" in renderer.status_line().plain
    finally:
        renderer.end_turn()
    assert "retrying" not in console.export_text()  # never printed into the transcript


def test_expand_shows_the_last_collapsed_output_in_full() -> None:
    console = Console(width=100, record=True)
    renderer = UpdateRenderer(console, Path("/tmp/ws"))
    renderer.render({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read /tmp/ws/big.txt"})
    body = "\n".join(f"line {i}" for i in range(1, 21))
    renderer.render({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                     "content": [{"type": "content", "content": {"type": "text", "text": body}}]})
    shown = console.export_text()
    assert "● Read big.txt" in shown and "line 6" in shown and "line 7" not in shown
    assert "… +14 lines (/expand to see all)" in shown
    renderer.expand()
    assert "line 20" in console.export_text()


def test_a_running_tools_latest_output_line_shows_under_the_working_line_until_it_ends() -> None:
    console = Console(force_terminal=True, width=100, record=True)
    renderer = UpdateRenderer(console, Path("/tmp/ws"))
    renderer.begin_turn()
    try:
        renderer.render({"sessionUpdate": "tool_call", "toolCallId": "b1", "title": "`pytest`",
                         "_meta": {"sidecar": {"tool": "Bash"}}})
        renderer.render({"sessionUpdate": "tool_call_update", "toolCallId": "b1", "status": "in_progress",
                         "content": [{"type": "content", "content": {"type": "text",
                                                                     "text": "collecting\n/tmp/ws/t.py ..\n"}}]})
        assert renderer._progress == "t.py .."
        renderer.render({"sessionUpdate": "tool_call_update", "toolCallId": "b1", "status": "completed",
                         "content": [{"type": "content", "content": {"type": "text", "text": "2 passed"}}]})
        assert renderer._progress is None
    finally:
        renderer.end_turn()
    shown = console.export_text()
    assert "● Bash(pytest)" in shown and "⎿ 2 passed" in shown


def test_a_sub_agents_calls_are_indented_and_long_thoughts_collapsed() -> None:
    console = Console(width=100, record=True)
    renderer = UpdateRenderer(console, Path("/tmp/ws"), rich_text=True)
    renderer.render({"sessionUpdate": "agent_thought_chunk",
                     "content": {"type": "text", "text": "one\ntwo\nthree\nfour\nfive"}})
    renderer.render({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Task explore",
                     "_meta": {"sidecar": {"tool": "Task"}}})
    renderer.render({"sessionUpdate": "tool_call", "toolCallId": "r", "title": "Read /tmp/ws/a.py",
                     "_meta": {"sidecar": {"tool": "Read", "parentToolCallId": "t"}}})
    shown = console.export_text()
    assert "∴ one\n  two\n  three\n  … +2 lines (/expand to see all)" in shown and "four" not in shown
    assert "\n● Task explore\n    ● Read a.py" in shown
    renderer.expand()
    assert "five" in console.export_text()

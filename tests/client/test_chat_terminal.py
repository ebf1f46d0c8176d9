"""``sidecar chat`` in a pseudo-terminal, read as a person reads it (issue 30, "Terminal client").

Real processes: the chat (``python -m sidecar chat``) in a pty, its ``sidecar serve --acp`` child, real
tools, the scripted Messages API server on 127.0.0.1. The screen is a VT100 emulator (pyte) fed with the
chat's output; every wait is on what the screen shows.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.client.terminal import Terminal

ANSWER = """# Result

The **add** function was `wrong`. What changed:

| file | change |
|---|---|
| calc.py | a - b → a + b |

```python
def add(a, b):
    return a + b
```

Done, **all** fixed."""


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def chat(terminals: list[Terminal], env: dict[str, str], workspace: Path, *flags: str) -> Terminal:
    terminal = Terminal([sys.executable, "-m", "sidecar", "chat", *flags],
                        env={**env, "TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}, cwd=workspace)
    terminals.append(terminal)
    return terminal


def prompt_ready(terminal: Terminal) -> None:
    terminal.wait_for(r"^› ?$(?![\s\S]*\S)")  # the prompt is the last thing on the screen


@pytest.mark.timeout(300)
def test_a_chat_in_a_terminal(terminals: list[Terminal], sidecar_env: dict[str, str], workspace: Path,
                              model_server: ScriptedModelServer) -> None:
    model_server.add_turns([
        {"content": [{"type": "text", "text": ANSWER}]},
        {"content": [{"type": "text", "text": "Let me wait."},
                     {"type": "tool_use", "name": "Bash", "input": {"command": "sleep 600"}}]},
        {"content": [{"type": "text", "text": "Still **here**."}]},
        {"content": [{"type": "text", "text": "Continued."}]},
    ])
    term = chat(terminals, sidecar_env, workspace)
    # The banner: one line with the model, the folder, the mode and /help.
    banner = term.wait_for(r"^✻ Sidecar.*$").group(0)
    assert re.match(r"✻ Sidecar \S+ · Claude ", banner), banner  # the agent's name and version, the model
    assert banner.endswith("/workspace · default mode · /help")
    assert len(banner) <= 100  # one line of the 100-column terminal (a long folder is shortened: …/name)
    prompt_ready(term)

    term.type("show me")
    term.wait_for(r"Done, all fixed\.")
    prompt_ready(term)
    screen = term.text()
    assert "› show me" in screen and screen.count("show me") == 1  # the prompt is not echoed twice
    assert "The add function was wrong. What changed:" in screen
    assert "calc.py  a - b → a + b" in screen and "def add(a, b):" in screen  # the table, the code block
    assert "**" not in screen and "```" not in screen and "| file |" not in screen and "# Result" not in screen
    assert "[end_turn]" not in screen
    assert term.bold("add") and term.bold("all")  # **bold** is bold

    # Ctrl-C while a tool runs: session/cancel, the turn ends, the session goes on.
    term.type("wait")
    term.wait_for(r"● Bash\(sleep 600\)")
    term.wait_for(r"ctrl\+c to interrupt")  # the working line
    term.key("ctrl-c")
    term.wait_for(r"Interrupted\. The session goes on")
    prompt_ready(term)
    term.type("again")
    term.wait_for(r"^Still here\.$")
    prompt_ready(term)
    third = model_server.message_requests()[2]
    sent = json.dumps(third.body["messages"])
    assert "show me" in sent and "sleep 600" in sent and "again" in sent  # the same conversation
    results = [b for m in third.body["messages"] if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]
    assert [r.get("is_error") for r in results] == [True], results  # the cut-short call was answered

    # A bad command is one line, and the chat goes on.
    term.type("/mode bogus")
    term.wait_for(r"Unknown mode 'bogus'")
    prompt_ready(term)
    said = [line for line in term.lines() if "bogus" in line and not line.startswith("›")]
    assert said == ["Unknown mode 'bogus'; the modes are default, acceptEdits, plan, bypassPermissions."]

    # Shift-Tab: the next mode, the typed text kept; Ctrl-C with text clears the line.
    term.send("half typed")
    term.wait_for(r"^› half typed$")
    term.key("shift-tab")
    term.wait_for(r"^Mode: acceptEdits\n+acceptEdits › half typed$")
    term.key("ctrl-c")
    term.wait_for(r"^acceptEdits › ?$(?![\s\S]*\S)")

    # Ctrl-C at the empty prompt: a hint, no hang; Ctrl-D: a clean exit on a new line.
    term.key("ctrl-c")
    term.wait_for(r"Press Ctrl-C again to quit")
    term.key("ctrl-d")
    assert term.wait_exit() == 0
    out = term.output()
    assert out.endswith("\n") and "Resume this session with: sidecar chat --resume sess_" in out
    assert "Traceback" not in out and "Error" not in out

    # --continue: the most recent session of this folder, shown again, and it goes on.
    again = chat(terminals, sidecar_env, workspace, "--continue")
    assert again.wait_for(r"^✻ Sidecar.*$").group(0).endswith(" · acceptEdits mode · /help")  # as it was left
    again.wait_for(r"^Resumed ")
    again.wait_for(r"^Still here\.$")
    again.wait_for(r"^acceptEdits › ?$(?![\s\S]*\S)")
    lines = again.lines()
    assert lines.index("› show me") > next(i for i, line in enumerate(lines) if line.startswith("✻ Sidecar"))
    assert "**" not in again.text()  # the replay is rendered too
    again.type("more")
    again.wait_for(r"^Continued\.$")
    again.wait_for(r"^acceptEdits › ?$(?![\s\S]*\S)")
    fourth = json.dumps(model_server.message_requests()[3].body["messages"])
    assert "show me" in fourth and "again" in fourth and "more" in fourth
    again.key("ctrl-c")
    again.wait_for(r"Press Ctrl-C again to quit")
    again.key("ctrl-c")
    assert again.wait_exit() == 0
    assert "Traceback" not in again.output()


@pytest.mark.timeout(300)
def test_resume_lists_this_folders_sessions_and_loads_the_one_picked(
        terminals: list[Terminal], sidecar_env: dict[str, str], workspace: Path,
        model_server: ScriptedModelServer) -> None:
    model_server.add_turns([{"content": [{"type": "text", "text": "First answer."}]},
                            {"content": [{"type": "text", "text": "Second answer."}]},
                            {"content": [{"type": "text", "text": "Back in the first."}]}])
    for prompt in ("the first question", "the second question"):  # two sessions, one turn each (piped)
        done = subprocess.run([sys.executable, "-m", "sidecar", "chat", "--cwd", str(workspace), prompt],
                              env=sidecar_env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    term = chat(terminals, sidecar_env, workspace, "--resume")
    term.wait_for(r"Sessions in this folder, newest first:")
    listed = term.wait_for(r"^  1\. (.*)\n  2\. (.*)$")
    assert "second question" in listed.group(1) and "first question" in listed.group(2)
    term.wait_for(r"Resume which \(1–2\) \[1\]:$")
    term.type("2")
    term.wait_for(r"^First answer\.$")
    prompt_ready(term)
    assert "Second answer" not in term.text()
    term.type("go on")
    term.wait_for(r"^Back in the first\.$")
    assert "the first question" in json.dumps(model_server.message_requests()[2].body["messages"])
    term.key("ctrl-d")
    assert term.wait_exit() == 0


@pytest.mark.parametrize("session_id", ["sess_nothere", "../../etc/passwd"])
def test_resume_of_an_unknown_session_is_one_line(sidecar_env: dict[str, str], workspace: Path,
                                                  session_id: str) -> None:
    done = subprocess.run([sys.executable, "-m", "sidecar", "chat", "--cwd", str(workspace), "--resume", session_id],
                          env={**sidecar_env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    said = (done.stdout + done.stderr).strip().splitlines()
    assert len(said) == 1 and session_id in said[0] and "Traceback" not in said[0], said


@pytest.mark.timeout(300)
def test_a_retry_line_goes_and_ctrl_c_at_a_question_interrupts_the_turn(
        terminals: list[Terminal], sidecar_env: dict[str, str], workspace: Path,
        model_server: ScriptedModelServer) -> None:
    target = workspace / "new.txt"
    model_server.add_turns([
        {"fault": "http", "status": 529},  # retried: the working line says so until the model answers
        {"content": [{"type": "text", "text": "Writing it."},
                     {"type": "tool_use", "name": "Write", "input": {"file_path": str(target), "content": "x\n"}}]},
        {"content": [{"type": "text", "text": "Fine."}]},
    ])
    term = chat(terminals, sidecar_env, workspace)
    prompt_ready(term)
    term.type("write it")
    term.wait_for(r"⚠ Permission: (Create|Write) new\.txt")
    term.wait_for(r"Choose 1–\d, y or n \[1\]:$")
    assert "retrying" in term.output()  # it was shown …
    assert "retrying" not in term.text() and "↻" not in term.text()  # … and it is gone
    term.key("ctrl-c")
    term.wait_for(r"Interrupted\. The session goes on")
    prompt_ready(term)
    assert not target.exists()
    term.type("all right")
    term.wait_for(r"^Fine\.$")
    prompt_ready(term)
    term.key("ctrl-d")
    assert term.wait_exit() == 0
    assert "Traceback" not in term.output()


@pytest.mark.parametrize(("env", "line"), [
    ({"SIDECAR_MODEL": "claude-sonnet-5-5"},
     "1.0k in · 200 out · 10.0k cache read · 2.0k cache write · $0.02 — session $0.02"),
    ({"SIDECAR_MODEL": "llama-local"}, "1.0k in · 200 out · 10.0k cache read · 2.0k cache write · "
                                       "no price for this model — session 13.2k tokens"),
    ({"SIDECAR_MODEL": "llama-local", "SIDECAR_PRICES": '{"llama-local": {"input": 1, "output": 2}}'},
     "1.0k in · 200 out · 10.0k cache read · 2.0k cache write · $0.0049 — session $0.0049"),  # cache: 1.25×, 0.1× input
])
def test_the_turn_summary_line_says_the_tokens_and_the_cost(
        sidecar_env: dict[str, str], workspace: Path, model_server: ScriptedModelServer,
        env: dict[str, str], line: str) -> None:
    model_server.add_turns([{"content": [{"type": "text", "text": "Answered."}], "usage": {
        "input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 10_000,
        "cache_creation_input_tokens": 2000}}])
    done = subprocess.run([sys.executable, "-m", "sidecar", "chat", "--cwd", str(workspace), "a question"],
                          env={**sidecar_env, **env, "COLUMNS": "200"}, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == line, done.stdout

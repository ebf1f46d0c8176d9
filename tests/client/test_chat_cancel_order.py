"""Ctrl-C at a permission question: the terminal client sends ``session/cancel`` before it answers the
question ``cancelled`` (ACP's order). Answered first, an agent takes the answer as a refusal and may send its
next model request before the cancel arrives: a turn the user stopped went on (seen in CI under load)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from rich.console import Console

from sidecar.client.chat import Chat
from sidecar.client.lines import Interrupted

# A stand-in agent over ACP's newline-delimited JSON on real pipes: it asks one permission question and writes
# down, in arrival order, the two messages that end it (the answer, the cancel).
AGENT = r'''
import json, sys
out_path = sys.argv[1]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
seen, prompt_id = [], None
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        prompt_id = message["id"]
        send({"jsonrpc": "2.0", "id": 900, "method": "session/request_permission", "params": {
            "sessionId": "s1", "toolCall": {"toolCallId": "t1", "title": "Create new.txt", "kind": "edit"},
            "options": [{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}})
    elif method == "session/cancel":
        seen.append("session/cancel")
    elif message.get("id") == 900:
        seen.append("answer:" + message["result"]["outcome"]["outcome"])
    if len(seen) == 2 and prompt_id is not None:
        open(out_path, "w").write(json.dumps(seen))
        send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "cancelled"}})
        prompt_id = None
'''


class CtrlCAtEveryQuestion:
    interactive = True

    async def read(self, prompt: str, *, main: bool = False, default: str = "") -> str | None:
        raise Interrupted


def test_ctrl_c_at_a_question_sends_the_cancel_before_the_answer(tmp_path: Path) -> None:
    agent, seen = tmp_path / "agent.py", tmp_path / "seen.json"
    agent.write_text(AGENT)
    args = argparse.Namespace(yes=False, trust=False, mode=None, prompt="write it", resume=None, continue_=False)
    console = Console(file=(tmp_path / "screen.txt").open("w"), width=100)
    chat = Chat(args, tmp_path, {}, console, lines=CtrlCAtEveryQuestion())
    chat.process.argv = [sys.executable, str(agent), str(seen)]
    assert asyncio.run(chat.run()) == 130  # the turn ended as cancelled
    assert json.loads(seen.read_text()) == ["session/cancel", "answer:cancelled"]

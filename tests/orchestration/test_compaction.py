"""Compaction near a small context window; a file summarised away must be read again before an edit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import RecordedRequest, ScriptedModelServer
from tests.orchestration.conftest import MakeSidecar, result_text

SUMMARY_MARK = "Your task is to summarise the conversation"


def is_summary_request(request: RecordedRequest) -> bool:
    last = request.messages[-1]["content"] if request.messages else []
    return any(isinstance(b, dict) and SUMMARY_MARK in b.get("text", "") for b in last)


class Responder:
    """Answers summary requests with a summary, and the agent's requests with the next scripted turn."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.turns = list(turns)
        self.summaries = 0

    def __call__(self, request: RecordedRequest) -> dict[str, Any]:
        if is_summary_request(request):
            self.summaries += 1
            return {"content": [{"type": "text", "text": f"SUMMARY {self.summaries}: the user asked to read big.txt."}]}
        return self.turns.pop(0)


async def test_compaction_forgets_summarised_reads(make_sidecar: MakeSidecar, workspace: Path,
                                                  model_server: ScriptedModelServer) -> None:
    # Measure the fixed part of a request (tools + system) to pick a window that it fills to ~55%.
    probe = await make_sidecar()
    model_server.add_turns([{"content": [{"type": "text", "text": "hi"}]}])
    assert await probe.prompt(await probe.new_session(workspace), "hi") == "end_turn"
    base = len(model_server.message_requests()[0].raw_body) // 4
    window = int(base / 0.55)
    big = workspace / "big.txt"
    lines = int(window * 0.3 * 4 / 40)
    big.write_text("".join(f"line {i:05d} of the big file, padded....\n" for i in range(lines)))

    harness = await make_sidecar(settings={"contextWindow": window})
    responder = Responder([
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(big)}}]},
        {"content": [{"type": "text", "text": "I read big.txt."}]},
        # Second prompt: the first edit attempt comes after compaction forgot the read.
        {"content": [{"type": "tool_use", "name": "Edit", "input": {
            "file_path": str(big), "old_string": "line 00000 of", "new_string": "LINE ZERO of"}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(big)}}]},
        {"content": [{"type": "tool_use", "name": "Edit", "input": {
            "file_path": str(big), "old_string": "line 00000 of", "new_string": "LINE ZERO of"}}]},
        {"content": [{"type": "text", "text": "Edited."}]},
    ])
    model_server.add_turns([responder] * 12)
    before = len(model_server.message_requests())
    session = await harness.new_session(workspace)
    assert await harness.prompt(session, "read big.txt") == "end_turn"
    assert responder.summaries == 0  # nothing older than the current turn to summarise yet
    assert await harness.prompt(session, "now edit its first line") == "end_turn"

    requests = model_server.message_requests()[before:]
    assert responder.summaries >= 1
    summary_at = next(i for i, r in enumerate(requests) if is_summary_request(r))
    after = requests[summary_at + 1]
    first = after.body["messages"][0]["content"][0]["text"]
    assert first.startswith("This session continues a conversation that ran out of context.")
    assert "SUMMARY 1: the user asked to read big.txt." in first
    assert after.body["messages"][1]["content"] == [{"type": "text", "text": "I read big.txt."}]
    # The summarised-away read no longer counts: the edit is refused until the file is read again.
    refused = next(r for r in requests if r.tool_results() and "has not been read" in result_text(r.tool_results()[0]))
    assert refused.tool_results()[0]["is_error"]
    assert big.read_text().startswith("LINE ZERO of the big file")
    usage = harness.process.updates_for(session, "usage_update")
    assert usage and all(u["size"] == window for u in usage)

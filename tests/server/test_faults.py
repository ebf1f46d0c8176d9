"""Model faults: overload, rate limit with retry-after, a stream cut mid-turn. The turn completes and
no tool runs twice."""

from __future__ import annotations

from pathlib import Path

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness


def _completed_calls(harness: Harness, session: str) -> list[str]:
    return [u["toolCallId"] for u in harness.process.updates_for(session, "tool_call_update")
            if u.get("status") == "completed"]


async def test_overloaded_then_success(acp_sidecar: Harness, workspace: Path,
                                       model_server: ScriptedModelServer) -> None:
    model_server.add_turns([
        {"fault": "http", "status": 529},
        {"content": [{"type": "text", "text": "Recovered."}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "hello") == "end_turn"
    assert acp_sidecar.text(session) == "Recovered."
    assert len(model_server.message_requests()) == 2


async def test_rate_limited_retry_after_is_honoured(acp_sidecar: Harness, workspace: Path,
                                                    model_server: ScriptedModelServer) -> None:
    model_server.add_turns([
        {"fault": "http", "status": 429, "headers": {"retry-after": "1"}},
        {"content": [{"type": "text", "text": "After waiting."}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "hello") == "end_turn"
    first, second = model_server.message_requests()
    # SIDECAR_MAX_BACKOFF is 0.2 s in tests: only the header explains a one-second wait.
    assert second.time - first.time >= 0.95


async def test_stream_cut_after_tool_use_runs_the_tool_once(acp_sidecar: Harness, workspace: Path,
                                                            model_server: ScriptedModelServer) -> None:
    read = {"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "notes.txt")}}
    model_server.add_turns([
        {"fault": "drop", "after_blocks": 2, "turn": {"content": [{"type": "text", "text": "Reading."}, read]}},
        {"content": [{"type": "text", "text": "Reading."}, read]},
        {"content": [{"type": "text", "text": " Done."}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "read the notes") == "end_turn"
    requests = model_server.message_requests()
    assert len(requests) == 3
    assert len(requests[2].tool_results()) == 1
    assert len(_completed_calls(acp_sidecar, session)) == 1
    assert len(acp_sidecar.process.updates_for(session, "tool_call")) == 1
    # The text streamed before the cut is not shown twice.
    assert acp_sidecar.text(session) == "Reading. Done."


async def test_persistent_failure_is_a_clear_error_and_the_session_survives(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    model_server.add_turns([{"fault": "http", "status": 400, "message": "bad request from test"}])
    model_server.add_turns([{"content": [{"type": "text", "text": "fine now"}]}])
    session = await acp_sidecar.new_session(workspace)
    import pytest

    from sidecar.client.connection import RemoteError
    with pytest.raises(RemoteError) as err:
        await acp_sidecar.prompt(session, "first")
    assert "HTTP 400" in err.value.message
    assert await acp_sidecar.prompt(session, "second") == "end_turn"

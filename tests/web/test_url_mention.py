"""`@url` from the composer: the sidecar fetches the page through the WebFetch tool itself (issue 30), so
a mention has WebFetch's governance — URL safety, the permission rules and the user's answer — and a card
in the chat says what happened. Loopback only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness, reject_once, trust_workspace
from tests.web.conftest import LocalServer


async def send(harness: Harness, session: str, url: str) -> str:
    result = await harness.process.request("session/prompt", {"sessionId": session, "prompt": [
        {"type": "text", "text": "what does it say?"}, {"type": "resource_link", "uri": url, "name": url}]})
    return str(result["stopReason"])


def mention_text(model: ScriptedModelServer) -> str:
    content = model.message_requests()[0].last_user_message()["content"]
    texts = [b["text"] for b in content if b.get("type") == "text"]
    assert texts[0] == "what does it say?"
    return str(texts[1])


def cards(harness: Harness, session: str, status: str) -> list[dict[str, Any]]:
    return [u for u in harness.process.updates_for(session, "tool_call_update") if u.get("status") == status]


async def test_allowed_loopback_page_reaches_the_model(acp_sidecar: Harness, workspace: Path,
                                                       model_server: ScriptedModelServer, http_server: LocalServer,
                                                       sidecar_env: dict[str, str]) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}}))
    trust_workspace(sidecar_env, workspace)
    http_server.page("/notes", "Release 2.1 ships on Friday.", content_type="text/plain")
    url = http_server.url("/notes")
    model_server.add_turns([{"content": [{"type": "text", "text": "Friday."}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await send(acp_sidecar, session, url) == "end_turn"

    text = mention_text(model_server)
    assert text.startswith(f'<fetched-url url="{url}">\n{url} (200, text/plain')
    assert text.endswith("\n\nRelease 2.1 ships on Friday.\n</fetched-url>")
    assert acp_sidecar.permission_requests == []  # the rule allowed it, as for the tool
    started = acp_sidecar.process.updates_for(session, "tool_call")[0]
    assert started["title"] == f"Fetch {url}"
    shown = cards(acp_sidecar, session, "completed")[0]["content"][0]["content"]["text"]
    assert "Release 2.1 ships on Friday." in shown


async def test_private_address_is_refused_and_the_chat_says_why(acp_sidecar: Harness, workspace: Path,
                                                                 model_server: ScriptedModelServer) -> None:
    model_server.add_turns([{"content": [{"type": "text", "text": "I could not read it."}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await send(acp_sidecar, session, "http://10.1.2.3/admin") == "end_turn"

    text = mention_text(model_server)
    assert text.startswith('<fetched-url url="http://10.1.2.3/admin" error="true">\n'
                           "The user attached this URL, but it was not fetched: ")
    failed = cards(acp_sidecar, session, "failed")
    reason = failed[0]["content"][0]["content"]["text"]
    assert "10.1.2.3" in reason and "private" in reason.lower()
    assert reason in text
    assert acp_sidecar.permission_requests == []  # refused before anyone is asked


async def test_a_host_the_user_refuses_is_not_fetched(acp_sidecar: Harness, workspace: Path,
                                                      model_server: ScriptedModelServer) -> None:
    acp_sidecar.permission_policy = reject_once
    model_server.add_turns([{"content": [{"type": "text", "text": "ok"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await send(acp_sidecar, session, "https://example.com/page") == "end_turn"

    [asked] = acp_sidecar.permission_requests
    assert asked["toolCall"]["title"] == "Fetch https://example.com/page"
    text = mention_text(model_server)
    assert text.startswith('<fetched-url url="https://example.com/page" error="true">\n'
                           "The user attached this URL, but it was not fetched: ")
    assert cards(acp_sidecar, session, "failed")

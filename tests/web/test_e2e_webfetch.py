"""End to end: the model calls WebFetch in a spawned ``sidecar serve --acp``; the page reaches the next request."""

from __future__ import annotations

import json
from pathlib import Path

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness, trust_workspace
from tests.web.conftest import LocalServer


async def test_model_fetches_a_page_and_sees_it(acp_sidecar: Harness, workspace: Path,
                                                model_server: ScriptedModelServer,
                                                http_server: LocalServer, sidecar_env: dict[str, str]) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}}))
    trust_workspace(sidecar_env, workspace)  # a project allow rule applies only in a trusted workspace
    http_server.page("/changelog", "<html><body><nav>menu</nav><h1>Changelog</h1>"
                                   "<p>Version 3.2 adds the frobnicate flag.</p></body></html>")
    url = http_server.url("/changelog")
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "WebFetch",
                      "input": {"url": url, "prompt": "What does the latest version add?"}}]},
        {"content": [{"type": "text", "text": "Version 3.2 adds the frobnicate flag."}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "What is new in the changelog?") == "end_turn"

    (result,) = model_server.message_requests()[1].tool_results()
    assert not result.get("is_error")
    text = "".join(b["text"] for b in result["content"])
    assert text.startswith(f"{url} (200, text/html, ")
    assert text.endswith("# Changelog\n\nVersion 3.2 adds the frobnicate flag.")
    assert "menu" not in text
    assert acp_sidecar.permission_requests == []
    assert [p for p, _ in http_server.requests] == ["/changelog"]

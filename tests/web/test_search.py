"""WebSearch against the scripted Messages API server (server_tool_use + web_search_tool_result blocks),
and the DuckDuckGo fallback served from loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.web.conftest import LocalServer, MakeEnv
from tests.web.test_ddg import fixture, serve_post

PY_RELEASE = "https://www.python.org/downloads/release/python-3130/"
WHATS_NEW = "https://docs.python.org/3/whatsnew/3.13.html"


def search_use(query: str, block_id: str = "srvtoolu_01") -> dict[str, Any]:
    return {"type": "server_tool_use", "id": block_id, "name": "web_search", "input": {"query": query}}


def results(block_id: str = "srvtoolu_01") -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": block_id, "content": [
        {"type": "web_search_result", "title": "Python Release Python 3.13.0", "url": PY_RELEASE,
         "encrypted_content": "EqkBCioIAhgC", "page_age": "October 7, 2024"},
        {"type": "web_search_result", "title": "What's New In Python 3.13", "url": WHATS_NEW,
         "encrypted_content": "EqkBCioIAhgD"},
    ]}


def search_error(code: str, block_id: str = "srvtoolu_01") -> dict[str, Any]:
    return {"type": "web_search_tool_result", "tool_use_id": block_id,
            "content": {"type": "web_search_tool_result_error", "error_code": code}}


ANSWER = {"type": "text", "text": "Python 3.13.0 was released on October 7, 2024.", "citations": [
    {"type": "web_search_result_location", "url": PY_RELEASE, "title": "Python Release Python 3.13.0",
     "encrypted_index": "Eo8BCioIAhgB", "cited_text": "Python 3.13.0 Release Date: Oct. 7, 2024"}]}


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("SIDECAR_MAX_BACKOFF", "0.05")
        yield server


@pytest.fixture
def ddg_server(http_server: LocalServer) -> LocalServer:
    serve_post(http_server, "/html/", fixture("ddg_results.html"))
    return http_server


async def test_server_search_lists_sources_and_the_cited_answer(make_env: MakeEnv,
                                                                model: ScriptedModelServer) -> None:
    model.add_turn({"content": [{"type": "text", "text": "I'll search for that."},
                                search_use("python 3.13 release date"), results(), ANSWER]})
    env = make_env()
    result = await env.call("WebSearch", query="python 3.13 release date", allowed_domains=["python.org"])
    assert result.output.joined_text() == (
        'Web search results for "python 3.13 release date" (server web search):\n\n'
        "Sources:\n"
        f"1. [Python Release Python 3.13.0]({PY_RELEASE}) (October 7, 2024)\n"
        f"2. [What's New In Python 3.13]({WHATS_NEW})\n\n"
        "Answer:\n"
        "I'll search for that.Python 3.13.0 was released on October 7, 2024. [1]\n\n"
        "When you use these results, cite the pages as Markdown links [title](url).")
    (request,) = model.message_requests()
    assert request.body["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5,
                                      "allowed_domains": ["python.org"]}]
    assert "python 3.13 release date" in request.text()
    assert request.body["stream"] is True
    # Progress reached the editor while the stream ran.
    progress = [n["update"]["content"][0]["content"]["text"] for n in env.channel.notifications
                if n["update"].get("status") == "in_progress" and n["update"].get("content")]
    assert "Searching the web: python 3.13 release date" in progress and "Found 2 results" in progress
    assert env.channel.permission_requests == []


async def test_max_uses_exceeded_keeps_what_was_found(make_env: MakeEnv, model: ScriptedModelServer) -> None:
    model.add_turn({"content": [search_use("a"), results(), search_use("b", "srvtoolu_02"),
                                search_error("max_uses_exceeded", "srvtoolu_02"), ANSWER]})
    env = make_env()
    text = (await env.call("WebSearch", query="python 3.13 release")).output.joined_text()
    assert "(Note: the search hit its limit of searches for one call. The results below are what was found " \
           "before that.)" in text
    assert f"1. [Python Release Python 3.13.0]({PY_RELEASE})" in text


async def test_query_too_long_is_a_tool_error(make_env: MakeEnv, model: ScriptedModelServer) -> None:
    model.add_turn({"content": [search_use("x" * 50), search_error("query_too_long")]})
    env = make_env()
    result = await env.call("WebSearch", query="x" * 50)
    assert result.output.is_error
    assert result.output.joined_text() == ("The web search refused the query: the query is too long. "
                                           "Rephrase it shorter and plainer, then search again.")


@pytest.mark.parametrize("turn", [
    {"content": [search_use("q"), search_error("unavailable")]},
    {"content": [search_use("q"), search_error("too_many_requests")]},
    {"fault": "http", "status": 400,
     "message": "tools.0: Input tag 'web_search_20250305' found using 'type' does not match any of the "
                "expected tags"},
    {"content": [{"type": "text", "text": "I cannot browse the web."}]},  # an endpoint that ignores the tool
], ids=["unavailable", "too_many_requests", "tool_rejected", "tool_ignored"])
async def test_falls_back_to_duckduckgo(make_env: MakeEnv, model: ScriptedModelServer,
                                        ddg_server: LocalServer, turn: dict[str, Any]) -> None:
    model.add_turn(turn)
    env = make_env(ddg_endpoint=ddg_server.url("/html/"))
    result = await env.call("WebSearch", query="python asyncio timeout")
    text = result.output.joined_text()
    assert not result.output.is_error, text
    assert text.startswith('Web search results for "python asyncio timeout" (DuckDuckGo):\n\n'
                           "(Server-side search unavailable: ")
    assert ("Sources:\n1. [asyncio — Asynchronous I/O — Python 3.13 documentation]"
            "(https://docs.python.org/3/library/asyncio.html)\n"
            "   asyncio is a library to write concurrent code using the async/await syntax.\n") in text
    assert "8. [anyio documentation](https://anyio.readthedocs.io/en/stable/)" in text and "\n9. " not in text
    assert result.metadata["provider"] == "duckduckgo"


async def test_fallback_turned_off_says_so(make_env: MakeEnv, model: ScriptedModelServer) -> None:
    model.add_turn({"fault": "http", "status": 400, "message": "unknown tool type web_search_20250305"})
    env = make_env(search_fallback=False)
    result = await env.call("WebSearch", query="anything")
    assert result.output.is_error
    text = result.output.joined_text()
    assert text.startswith("Web search is not available: the model endpoint answered HTTP 400 (")
    assert text.endswith("The DuckDuckGo fallback is turned off (SIDECAR_WEBSEARCH_FALLBACK=0). Tell the "
                         "user web search is unavailable, or use WebFetch on a URL you know.")


async def test_neither_works_says_so_plainly(make_env: MakeEnv, model: ScriptedModelServer,
                                             http_server: LocalServer) -> None:
    model.add_turn({"content": [search_use("q"), search_error("unavailable")]})
    env = make_env(ddg_endpoint=http_server.url("/nothing-here/"))
    result = await env.call("WebSearch", query="anything")
    assert result.output.is_error
    assert result.output.joined_text() == (
        "Web search is not available: the server-side search failed (the search service is unavailable) "
        "and the DuckDuckGo fallback failed too (DuckDuckGo answered HTTP 501). Tell the user web search "
        "is not working right now, or use WebFetch on a URL you know.")


async def test_both_domain_lists_at_once_are_refused(make_env: MakeEnv) -> None:
    env = make_env()
    result = await env.call("WebSearch", query="q q", allowed_domains=["a.com"], blocked_domains=["b.com"])
    assert result.output.is_error
    assert result.output.joined_text() == "Give either allowed_domains or blocked_domains, not both."

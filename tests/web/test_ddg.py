"""The DuckDuckGo fallback parser, on saved result pages served from loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.tools.web import ddg
from tests.web.conftest import LocalServer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "web"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def serve_post(server: LocalServer, path: str, body: str) -> None:
    """DuckDuckGo's HTML endpoint takes a POST form; answer POST and GET alike."""
    data = body.encode()

    def handler(h: object) -> None:
        from http.server import BaseHTTPRequestHandler

        assert isinstance(h, BaseHTTPRequestHandler)
        length = int(h.headers.get("Content-Length") or 0)
        server.requests.append(("POST-BODY", {"body": h.rfile.read(length).decode()}))
        h.send_response(200)
        h.send_header("Content-Type", "text/html; charset=utf-8")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    server.routes[path] = handler
    handler_cls = server.httpd.RequestHandlerClass
    handler_cls.do_POST = handler_cls.do_GET  # type: ignore[attr-defined]


def test_parser_reads_titles_urls_snippets_and_skips_the_ad() -> None:
    hits = ddg.parse_results(fixture("ddg_results.html"))
    assert len(hits) == 23
    assert hits[0] == ddg.SearchHit(
        "asyncio — Asynchronous I/O — Python 3.13 documentation",
        "https://docs.python.org/3/library/asyncio.html",
        "asyncio is a library to write concurrent code using the async/await syntax.",
    )
    assert all("Online Course" not in h.title for h in hits)
    assert all(h.url.startswith("https://") and "duckduckgo.com" not in h.url for h in hits)


def test_parser_falls_back_to_the_lite_layout() -> None:
    hits = ddg.parse_results(fixture("ddg_lite.html"))
    assert [h.url for h in hits] == [
        "https://docs.python.org/3/library/asyncio.html",
        "https://docs.python.org/3/library/asyncio-task.html",
        "https://stackoverflow.com/questions/74623311/asyncio-timeout",
    ]
    assert hits[1].snippet == ("This section outlines high-level asyncio APIs to work with coroutines "
                               "and Tasks.")


def test_no_results_page_gives_an_empty_list() -> None:
    assert ddg.parse_results(fixture("ddg_no_results.html")) == []


async def test_search_over_loopback_defaults_to_8_and_caps_at_20(http_server: LocalServer) -> None:
    serve_post(http_server, "/html/", fixture("ddg_results.html"))
    endpoint = http_server.url("/html/")
    hits = await ddg.search("python asyncio timeout", endpoint=endpoint)
    assert len(hits) == 8
    assert hits[7].title == "anyio documentation"
    assert len(await ddg.search("python asyncio timeout", endpoint=endpoint, limit=50)) == 20
    assert http_server.requests[1] == ("POST-BODY", {"body": "q=python+asyncio+timeout&kl=wt-wt"})


async def test_domain_filters(http_server: LocalServer) -> None:
    serve_post(http_server, "/html/", fixture("ddg_results.html"))
    endpoint = http_server.url("/html/")
    only = await ddg.search("q", endpoint=endpoint, limit=20, allowed_domains=["python.org"])
    assert {ddg.host_of(h.url) for h in only} == {"docs.python.org", "peps.python.org"}
    blocked = await ddg.search("q", endpoint=endpoint, limit=20,
                               blocked_domains=["docs.python.org", "github.com"])
    hosts = {ddg.host_of(h.url) for h in blocked}
    assert "docs.python.org" not in hosts and "github.com" not in hosts and "peps.python.org" in hosts


async def test_captcha_and_http_errors_are_unavailable(http_server: LocalServer) -> None:
    serve_post(http_server, "/html/", '<html><body><div class="anomaly-modal__title">Unfortunately, bots use '
                                      "DuckDuckGo too.</div></body></html>")
    with pytest.raises(ddg.SearchUnavailable, match="captcha"):
        await ddg.search("q", endpoint=http_server.url("/html/"))
    with pytest.raises(ddg.SearchUnavailable, match="HTTP 404"):
        await ddg.search("q", endpoint=http_server.url("/missing/"))

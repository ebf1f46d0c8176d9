"""Per-session state and settings of the web tools: limits, the page cache, the resolver and transport.

Tests replace ``resolver`` (a stub that maps names to addresses) and ``transport`` (an httpx transport that
fails the test if a connection is attempted); production uses the system resolver and httpx's own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sidecar.session import ServiceKey, Session
from sidecar.tools.web.cache import FetchCache
from sidecar.tools.web.url_safety import Resolver, system_resolver

if TYPE_CHECKING:
    import httpx  # imported where used: it pulls in its CLI (rich, click, pygments), about a second

DDG_ENDPOINT = "https://html.duckduckgo.com/html/"
USER_AGENT = "Mozilla/5.0 (compatible; sidecar-webfetch/0.1; coding agent fetching a page for its user)"


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


@dataclass
class WebSettings:
    timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    max_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 10
    # Markdown shorter than this goes to the model whole; longer goes through the small model.
    short_markdown_chars: int = 10_000
    # What the small model sees at most; and what is returned when it cannot be reached.
    max_markdown_chars: int = 100_000
    fallback_markdown_chars: int = 30_000
    search_fallback: bool = True
    ddg_endpoint: str = DDG_ENDPOINT
    ddg_results: int = 8
    user_agent: str = USER_AGENT

    @classmethod
    def from_env(cls) -> WebSettings:
        s = cls()
        if v := os.environ.get("SIDECAR_WEBFETCH_TIMEOUT"):
            s.timeout_s = float(v)
        if v := os.environ.get("SIDECAR_WEBFETCH_MAX_BYTES"):
            s.max_bytes = int(v)
        s.search_fallback = _env_flag("SIDECAR_WEBSEARCH_FALLBACK", True)
        if v := os.environ.get("SIDECAR_DDG_ENDPOINT"):
            s.ddg_endpoint = v
        if v := os.environ.get("SIDECAR_WEBSEARCH_RESULTS"):
            s.ddg_results = max(1, min(20, int(v)))
        return s


@dataclass
class WebServices:
    settings: WebSettings = field(default_factory=WebSettings.from_env)
    resolver: Resolver = system_resolver
    # None: httpx's default transport. Tests pass a guard or mock transport.
    transport: httpx.AsyncBaseTransport | None = None
    cache: FetchCache = field(default_factory=FetchCache)


WEB = ServiceKey[WebServices]("web", lambda _session: WebServices())


def web_services(session: Session) -> WebServices:
    """The session's web services, created on first use (``session.service(WEB)``)."""
    return session.service(WEB)

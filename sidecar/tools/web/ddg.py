"""The WebSearch fallback provider: DuckDuckGo's HTML results page (no key), parsed with selectolax.

Used when the model endpoint has no server-side search (a local Anthropic-compatible server, a proxy
that refuses the tool) or the search failed. Two layouts are understood: the ``html.duckduckgo.com``
page (``.result__a`` / ``.result__snippet``) and, as a fallback when DuckDuckGo changes it, the ``lite``
page (``a.result-link`` / ``td.result-snippet``). Result links that go through DuckDuckGo's redirector
(``/l/?uddg=…``) are unwrapped. Ads are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urljoin, urlsplit

if TYPE_CHECKING:
    import httpx  # imported in search(): its import pulls in its CLI (rich, click, pygments), about a second.
    from selectolax.lexbor import LexborNode as Node

DEFAULT_RESULTS = 8
MAX_RESULTS = 20


class SearchUnavailable(Exception):
    """The fallback provider could not answer (network, captcha, unexpected page)."""


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str


def unwrap_link(href: str, base: str) -> str:
    absolute = urljoin(base, href)
    parts = urlsplit(absolute)
    if parts.path.startswith("/l/"):
        target = parse_qs(parts.query).get("uddg")
        if target:
            return target[0]
    return absolute


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def domain_matches(url: str, domains: list[str]) -> bool:
    """True when the URL's host is one of ``domains`` or a subdomain of one."""
    host = host_of(url)
    for d in domains:
        d = d.lower().strip().lstrip(".")
        if d.startswith(("http://", "https://")):
            d = host_of(d)
        if d and (host == d or host.endswith("." + d)):
            return True
    return False


def _text(node: Node | None) -> str:
    return " ".join(node.text(separator=" ").split()) if node is not None else ""


def parse_results(html: str, base: str = "https://duckduckgo.com/") -> list[SearchHit]:
    from selectolax.lexbor import LexborHTMLParser as HTMLParser  # imported on use: 1.8 MB of memory

    tree = HTMLParser(html)
    hits: list[SearchHit] = []
    for result in tree.css("div.result, div.web-result"):
        classes = (result.attributes.get("class") or "").split()
        if "result--ad" in classes or "result--no-result" in classes:
            continue
        link = result.css_first("a.result__a")
        if link is None:
            continue
        url = unwrap_link(link.attributes.get("href") or "", base)
        hit = SearchHit(_text(link), url, _text(result.css_first(".result__snippet")))
        if hit.title and url.startswith(("http://", "https://")) and all(h.url != url for h in hits):
            hits.append(hit)
    if hits:
        return hits
    # The "lite" layout: a table of rows, link row then snippet row.
    for link in tree.css("a.result-link"):
        url = unwrap_link(link.attributes.get("href") or "", base)
        row = link.parent
        while row is not None and row.tag != "tr":
            row = row.parent
        snippet_node = None
        nxt = row.next if row is not None else None
        while nxt is not None and snippet_node is None:
            if nxt.tag == "tr":
                snippet_node = nxt.css_first("td.result-snippet")
                break
            nxt = nxt.next
        hit = SearchHit(_text(link), url, _text(snippet_node))
        if hit.title and url.startswith(("http://", "https://")) and all(h.url != url for h in hits):
            hits.append(hit)
    return hits


def is_blocked_page(html: str) -> bool:
    return "anomaly-modal" in html or "challenge-form" in html


async def search(query: str, *, endpoint: str, limit: int = DEFAULT_RESULTS,
                 allowed_domains: list[str] | None = None, blocked_domains: list[str] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, timeout_s: float = 15.0,
                 user_agent: str = "Mozilla/5.0") -> list[SearchHit]:
    """Search and return at most ``limit`` (≤ 20) hits after the domain filters."""
    import httpx  # lazy: see the note at the top

    limit = max(1, min(MAX_RESULTS, limit))
    try:
        async with httpx.AsyncClient(transport=transport, timeout=timeout_s, follow_redirects=True,
                                     trust_env=False, headers={"User-Agent": user_agent}) as client:
            response = await client.post(endpoint, data={"q": query, "kl": "wt-wt"})
    except httpx.HTTPError as exc:
        raise SearchUnavailable(f"DuckDuckGo could not be reached ({type(exc).__name__}: {exc})") from None
    if response.status_code != 200:
        raise SearchUnavailable(f"DuckDuckGo answered HTTP {response.status_code}")
    html = response.text
    if is_blocked_page(html):
        raise SearchUnavailable("DuckDuckGo asked for a captcha (too many automated searches)")
    hits = parse_results(html, str(response.url))
    if allowed_domains:
        hits = [h for h in hits if domain_matches(h.url, allowed_domains)]
    if blocked_domains:
        hits = [h for h in hits if not domain_matches(h.url, blocked_domains)]
    return hits[:limit]

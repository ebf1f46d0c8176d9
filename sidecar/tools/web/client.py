"""One GET with WebFetch's rules: checked addresses, same-host redirects only, a deadline, a size cap.

Each hop resolves the host, checks every address (``url_safety``) and connects to the checked address
itself: the URL's host travels in the ``Host`` header and as TLS SNI (certificates are verified against
it), so a DNS answer cannot change between the check and the connection. Cookies live for one hop only.
The body is streamed and the connection closed once ``max_bytes`` have arrived: the rest is never read.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from sidecar.errors import ToolError
from sidecar.tools.web.services import WebServices
from sidecar.tools.web.url_safety import Target, parse_url, resolve_checked

if TYPE_CHECKING:
    import httpx  # imported where used: it pulls in its CLI (rich, click, pygments), about a second

REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.5"


@dataclass
class Fetched:
    url: str  # the final URL, after same-host redirects
    status: int
    reason: str
    content_type: str  # media type only, lower case ("" when the server sent none)
    charset: str | None
    body: bytes
    truncated: bool  # the body was cut at max_bytes
    elapsed_s: float


@dataclass
class Redirected:
    url: str  # the URL that answered with the redirect
    location: str  # the absolute URL it points to
    status: int


def _strip_www(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


def same_site(a: Target, b: Target) -> bool:
    """A redirect WebFetch follows by itself: same host (``www.`` aside), same port, no https→http."""
    if _strip_www(a.host) != _strip_www(b.host):
        return False
    if a.scheme == "https" and b.scheme == "http":
        return False
    if a.scheme == b.scheme:
        return a.port == b.port
    return a.default_port and b.default_port  # http → https on default ports


_ssl_context: ssl.SSLContext | None = None


async def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every fetch: building one costs ~0.1-0.2 s of CPU, and doing that
    per call on the event loop would serialise concurrent fetches."""
    global _ssl_context
    if _ssl_context is None:
        import httpx  # lazy: see the note at the top

        _ssl_context = await asyncio.to_thread(httpx.create_ssl_context)
    return _ssl_context


async def fetch(target: Target, services: WebServices,
                allows_private: Callable[[str], bool]) -> Fetched | Redirected:
    """GET ``target``. Raises ToolError (for the model) on refusal, timeout or transport failure."""
    import httpx  # lazy: see the note at the top

    settings = services.settings
    start = time.monotonic()
    timeout = httpx.Timeout(settings.timeout_s, connect=min(settings.connect_timeout_s, settings.timeout_s))
    try:
        async with asyncio.timeout(settings.timeout_s):
            verify = await shared_ssl_context() if services.transport is None else True
            async with httpx.AsyncClient(transport=services.transport, follow_redirects=False,
                                         trust_env=False, timeout=timeout, verify=verify) as client:
                current = target
                for _hop in range(settings.max_redirects + 1):
                    ip = await resolve_checked(current, services.resolver, allows_private(current.host))
                    result = await _get_once(client, current, str(ip), services, start)
                    client.cookies.clear()
                    if isinstance(result, Fetched):
                        return result
                    try:
                        nxt = parse_url(result.location)
                    except ToolError:
                        return result  # let the model see where it pointed
                    if not same_site(current, nxt):
                        return Redirected(url=current.url, location=nxt.url, status=result.status)
                    current = nxt
                raise ToolError(f"{target.url} redirected more than {settings.max_redirects} times. "
                                "The page is probably in a redirect loop; try another URL.")
    except TimeoutError:
        raise ToolError(f"Fetching {target.url} timed out after {settings.timeout_s:g} s. The server is slow "
                        "or unreachable; try again later or use another source.") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"Fetching {target.url} failed: {type(exc).__name__}: {exc or 'no detail'}. "
                        "Check the URL, or try another source.") from None
    raise AssertionError("unreachable")


async def _get_once(client: httpx.AsyncClient, target: Target, ip: str, services: WebServices,
                    start: float) -> Fetched | Redirected:
    import httpx  # lazy: see the note at the top

    settings = services.settings
    connect_url = httpx.URL(target.url).copy_with(host=ip)
    headers = {"Host": target.host_header, "User-Agent": settings.user_agent, "Accept": ACCEPT}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    request = client.build_request("GET", connect_url, headers=headers, extensions=extensions)
    response = await client.send(request, stream=True)
    try:
        if response.status_code in REDIRECT_CODES and response.headers.get("location"):
            location = urljoin(target.url, response.headers["location"])
            return Redirected(url=target.url, location=location, status=response.status_code)
        chunks: list[bytes] = []
        size = 0
        truncated = False
        async for chunk in response.aiter_bytes():
            room = settings.max_bytes - size
            if len(chunk) >= room:
                chunks.append(chunk[:room])
                size += room
                truncated = len(chunk) > room or _more_expected(response, size)
                break
            chunks.append(chunk)
            size += len(chunk)
        media, _, _ = response.headers.get("content-type", "").partition(";")
        return Fetched(url=target.url, status=response.status_code, reason=response.reason_phrase,
                       content_type=media.strip().lower(), charset=response.charset_encoding,
                       body=b"".join(chunks), truncated=truncated, elapsed_s=time.monotonic() - start)
    finally:
        await response.aclose()


def _more_expected(response: httpx.Response, size: int) -> bool:
    length = response.headers.get("content-length")
    if length and length.isdigit():
        return int(length) > size
    return True  # unknown length and the cap reached: assume there was more

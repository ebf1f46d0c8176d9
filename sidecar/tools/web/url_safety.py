"""Which URLs WebFetch may reach, and at which address.

Checks, in the order WebFetch applies them:

1. ``parse_url``: only ``http``/``https``; no credentials in the URL; the host canonicalised (lower case,
   IPv4 literals in any spelling — ``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1`` — rewritten to
   dotted decimal, IPv6 literals compressed), so that a rule ``WebFetch(domain:127.0.0.1)`` names every
   spelling of that address.
2. ``upgrade_scheme``: ``http`` becomes ``https``, except for a loopback/private host that a rule allows
   explicitly (a local dev server has no certificate).
3. ``resolve_checked``: every A/AAAA record of the host is classified; if any is loopback, private,
   link-local, unique-local, cloud metadata or otherwise not public, the fetch is refused unless a rule
   allows that host explicitly. The caller then connects to the checked address itself (the URL's host
   goes in the ``Host`` header and TLS SNI), so DNS cannot answer differently between check and connect.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from sidecar.errors import ToolError

# httpx is imported where it is used: its import pulls in its CLI (rich, click, pygments), about a second.

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2000

# Cloud instance metadata endpoints (AWS, GCP, Azure, OpenStack: 169.254.169.254; AWS IPv6; ECS; Alibaba).
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, RFC 6598
UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

# A resolver returns every address of ``host`` (tests replace it; the default asks the system).
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]


@dataclass(frozen=True)
class Target:
    """A parsed, canonical URL."""

    url: str
    scheme: str
    host: str  # canonical: lower case, IP literals normalised, no brackets
    port: int
    ip_literal: IPAddress | None

    @property
    def default_port(self) -> bool:
        return self.port == (443 if self.scheme == "https" else 80)

    @property
    def host_for_url(self) -> str:
        return f"[{self.host}]" if isinstance(self.ip_literal, ipaddress.IPv6Address) else self.host

    @property
    def host_header(self) -> str:
        return self.host_for_url if self.default_port else f"{self.host_for_url}:{self.port}"


# ---- parsing ------------------------------------------------------------------------------------


def parse_ipv4_loose(host: str) -> ipaddress.IPv4Address | None:
    """Parse an IPv4 address the way ``inet_aton`` and browsers do: 1–4 parts, each decimal, ``0x`` hex or
    ``0``-prefixed octal, the last part filling the remaining bytes. None when ``host`` is not numeric."""
    text = host[:-1] if host.endswith(".") else host
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or any(p == "" for p in parts):
        return None
    values: list[int] = []
    for part in parts:
        p = part.lower()
        try:
            if p.startswith("0x"):
                value = int(p[2:], 16) if p[2:] else 0
            elif len(p) > 1 and p.startswith("0"):
                value = int(p[1:], 8)
            elif p.isdigit():
                value = int(p, 10)
            else:
                return None
        except ValueError:
            return None
        values.append(value)
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = 0
    for v in head:
        number = number * 256 + v
    number = number * 256 ** (4 - len(head)) + last
    return ipaddress.IPv4Address(number)


def _looks_numeric(host: str) -> bool:
    last = host.rstrip(".").rsplit(".", 1)[-1].lower()
    return last.isdigit() or (last.startswith("0x") and all(c in "0123456789abcdef" for c in last[2:]))


def _normalise_numeric_host(raw: str) -> str:
    """Rewrite a numeric IPv4 host httpx would reject (``0177.0.0.1``) to dotted decimal before parsing."""
    try:
        parts = urlsplit(raw)
        host = parts.hostname or ""
    except ValueError:
        return raw
    v4 = parse_ipv4_loose(host) if host and ":" not in host else None
    if v4 is None or host == str(v4):
        return raw
    netloc = parts.netloc.rsplit("@", 1)
    hostport = netloc[-1]
    start = hostport.lower().find(host)
    netloc[-1] = hostport[:start] + str(v4) + hostport[start + len(host):]
    return urlunsplit(parts._replace(netloc="@".join(netloc)))


def parse_url(raw: str) -> Target:
    """Parse and canonicalise ``raw``; raise ToolError (addressed to the model) when it cannot be fetched."""
    raw = raw.strip()
    if len(raw) > MAX_URL_LENGTH:
        raise ToolError(f"The URL is {len(raw)} characters long; WebFetch accepts at most {MAX_URL_LENGTH}. "
                        "Use a shorter URL.")
    import httpx  # lazy: see the note at the top

    try:
        url = httpx.URL(_normalise_numeric_host(raw))
    except (httpx.InvalidURL, ValueError) as exc:
        raise ToolError(f"{raw!r} is not a valid URL ({exc}). Give a full http:// or https:// URL.") from None
    scheme = url.scheme.lower()
    if scheme not in ("http", "https"):
        shown = f"{scheme}://" if scheme else "a URL without a scheme"
        raise ToolError(f"WebFetch only fetches http:// and https:// URLs, not {shown}. "
                        "To read a local file use the Read tool; otherwise give an https:// URL.")
    if url.userinfo:
        raise ToolError("The URL contains a user name or password; WebFetch does not send credentials. "
                        "Remove them from the URL.")
    host = url.host.lower()
    if not host:
        raise ToolError(f"{raw!r} has no host. Give a full URL such as https://example.com/page.")
    literal: IPAddress | None = None
    if ":" in host:  # IPv6 literal (httpx strips the brackets)
        try:
            literal = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise ToolError(f"{host!r} is not a valid IPv6 address.") from None
        host = str(literal)
    else:
        v4 = parse_ipv4_loose(host)
        if v4 is not None:
            literal = v4
            host = str(v4)
        elif _looks_numeric(host):
            raise ToolError(f"{url.host!r} is not a valid IPv4 address or host name.")
        host = host.rstrip(".")
    port = url.port or (443 if scheme == "https" else 80)
    default = 443 if scheme == "https" else 80
    canonical = url.copy_with(scheme=scheme, host=host, port=None if port == default else port, fragment=None)
    return Target(url=str(canonical), scheme=scheme, host=host, port=port, ip_literal=literal)


def with_scheme(target: Target, scheme: str) -> Target:
    """The same target over another scheme; an explicit port is kept, a default one follows the scheme."""
    port = target.port if not target.default_port else (443 if scheme == "https" else 80)
    default = 443 if scheme == "https" else 80
    import httpx  # lazy: see the note at the top

    url = httpx.URL(target.url).copy_with(scheme=scheme, port=None if port == default else port)
    return Target(url=str(url), scheme=scheme, host=target.host, port=port, ip_literal=target.ip_literal)


def is_local_name(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


# ---- classification ------------------------------------------------------------------------------


def classify(ip: IPAddress) -> str | None:
    """None for a public address, else what it is ("loopback", "private", "link-local", "metadata" ...)."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and (ip in NAT64 or (ip in IPV4_COMPATIBLE and int(ip) > 1)):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            kind = classify(embedded)
            return kind if kind is None else f"{kind} (IPv4 {embedded} inside IPv6)"
    if ip in METADATA_ADDRESSES:
        return "cloud metadata"
    if ip.is_loopback:
        return "loopback"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if isinstance(ip, ipaddress.IPv6Address) and ip in UNIQUE_LOCAL:
        return "unique-local"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        # fec0::/10, deprecated (RFC 3879) but still routed inside some networks; Python calls it global.
        return "site-local"
    if ip.is_private or (isinstance(ip, ipaddress.IPv4Address) and ip in SHARED_ADDRESS_SPACE):
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


def refusal(url: str, host: str, ip: IPAddress, kind: str) -> ToolError:
    where = f"{host} is" if str(ip) == host else f"{host} resolves to {ip}, which is"
    return ToolError(
        f"Refused to fetch {url}: {where} a {kind} address. WebFetch does not reach loopback, private, "
        f"link-local or metadata addresses unless a permission rule allows that host explicitly "
        f"(`WebFetch(domain:{host})` in .claude/settings.json). Do not retry; if the user needs this page, "
        "ask them to add the rule.",
        metadata={"refused_address": str(ip), "address_kind": kind},
    )


def check_literal(target: Target, explicitly_allowed: bool) -> None:
    """Refuse an IP-literal host that is not public (no DNS needed) unless a rule allows it."""
    if target.ip_literal is None or explicitly_allowed:
        return
    kind = classify(target.ip_literal)
    if kind is not None:
        raise refusal(target.url, target.host, target.ip_literal, kind)


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[IPAddress] = []
    for family, _t, _p, _c, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in out:
            out.append(ip)
    return out


async def resolve_checked(target: Target, resolver: Resolver, explicitly_allowed: bool) -> IPAddress:
    """Resolve every address of the host, refuse non-public ones without an explicit rule, return the one
    to connect to."""
    if target.ip_literal is not None:
        check_literal(target, explicitly_allowed)
        return target.ip_literal
    try:
        addresses = await resolver(target.host, target.port)
    except (OSError, UnicodeError) as exc:
        raise ToolError(f"Could not resolve {target.host} ({exc}). Check the host name; "
                        "do not guess URLs.") from None
    if not addresses:
        raise ToolError(f"{target.host} has no address. Check the host name; do not guess URLs.")
    if not explicitly_allowed:
        for ip in addresses:
            kind = classify(ip)
            if kind is not None:
                raise refusal(target.url, target.host, ip, kind)
    # Prefer IPv4: loopback test servers and many hosts listen there only.
    return sorted(addresses, key=lambda a: a.version)[0]

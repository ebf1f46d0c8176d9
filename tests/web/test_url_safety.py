"""Address spellings and classification: pure functions, no network."""

from __future__ import annotations

import ipaddress

import pytest

from sidecar.errors import ToolError
from sidecar.tools.web.url_safety import classify, parse_ipv4_loose, parse_url, with_scheme


@pytest.mark.parametrize("spelling", ["2130706433", "0x7f.1", "127.1", "0177.0.0.1", "0x7F000001", "127.0.1",
                                      "127.000.000.001", "0x7f.0.0.1", "017700000001"])
def test_every_ipv4_spelling_of_loopback(spelling: str) -> None:
    assert parse_ipv4_loose(spelling) == ipaddress.IPv4Address("127.0.0.1")
    target = parse_url(f"http://{spelling}:8080/x")
    assert (target.host, target.url) == ("127.0.0.1", "http://127.0.0.1:8080/x")


@pytest.mark.parametrize("host", ["example.com", "1.2.3.x", "256.1.1.1.1", "08.1.1.1"])
def test_non_addresses_are_not_parsed_as_ipv4(host: str) -> None:
    assert parse_ipv4_loose(host) is None


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
    ("172.31.255.254", "private"), ("192.168.1.1", "private"), ("169.254.169.254", "cloud metadata"),
    ("169.254.10.10", "link-local"), ("fe80::1", "link-local"), ("fd00::1", "unique-local"),
    ("fec0::1", "site-local"), ("feff:ffff::1", "site-local"),
    ("fd00:ec2::254", "cloud metadata"), ("0.0.0.0", "unspecified"), ("100.64.0.1", "private"),
    ("::ffff:127.0.0.1", "loopback (IPv4 127.0.0.1 inside IPv6)"),
    ("::ffff:10.0.0.1", "private (IPv4 10.0.0.1 inside IPv6)"),
    ("64:ff9b::a9fe:a9fe", "cloud metadata (IPv4 169.254.169.254 inside IPv6)"),
    ("2002:7f00:1::", "loopback (IPv4 127.0.0.1 inside IPv6)"), ("224.0.0.1", "multicast"),
    ("8.8.8.8", None), ("2606:4700:4700::1111", None), ("172.32.0.1", None),
])
def test_classification(address: str, kind: str | None) -> None:
    assert classify(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(("url", "message"), [
    ("file:///etc/passwd", "not file://"), ("ftp://example.com/x", "not ftp://"),
    ("javascript:alert(1)", "not javascript://"), ("https://user:pw@example.com/", "password"),
    ("example.com/page", "http:// and https://"), ("http://1.2.3.4.5/", "not a valid IPv4"),
])
def test_refused_urls(url: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        parse_url(url)


def test_canonical_form_and_upgrade() -> None:
    t = parse_url("HTTP://Docs.Python.ORG./3/library/?q=1#frag")
    assert (t.url, t.host, t.port) == ("http://docs.python.org/3/library/?q=1", "docs.python.org", 80)
    up = with_scheme(t, "https")
    assert (up.url, up.port) == ("https://docs.python.org/3/library/?q=1", 443)
    assert up.host_header == "docs.python.org"
    v6 = parse_url("http://[::1]:9000/")
    assert (v6.url, v6.host_header) == ("http://[::1]:9000/", "[::1]:9000")

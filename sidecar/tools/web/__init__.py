"""The web tools: WebFetch (one page, governed by its domain) and WebSearch (server-side search)."""

from sidecar.tools.web.fetch import WebFetch
from sidecar.tools.web.search import WebSearch

__all__ = ["WebFetch", "WebSearch"]

"""A 15-minute cache of fetched pages, keyed by URL (the canonical one, after the https upgrade).

What is cached is the converted page (Markdown, text, or the path of a saved binary), not the answer to
a prompt: a second fetch of the same URL with another prompt reuses the download.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TTL_S = 15 * 60


@dataclass(frozen=True)
class CachedPage:
    url: str  # the URL asked for (the cache key)
    final_url: str  # after same-host redirects
    status: int
    content_type: str
    kind: str  # "markdown" | "text" | "pdf" | "binary"
    text: str  # what the model is given (or the note naming the saved file)
    title: str | None
    size: int  # bytes downloaded
    truncated: bool
    saved_path: Path | None
    fetched_at: float


class FetchCache:
    def __init__(self, ttl_s: float = DEFAULT_TTL_S, max_entries: int = 64,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.clock = clock
        self._pages: OrderedDict[str, tuple[float, CachedPage]] = OrderedDict()

    def get(self, url: str) -> CachedPage | None:
        entry = self._pages.get(url)
        if entry is None:
            return None
        stored, page = entry
        if self.clock() - stored > self.ttl_s:
            del self._pages[url]
            return None
        self._pages.move_to_end(url)
        return page

    def put(self, page: CachedPage) -> None:
        self._pages[page.url] = (self.clock(), page)
        self._pages.move_to_end(page.url)
        while len(self._pages) > self.max_entries:
            self._pages.popitem(last=False)

    def clear(self) -> None:
        self._pages.clear()

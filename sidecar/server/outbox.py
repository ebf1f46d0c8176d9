"""Outgoing bytes of a transport, written together when they are sent together.

A ``session/load`` replay sends thousands of updates in one go (2,700 for a 300-turn session): one
write system call each cost the sidecar a GIL round trip per update (while the warm-up thread imports
the SDK, each round trip waits for the other thread's switch interval) and the editor a wake-up and a
read per update. ``Outbox`` gathers what is written within one event-loop iteration and writes it as one
chunk at the end of that iteration (``call_soon``: a lone message waits for no timer, only for the
callbacks already queued), or at once when ``limit`` bytes have gathered (the editor starts on a long
burst while the rest is being serialised, and memory stays bounded). Bytes go out in the order written.

Writes from a thread without a running loop go out at once (after anything gathered before them).
A write that fails in the deferred flush (the client went away) is logged once and drops what is left:
the reader sees the end of its input and the server stops as before.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 1 << 16


class Outbox:
    def __init__(self, write: Callable[[bytes], None], limit: int = DEFAULT_LIMIT) -> None:
        self._write = write
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._scheduled = False
        self._lock = threading.Lock()
        self._broken = False

    def write(self, data: bytes) -> None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            self._parts.append(data)
            self._size += len(data)
            if loop is not None and self._size < self._limit:
                if not self._scheduled:
                    self._scheduled = True
                    loop.call_soon(self._flush_soon)
                return
        self.flush()

    def flush(self) -> None:
        """Writes what has gathered now; a write error reaches the caller."""
        with self._lock:
            if not self._parts:
                return
            data = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
            self._parts.clear()
            self._size = 0
            # Under the lock: a thread's write never overtakes the bytes gathered before it.
            self._write(data)

    def close(self) -> None:
        """Writes what is left (a closed connection: dropped)."""
        try:
            self.flush()
        except (BrokenPipeError, ConnectionError, ValueError):
            pass

    def _flush_soon(self) -> None:
        self._scheduled = False
        if self._broken:
            with self._lock:
                self._parts.clear()
                self._size = 0
            return
        try:
            self.flush()
        except (BrokenPipeError, ConnectionError, ValueError) as exc:  # ValueError: the stream was closed
            self._broken = True
            log.error("the client closed the connection (%s)", exc)

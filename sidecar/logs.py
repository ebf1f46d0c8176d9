"""Logging: stderr and a file under the XDG cache dir; never stdout (it carries the protocol)."""

from __future__ import annotations

import logging
import os
import sys
import time

from sidecar.secrets import RedactingFilter
from sidecar.store import cache_dir


def setup_logging(name: str) -> None:
    level = getattr(logging, os.environ.get("SIDECAR_LOG_LEVEL", "INFO").upper(), logging.INFO)
    root = logging.getLogger()
    root.setLevel(level)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    try:
        log_dir = cache_dir() / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_dir / f"{name}-{time.strftime('%Y%m%d')}-{os.getpid()}.log"))
    except OSError:
        pass
    for handler in handlers:
        handler.setFormatter(fmt)
        handler.addFilter(RedactingFilter())
        root.addHandler(handler)
    # Libraries chatty at INFO (every HTTP request) stay at WARNING.
    for noisy in ("httpx", "httpcore", "httpx2", "httpcore2", "pygls", "anthropic"):  # the SDK's is httpx2
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))

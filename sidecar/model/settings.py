"""Model settings: environment first (the SDK's own variables), then what the client sent."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_SMALL_MODEL = "claude-haiku-5-5"


@dataclass
class ModelSettings:
    model: str = DEFAULT_MODEL
    small_model: str = DEFAULT_SMALL_MODEL
    max_tokens: int = 16_000
    context_window: int = 200_000
    base_url: str | None = None
    max_retries: int = 6
    # Cap on one backoff sleep; retry-after larger than this is still honoured up to this many seconds.
    max_backoff_s: float = 30.0
    max_requests_per_turn: int = 200

    @classmethod
    def from_env(cls, overrides: dict[str, Any] | None = None) -> ModelSettings:
        o = overrides or {}
        return cls(
            model=str(o.get("model") or os.environ.get("SIDECAR_MODEL") or DEFAULT_MODEL),
            small_model=str(o.get("smallModel") or os.environ.get("SIDECAR_SMALL_MODEL") or DEFAULT_SMALL_MODEL),
            max_tokens=int(o.get("maxTokens") or os.environ.get("SIDECAR_MAX_TOKENS") or 16_000),
            context_window=int(o.get("contextWindow") or os.environ.get("SIDECAR_CONTEXT_WINDOW") or 200_000),
            base_url=o.get("apiBaseUrl") or os.environ.get("ANTHROPIC_BASE_URL") or None,
            max_retries=int(os.environ.get("SIDECAR_MAX_RETRIES") or 6),
            max_backoff_s=float(os.environ.get("SIDECAR_MAX_BACKOFF") or 30.0),
        )

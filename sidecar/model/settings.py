"""Model settings: environment first (the SDK's own variables), then what the client sent.

``max_tokens`` and ``context_window`` are the user's value when one was set (``maxTokens`` /
``SIDECAR_MAX_TOKENS``, ``contextWindow`` / ``SIDECAR_CONTEXT_WINDOW``) and otherwise the model's own,
from :mod:`sidecar.model.capabilities`; both follow the model when it changes (``/model``).
``effort`` (``effort`` / ``SIDECAR_EFFORT``: low, medium, high, xhigh, max) and ``thinking``
(``SIDECAR_THINKING=off`` turns it off) shape each request through
:func:`sidecar.model.capabilities.request_options`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from sidecar.model import capabilities
from sidecar.model.capabilities import ModelCapabilities
from sidecar.model.pricing import Price, prices_from

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_SMALL_MODEL = "claude-haiku-5-5"
OFF = ("0", "off", "false", "no", "none", "disabled")


def _int(value: object) -> int | None:
    try:
        number = int(str(value)) if value not in (None, "") else None
    except ValueError:
        log.warning("ignoring a non-integer setting value %r", value)
        return None
    return number if number and number > 0 else None


def _effort(value: object) -> str | None:
    try:
        return capabilities.parse_effort(value)
    except ValueError as exc:
        log.warning("%s; using %s", exc, capabilities.DEFAULT_EFFORT)
        return None


@dataclass
class ModelSettings:
    model: str = DEFAULT_MODEL
    small_model: str = DEFAULT_SMALL_MODEL
    max_tokens_setting: int | None = None
    context_window_setting: int | None = None
    effort: str | None = None
    thinking: bool = True
    base_url: str | None = None
    max_retries: int = 6
    # Cap on one backoff sleep; retry-after larger than this is still honoured up to this many seconds.
    max_backoff_s: float = 30.0
    max_requests_per_turn: int = 200
    # The user's prices (``prices`` / ``SIDECAR_PRICES``), over the built-in table (sidecar.model.pricing).
    prices: dict[str, Price] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        """The key under which the Models API's answers are remembered (one per endpoint)."""
        return self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"

    def capabilities(self, model: str | None = None) -> ModelCapabilities:
        return capabilities.lookup(model or self.model, self.endpoint)

    @property
    def max_tokens(self) -> int:
        return int(self.request_options()["max_tokens"])

    @property
    def context_window(self) -> int:
        return self.context_window_setting or self.capabilities().context_window

    def request_options(self, model: str | None = None) -> dict[str, Any]:
        """``max_tokens``, ``thinking`` and ``output_config`` for a request to ``model`` (default: the main one)."""
        return capabilities.request_options(self.capabilities(model), effort=self.effort, thinking=self.thinking,
                                            max_tokens=self.max_tokens_setting)

    @classmethod
    def from_env(cls, overrides: dict[str, Any] | None = None) -> ModelSettings:
        o = overrides or {}
        raw_thinking = o.get("thinking")
        thinking = raw_thinking if isinstance(raw_thinking, bool) else \
            str(raw_thinking or os.environ.get("SIDECAR_THINKING") or "on").strip().lower() not in OFF
        return cls(
            model=str(o.get("model") or os.environ.get("SIDECAR_MODEL") or DEFAULT_MODEL),
            small_model=str(o.get("smallModel") or os.environ.get("SIDECAR_SMALL_MODEL") or DEFAULT_SMALL_MODEL),
            max_tokens_setting=_int(o.get("maxTokens") or os.environ.get("SIDECAR_MAX_TOKENS")),
            context_window_setting=_int(o.get("contextWindow") or os.environ.get("SIDECAR_CONTEXT_WINDOW")),
            effort=_effort(o.get("effort") or os.environ.get("SIDECAR_EFFORT")),
            thinking=thinking,
            base_url=o.get("apiBaseUrl") or os.environ.get("ANTHROPIC_BASE_URL") or None,
            max_retries=int(os.environ.get("SIDECAR_MAX_RETRIES") or 6),
            max_backoff_s=float(os.environ.get("SIDECAR_MAX_BACKOFF") or 30.0),
            prices=prices_from(o),
        )

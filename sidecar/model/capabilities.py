"""What each model can do, in one place: context window, output limit, thinking and effort.

The Models API (``GET /v1/models/{id}``, ``client.models.retrieve``) is the first source: its
``max_input_tokens``, ``max_tokens`` and ``capabilities`` (``thinking.types``, ``effort``) are taken as
they are. When it cannot be reached (an Anthropic-compatible endpoint without it, no network, a
timeout) the built-in :data:`TABLE` below answers, and for a model in neither, :data:`UNKNOWN`:
no thinking, no effort, and the output limit this sidecar always used. A lookup is made once per
endpoint and model and remembered for the life of the process.

From the capabilities, :func:`request_options` makes the per-request fields: ``max_tokens``,
``thinking`` (``{"type": "adaptive"}`` where the model supports it, a token budget where it only
supports that, nothing otherwise) and ``output_config.effort`` (the configured level, or the nearest
lower level the model accepts).

Sources of the table: the model overview pages of platform.claude.com (context window, max output,
thinking kind, effort), checked for this release; the SDK's own types name the effort levels.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

ThinkingKind = Literal["adaptive", "budget", "none"]
EFFORT_LEVELS: tuple[str, ...] = ("low", "medium", "high", "xhigh", "max")
"""Every effort level the API names, lowest first (``output_config.effort``)."""
DEFAULT_EFFORT = "medium"
DEFAULT_MAX_TOKENS_CAP = 32_000
"""``max_tokens`` sent when the user set none: the model's output limit, capped here (a long answer is
rare; a large reservation costs nothing, but a cap keeps one runaway reply bounded)."""
LOOKUP_TIMEOUT_S = 5.0

# Thinking budget (``thinking.type: enabled``) per effort level, for models without adaptive thinking.
BUDGET_FOR_EFFORT: dict[str, int] = {"low": 4_000, "medium": 10_000, "high": 16_000, "xhigh": 24_000, "max": 31_000}
MIN_BUDGET = 1_024
BUDGET_HEADROOM = 4_096  # output tokens left for the answer itself after the thinking budget


@dataclass(frozen=True)
class ModelCapabilities:
    context_window: int
    max_output_tokens: int
    thinking: ThinkingKind
    effort_levels: tuple[str, ...] = ()
    source: Literal["api", "table", "unknown"] = "table"

    def effort_for(self, wanted: str | None) -> str | None:
        """The level to send for ``wanted``: itself if supported, else the nearest lower one (then higher)."""
        if not wanted or not self.effort_levels:
            return None
        if wanted in self.effort_levels:
            return wanted
        order = list(EFFORT_LEVELS)
        rank = order.index(wanted) if wanted in order else order.index(DEFAULT_EFFORT)
        lower = [e for e in self.effort_levels if e in order and order.index(e) < rank]
        if lower:
            return max(lower, key=order.index)
        higher = [e for e in self.effort_levels if e in order]
        return min(higher, key=order.index) if higher else None


_ALL = EFFORT_LEVELS
_NO_XHIGH = ("low", "medium", "high", "max")


def _adaptive(context: int, output: int, efforts: tuple[str, ...] = _ALL) -> ModelCapabilities:
    return ModelCapabilities(context, output, "adaptive", efforts)


def _budget(context: int, output: int, efforts: tuple[str, ...] = ()) -> ModelCapabilities:
    return ModelCapabilities(context, output, "budget", efforts)


TABLE: dict[str, ModelCapabilities] = {
    # Current lineup: adaptive thinking with effort, 1M context, 128K output.
    "claude-fable-5-2": _adaptive(1_000_000, 128_000),
    "claude-fable-5-1": _adaptive(1_000_000, 128_000),
    "claude-fable-5": _adaptive(1_000_000, 128_000),
    "claude-opus-5-5": _adaptive(1_000_000, 128_000),
    "claude-opus-5": _adaptive(1_000_000, 128_000),
    "claude-sonnet-5-5": _adaptive(1_000_000, 128_000),
    "claude-sonnet-5": _adaptive(1_000_000, 128_000),
    "claude-haiku-5-5": _adaptive(1_000_000, 128_000, _NO_XHIGH),
    # Legacy models still served.
    "claude-opus-4-8": _adaptive(1_000_000, 128_000),
    "claude-opus-4-7": _adaptive(1_000_000, 128_000),
    "claude-opus-4-6": _adaptive(1_000_000, 128_000, _NO_XHIGH),
    "claude-sonnet-4-6": _adaptive(1_000_000, 64_000, _NO_XHIGH),
    "claude-opus-4-5": _budget(200_000, 64_000, ("low", "medium", "high")),
    "claude-sonnet-4-5": _budget(200_000, 64_000),
    "claude-haiku-4-5": _budget(200_000, 64_000),
    "claude-opus-4-1": _budget(200_000, 32_000),
    "claude-opus-4-0": _budget(200_000, 32_000),
    "claude-opus-4": _budget(200_000, 32_000),
    "claude-sonnet-4-0": _budget(200_000, 64_000),
    "claude-sonnet-4": _budget(200_000, 64_000),
    "claude-3-7-sonnet": _budget(200_000, 64_000),
    "claude-3-7-sonnet-latest": _budget(200_000, 64_000),
    "claude-3-5-haiku": ModelCapabilities(200_000, 8_192, "none"),
    "claude-3-5-haiku-latest": ModelCapabilities(200_000, 8_192, "none"),
    "claude-3-haiku": ModelCapabilities(200_000, 4_096, "none"),
}

UNKNOWN = ModelCapabilities(200_000, 16_000, "none", (), "unknown")
"""A model neither the API nor the table knows (a local server's model, a proxy's alias): send what any
Messages API endpoint accepts."""

_DATE_SUFFIX = re.compile(r"-\d{8}$")
_BRACKET_SUFFIX = re.compile(r"\[[^\]]*\]$")  # "claude-opus-4-8[1m]" (a client-side context label)

_cache: dict[tuple[str, str], ModelCapabilities] = {}
_cache_lock = threading.Lock()
# Lookups under way, per (endpoint, model): set when the answer is remembered (or the lookup gave up).
_inflight: dict[tuple[str, str], threading.Event] = {}


def table_lookup(model: str) -> ModelCapabilities:
    """The built-in answer for ``model`` (dated ids and bracket labels fall back to their alias)."""
    name = _BRACKET_SUFFIX.sub("", model.strip())
    for candidate in (name, _DATE_SUFFIX.sub("", name)):
        if candidate in TABLE:
            return TABLE[candidate]
    return UNKNOWN


def lookup(model: str, endpoint: str = "") -> ModelCapabilities:
    """What is known now, without I/O: the Models API's answer if one was fetched, else the table."""
    with _cache_lock:
        known = _cache.get((endpoint, model))
    return known if known is not None else table_lookup(model)


def remember(model: str, endpoint: str, caps: ModelCapabilities) -> None:
    with _cache_lock:
        _cache[(endpoint, model)] = caps


def fetched(model: str, endpoint: str = "") -> bool:
    with _cache_lock:
        return (endpoint, model) in _cache


def fetched_models(endpoint: str) -> list[str]:
    """The models the Models API described at ``endpoint`` in this process (the table did not answer)."""
    with _cache_lock:
        return [m for (e, m), caps in _cache.items() if e == endpoint and caps.source == "api"]


def _supported(obj: Any, *path: str) -> bool:
    for name in path:
        obj = getattr(obj, name, None)
        if obj is None:
            return False
    return bool(getattr(obj, "supported", False))


def from_model_info(info: Any, fallback: ModelCapabilities) -> ModelCapabilities:
    """Capabilities from an SDK ``ModelInfo``; what it leaves out comes from ``fallback``."""
    caps = getattr(info, "capabilities", None)
    context = getattr(info, "max_input_tokens", None) or fallback.context_window
    output = getattr(info, "max_tokens", None) or fallback.max_output_tokens
    if caps is None:
        return ModelCapabilities(int(context), int(output), fallback.thinking, fallback.effort_levels, "api")
    thinking: ThinkingKind = "none"
    if _supported(caps, "thinking"):
        if _supported(caps, "thinking", "types", "adaptive"):
            thinking = "adaptive"
        elif _supported(caps, "thinking", "types", "enabled"):
            thinking = "budget"
    efforts: tuple[str, ...] = ()
    if _supported(caps, "effort"):
        efforts = tuple(e for e in EFFORT_LEVELS if _supported(caps, "effort", e))
    return ModelCapabilities(int(context), int(output), thinking, efforts, "api")


async def fetch(client: anthropic.AsyncAnthropic, model: str, endpoint: str = "") -> ModelCapabilities:
    """Ask the Models API once per endpoint and model; the table answers when it cannot. A lookup already
    under way (the warm-up thread's, or another session's) is waited for, not repeated."""
    key = (endpoint, model)
    while True:
        if fetched(model, endpoint):
            return lookup(model, endpoint)
        with _cache_lock:
            running = _inflight.get(key)
            if running is None:
                running = _inflight[key] = threading.Event()
                break
        await asyncio.to_thread(running.wait, LOOKUP_TIMEOUT_S + 2)
        if not running.is_set():  # the other lookup hangs: ask ourselves (remember() keeps the first)
            with _cache_lock:
                _inflight.pop(key, None)
    fallback = table_lookup(model)
    try:
        async with asyncio.timeout(LOOKUP_TIMEOUT_S + 1):
            info = await client.models.retrieve(model, timeout=LOOKUP_TIMEOUT_S)
        caps = from_model_info(info, fallback)
    except asyncio.CancelledError:
        with _cache_lock:
            _inflight.pop(key, None)
        running.set()
        raise
    except Exception as exc:  # no Models API here (a local server, a proxy): the table stands
        log.debug("Models API lookup of %s failed (%s); using the built-in table", model, exc)
        caps = fallback
    remember(model, endpoint, caps)
    with _cache_lock:
        _inflight.pop(key, None)
    running.set()
    return caps


def request_options(caps: ModelCapabilities, *, effort: str | None, thinking: bool = True,
                    max_tokens: int | None = None) -> dict[str, Any]:
    """The per-model fields of a Messages request: ``max_tokens``, ``thinking``, ``output_config``.

    ``max_tokens`` (the user's setting) is kept within the model's limit; without it the limit, capped
    at :data:`DEFAULT_MAX_TOKENS_CAP`. ``thinking=False`` (``SIDECAR_THINKING=off``) sends no thinking.
    """
    limit = caps.max_output_tokens
    out_tokens = min(max_tokens, limit) if max_tokens else min(DEFAULT_MAX_TOKENS_CAP, limit)
    options: dict[str, Any] = {"max_tokens": out_tokens}
    level = caps.effort_for(effort or DEFAULT_EFFORT)
    if thinking and caps.thinking == "adaptive":
        options["thinking"] = {"type": "adaptive", "display": "summarized"}
    elif thinking and caps.thinking == "budget":
        budget = min(BUDGET_FOR_EFFORT.get(effort or DEFAULT_EFFORT, BUDGET_FOR_EFFORT[DEFAULT_EFFORT]),
                     out_tokens - BUDGET_HEADROOM)
        if budget >= MIN_BUDGET:
            options["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if level is not None:
        options["output_config"] = {"effort": level}
    return options


def parse_effort(value: object) -> str | None:
    """A setting's effort value, checked: one of :data:`EFFORT_LEVELS`, or None when unset (then
    :data:`DEFAULT_EFFORT` applies)."""
    text = str(value or "").strip().lower()
    if not text:
        return None
    if text not in EFFORT_LEVELS:
        raise ValueError(f"effort must be one of {', '.join(EFFORT_LEVELS)} (got {value!r})")
    return text

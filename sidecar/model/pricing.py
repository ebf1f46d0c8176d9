"""What a turn and a session cost: the token usage of each model request, priced per model (docs/model.md,
"Cost").

:data:`PRICES` is the built-in table (US dollars per million tokens); the user's ``prices`` setting
(``sidecar.prices`` in VS Code, ``SIDECAR_PRICES`` as JSON) adds models or replaces a row. A request to a
model in neither has tokens but no price, and a turn or session with such a request shows tokens only: a
partial sum would pass for the whole.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any

from sidecar.session import ServiceKey

log = logging.getLogger(__name__)

CURRENCY = "USD"


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens. Cache writes are the 5-minute cache's (the one requests use)."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    @staticmethod
    def of(input: float, output: float) -> Price:
        """The API's usual ratios: a cache write costs 1.25× input, a cache read 0.1×."""
        return Price(input, output, round(input * 1.25, 6), round(input * 0.1, 6))


_OPUS = Price.of(5.0, 25.0)
_OPUS_4 = Price.of(15.0, 75.0)
_SONNET = Price.of(3.0, 15.0)
_HAIKU = Price.of(1.0, 5.0)

PRICES: dict[str, Price] = {
    "claude-opus-5-5": _OPUS, "claude-opus-5": _OPUS,
    "claude-opus-4-8": _OPUS, "claude-opus-4-7": _OPUS, "claude-opus-4-6": _OPUS, "claude-opus-4-5": _OPUS,
    "claude-opus-4-1": _OPUS_4, "claude-opus-4-0": _OPUS_4, "claude-opus-4": _OPUS_4,
    "claude-sonnet-5-5": _SONNET, "claude-sonnet-5": _SONNET, "claude-sonnet-4-6": _SONNET,
    "claude-sonnet-4-5": _SONNET, "claude-sonnet-4-0": _SONNET, "claude-sonnet-4": _SONNET,
    "claude-3-7-sonnet": _SONNET, "claude-3-7-sonnet-latest": _SONNET,
    "claude-haiku-5-5": _HAIKU, "claude-haiku-4-5": _HAIKU,
    "claude-3-5-haiku": Price.of(0.8, 4.0), "claude-3-5-haiku-latest": Price.of(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25, 0.30, 0.03),
}

_DATE_SUFFIX = re.compile(r"-\d{8}$")
_BRACKET_SUFFIX = re.compile(r"\[[^\]]*\]$")


def parse_prices(value: Any) -> dict[str, Price]:
    """The ``prices`` setting: ``{model: {input, output, cacheWrite?, cacheRead?}}`` in dollars per million
    tokens (a JSON string is read too). A row that is not that is logged and left out."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            log.warning("ignoring the prices setting: not JSON")
            return {}
    if not isinstance(value, dict):
        if value is not None:
            log.warning("ignoring the prices setting: expected an object of models, got %r", type(value).__name__)
        return {}
    prices: dict[str, Price] = {}
    for model, row in value.items():
        try:
            if not isinstance(row, dict):
                raise ValueError("not an object")
            numbers = {k: float(row[k]) for k in ("input", "output", "cacheWrite", "cacheRead") if k in row}
            if "input" not in numbers or "output" not in numbers:
                raise ValueError("input and output are required")
            if any(n < 0 or n != n for n in numbers.values()):
                raise ValueError("prices are non-negative numbers")
            usual = Price.of(numbers["input"], numbers["output"])
            prices[str(model)] = Price(usual.input, usual.output, numbers.get("cacheWrite", usual.cache_write),
                                       numbers.get("cacheRead", usual.cache_read))
        except (TypeError, ValueError) as exc:
            log.warning("ignoring the price of %s: %s", model, exc)
    return prices


def prices_from(settings: dict[str, Any]) -> dict[str, Price]:
    """The user's price overrides: the client's ``prices`` setting, else ``SIDECAR_PRICES``."""
    value = settings.get("prices")
    return parse_prices(value if value is not None else os.environ.get("SIDECAR_PRICES"))


def price_of(model: str, overrides: dict[str, Price] | None = None) -> Price | None:
    """The model's price (the user's first), by its id as sent or without a date or ``[…]`` suffix."""
    table = {**PRICES, **(overrides or {})}
    for name in (model, _BRACKET_SUFFIX.sub("", model)):
        for candidate in (name, _DATE_SUFFIX.sub("", name)):
            if candidate in table:
                return table[candidate]
    return None


@dataclass
class Tokens:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @staticmethod
    def of(usage: dict[str, Any]) -> Tokens:
        """From a Messages API ``usage``."""
        def n(key: str) -> int:
            value = usage.get(key)
            return int(value) if isinstance(value, (int, float)) and value > 0 else 0
        return Tokens(n("input_tokens"), n("output_tokens"), n("cache_read_input_tokens"),
                      n("cache_creation_input_tokens"))

    def add(self, other: Tokens) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write

    def cost(self, price: Price) -> float:
        return (self.input * price.input + self.output * price.output + self.cache_read * price.cache_read
                + self.cache_write * price.cache_write) / 1_000_000

    def to_acp(self) -> dict[str, int]:
        """ACP's ``Usage`` (the prompt response's ``usage``)."""
        return {"totalTokens": self.input + self.output + self.cache_read + self.cache_write,
                "inputTokens": self.input, "outputTokens": self.output,
                "cachedReadTokens": self.cache_read, "cachedWriteTokens": self.cache_write}

    @staticmethod
    def from_acp(data: Any) -> Tokens:
        if not isinstance(data, dict):
            return Tokens()
        def n(key: str) -> int:
            value = data.get(key)
            return int(value) if isinstance(value, (int, float)) and value > 0 else 0
        return Tokens(n("inputTokens"), n("outputTokens"), n("cachedReadTokens"), n("cachedWriteTokens"))


@dataclass
class Spend:
    """Tokens and their cost; ``cost`` is None once a request had no price (tokens only)."""

    tokens: Tokens = field(default_factory=Tokens)
    cost: float | None = 0.0

    def add(self, tokens: Tokens, price: Price | None) -> None:
        self.tokens.add(tokens)
        self.cost = None if price is None or self.cost is None else self.cost + tokens.cost(price)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"usage": self.tokens.to_acp()}
        if self.cost is not None:
            data["cost"] = {"amount": round(self.cost, 6), "currency": CURRENCY}
        return data

    @staticmethod
    def from_json(data: Any) -> Spend:
        if not isinstance(data, dict):
            return Spend()
        cost = data.get("cost")
        amount = cost.get("amount") if isinstance(cost, dict) else None
        return Spend(Tokens.from_acp(data.get("usage")), float(amount) if isinstance(amount, (int, float)) else None)


class UsageMeter:
    """A session's spend: the running turn's and the whole session's (every model request of the agent and
    its sub-agents)."""

    def __init__(self, session_spend: Spend | None = None) -> None:
        self.turn = Spend()
        self.session = session_spend or Spend()

    def begin_turn(self) -> None:
        self.turn = Spend()

    def add(self, model: str, usage: dict[str, Any], overrides: dict[str, Price] | None = None) -> None:
        tokens, price = Tokens.of(usage), price_of(model, overrides)
        self.turn.add(tokens, price)
        self.session.add(tokens, price)

    def turn_record(self) -> dict[str, Any]:
        """What the turn's end carries (the prompt's answer, the log's ``turn_end``): the turn's usage and
        cost, and the session's."""
        return {**self.turn.to_json(), "session": self.session.to_json()}

    @staticmethod
    def restored(events: list[dict[str, Any]]) -> UsageMeter:
        """The meter of a saved session: its total as the last turn's end recorded it."""
        for event in reversed(events):
            if event.get("type") != "turn_end":
                continue
            if isinstance(event.get("spend"), dict):
                return UsageMeter(Spend.from_json(event["spend"].get("session")))
            if isinstance(event.get("sessionSpend"), dict):
                return UsageMeter(Spend.from_json(event["sessionSpend"]))
        return UsageMeter()


# The session's spend (``session/new`` starts one, ``session/load`` restores it from the log).
USAGE_METER = ServiceKey[UsageMeter]("usage_meter")


def charge(session: Any, model: str, usage: dict[str, Any], overrides: dict[str, Price] | None = None) -> None:
    """A model request made for the session (the agent's, a sub-agent's, a compaction summary, a web
    tool's) counts in its turn and its total; a session without a meter (a test's) counts nothing."""
    find = getattr(session, "find_service", None)
    meter = find(USAGE_METER) if find is not None else None
    if meter is not None:
        meter.add(model, usage, overrides)

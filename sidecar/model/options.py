"""The session's model and thinking effort as ACP session config options (docs/model.md, "Picking").

``session/new`` and ``session/load`` answer :func:`config_options`; ``session/set_config_option``,
``/model`` and the Config tool change them through :func:`change` — the one way: the session's own
model settings, the session log (so ``session/load`` restores the choice), and a
``config_option_update`` to the client.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sidecar.errors import INVALID_PARAMS, RpcError
from sidecar.model import capabilities
from sidecar.model.capabilities import DEFAULT_EFFORT, EFFORT_LEVELS
from sidecar.model.client import MODEL

if TYPE_CHECKING:
    from sidecar.model.settings import ModelSettings
    from sidecar.session import Session

MODEL_OPTION = "model"
EFFORT_OPTION = "effort"
EFFORT_NAMES = {"low": "Low", "medium": "Medium", "high": "High", "xhigh": "Extra high", "max": "Max"}


def readable_name(model: str) -> str:
    """``claude-opus-4-8`` → ``Claude Opus 4.8``; ``claude-3-5-haiku`` → ``Claude 3.5 Haiku``; an id of
    another shape (a local server's model) is shown as it is."""
    if not re.fullmatch(r"claude(-[a-z0-9]+)+", model):
        return model
    words: list[str] = []
    for part in model.split("-"):
        if part.isdigit() and words and re.fullmatch(r"[\d.]+", words[-1]):
            words[-1] += f".{part}"
        else:
            words.append(part if part.isdigit() else part.capitalize())
    return " ".join(words)


def _context(caps: capabilities.ModelCapabilities) -> str:
    window = caps.context_window
    size = f"{window // 1_000_000}M" if window % 1_000_000 == 0 else f"{window // 1000}K"
    return f"{size} context"


def model_choices(settings: ModelSettings) -> list[str]:
    """The models offered: the built-in table (one id per model: no ``-latest`` or ``-0`` aliases), the
    models the Models API described at this endpoint, and the current model when none of those lists it."""
    ids = [m for m in capabilities.TABLE if not m.endswith(("-latest", "-0"))]
    ids += [m for m in capabilities.fetched_models(settings.endpoint) if m not in ids]
    if settings.model not in ids:
        ids.insert(0, settings.model)
    return ids


def effort_choices(settings: ModelSettings) -> tuple[str, ...]:
    return settings.capabilities().effort_levels


def current_effort(settings: ModelSettings) -> str | None:
    """The level the next request sends (the session's effort, or the default, fitted to the model)."""
    return settings.capabilities().effort_for(settings.effort or DEFAULT_EFFORT)


def config_options(settings: ModelSettings) -> list[dict[str, Any]]:
    """ACP ``configOptions``: a ``model`` select, and an ``effort`` select when the model has effort."""
    models = [{"value": m, "name": readable_name(m), "description": _context(settings.capabilities(m))}
              for m in model_choices(settings)]
    options: list[dict[str, Any]] = [{
        "id": MODEL_OPTION, "name": "Model", "description": "The model that answers in this session",
        "category": "model", "type": "select", "currentValue": settings.model, "options": models}]
    effort = current_effort(settings)
    if effort is not None:
        options.append({
            "id": EFFORT_OPTION, "name": "Effort", "category": "thought_level", "type": "select",
            "description": "How much the model thinks before answering", "currentValue": effort,
            "options": [{"value": e, "name": EFFORT_NAMES.get(e, e)} for e in effort_choices(settings)]})
    return options


def validate(settings: ModelSettings, config_id: str, value: str) -> None:
    """Raise ``-32602`` naming the valid ids or values when ``config_id``/``value`` is not one."""
    if config_id == MODEL_OPTION:
        valid: tuple[str, ...] | list[str] = model_choices(settings)
    elif config_id == EFFORT_OPTION and effort_choices(settings):
        valid = effort_choices(settings)
    else:
        ids = [o["id"] for o in config_options(settings)]
        raise RpcError(INVALID_PARAMS, f"Unknown config option {config_id!r}; this session has {', '.join(ids)}")
    if value not in valid:
        raise RpcError(INVALID_PARAMS, f"Unknown {config_id} {value!r}; use one of {', '.join(valid)}")


async def change(session: Session, config_id: str, value: str, *, by: str = "user",
                 announce: bool = True) -> list[dict[str, Any]]:
    """Set this session's model or effort (not validated here: see :func:`validate`), log it so a load
    restores it, and tell the client; the full ``configOptions`` after the change."""
    settings: ModelSettings = session.service(MODEL).settings
    old = settings.model if config_id == MODEL_OPTION else settings.effort
    if config_id == MODEL_OPTION:
        settings.model = value
    else:
        settings.effort = value
    session.log.config(config_id, value)
    session.audit("config", setting=config_id, old=old, new=value, by=by)
    options = config_options(settings)
    if announce:
        await session.send_update({"sessionUpdate": "config_option_update", "configOptions": options})
    return options


def restore(settings: ModelSettings, saved: dict[str, str]) -> None:
    """The choices a session's log recorded (``session/load`` in a fresh process)."""
    if saved.get(MODEL_OPTION):
        settings.model = saved[MODEL_OPTION]
    if saved.get(EFFORT_OPTION) in EFFORT_LEVELS:
        settings.effort = saved[EFFORT_OPTION]

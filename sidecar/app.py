"""The composition root: builds the session core and attaches the features, once.

Transports (``sidecar.server``) and the CLI get a ready core from ``build_core()``; nothing below this
module wires features into the core or replaces its methods.
"""

from __future__ import annotations

from sidecar import features
from sidecar.model.settings import ModelSettings
from sidecar.server.core import SessionCore
from sidecar.store import SessionStore


def build_core(store: SessionStore | None = None, model_settings: ModelSettings | None = None) -> SessionCore:
    core = SessionCore(store=store, model_settings=model_settings)
    features.attach(core)
    return core

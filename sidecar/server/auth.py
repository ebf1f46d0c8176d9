"""ACP authentication: the ``authMethods`` ``initialize`` advertises, ``authenticate``, and the auth errors.

Two methods, three when the client runs terminal auth (docs/protocol.md, "Authentication"):
- ``keychain`` (an agent method): the key ``sidecar login`` saved in the OS keychain. ``authenticate``
  succeeds when a key is there (or the environment already has one, which wins) and says how to save one
  when not.
- ``anthropic-api-key`` (ACP's ``env_var`` method): the client sets ``ANTHROPIC_API_KEY`` when it starts
  the agent. ``authenticate`` succeeds when the agent has that key.
- ``login`` (ACP's ``terminal`` method, offered only to a client with ``clientCapabilities.auth.terminal``):
  the client runs the agent's command with ``args: ["login"]`` in a terminal, which is ``sidecar login``;
  then ``authenticate`` answers as for ``keychain``.

No key at the first prompt, or a key the endpoint refused (HTTP 401), is ACP's ``-32000`` (authentication
required, so an ACP editor offers these methods) with ``data.sidecar = {reason: "auth_missing" |
"auth_failed", endpoint, keySource, status?}``: the editor maps ``reason`` to its own "set a key" action.
"""

from __future__ import annotations

from typing import Any

from sidecar.errors import AUTH_REQUIRED, INVALID_PARAMS, RpcError
from sidecar.model.client import ModelError
from sidecar.model.credentials import HOW_TO_SET_A_KEY, keychain_key
from sidecar.model.settings import ModelSettings
from sidecar.secrets import secret

KEYCHAIN = "keychain"
ENV_KEY = "anthropic-api-key"
LOGIN = "login"

AUTH_METHODS: list[dict[str, Any]] = [
    {"id": KEYCHAIN, "name": "OS keychain (sidecar login)",
     "description": "Use the API key saved with `sidecar login` (run it once in a terminal) in the OS keychain."},
    {"id": ENV_KEY, "type": "env_var", "name": "Anthropic API key",
     "description": "The agent reads ANTHROPIC_API_KEY from its environment.",
     "vars": [{"name": "ANTHROPIC_API_KEY", "label": "Anthropic API key", "secret": True}],
     "link": "https://console.anthropic.com/settings/keys"},
]
TERMINAL_LOGIN: dict[str, Any] = {
    "id": LOGIN, "type": "terminal", "name": "Log in in a terminal (sidecar login)",
    "description": "Type the API key once; it is kept in the OS keychain.", "args": ["login"]}


def auth_methods(client_capabilities: dict[str, Any]) -> list[dict[str, Any]]:
    auth = client_capabilities.get("auth")
    terminal = isinstance(auth, dict) and auth.get("terminal") is True
    return [*AUTH_METHODS, TERMINAL_LOGIN] if terminal else list(AUTH_METHODS)


def _auth_error(reason: str, message: str, settings: ModelSettings, *, source: str | None = None,
                status: int | None = None) -> RpcError:
    detail: dict[str, Any] = {"reason": reason, "endpoint": settings.endpoint, "keySource": source}
    if status is not None:
        detail["status"] = status
    return RpcError(AUTH_REQUIRED, message, {"retryable": False, "sidecar": detail})


def auth_rpc_error(exc: ModelError, settings: ModelSettings) -> RpcError | None:
    """The ``-32000`` error for a missing or refused key; None for any other model failure."""
    if exc.error_type == "auth_missing":
        return _auth_error("auth_missing", str(exc), settings)
    if exc.status == 401 or exc.error_type == "authentication_error":
        return _auth_error("auth_failed", str(exc), settings, source=exc.key_source, status=exc.status)
    return None


def authenticate(params: dict[str, Any], settings: ModelSettings) -> dict[str, Any]:
    method = params.get("methodId")
    if method not in (KEYCHAIN, ENV_KEY, LOGIN):
        raise RpcError(INVALID_PARAMS, f"Unknown methodId {method!r}; use one of {KEYCHAIN}, {ENV_KEY}, {LOGIN}")
    env_key = secret("ANTHROPIC_API_KEY") or secret("ANTHROPIC_AUTH_TOKEN")
    if method == ENV_KEY:
        if env_key:
            return {}
        raise _auth_error("auth_missing", "ANTHROPIC_API_KEY is not set in the agent's environment: set it in the "
                          "editor's settings for this agent (its env) and restart the agent. " + HOW_TO_SET_A_KEY,
                          settings)
    if env_key or keychain_key():
        return {}  # the next request uses it (``ModelClient.check_credentials`` looks again)
    raise _auth_error("auth_missing", "No API key is saved in the OS keychain: run `sidecar login` in a terminal, "
                      "then try again.", settings)

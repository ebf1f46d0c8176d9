"""The user's credentials: known in one place so they can be kept out of every output.

Logs, saved sessions, tool output and error messages pass through ``redact``; child processes get
``scrubbed_env``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_extra_secrets: set[str] = set()
REDACTED = "[REDACTED]"


def register_secret(value: str) -> None:
    """Mark a value (e.g. a key from settings) as secret for the life of the process."""
    if len(value) >= 8:
        _extra_secrets.add(value)


def secret_values() -> list[str]:
    values = {os.environ.get(name, "") for name in SECRET_ENV_VARS} | _extra_secrets
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def redact(text: str) -> str:
    for value in secret_values():
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def scrubbed_env(base: Mapping[str, str] | None = None, extra_secret_names: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment for commands the agent runs: without the sidecar's own credentials."""
    env = dict(os.environ if base is None else base)
    for name in (*SECRET_ENV_VARS, *extra_secret_names):
        env.pop(name, None)
    return env


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True

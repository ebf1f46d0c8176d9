"""Where the model's key comes from: the environment first, then the OS keychain (``sidecar login``).

``ANTHROPIC_API_KEY`` / ``ANTHROPIC_AUTH_TOKEN`` (captured out of the environment by ``capture_secrets``)
win; without either, the key ``sidecar login`` saved with the ``keyring`` library (macOS Keychain, the
Secret Service on Linux desktops, Windows Credential Locker) is used. ``keyring`` picks the backend; an
alternative one is chosen the library's own way (``PYTHON_KEYRING_BACKEND``, its config file), which is how
the tests run headless. A key read from the keychain is registered as a secret (redacted everywhere) and
never enters an environment. Messages here are shown to the user as they are: no exception text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sidecar.secrets import register_secret, secret

log = logging.getLogger(__name__)

KEYRING_SERVICE = "sidecar-agent"
KEYRING_USERNAME = "ANTHROPIC_API_KEY"
DEFAULT_ENDPOINT = "https://api.anthropic.com"


class KeychainError(Exception):
    """The keychain could not be used; the message says so in a sentence and what to do instead."""


@dataclass(frozen=True)
class Credentials:
    api_key: str | None = None
    auth_token: str | None = None
    source: str | None = None  # "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "keychain" or None

    @property
    def present(self) -> bool:
        return bool(self.api_key or self.auth_token)


# ``keyring`` is imported where it is used: its first import probes every backend (a second or so).


def _backend_name() -> str:
    import keyring

    backend = keyring.get_keyring()
    return f"{type(backend).__module__}.{type(backend).__name__}"


def _usable() -> None:
    import keyring
    from keyring.backends import fail

    if isinstance(keyring.get_keyring(), fail.Keyring):
        raise KeychainError("No OS keychain is available here (the keyring library found no backend: no Secret "
                            "Service, macOS Keychain or Windows Credential Locker). Set ANTHROPIC_API_KEY "
                            "in the agent's environment instead.")


def keychain_key() -> str | None:
    """The key ``sidecar login`` saved, or None (none saved, or no keychain here)."""
    import keyring

    try:
        value = keyring.get_password(KEYRING_SERVICE, KEYRING_USERNAME)
    except Exception as exc:  # no backend, a locked keychain the user declined to open, D-Bus trouble
        log.info("no key from the keychain (%s)", type(exc).__name__)
        return None
    if value:
        register_secret(value)
    return value or None


def save_key(key: str) -> str:
    """Save ``key`` in the OS keychain; returns the backend's name (``sidecar login`` prints it)."""
    import keyring

    _usable()
    try:
        keyring.set_password(KEYRING_SERVICE, KEYRING_USERNAME, key)
    except Exception as exc:
        raise KeychainError(f"The OS keychain refused to save the key ({type(exc).__name__}). "
                            "Set ANTHROPIC_API_KEY in the agent's environment instead.") from None
    return _backend_name()


def delete_key() -> bool:
    """Remove the saved key; False when there was none."""
    import keyring
    from keyring.errors import PasswordDeleteError

    _usable()

    try:
        keyring.delete_password(KEYRING_SERVICE, KEYRING_USERNAME)
    except PasswordDeleteError:
        return False
    except Exception as exc:
        raise KeychainError(f"The OS keychain refused to remove the key ({type(exc).__name__}).") from None
    return True


def resolve() -> Credentials:
    """The credentials to use now: the environment's, else the keychain's, else none."""
    api_key, auth_token = secret("ANTHROPIC_API_KEY"), secret("ANTHROPIC_AUTH_TOKEN")
    if api_key or auth_token:
        return Credentials(api_key, auth_token, "ANTHROPIC_API_KEY" if api_key else "ANTHROPIC_AUTH_TOKEN")
    stored = keychain_key()
    return Credentials(stored, None, "keychain") if stored else Credentials()


def describe_source(source: str | None) -> str:
    if source == "keychain":
        return "the key saved in the OS keychain (`sidecar login`)"
    if source:
        return f"the key in {source}"
    return "no key"


HOW_TO_SET_A_KEY = ("Run `sidecar login` in a terminal to keep a key in the OS keychain, or set "
                    "ANTHROPIC_API_KEY in the agent's environment (in VS Code: run “Sidecar: Set API Key”).")


def missing_key_message(endpoint: str) -> str:
    return f"No API key is set for {endpoint}. {HOW_TO_SET_A_KEY}"


def refused_key_message(endpoint: str, source: str | None, status: int | None, detail: str) -> str:
    what = f"HTTP {status}" + (f": {detail}" if detail else "")
    return (f"The model API at {endpoint} refused {describe_source(source)} ({what}). "
            f"Check the key. {HOW_TO_SET_A_KEY}")

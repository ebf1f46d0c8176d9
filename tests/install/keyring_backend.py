"""A headless keyring backend for tests: the real ``keyring`` API (backend selected the library's own way,
``PYTHON_KEYRING_BACKEND=tests.install.keyring_backend.JsonFileKeyring``), passwords in a JSON file
(``TEST_KEYRING_FILE``). Production uses whatever backend ``keyring`` finds (Keychain, Secret Service …)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class JsonFileKeyring(KeyringBackend):
    priority = 1

    @staticmethod
    def _path() -> Path:
        return Path(os.environ["TEST_KEYRING_FILE"])

    def _load(self) -> dict[str, str]:
        path = self._path()
        return dict(json.loads(path.read_text())) if path.is_file() else {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}\0{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}\0{username}"] = password
        self._path().write_text(json.dumps(data))

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}\0{username}", None) is None:
            raise PasswordDeleteError("no such password")
        self._path().write_text(json.dumps(data))

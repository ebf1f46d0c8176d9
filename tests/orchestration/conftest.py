"""Fixtures for the orchestration tests: a sidecar factory with chosen client capabilities and settings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness, start_harness

MakeSidecar = Callable[..., Awaitable[Harness]]


@pytest_asyncio.fixture
async def make_sidecar(sidecar_env: dict[str, str], model_server: ScriptedModelServer,
                       tmp_path: Path) -> AsyncIterator[MakeSidecar]:
    started: list[Harness] = []

    async def make(client_capabilities: dict[str, Any] | None = None, settings: dict[str, Any] | None = None,
                   env: dict[str, str] | None = None) -> Harness:
        harness = await start_harness("acp", {**sidecar_env, **(env or {})}, model_server, tmp_path,
                                      client_capabilities=client_capabilities, settings=settings)
        started.append(harness)
        return harness

    yield make
    for harness in started:
        await harness.process.close()


def result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))

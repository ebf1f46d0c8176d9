from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from tests.files.helpers import Agent


@pytest_asyncio.fixture
async def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest_asyncio.fixture
async def agent(ws: Path, tmp_path: Path) -> AsyncIterator[Agent]:
    a = Agent(ws, tmp_path, mode="acceptEdits")
    yield a
    await a.close()

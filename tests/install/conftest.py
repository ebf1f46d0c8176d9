"""The installed package the tests in this folder share (built and installed once per run)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.install.wheelhouse import REPO, build_wheelhouse, clean_env, locked_requirements, uv, uv_binary

# The interpreter ./scripts/setup made .venv from: uv's cache (the wheelhouse) holds wheels for it.
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


@dataclass
class Installed:
    root: Path  # the temporary "machine": home, tools, dist, wheelhouse
    home: Path
    sidecar: Path  # the installed console script
    python: Path  # the tool environment's interpreter
    wheel: Path
    sdist: Path

    def env(self, **extra: str) -> dict[str, str]:
        """A user's environment on this machine: the installed command (and uv, for uvx) on PATH."""
        uv_dir = Path(uv_binary()).parent
        return clean_env(self.home, PATH=f"{self.sidecar.parent}:{uv_dir}:/usr/local/bin:/usr/bin:/bin", **extra)

    def offline_index(self) -> dict[str, str]:
        """uv's settings that stand in for PyPI (what a ``uvx sidecar-agent@X`` recipe fetches from): the
        wheelhouse (our wheel and the locked dependencies) and no network."""
        return {"UV_OFFLINE": "1", "UV_FIND_LINKS": str(self.root / "wheelhouse"),
                "UV_CONSTRAINT": str(self.root / "constraints.txt"), "UV_CACHE_DIR": str(self.root / "uvx-cache"),
                "UV_PYTHON": BASE_PYTHON}


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("install")
    assert not root.resolve().is_relative_to(REPO)
    dist = root / "dist"
    uv("build", "--offline", "--out-dir", str(dist))
    (wheel,) = dist.glob("sidecar_agent-*.whl")
    (sdist,) = dist.glob("sidecar_agent-*.tar.gz")
    pins = locked_requirements(root / "constraints.txt")
    build_wheelhouse(root / "wheelhouse", pins)
    shutil.copy(wheel, root / "wheelhouse")
    home = root / "home"
    home.mkdir()
    env = clean_env(home, UV_CACHE_DIR=str(root / "uv-cache"), UV_TOOL_DIR=str(root / "tools"),
                    UV_TOOL_BIN_DIR=str(root / "bin"))
    uv("tool", "install", "--offline", "--no-index", "--find-links", str(root / "wheelhouse"),
       "--constraints", str(root / "constraints.txt"), "--python", BASE_PYTHON, str(wheel), env=env, cwd=root)
    yield Installed(root, home, root / "bin" / "sidecar", root / "tools" / "sidecar-agent" / "bin" / "python",
                    wheel, sdist)



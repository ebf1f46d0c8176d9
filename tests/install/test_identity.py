"""The agent's identity (contract 1 in the team notes, docs/protocol.md "Identity"): ``sidecar --version``
prints ``sidecar-agent <version>``; ACP ``initialize`` answers the same name and version in ``agentInfo``,
LSP ``initialize`` in ``serverInfo``. The version is the installed distribution's (importlib.metadata), so
an editor comparing it with what it expects sees the package that actually runs."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from sidecar.client.connection import SidecarProcess
from tests.conftest import REPO

VERSION = version("sidecar-agent")


def test_version_flag_prints_distribution_and_version(sidecar_env: dict[str, str]) -> None:
    out = subprocess.run([sys.executable, "-m", "sidecar", "--version"], env=sidecar_env, cwd=REPO,
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout == f"sidecar-agent {VERSION}\n"
    assert VERSION == (REPO / "pyproject.toml").read_text().split('version = "', 1)[1].split('"', 1)[0]


async def test_acp_and_lsp_initialize_name_the_distribution(sidecar_env: dict[str, str], tmp_path: Path) -> None:
    results = {}
    for framing in ("acp", "lsp"):
        process = SidecarProcess(framing=framing, env=sidecar_env, cwd=str(REPO),
                                 stderr=open(tmp_path / f"{framing}.stderr", "wb"),
                                 argv=[sys.executable, "-m", "sidecar", "serve", *(["--acp"] * (framing == "acp"))])
        await process.start()
        try:
            results[framing] = await process.initialize()
        finally:
            await process.close()
    assert results["acp"]["agentInfo"] == {"name": "sidecar-agent", "title": "Sidecar", "version": VERSION}
    assert results["lsp"]["serverInfo"] == {"name": "sidecar-agent", "version": VERSION}

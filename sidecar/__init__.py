"""Sidecar: an editor coding agent (distribution ``sidecar-agent``; the import package is ``sidecar``)."""

from __future__ import annotations

from functools import cache

DISTRIBUTION = "sidecar-agent"


@cache
def version() -> str:
    """The installed distribution's version (``importlib.metadata``): what ``sidecar --version``, ACP
    ``agentInfo.version`` and the LSP ``serverInfo.version`` report. ``0+unknown`` when the package runs
    without its metadata (a bare ``PYTHONPATH`` checkout), so no caller has to handle a missing one."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"

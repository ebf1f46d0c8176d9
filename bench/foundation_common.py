"""Shared helpers of the foundation benchmarks (bench/foundation_*.py); not a benchmark itself.

Every spawned process gets HOME and the XDG dirs in a temp dir, so a benchmark never reads or writes the
user's settings, sessions or logs, and talks only to loopback.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
PYTHON = str(VENV_BIN / "python") if (VENV_BIN / "python").exists() else sys.executable
BENCH_API_KEY = "sk-ant-bench-0000000000000000"

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def isolated_env(base_url: str | None = None) -> tuple[dict[str, str], tempfile.TemporaryDirectory[str]]:
    """An environment for a child: a temp HOME/XDG tree, no inherited ANTHROPIC_*/SIDECAR_* settings."""
    tmp = tempfile.TemporaryDirectory(prefix="sidecar-bench-")
    root = Path(tmp.name)
    for sub in ("home", "data", "cache", "config"):
        (root / sub).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SIDECAR_"))}
    env.update({
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_CACHE_HOME": str(root / "cache"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "SIDECAR_MANAGED_SETTINGS": str(root / "managed-settings.json"),
        "PYTHONPATH": str(REPO),
        "NO_PROXY": "127.0.0.1,localhost",
        "ANTHROPIC_API_KEY": BENCH_API_KEY,
    })
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    return env, tmp


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def load_avg() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def header(title: str) -> None:
    print(f"== {title}  (cpus {os.cpu_count()}, load {load_avg()})", flush=True)


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """A memory field of /proc/PID/status in kB (VmRSS, VmHWM …)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)

"""The platform's sandbox for shell commands, behind one small interface (DESIGN.md §8).

Linux: bubblewrap (Debian ``bubblewrap``) when ``bwrap`` is on PATH and works here: the whole file
system read-only, the workspace roots and a per-session temp dir writable, a fresh ``/dev`` and
``/proc``, its own PID namespace (killing ``bwrap`` ends every process inside), and no network unless
allowed. Elsewhere, or when bubblewrap is missing: no sandbox, and the Bash tool says so once.
macOS (``sandbox-exec``) can be added here without touching the tools.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


@dataclass
class SandboxPolicy:
    writable: list[Path] = field(default_factory=list)
    network: bool = False


@lru_cache(maxsize=1)
def bubblewrap() -> str | None:
    """The path of a working ``bwrap``, or None (checked once per process)."""
    if not sys.platform.startswith("linux"):
        return None
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        probe = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return path if probe.returncode == 0 else None


def available() -> bool:
    return bubblewrap() is not None


def unavailable_reason() -> str:
    if not sys.platform.startswith("linux"):
        return f"no sandbox is implemented for {sys.platform} yet"
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    return "bubblewrap is installed but cannot create a sandbox here (user namespaces disabled?)"


def wrap(argv: list[str], policy: SandboxPolicy, cwd: Path) -> list[str]:
    """``argv`` run inside the sandbox; ``argv`` unchanged when there is none."""
    bwrap = bubblewrap()
    if bwrap is None:
        return argv
    out = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--die-with-parent",
    ]
    for path in policy.writable:
        if path.exists():
            out += ["--bind", str(path), str(path)]
    if not policy.network:
        out.append("--unshare-net")
    out += ["--chdir", str(cwd), "--", *argv]
    return out

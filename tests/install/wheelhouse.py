"""An offline wheelhouse for install tests: the locked dependencies' wheels, rebuilt from uv's cache.

``./scripts/setup`` (``uv sync --frozen``) leaves every locked wheel unpacked in uv's cache
(``archive-v0/<id>/``: the wheel's files byte for byte, ``*.dist-info/RECORD`` included). Zipping such a
directory again gives an installable wheel, so ``uv tool install --no-index --find-links <wheelhouse>``
(or pip) installs the package exactly as from PyPI, with no network at all. Versions are the ones
``uv export --frozen`` names, so what is installed is what ``uv.lock`` pins.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from email.parser import Parser
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def uv_binary() -> str:
    local = REPO / ".tools" / "uv" / "bin" / "uv"  # the pinned uv ./scripts/setup installs
    found = str(local) if local.is_file() else shutil.which("uv")
    assert found, "uv not found: run ./scripts/setup"
    return found


def uv(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> str:
    done = subprocess.run([uv_binary(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"uv {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_requirements(path: Path) -> dict[str, str]:
    """``uv.lock``'s runtime dependencies (no dev group, not the project), written to ``path`` as
    constraints; returns {normalized name: version}."""
    text = uv("export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "--quiet")
    path.write_text(text)
    pins: dict[str, str] = {}
    for line in text.splitlines():
        requirement = line.split("#", 1)[0].split(";", 1)[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==", 1)
            pins[_normal(name)] = version.strip()
    return pins


def build_wheelhouse(out: Path, pins: dict[str, str]) -> set[str]:
    """Every pinned distribution found in uv's cache, zipped into ``out`` as ``name-version-tags.whl`` (each
    build of it there: a cache shared by several Pythons holds one per interpreter, and the installer picks the
    compatible one); returns the names found (a pin whose markers exclude this platform is never cached)."""
    cache = Path(uv("cache", "dir").strip()) / "archive-v0"
    out.mkdir(parents=True, exist_ok=True)
    found: set[str] = set()
    for unpacked in sorted(cache.iterdir()) if cache.is_dir() else []:
        for info in unpacked.glob("*.dist-info"):
            if not (info / "WHEEL").is_file() or not (info / "METADATA").is_file():
                continue
            meta = Parser().parsestr((info / "METADATA").read_text(errors="replace"), headersonly=True)
            name, version = _normal(str(meta["Name"])), str(meta["Version"])
            if pins.get(name) != version:
                continue
            tags = [t.split("-") for t in Parser().parsestr((info / "WHEEL").read_text()).get_all("Tag") or []]
            tag = "-".join(".".join(sorted({t[i] for t in tags})) for i in range(3))
            wheel = out / f"{name.replace('-', '_')}-{version}-{tag}.whl"
            if wheel.exists():
                continue
            with zipfile.ZipFile(wheel, "w") as archive:
                for file in sorted(unpacked.rglob("*")):
                    if file.is_file():
                        archive.write(file, file.relative_to(unpacked).as_posix())
            found.add(name)
    return found


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without the checkout's traces (PYTHONPATH, the venv, uv's settings,
    credentials), HOME and the XDG directories in ``home``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "SIDECAR_", "UV_", "PYTHON", "VIRTUAL_ENV", "XDG_"))}
    env.update({"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
                "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config"),
                "NO_PROXY": "127.0.0.1,localhost", **extra})
    return env

"""What a headless language server may run and read: its interpreter/compiler pinned, project config cleaned.

A language server started on a repository runs programs the repository can provide unless told otherwise:
basedpyright executes the workspace's ``.venv/bin/python`` (interpreter discovery), and
typescript-language-server loads ``node_modules/typescript/lib/tsserver.js``. It also reads whatever
the project's ``pyrightconfig.json`` names (``extraPaths``, ``venvPath`` … outside the workspace).
``plan_launch`` decides, before a server starts (docs/lsp.md "What a repository can make the language
servers run or read"):

- **the Python interpreter** basedpyright/pyright may run (``python.pythonPath``, answered to the server's
  ``workspace/configuration``): the user's ``lspServers.python.pythonPath`` from ``~/.claude/settings.json``,
  else — once the workspace is trusted and the user allowed it (asked once, remembered per workspace) —
  the workspace's own interpreter, else the interpreter the sidecar runs on;
- **the tsserver** typescript-language-server loads (``tsserver.path``): the one the sidecar ships
  (``tools/lsp``), or — trusted and allowed, the same question — the workspace's ``node_modules/typescript``;
- **the project config** basedpyright reads before trust: a cleaned copy (``python.analysis.configFilePath``)
  without the entries that name paths outside the workspace roots, nor ``extends``;
- **the environment**: before trust, ``PATH``/``PYTHONPATH``/``NODE_PATH`` entries that are relative or inside
  the workspace, and ``VIRTUAL_ENV``/``CONDA_PREFIX`` inside it, are left out (``#!/usr/bin/env node``
  would otherwise find a ``node`` the repository ships).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import tempfile
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.errors import ToolError
from sidecar.permissions.trust import trust_of
from sidecar.session import ServiceKey

if TYPE_CHECKING:
    from sidecar.session import Session

log = logging.getLogger(__name__)

# The user's answers this session about running a workspace program as a language server (by path),
# when they were not remembered in the trust store.
LSP_PROGRAMS = ServiceKey[dict[str, bool]]("lsp_programs", lambda _session: {})

CHECKOUT = Path(__file__).resolve().parents[3]
SHIPPED_TSSERVER = CHECKOUT / "tools" / "lsp" / "node_modules" / "typescript" / "lib" / "tsserver.js"

PYRIGHT_PROGRAMS = ("basedpyright-langserver", "pyright-langserver")
TS_PROGRAMS = ("typescript-language-server",)
JEDI_PROGRAMS = ("jedi-language-server", "pylsp")

# pyrightconfig.json keys whose values are paths (relative to the config file's folder).
PATH_LISTS = ("include", "exclude", "ignore", "strict", "extraPaths")
PATH_VALUES = ("stubPath", "typeshedPath", "venvPath", "baselineFile")
_GLOB = re.compile(r"[*?\[]")
CONFIG_NAMES = ("pyrightconfig.json", "pyproject.toml")


@dataclass
class Launch:
    """How one server is started: what it is told, its environment, and what that left out."""

    init_options: dict[str, Any] | None
    # Answers to the server's workspace/configuration, by section ("python", "basedpyright" ...).
    settings: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # Folders outside the roots that hold the chosen toolchain's own library (stdlib, bundled stubs):
    # a hover on a symbol defined there is shown (docs/lsp.md).
    library_dirs: tuple[Path, ...] = ()
    # The cleaned copy of the project's pyright config (rewritten when the original changes).
    config_copy: CleanConfig | None = None
    # One line per thing left out or pinned, for the log and the docs' promise.
    notes: list[str] = field(default_factory=list)
    # The notes were shown to the model (once per server).
    told: bool = False

    def close(self) -> None:
        if self.config_copy is not None:
            self.config_copy.remove()


def program_name(command: list[str]) -> str:
    name = os.path.basename(command[0]).lower()
    return name[:-4] if name.endswith(".cmd") or name.endswith(".exe") else name


async def plan_launch(session: Session, language: str, command: list[str], init_options: dict[str, Any] | None,
                      env: dict[str, str], trusted: bool) -> Launch:
    program = program_name(command)
    launch = Launch(init_options=dict(init_options) if init_options else None,
                    env=env if trusted else clean_env(env, session))
    if program in PYRIGHT_PROGRAMS or program in JEDI_PROGRAMS:
        python = await choose_python(session, trusted, launch)
        launch.library_dirs = python_library_dirs(python)
        if program in PYRIGHT_PROGRAMS:
            launch.settings["python"] = {"pythonPath": str(python)}
            server_pkg = _package_dir(command[0], "basedpyright") or _package_dir(command[0], "pyright")
            if server_pkg is not None:
                launch.library_dirs += (server_pkg,)
            if not trusted:
                copy = CleanConfig.for_project(session)
                if copy is not None:
                    launch.config_copy = copy
                    launch.notes.extend(copy.notes)
                    launch.settings["basedpyright"] = {"analysis": {"configFilePath": str(copy.path)}}
                    launch.settings["python.analysis"] = {"configFilePath": str(copy.path)}
        else:  # jedi: its environment is told explicitly (it otherwise follows VIRTUAL_ENV)
            options = launch.init_options or {}
            workspace = dict(options.get("workspace") or {})
            workspace["environmentPath"] = str(python)
            launch.init_options = {**options, "workspace": workspace}
    elif program in TS_PROGRAMS:
        tsserver = await choose_tsserver(session, trusted, command, launch)
        options = launch.init_options or {}
        launch.init_options = {**options, "tsserver": {**(options.get("tsserver") or {}), "path": str(tsserver)}}
        if not trusted:
            launch.init_options["disableAutomaticTypingAcquisition"] = True
        launch.library_dirs = (tsserver.parent,)
    for note in launch.notes:
        log.info("%s language server: %s", language, note)
    return launch


# ---- Python -------------------------------------------------------------------------------------

def user_python(home: Path | None = None) -> Path | None:
    """``lspServers.python.pythonPath`` in the user's own ``~/.claude/settings.json`` (never a project's)."""
    path = (home or Path.home()) / ".claude" / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    conf = (data.get("lspServers") or {}).get("python") if isinstance(data, dict) else None
    value = conf.get("pythonPath") if isinstance(conf, dict) else None
    if isinstance(value, str) and os.path.isabs(os.path.expanduser(value)):
        return Path(os.path.expanduser(value))
    return None


def workspace_pythons(root: Path) -> list[Path]:
    """The interpreters basedpyright would pick in ``root``: ``.venv`` (its default) and the project
    config's ``venvPath``/``venv``."""
    found: list[Path] = []
    for sub in ("bin/python", "Scripts/python.exe"):
        candidate = root / ".venv" / sub
        if os.path.lexists(candidate):
            found.append(candidate)
    config, base = read_pyright_config(root)
    if isinstance(config, dict) and isinstance(config.get("venvPath"), str) and isinstance(config.get("venv"), str):
        venv = (base / config["venvPath"] / config["venv"])
        for sub in ("bin/python", "Scripts/python.exe"):
            if os.path.lexists(venv / sub) and venv / sub not in found:
                found.append(venv / sub)
    return found


async def choose_python(session: Session, trusted: bool, launch: Launch) -> Path:
    chosen = user_python()
    if chosen is not None:
        launch.notes.append(f"python interpreter: {chosen} (your lspServers.python.pythonPath)")
        return chosen
    own = Path(sys.executable)
    for candidate in workspace_pythons(session.cwd):
        if not trusted:
            launch.notes.append(f"python interpreter: {own} (the workspace's {candidate} is not run before trust)")
            return own
        if await allow_workspace_program(session, "python interpreter", candidate):
            launch.notes.append(f"python interpreter: the workspace's {candidate} (allowed)")
            return candidate
        launch.notes.append(f"python interpreter: {own} (running the workspace's {candidate} was refused)")
        return own
    return own


def python_library_dirs(python: Path) -> tuple[Path, ...]:
    """The interpreter's own prefixes, when it is the sidecar's (its stdlib and site-packages)."""
    dirs: list[Path] = []
    if python == Path(sys.executable):
        for prefix in {sys.prefix, sys.base_prefix}:
            dirs.append(Path(prefix).resolve())
    return tuple(dirs)


def _package_dir(program: str, name: str) -> Path | None:
    """The installed ``name`` package next to the server's script (basedpyright's bundled typeshed)."""
    try:
        import importlib.util

        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def read_pyright_config(root: Path) -> tuple[dict[str, Any] | None, Path]:
    """The project's pyright config (``pyrightconfig.json``, else ``[tool.basedpyright]`` /
    ``[tool.pyright]`` of ``pyproject.toml``) and the folder its paths are relative to; ``({}, root)`` when a
    file exists but cannot be parsed, ``(None, root)`` when there is none."""
    json_path = root / "pyrightconfig.json"
    if json_path.is_file():
        try:
            return _parse_jsonc(json_path.read_text(encoding="utf-8", errors="replace")), root
        except ValueError:
            return {}, root
    toml_path = root / "pyproject.toml"
    if toml_path.is_file():
        try:
            data = tomllib.loads(toml_path.read_text(encoding="utf-8", errors="replace"))
        except (tomllib.TOMLDecodeError, OSError):
            return None, root
        tool = data.get("tool")
        for key in ("basedpyright", "pyright"):
            if isinstance(tool, dict) and isinstance(tool.get(key), dict):
                return dict(tool[key]), root
    return None, root


_JSONC_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.S)


def _parse_jsonc(text: str) -> dict[str, Any]:
    """JSON with comments and trailing commas (what pyright accepts)."""
    cleaned = _JSONC_TOKENS.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    data = json.loads(cleaned)
    if not isinstance(data, dict):
        raise ValueError("not an object")
    return data


class CleanConfig:
    """A private copy of the project's pyright config with every path absolute and every path outside the
    workspace roots (and ``extends``) left out; basedpyright is pointed at it with ``configFilePath``.

    The copy's folder becomes pyright's project root, so what pyright would default relative to the project
    root is spelled out for the real root: ``include``, ``stubPath``, the default excludes, and a last
    execution environment rooted at the workspace (imports of the workspace's packages resolve from it)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.root = session.cwd
        self.dir = Path(tempfile.mkdtemp(prefix="sidecar-pyright-"))
        self.path = self.dir / "pyrightconfig.json"
        self.notes: list[str] = []

    @classmethod
    def for_project(cls, session: Session) -> CleanConfig | None:
        config, _ = read_pyright_config(session.cwd)
        if config is None:
            return None
        copy = cls(session)
        copy.write()
        return copy

    def write(self) -> None:
        config, base = read_pyright_config(self.root)
        self.notes = []
        clean = self.clean(config or {}, base)
        tmp = self.dir / f".{uuid.uuid4().hex}.tmp"
        tmp.write_text(json.dumps(clean, indent=2), encoding="utf-8")
        os.replace(tmp, self.path)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def clean(self, config: dict[str, Any], base: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in config.items():
            if key == "extends":
                self.notes.append(f"ignored the project config's extends {value!r} (not read before trust)")
            elif key in PATH_LISTS:
                out[key] = self._paths(key, value, base)
            elif key in PATH_VALUES:
                kept = self._path(key, value, base)
                if kept is not None:
                    out[key] = kept
            elif key == "executionEnvironments" and isinstance(value, list):
                envs = []
                for env in value:
                    if not isinstance(env, dict):
                        continue
                    root = self._path("executionEnvironments.root", env.get("root", "."), base)
                    if root is None:
                        continue
                    cleaned = {**env, "root": root}
                    if "extraPaths" in env:
                        cleaned["extraPaths"] = self._paths("executionEnvironments.extraPaths", env["extraPaths"], base)
                    envs.append(cleaned)
                out[key] = envs
            else:
                out[key] = value
        if "venv" in out and "venvPath" not in out:
            del out["venv"]
        root = str(self.root)
        if not out.get("include"):
            out["include"] = [root]
        out["exclude"] = [*out.get("exclude", []), *(f"{root}/{p}" for p in ("**/node_modules", "**/__pycache__",
                                                                             "**/.*"))]
        out.setdefault("stubPath", str(self.root / "typings"))
        out["executionEnvironments"] = [*out.get("executionEnvironments", []), {"root": root}]
        return out

    def _paths(self, key: str, value: Any, base: Path) -> list[str]:
        items = value if isinstance(value, list) else []
        return [p for p in (self._path(key, item, base) for item in items) if p is not None]

    def _path(self, key: str, value: Any, base: Path) -> str | None:
        if not isinstance(value, str):
            return None
        full = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
        fixed = _GLOB.split(full, maxsplit=1)[0]
        probe = Path(fixed if fixed.endswith(os.sep) or fixed == full else os.path.dirname(fixed) or "/")
        try:
            real = probe.resolve()
        except (OSError, RuntimeError):
            real = probe
        if not self.session.within_roots(real):
            self.notes.append(f"ignored the project config's {key} {value!r}: outside the workspace")
            return None
        return full


# ---- TypeScript ---------------------------------------------------------------------------------

def shipped_tsserver(command: list[str], session: Session) -> Path | None:
    """The tsserver the sidecar ships (tools/lsp), else the one installed next to the server program
    (outside the workspace)."""
    if SHIPPED_TSSERVER.is_file():
        return SHIPPED_TSSERVER
    try:
        start = Path(command[0]).resolve()
    except (OSError, RuntimeError):
        return None
    for folder in start.parents:
        candidate = folder / "node_modules" / "typescript" / "lib" / "tsserver.js"
        if folder.name == "node_modules":
            candidate = folder / "typescript" / "lib" / "tsserver.js"
        if candidate.is_file() and not session.within_roots(candidate.resolve()):
            return candidate
    return None


async def choose_tsserver(session: Session, trusted: bool, command: list[str], launch: Launch) -> Path:
    own = shipped_tsserver(command, session)
    workspace = session.cwd / "node_modules" / "typescript" / "lib" / "tsserver.js"
    if os.path.lexists(workspace):
        if not trusted:
            launch.notes.append(f"tsserver: {own} (the workspace's {workspace} is not loaded before trust)")
        elif await allow_workspace_program(session, "TypeScript server (tsserver)", workspace):
            launch.notes.append(f"tsserver: the workspace's {workspace} (allowed)")
            return workspace
        else:
            launch.notes.append(f"tsserver: {own} (loading the workspace's {workspace} was refused)")
    if own is None:
        raise ToolError("No TypeScript installation outside the workspace was found for the TypeScript language "
                        "server (the workspace's own is not loaded before it is trusted). Install the one the "
                        "sidecar uses with `npm ci --prefix tools/lsp`, or use Grep/Read instead.")
    return own


# ---- the environment ----------------------------------------------------------------------------

PATH_LIKE = ("PATH", "PYTHONPATH", "NODE_PATH")
PREFIX_VARS = ("VIRTUAL_ENV", "CONDA_PREFIX")


def clean_env(env: dict[str, str], session: Session) -> dict[str, str]:
    """``env`` without search-path entries a repository controls (relative, or inside the roots)."""
    out = dict(env)

    def inside(entry: str) -> bool:
        if not entry or not os.path.isabs(entry):
            return True  # relative: resolved against the server's cwd, the workspace
        try:
            return session.within_roots(Path(entry).resolve())
        except (OSError, RuntimeError):
            return True

    for name in PATH_LIKE:
        if name in out:
            kept = [p for p in out[name].split(os.pathsep) if not inside(p)]
            if kept:
                out[name] = os.pathsep.join(kept)
            else:
                del out[name]
    for name in PREFIX_VARS:
        if name in out and inside(out[name]):
            del out[name]
    return out


# ---- asking, once per workspace -----------------------------------------------------------------

def _fingerprint(path: Path) -> str:
    try:
        return os.path.realpath(path)
    except OSError:
        return str(path)


async def allow_workspace_program(session: Session, what: str, path: Path) -> bool:
    """Whether a language server may run ``path``, a program the (trusted) workspace provides: asked once,
    remembered per workspace and program (a program that now resolves elsewhere is asked again). Nothing
    is asked — and it is refused — when there is no trust service or the editor keeps the workspace
    restricted."""
    trust = trust_of(session)
    if trust is None or trust.restricted or not trust.workspace_trusted:
        return False
    key = str(path)
    fingerprint = _fingerprint(path)
    programs = trust.store._entry(trust.cwd).get("languageServerPrograms")
    entry = programs.get(key) if isinstance(programs, dict) else None
    if isinstance(entry, dict) and entry.get("fingerprint") == fingerprint and isinstance(entry.get("allowed"), bool):
        return bool(entry["allowed"])
    memo = session.service(LSP_PROGRAMS)
    if key in memo:
        return memo[key]
    shown = path.relative_to(session.cwd) if path.is_relative_to(session.cwd) else path
    title = f"Let the language server run the workspace's {what} {shown}?"
    text = (f"The workspace provides {shown} ({fingerprint}). A language server runs it to analyse your code; "
            "refused, it uses the one the sidecar ships or runs on.")
    answer = await trust._ask("program", title, text, {"program": str(path), "resolves_to": fingerprint},
                              [("allow_once", "Allow for this session"),
                               ("allow_always", "Always allow in this workspace"),
                               ("reject_once", "Do not run it"),
                               ("reject_always", "Never run it in this workspace")])
    allowed = answer is not None and answer.startswith("allow")
    memo[key] = allowed
    if answer in ("allow_always", "reject_always"):
        def change(data: dict[str, Any]) -> None:
            table = data.get("languageServerPrograms")
            if not isinstance(table, dict):
                table = data["languageServerPrograms"] = {}
            table[key] = {"fingerprint": fingerprint, "allowed": allowed}
        trust.store._update(trust.cwd, change)
    session.audit("lsp_program", program=str(path), resolves_to=fingerprint, allowed=allowed,
                  answer=answer or "cancelled")
    return allowed

"""Settings sources, in precedence order, as Claude Code reads them (docs/contract.md §6).

1. managed   ``/etc/sidecar/managed-settings.json`` (``SIDECAR_MANAGED_SETTINGS`` overrides the path)
2. client    the editor extension's settings, sent by the client (a dict: the user's own scope)
2b. workspace the editor's settings of a folder or workspace scope (VS Code's ``.vscode/settings.json``),
             sent apart from the user's (``initializationOptions.workspaceSettings``, ACP
             ``_meta.sidecar.workspaceSettings``): the repository controls them
3. local     ``<cwd>/.claude/settings.local.json``   (personal, where "always allow" writes)
4. project   ``<cwd>/.claude/settings.json``         (shared with the team)
5. user      ``~/.claude/settings.json``             (``$HOME`` honoured)

Used keys: ``permissions.allow | ask | deny`` (rule lists), ``permissions.defaultMode``,
``permissions.additionalDirectories``, ``permissions.disableBypassPermissionsMode`` (``"disable"``) and
``hooks``. Rules from every source apply together; a deny anywhere wins (see ``rules.evaluate``).
Scalars (``defaultMode``) come from the first source that sets them.

``workspace``, ``local`` and ``project`` come from the workspace, so the repository controls them: until the
workspace is trusted (``sidecar.permissions.trust``) they only restrict (``deny``/``ask`` rules,
``disableBypassPermissionsMode``, ``secretEnvVars``), and ``additionalDirectories: ["/"]`` from them is never
accepted. ``bypassPermissions`` is never taken from ``workspace`` (trusted or not); its ``initialMode`` counts as
its ``permissions.defaultMode``.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.permissions.rules import BEHAVIORS, Behavior, Rule, RuleSyntaxError, home_dir, parse_rule
from sidecar.session import ServiceKey

log = logging.getLogger(__name__)

DEFAULT_MANAGED_PATH = Path("/etc/sidecar/managed-settings.json")
MODE_IDS = ("default", "acceptEdits", "plan", "bypassPermissions")
# Sources inside the workspace: the repository controls them.
REPO_SOURCES = ("workspace", "local", "project")
RESTRICTING_PERMISSION_KEYS = ("deny", "ask", "disableBypassPermissionsMode")


def restricting_only(data: dict[str, Any], granted: Collection[str] = ()) -> dict[str, Any]:
    """A repository settings file as it applies before the workspace is trusted: what only restricts,
    plus the allow rules the user granted here ("Always allow" writes them; ``granted`` lists them)."""
    out: dict[str, Any] = {}
    perms = data.get("permissions")
    if isinstance(perms, dict):
        kept = {k: perms[k] for k in RESTRICTING_PERMISSION_KEYS if k in perms}
        allow = perms.get("allow")
        if isinstance(allow, list) and granted:
            kept["allow"] = [r for r in allow if isinstance(r, str) and r in granted]
        if kept:
            out["permissions"] = kept
    if "secretEnvVars" in data:
        out["secretEnvVars"] = data["secretEnvVars"]
    return out


def workspace_scope(data: Any) -> dict[str, Any]:
    """The editor's workspace-scope settings as a settings file of the project: ``initialMode`` (the
    editor's name) is its ``permissions.defaultMode`` unless that is set."""
    if not isinstance(data, dict) or not data:
        return {}
    out = dict(data)
    mode = out.get("initialMode")
    perms = out.get("permissions")
    perms = dict(perms) if isinstance(perms, dict) else {}
    if isinstance(mode, str) and "defaultMode" not in perms:
        perms["defaultMode"] = mode
    if perms:
        out["permissions"] = perms
    return out


def managed_settings_path() -> Path:
    override = os.environ.get("SIDECAR_MANAGED_SETTINGS")
    return Path(override) if override else DEFAULT_MANAGED_PATH


def local_settings_path(cwd: Path) -> Path:
    return cwd / ".claude" / "settings.local.json"


def project_settings_path(cwd: Path) -> Path:
    return cwd / ".claude" / "settings.json"


def user_settings_path() -> Path:
    return home_dir() / ".claude" / "settings.json"


@dataclass
class SettingsSource:
    name: str
    path: Path | None
    data: dict[str, Any]
    problem: str | None = None

    def permissions(self) -> dict[str, Any]:
        perms = self.data.get("permissions")
        return perms if isinstance(perms, dict) else {}


@dataclass
class Settings:
    sources: list[SettingsSource]
    problems: list[str] = field(default_factory=list)
    _rules: list[Rule] | None = field(default=None, init=False, repr=False, compare=False)

    def rules(self) -> list[Rule]:
        """Every source's rules, parsed once per Settings (the loader hands out the same one until a
        source changes); a new list each call."""
        if self._rules is None:
            self._rules = self._parse_rules()
        return list(self._rules)

    def _parse_rules(self) -> list[Rule]:
        out: list[Rule] = []
        for src in self.sources:
            perms = src.permissions()
            for behavior in BEHAVIORS:
                items = perms.get(behavior)
                if not isinstance(items, list):
                    continue
                for item in items:
                    if not isinstance(item, str):
                        continue
                    try:
                        out.append(parse_rule(item, behavior, src.name, str(src.path) if src.path else None))
                    except RuleSyntaxError as exc:
                        self.problems.append(f"{src.name}: {exc}")
        return out

    def default_mode(self) -> str | None:
        for src in self.sources:
            mode = src.permissions().get("defaultMode")
            if src.name == "workspace" and mode == "bypassPermissions":
                continue  # never from a workspace's own settings, trusted or not (issue 25)
            if isinstance(mode, str) and mode in MODE_IDS:
                return mode
        return None

    def bypass_disabled(self) -> bool:
        return any(src.permissions().get("disableBypassPermissionsMode") == "disable" for src in self.sources)

    def additional_directories(self, cwd: Path) -> list[Path]:
        out: list[Path] = []
        for src in self.sources:
            dirs = src.permissions().get("additionalDirectories")
            if not isinstance(dirs, list):
                continue
            for d in dirs:
                if not isinstance(d, str) or not d:
                    continue
                if d == "~" or d.startswith("~/"):
                    p = home_dir() / d[2:]
                else:
                    p = Path(d)
                p = (p if p.is_absolute() else cwd / p).resolve()
                if src.name in REPO_SOURCES and p == Path(p.anchor):
                    log.warning("%s settings: additionalDirectories %r ignored: a repository never makes the "
                                "whole file system part of the workspace", src.name, d)
                    continue
                if p not in out:
                    out.append(p)
        return out

    def hooks(self) -> list[tuple[str, dict[str, Any]]]:
        """Every source's ``hooks`` object, with the source name, in precedence order."""
        return [(src.name, src.data["hooks"]) for src in self.sources
                if isinstance(src.data.get("hooks"), dict)]


Stamp = tuple[int, int, int] | None  # a file's (inode, mtime ns, size); None: absent


def file_stamp(path: Path) -> Stamp:
    """What a parse of a small settings-like file stays valid for (the settings files, trust.json): a
    replace (new inode), a write (mtime) or a truncation (size) changes it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class SettingsLoader:
    """Reads the sources, re-reading a file only when its inode, mtime or size changed.

    A session asks for its settings ~18 times a turn (every rule check, every hook event, the mode): the
    same ``Settings`` is handed out again while the files' stamps, the editor's settings (compared by
    value), the trust state and the granted rules are what they were, so a check costs four ``stat``
    calls and a settings file changed between (or during) turns is read on the next check."""

    def __init__(self, cwd: Path, client_settings: dict[str, Any] | None = None,
                 trusted: Callable[[], bool] | None = None,
                 granted: Callable[[], Collection[str]] | None = None,
                 workspace_settings: dict[str, Any] | None = None) -> None:
        self.cwd = cwd
        self.client_settings = client_settings or {}
        # The editor's folder/workspace-scope settings: project scope (the repository wrote them).
        self.workspace_settings = workspace_settings or {}
        # Whether the workspace is trusted; None: always (a loader outside a session, e.g. a test).
        self.trusted = trusted
        # Allow rules the user granted in this workspace (they apply even when it is not trusted).
        self.granted = granted
        self._cache: dict[Path, tuple[Stamp, SettingsSource]] = {}
        # What the last Settings was made of (paths and stamps, trust, granted rules; the editor's
        # settings as they were, copied) and the Settings.
        self._last: tuple[tuple[object, ...], dict[str, Any], dict[str, Any], Settings] | None = None
        # The four files' (name, path), built for the managed-settings override, HOME and cwd (loaded on
        # every check: the paths are built again only when one of those changes).
        self._files_of: tuple[tuple[object, ...], tuple[tuple[str, Path], ...]] | None = None

    def load(self) -> Settings:
        made_for = (os.environ.get("SIDECAR_MANAGED_SETTINGS"), os.environ.get("HOME"), self.cwd)
        if self._files_of is None or self._files_of[0] != made_for:
            self._files_of = (made_for, (("managed", managed_settings_path()),
                                         ("local", local_settings_path(self.cwd)),
                                         ("project", project_settings_path(self.cwd)),
                                         ("user", user_settings_path())))
        files = self._files_of[1]
        stamps = tuple(file_stamp(path) for _, path in files)
        trusted = self.trusted is None or self.trusted()
        granted = () if trusted or self.granted is None else tuple(self.granted())
        client = self.client_settings if isinstance(self.client_settings, dict) else {}
        key = (files, stamps, trusted, granted)
        last = self._last
        if last is not None and last[0] == key and last[1] == client and last[2] == self.workspace_settings:
            return last[3]
        read = {name: self._file(name, path, stamp) for (name, path), stamp in zip(files, stamps, strict=True)}
        sources = [
            read["managed"],
            SettingsSource("client", None, client),
            SettingsSource("workspace", None, workspace_scope(self.workspace_settings)),
            read["local"],
            read["project"],
            read["user"],
        ]
        if not trusted:
            sources = [SettingsSource(s.name, s.path, restricting_only(s.data, granted), s.problem)
                       if s.name in REPO_SOURCES else s for s in sources]
        problems = [f"{s.name} settings {s.path}: {s.problem}" for s in sources if s.problem]
        settings = Settings(sources, problems)
        self._last = (key, copy.deepcopy(client), copy.deepcopy(self.workspace_settings), settings)
        return settings

    def _file(self, name: str, path: Path, stamp: Stamp) -> SettingsSource:
        if stamp is None:
            return SettingsSource(name, path, {})
        cached = self._cache.get(path)
        if cached and cached[0] == stamp:
            return cached[1]
        src = read_settings_file(name, path)
        self._cache[path] = (stamp, src)
        return src


def read_settings_file(name: str, path: Path) -> SettingsSource:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("ignoring %s settings %s: %s", name, path, exc)
        return SettingsSource(name, path, {}, problem=str(exc))
    if not isinstance(data, dict):
        return SettingsSource(name, path, {}, problem="not a JSON object")
    return SettingsSource(name, path, data)


def load_settings(cwd: Path, client_settings: dict[str, Any] | None = None) -> Settings:
    return SettingsLoader(cwd, client_settings).load()


def add_rule_to_settings_file(path: Path, rule: str, behavior: Behavior = "allow") -> bool:
    """Append ``rule`` to ``permissions.<behavior>`` of a settings file, keeping everything else.

    Returns False when the rule was already there. Written atomically (temp file + rename). A file
    that is not valid JSON is left alone (ValueError): we never destroy the user's settings.
    """
    data: dict[str, Any] = {}
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if text.strip():
            loaded = json.loads(text)
            if not isinstance(loaded, dict):
                raise ValueError(f"{path} is not a JSON object")
            data = loaded
    perms = data.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise ValueError(f"{path}: permissions is not an object")
    items = perms.setdefault(behavior, [])
    if not isinstance(items, list):
        raise ValueError(f"{path}: permissions.{behavior} is not a list")
    if rule in items:
        return False
    items.append(rule)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".settings.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


# The editor's settings as it sent them, one dict of the server's for all its sessions: the user's scope
# (``initialMode``, rules, the model …) and the folder/workspace scope (it only restricts until trust).
CLIENT_SETTINGS = ServiceKey[dict[str, Any]]("client_settings", shared=True)
WORKSPACE_SETTINGS = ServiceKey[dict[str, Any]]("workspace_settings", shared=True)

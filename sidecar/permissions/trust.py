"""Workspace trust: what a repository brings runs, or is read from outside it, only once the user trusts it.

A repository controls ``.claude/settings.json``, ``.claude/settings.local.json``, ``.mcp.json``, its memory
files and ``node_modules/.bin``. Until the workspace is trusted (docs/contract.md §6, docs/permissions.md "Trust"):

- those two settings files only restrict: their ``permissions.deny`` / ``permissions.ask`` rules and
  ``secretEnvVars`` apply; their hooks, allow rules, ``defaultMode``, ``additionalDirectories``,
  ``lspServers`` and ``sandbox`` settings do not (``restricting_only``);
- language servers are never started from ``node_modules/.bin`` of the workspace;
- memory files of the workspace import nothing from outside the workspace roots;
- each ``.mcp.json`` server is asked for separately (by name and full command) whatever the workspace
  trust; the answer is remembered per command (a changed command asks again).

Where the answer comes from, in order: the editor (``initialize`` ``_meta.sidecar.workspaceTrust`` or the
``_sidecar/workspace_trust`` notification: VS Code's Workspace Trust), the user's remembered answer
(``$XDG_DATA_HOME/sidecar/trust.json``, never a file inside a workspace), else a question through
``session/request_permission`` at the session's first prompt (``session/new`` runs nothing and asks
nothing: the client does not know the session id before the answer). ``allow_always`` and
``reject_always`` are remembered; ``allow_once`` trusts for this session only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sidecar.client_messages import PermissionOption, PermissionOptionKind, PermissionToolCall
from sidecar.errors import ClientRequestError
from sidecar.memory.nested import MEMORY_NAMES, import_targets, refused_always
from sidecar.permissions.settings import (
    WORKSPACE_SETTINGS,
    Stamp,
    file_stamp,
    local_settings_path,
    project_settings_path,
    read_settings_file,
    workspace_scope,
)
from sidecar.session import ServiceKey, shown_text
from sidecar.store import data_dir

if TYPE_CHECKING:
    from sidecar.session import Session

log = logging.getLogger(__name__)

# Names of workspace-local programs taken for language servers.
LANGUAGE_SERVER_HINTS = ("langserver", "language-server", "languageserver", "-lsp", "lsp-")

Kind = Literal["workspace", "mcp", "program"]


def trust_file() -> Path:
    return data_dir() / "trust.json"


class TrustStore:
    """The user's remembered answers, per workspace: ``{"workspaces": {cwd: {"trusted": bool,
    "mcpServers": {name: {"fingerprint": str, "allowed": bool}}}}}``."""

    _lock = threading.Lock()

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or trust_file()
        # The file as last parsed, by its (inode, mtime ns, size): an untrusted workspace's settings ask
        # for the granted rules on every check (~18 a turn). Never handed to a caller that changes it.
        self._parsed: tuple[Stamp, dict[str, Any]] | None = None

    def _read(self) -> dict[str, Any]:
        """The file's content, parsed again only when it changed; callers must not change it."""
        stamp = file_stamp(self.path)
        if stamp is None:
            return {}
        if self._parsed is not None and self._parsed[0] == stamp:
            return self._parsed[1]
        data = self._read_fresh()
        self._parsed = (stamp, data)
        return data

    def _read_fresh(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _entry(self, cwd: Path) -> dict[str, Any]:
        workspaces = self._read().get("workspaces")
        entry = workspaces.get(str(cwd)) if isinstance(workspaces, dict) else None
        return entry if isinstance(entry, dict) else {}

    def workspace(self, cwd: Path) -> bool | None:
        value = self._entry(cwd).get("trusted")
        return value if isinstance(value, bool) else None

    def mcp(self, cwd: Path, name: str, fingerprint: str) -> bool | None:
        servers = self._entry(cwd).get("mcpServers")
        entry = servers.get(name) if isinstance(servers, dict) else None
        if not isinstance(entry, dict) or entry.get("fingerprint") != fingerprint:
            return None
        allowed = entry.get("allowed")
        return allowed if isinstance(allowed, bool) else None

    def granted_rules(self, cwd: Path) -> list[str]:
        rules = self._entry(cwd).get("grantedRules")
        return [r for r in rules if isinstance(r, str)] if isinstance(rules, list) else []

    def add_granted_rule(self, cwd: Path, rule: str) -> None:
        def change(entry: dict[str, Any]) -> None:
            rules = entry.get("grantedRules")
            rules = rules if isinstance(rules, list) else []
            if rule not in rules:
                rules.append(rule)
            entry["grantedRules"] = rules
        self._update(cwd, change)

    def set_workspace(self, cwd: Path, trusted: bool) -> None:
        self._update(cwd, lambda entry: entry.__setitem__("trusted", trusted))

    def set_mcp(self, cwd: Path, name: str, fingerprint: str, allowed: bool) -> None:
        def change(entry: dict[str, Any]) -> None:
            servers = entry.setdefault("mcpServers", {})
            if not isinstance(servers, dict):
                servers = entry["mcpServers"] = {}
            servers[name] = {"fingerprint": fingerprint, "allowed": allowed}
        self._update(cwd, change)

    def _update(self, cwd: Path, change: Any) -> None:
        with self._lock:
            data = self._read_fresh()  # changed below: never the parsed copy others read
            workspaces = data.setdefault("workspaces", {})
            if not isinstance(workspaces, dict):
                workspaces = data["workspaces"] = {}
            entry = workspaces.setdefault(str(cwd), {})
            if not isinstance(entry, dict):
                entry = workspaces[str(cwd)] = {}
            change(entry)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".trust.", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, indent=2)
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise


@dataclass
class McpOffer:
    """A ``.mcp.json`` server as the user is asked about it (the configuration as written, unexpanded)."""

    name: str
    command_line: str
    fingerprint: str
    # The question's text (every header, the variables read); the command line when empty.
    details: str = ""


def mcp_fingerprint(raw: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:32]


# ``${VAR}`` / ``${VAR:-default}`` as ``sidecar.mcp.config`` expands them.
_VAR_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


def mcp_variables(raw: dict[str, Any]) -> list[str]:
    """The user's environment variables a configuration would read (``${VAR}`` anywhere in it)."""
    return sorted({m.group(1) for m in _VAR_REFERENCE.finditer(json.dumps(raw, default=str))})


def _header_lines(headers: Any) -> list[str]:
    if isinstance(headers, dict):
        return [f"{k}: {v}" for k, v in headers.items()]
    if isinstance(headers, list):
        return [f"{h.get('name')}: {h.get('value', '')}" for h in headers if isinstance(h, dict) and "name" in h]
    return []


def describe_mcp(raw: dict[str, Any]) -> str:
    """A ``.mcp.json`` server as the user is asked about it: the whole command, or the URL with every header,
    as written (``${VAR}`` unexpanded), and which of the user's environment variables it would read."""
    variables = mcp_variables(raw)
    reads = f"  (reads your environment variables: {', '.join(variables)})" if variables else ""
    if raw.get("command"):
        env = raw.get("env")
        names = sorted(str(k) for k in env) if isinstance(env, dict) else []
        return _command_line(raw) + (f"  (environment: {', '.join(names)})" if names else "") + reads
    headers = _header_lines(raw.get("headers"))
    return (str(raw.get("url") or raw) + (f"  (headers: {'; '.join(headers)})" if headers else "")) + reads


def _command_line(raw: dict[str, Any]) -> str:
    return " ".join(_quote(a) for a in [str(raw["command"]), *[str(a) for a in raw.get("args") or []]])


def mcp_details(raw: dict[str, Any]) -> str:
    """The question's text: one line per part, every header included."""
    variables = mcp_variables(raw)
    if raw.get("command"):
        lines = [f"Command: {_command_line(raw)}"]
        env = raw.get("env")
        lines += [f"Environment: {k}={v}" for k, v in env.items()] if isinstance(env, dict) else []
    else:
        lines = [f"URL: {raw.get('url')}", *[f"Header: {h}" for h in _header_lines(raw.get("headers"))]]
    if variables:
        lines.append(f"Reads your environment variables: {', '.join(variables)} (their values go to this "
                     f"{'program' if raw.get('command') else 'server'} if you allow it)")
    return "\n".join(shown_text(line) for line in lines)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


@dataclass
class WorkspaceTrust:
    """A session's trust state (``session.service(TRUST)``)."""

    session: Session
    # The editor's word (VS Code Workspace Trust), None when the client did not say.
    client_trust: bool | None = None
    store: TrustStore = field(default_factory=TrustStore)
    # True / False once decided (editor, remembered, or answered); None: not asked yet.
    trusted: bool | None = None
    asked: bool = False
    # The editor granted trust after the session started: applied before the next prompt.
    granted_pending: bool = False
    # Held while a prompt applies the trust (``features.resolve_trust``): a prompt sent meanwhile waits.
    resolving: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.cwd = self.session.cwd
        if self.client_trust is not None:
            self.trusted = self.client_trust
        else:
            self.trusted = self.store.workspace(self.cwd)

    @property
    def workspace_trusted(self) -> bool:
        return self.trusted is True

    # ---- what the repository brings -------------------------------------------------------------
    def offers(self) -> list[str]:
        """What trusting the workspace would enable, one line each (empty: nothing to ask about)."""
        lines: list[str] = []
        sources: list[tuple[str, dict[str, Any]]] = []
        for source, path in (("project", project_settings_path(self.cwd)), ("local", local_settings_path(self.cwd))):
            sources.append((str(path.relative_to(self.cwd)),
                            read_settings_file(source, path).data if path.is_file() else {}))
        editor = self.session.find_service(WORKSPACE_SETTINGS)
        sources.append(("the editor's workspace settings", workspace_scope(editor)))
        for rel, data in sources:
            hooks = data.get("hooks")
            if isinstance(hooks, dict):
                for event, groups in hooks.items():
                    for group in groups if isinstance(groups, list) else []:
                        for h in (group.get("hooks") or []) if isinstance(group, dict) else []:
                            if isinstance(h, dict) and isinstance(h.get("command"), str):
                                lines.append(f"hook {event} ({rel}): {h['command']}")
            perms = data.get("permissions") if isinstance(data.get("permissions"), dict) else {}
            granted = self.store.granted_rules(self.cwd)
            allow = perms.get("allow") if isinstance(perms, dict) else None
            allow = [a for a in allow if a not in granted] if isinstance(allow, list) else None
            if allow:
                lines.append(f"allow rules ({rel}): {', '.join(str(a) for a in allow)}")
            if isinstance(perms, dict) and isinstance(perms.get("defaultMode"), str):
                lines.append(f"default mode ({rel}): {perms['defaultMode']}")
            dirs = perms.get("additionalDirectories") if isinstance(perms, dict) else None
            if isinstance(dirs, list) and dirs:
                lines.append(f"additional directories ({rel}): {', '.join(str(d) for d in dirs)}"
                             + ("  ('/' is never accepted from a repository)" if "/" in dirs else ""))
            servers = data.get("lspServers")
            if isinstance(servers, dict):
                for language, conf in servers.items():
                    if isinstance(conf, dict):
                        cmds = [conf.get("command"), *(conf.get("commands") or [])]
                        for cmd in cmds:
                            if isinstance(cmd, list) and cmd:
                                lines.append(f"language server {language} ({rel}): {' '.join(map(str, cmd))}")
            if isinstance(data.get("sandbox"), dict):
                lines.append(f"sandbox settings ({rel}): {json.dumps(data['sandbox'])}")
        lines += [f"language server in the workspace: {p.relative_to(self.cwd)}"
                  for p in local_language_servers(self.cwd)]
        lines += [f"memory import from outside the workspace: {t}" for t in self.outside_imports()]
        return [shown_text(line) for line in lines]  # one line each, whatever the names hold

    def outside_imports(self) -> list[Path]:
        """Files outside the roots the workspace's memory would read: a memory file that is a link to one
        (judged where it leads), and its ``@imports``. Kernel files are never read, so never offered."""
        found: list[Path] = []
        for name in (*MEMORY_NAMES, ".claude/CLAUDE.md"):
            path = self.cwd / name
            try:
                leads = path.resolve()
                if not leads.is_file() or refused_always(leads):
                    continue
                if not self.session.within_roots(leads):
                    if leads not in found:
                        found.append(leads)
                    continue  # its imports are judged once it is read
                text = leads.read_text(encoding="utf-8", errors="replace")
            except (OSError, RuntimeError):
                continue
            for target in import_targets(text, path.parent):
                if not self.session.within_roots(target) and target not in found:
                    found.append(target)
        return found

    # ---- asking -------------------------------------------------------------------------------
    async def ask_workspace(self) -> bool:
        """Ask once per session when undecided and the workspace brings something; True when trusted."""
        if self.trusted is not None or self.asked:
            return self.workspace_trusted
        offers = self.offers()
        if not offers:
            return False
        self.asked = True
        listing = "\n".join(f"- {line}" for line in offers)
        title = f"Trust the workspace {self.cwd}? It brings commands and settings that run or widen access"
        try:
            answer = await self._ask("workspace", title, listing, {"workspace": str(self.cwd), "items": offers},
                                     [("allow_once", "Trust for this session"),
                                      ("allow_always", "Trust this workspace (remembered)"),
                                      ("reject_once", "Do not trust"),
                                      ("reject_always", "Never trust this workspace (remembered)")])
        except asyncio.CancelledError:
            self.asked = False  # the prompt was stopped while the question was open: still undecided
            raise
        if answer is None:
            # Dismissed, or answered "cancelled" because the prompt was stopped: nothing was decided, so the
            # workspace stays untrusted for this prompt and the next prompt asks again.
            self.asked = False
            self.session.audit("workspace_trust", trusted=False, answer="cancelled", items=offers)
            return False
        self.trusted = answer.startswith("allow")
        if answer in ("allow_always", "reject_always"):
            self.store.set_workspace(self.cwd, self.trusted)
        self.session.audit("workspace_trust", trusted=self.trusted, answer=answer, items=offers)
        return self.trusted

    def mcp_decision(self, offer: McpOffer) -> bool | None:
        """A remembered answer for a ``.mcp.json`` server, None when it must be asked."""
        if self.store.workspace(self.cwd) is False:
            return False  # a workspace the user never trusts: nothing of it runs
        return self.store.mcp(self.cwd, offer.name, offer.fingerprint)

    @property
    def restricted(self) -> bool:
        """The editor keeps the workspace in Restricted Mode: nothing is asked, nothing of it runs."""
        return self.client_trust is False

    async def ask_mcp(self, offer: McpOffer) -> bool | None:
        """The user's answer (asked now when not remembered); None in Restricted Mode (ask later)."""
        remembered = self.mcp_decision(offer)
        if remembered is not None:
            return remembered
        if self.restricted:
            return None
        title = f"Start the MCP server {offer.name!r} from .mcp.json: {offer.command_line}"
        answer = await self._ask("mcp", title, offer.details or f"Command: {offer.command_line}",
                                 {"server": offer.name, "command": offer.command_line},
                                 [("allow_once", "Start it for this session"),
                                  ("allow_always", f"Always start {offer.name!r} with this command"),
                                  ("reject_once", "Do not start it"),
                                  ("reject_always", f"Never start {offer.name!r} with this command")])
        allowed = answer is not None and answer.startswith("allow")
        if answer in ("allow_always", "reject_always"):
            self.store.set_mcp(self.cwd, offer.name, offer.fingerprint, allowed)
        self.session.audit("mcp_trust", server=offer.name, command=offer.command_line, allowed=allowed,
                           answer=answer or "cancelled")
        return allowed

    async def _ask(self, kind: Kind, title: str, text: str, raw_input: dict[str, Any],
                   options: list[tuple[PermissionOptionKind, str]]) -> str | None:
        tool_call: PermissionToolCall = {
            "toolCallId": f"trust_{uuid.uuid4().hex[:12]}", "title": title, "kind": "other", "status": "pending",
            "rawInput": raw_input, "content": [{"type": "content", "content": {"type": "text", "text": text}}],
            "_meta": {"sidecar": {"trust": kind}}}
        opts = [PermissionOption(optionId=kind_id, name=name, kind=kind_id) for kind_id, name in options]
        try:
            outcome = await self.session.client.request_permission(tool_call, opts)
        except ClientRequestError as exc:  # no answer: as if the user had dismissed the question
            log.warning("trust question failed: %s", exc)
            outcome = None
        if outcome is None:
            return None
        chosen = outcome["optionId"]
        return next((o["kind"] for o in opts if o["optionId"] == chosen), None)

    # ---- policies the rest of the sidecar asks ---------------------------------------------------
    def import_allowed(self, target: Path) -> str | None:
        """Memory imports of the workspace's files: outside the roots only once trusted."""
        if self.session.within_roots(target) or self.workspace_trusted:
            return None
        return "outside the workspace, which is not trusted"


def local_language_servers(cwd: Path) -> list[Path]:
    """Language-server programs the workspace ships (``node_modules/.bin``)."""
    bin_dir = cwd / "node_modules" / ".bin"
    try:
        names = sorted(os.listdir(bin_dir))
    except OSError:
        return []
    return [bin_dir / n for n in names if any(h in n.lower() for h in LANGUAGE_SERVER_HINTS)]


def granted_rules(session: Any) -> list[str]:
    trust = trust_of(session)
    return trust.store.granted_rules(trust.cwd) if trust is not None else []


# Provided by whoever assembles the session (the composition root, ``govern`` in tests).
TRUST = ServiceKey[WorkspaceTrust]("trust")


def trust_of(session: Session) -> WorkspaceTrust | None:
    return session.find_service(TRUST)


def workspace_trusted(session: Any) -> bool:
    """False unless the session's workspace is trusted (a session without the service is not)."""
    trust = trust_of(session)
    return trust is not None and trust.workspace_trusted

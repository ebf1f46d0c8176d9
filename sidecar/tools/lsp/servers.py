"""Headless language servers: the sidecar as an LSP client when the editor cannot answer.

One ``LanguageServers`` service per session (``LANGUAGE_SERVERS`` in ``sidecar.tools.lsp.service``) owns at
most one running server per language. A server is started lazily on the first query for a file of its
language, with the session's cwd as root; before each query the files it has open are synced from
disk (``didOpen`` / full-text ``didChange``); its stderr is drained; a server that died is restarted
on the next query; ``close()`` shuts every server down and kills the process group of any that hangs.

The table of servers is ``DEFAULT_SERVERS`` plus ``lspServers`` from the settings files
(see docs/lsp.md). Messages are exchanged as plain LSP JSON (dicts), not lsprotocol classes: the
tool renders JSON and the editor route returns JSON, so both routes share one code path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sysconfig
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import watchfiles
from pygls.lsp.client import LanguageClient
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from sidecar.errors import ToolError
from sidecar.permissions.gate import child_env
from sidecar.permissions.trust import workspace_trusted
from sidecar.secrets import scrubbed_env
from sidecar.tools.lsp.pinning import CONFIG_NAMES, Launch, plan_launch

if TYPE_CHECKING:
    import cattrs

    from sidecar.session import Session

log = logging.getLogger(__name__)

INITIALIZE_TIMEOUT = 60.0
REQUEST_TIMEOUT = 30.0
SHUTDOWN_GRACE = 1.5
# Restarts allowed within RESTART_WINDOW seconds before the tool gives up on a crashing server.
MAX_RESTARTS = 3
RESTART_WINDOW = 60.0


@dataclass(frozen=True)
class ServerSpec:
    """A language and how to start its server: the first command found on the search path wins."""

    language: str
    extensions: tuple[str, ...]
    commands: tuple[tuple[str, ...], ...]
    language_ids: dict[str, str] = field(default_factory=dict)
    initialization_options: dict[str, Any] | None = None
    # What to tell the model to install when no command is found.
    install_hint: str = ""

    def language_id(self, path: Path) -> str:
        return self.language_ids.get(path.suffix.lower(), self.language)


DEFAULT_SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        language="python",
        extensions=(".py", ".pyi"),
        commands=(("basedpyright-langserver", "--stdio"), ("jedi-language-server",), ("pylsp",)),
        install_hint="`pip install basedpyright` (or jedi-language-server, or python-lsp-server)",
    ),
    ServerSpec(
        language="typescript",
        extensions=(".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"),
        commands=(("typescript-language-server", "--stdio"),),
        language_ids={".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
                      ".tsx": "typescriptreact", ".js": "javascript", ".mjs": "javascript",
                      ".cjs": "javascript", ".jsx": "javascriptreact"},
        # Without this, requests made while the project loads go to tsserver's syntax-only server,
        # which answers definitions and references with [] instead of waiting.
        initialization_options={"tsserver": {"useSyntaxServer": "never"}},
        install_hint="`npm install --prefix tools/lsp typescript-language-server@5.3.0 typescript@5.9` "
                     "(or `npm install -D typescript-language-server typescript` in the project)",
    ),
)


def load_server_table(cwd: Path, home: Path | None = None, trusted: bool = True) -> list[ServerSpec]:
    """Defaults overlaid with ``lspServers`` from ~/.claude/settings.json, then the project's files
    (only when the workspace is ``trusted``: the repository controls them).

    ``{"lspServers": {"rust": {"extensions": [".rs"], "command": ["rust-analyzer"]}}}`` adds a language;
    naming an existing language replaces its commands (and extensions, when given).
    """
    table: dict[str, ServerSpec] = {s.language: s for s in DEFAULT_SERVERS}
    home = home or Path.home()
    project = (cwd / ".claude" / "settings.json", cwd / ".claude" / "settings.local.json") if trusted else ()
    for settings in (home / ".claude" / "settings.json", *project):
        try:
            data = json.loads(settings.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        servers = data.get("lspServers") if isinstance(data, dict) else None
        if not isinstance(servers, dict):
            continue
        for language, conf in servers.items():
            if not isinstance(conf, dict):
                continue
            spec = _spec_from_settings(str(language), conf, table.get(str(language)))
            if spec is not None:
                table[spec.language] = spec
    return list(table.values())


def _spec_from_settings(language: str, conf: dict[str, Any], base: ServerSpec | None) -> ServerSpec | None:
    commands: list[tuple[str, ...]] = []
    if isinstance(conf.get("command"), list) and conf["command"]:
        commands.append(tuple(str(c) for c in conf["command"]))
    for alt in conf.get("commands") or []:
        if isinstance(alt, list) and alt:
            commands.append(tuple(str(c) for c in alt))
    extensions = tuple(str(e) if str(e).startswith(".") else f".{e}" for e in conf.get("extensions") or [])
    if base is None and (not commands or not extensions):
        log.warning("lspServers.%s needs both 'command' and 'extensions'; ignored", language)
        return None
    init = conf.get("initializationOptions")
    return ServerSpec(
        language=language,
        extensions=extensions or (base.extensions if base else ()),
        commands=tuple(commands) or (base.commands if base else ()),
        language_ids={**(base.language_ids if base else {}), **{
            str(k): str(v) for k, v in (conf.get("languageIds") or {}).items()}},
        initialization_options=init if isinstance(init, dict) else (
            base.initialization_options if base else None),
        install_hint=str(conf.get("installHint") or (base.install_hint if base else "")),
    )


def search_path(cwd: Path, trusted: bool = True) -> list[Path]:
    """Where server commands are looked up, in order: the project's node_modules/.bin (only when the
    workspace is ``trusted``), this checkout's tools/lsp/node_modules/.bin, the sidecar's own
    virtualenv, then PATH. Directories of PATH inside an untrusted workspace are skipped too."""
    checkout = Path(__file__).resolve().parents[3]
    dirs = [cwd / "node_modules" / ".bin"] if trusted else []
    dirs.append(checkout / "tools" / "lsp" / "node_modules" / ".bin")
    scripts = sysconfig.get_path("scripts")
    if scripts:
        dirs.append(Path(scripts))
    for p in os.environ.get("PATH", "").split(os.pathsep):
        if p and (trusted or not _inside(Path(p), cwd)):
            dirs.append(Path(p))
    return dirs


def _inside(path: Path, cwd: Path) -> bool:
    try:
        resolved = (path if path.is_absolute() else cwd / path).resolve()
    except (OSError, RuntimeError):
        return True
    return resolved == cwd or resolved.is_relative_to(cwd)


def find_command(spec: ServerSpec, cwd: Path, trusted: bool = True) -> list[str] | None:
    """The first of ``spec.commands`` whose executable exists, as an argv with an absolute program.
    In an untrusted workspace a program inside it is never chosen."""
    path = os.pathsep.join(str(d) for d in search_path(cwd, trusted))
    for command in spec.commands:
        program = command[0]
        if os.path.isabs(program):
            found = program if os.access(program, os.X_OK) else None
        else:
            found = shutil.which(program, path=path)
        if found and not trusted and _inside(Path(found), cwd):
            found = None
        if found:
            return [found, *command[1:]]
    return None


# ---- the pygls client, speaking plain JSON ------------------------------------------------------

class _JsonProtocol(LanguageServerProtocol):
    """Leaves params and results as the JSON the server sent (no lsprotocol structuring)."""

    def get_message_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        return None

    def get_result_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        return None


def _json_converter() -> cattrs.Converter:
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return converter


CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "workspace": {"configuration": True, "workspaceFolders": True, "symbol": {"dynamicRegistration": False},
                  "didChangeWatchedFiles": {"dynamicRegistration": False}},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": False},
        "definition": {"linkSupport": True},
        "implementation": {"linkSupport": True},
        "references": {},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "callHierarchy": {"dynamicRegistration": False},
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
    },
    "window": {"workDoneProgress": False},
}


# Files whose change on disk is forwarded to the server (besides its languages' extensions).
CONFIG_FILES = frozenset({"pyrightconfig.json", "pyproject.toml", "setup.cfg", "tsconfig.json",
                          "jsconfig.json", "package.json"})
SKIPPED_DIRS = frozenset({".git", "node_modules", ".hg", ".svn", "__pycache__", ".venv", ".mypy_cache",
                          ".pytest_cache", ".ruff_cache", ".tox"})
_CHANGE_TYPES = {watchfiles.Change.added: 1, watchfiles.Change.modified: 2, watchfiles.Change.deleted: 3}

# Server-to-client requests we answer with null, and notifications we drop.
NULL_ANSWERED = ("client/registerCapability", "client/unregisterCapability",
                 "window/workDoneProgress/create", "window/showMessageRequest",
                 "workspace/diagnostic/refresh",
                 "workspace/semanticTokens/refresh", "workspace/inlayHint/refresh",
                 "workspace/codeLens/refresh")
IGNORED_NOTIFICATIONS = ("window/logMessage", "window/showMessage", "$/progress", "telemetry/event",
                         "$/logTrace", "$/typescriptVersion")


class ServerDied(Exception):
    """The server process exited (or its pipe broke) while we talked to it."""


@dataclass
class OpenDocument:
    version: int
    mtime_ns: int
    size: int


@dataclass
class PublishedDiagnostics:
    version: int | None
    diagnostics: list[dict[str, Any]]
    # Counts publishes for this uri so a waiter can tell "new since I synced".
    serial: int


class ManagedServer:
    """One running language server process and the documents it has open."""

    def __init__(self, spec: ServerSpec, command: list[str], root: Path, env: dict[str, str] | None = None,
                 launch: Launch | None = None) -> None:
        self.spec = spec
        # What the server is told and may run (pinning.py); its environment without the sidecar's secrets.
        self.launch = launch or Launch(init_options=spec.initialization_options,
                                       env=env if env is not None else scrubbed_env())
        self.env = self.launch.env
        self.command = command
        self.root = root
        self.client = LanguageClient("sidecar", "0.1.0", protocol_cls=_JsonProtocol,
                                     converter_factory=_json_converter)
        self.capabilities: dict[str, Any] = {}
        self.documents: dict[str, OpenDocument] = {}
        self.diagnostics: dict[str, PublishedDiagnostics] = {}
        # The publish serial of each document when we last sent its text (didOpen/didChange).
        self._sent_at: dict[str, int] = {}
        self.stderr_tail: deque[str] = deque(maxlen=40)
        self._diag_changed = asyncio.Condition()
        self._sync_lock = asyncio.Lock()
        self._process: asyncio.subprocess.Process | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._dead = False
        self._watch_task: asyncio.Task[None] | None = None
        self._watch_stop = asyncio.Event()
        # How many file changes were forwarded as workspace/didChangeWatchedFiles.
        self.watched_changes = 0
        self._register_handlers()

    # ---- lifecycle ------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def alive(self) -> bool:
        return (self._process is not None and self._process.returncode is None and not self._dead
                and not self.client.stopped)

    async def start(self) -> None:
        await self.client.start_io(self.command[0], *self.command[1:], cwd=str(self.root),
                                   env=self.env, start_new_session=True)
        self._process = self.client._server
        if self._process is not None and self._process.stderr is not None:
            self._stderr_task = asyncio.create_task(self._drain_stderr(self._process.stderr))
        result = await self.request("initialize", {
            "processId": os.getpid(),
            "clientInfo": {"name": "sidecar"},
            "rootUri": self.root.as_uri(),
            "rootPath": str(self.root),
            "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
            "capabilities": CLIENT_CAPABILITIES,
            "initializationOptions": self.launch.init_options or {},
        }, time_limit=INITIALIZE_TIMEOUT)
        self.capabilities = (result or {}).get("capabilities") or {}
        self.notify("initialized", {})
        self._watch_task = asyncio.create_task(self._watch())

    async def close(self) -> None:
        """Polite shutdown, then SIGKILL to the whole process group if it does not exit in time."""
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, time_limit=SHUTDOWN_GRACE)
                self.notify("exit", None)
            try:
                await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE)
            except TimeoutError:
                log.warning("language server %s did not exit; killing it", self.command[0])
        self.kill()
        if process is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE)
        self.client._stop_event.set()
        self._watch_stop.set()
        self.launch.close()
        tasks = [t for t in [*self.client._async_tasks, self._stderr_task, self._watch_task] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def kill(self) -> None:
        """SIGKILL the server's process group (its children too: tsserver, workers)."""
        self._dead = True
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            process.kill()

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while True:
            line = await stream.readline()
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            self.stderr_tail.append(text)
            log.debug("[%s] %s", self.spec.language, text)

    async def _watch(self) -> None:
        """Forward disk changes of files the server has not open (it reads those from disk)."""
        try:
            async for changes in watchfiles.awatch(self.root, watch_filter=self._watched, step=20,
                                                   debounce=400, stop_event=self._watch_stop):
                events = [{"uri": Path(p).as_uri(), "type": _CHANGE_TYPES[c]} for c, p in sorted(changes)
                          if Path(p).as_uri() not in self.documents]
                copy = self.launch.config_copy
                if copy is not None and any(Path(p).parent == self.root and Path(p).name in CONFIG_NAMES
                                            for _, p in changes):
                    copy.write()  # the project's config changed: the server reads the cleaned copy
                    events.append({"uri": copy.path.as_uri(), "type": 2})
                if events and self.alive:
                    self.notify("workspace/didChangeWatchedFiles", {"changes": events})
                    self.watched_changes += len(events)
        except (ServerDied, RuntimeError, OSError) as exc:
            log.debug("file watcher for the %s server stopped: %s", self.spec.language, exc)

    def _watched(self, change: watchfiles.Change, raw: str) -> bool:
        path = Path(raw)
        if any(part in SKIPPED_DIRS for part in path.parts):
            return False
        return path.suffix.lower() in self.spec.extensions or path.name in CONFIG_FILES

    # ---- messages -------------------------------------------------------------------------
    async def request(self, method: str, params: Any, time_limit: float = REQUEST_TIMEOUT) -> Any:
        """Send a request and await the JSON result. A timed-out or cancelled wait forgets the request
        (and tells the server), so a late reply is dropped instead of failing a cancelled future."""
        if not self.alive:
            raise ServerDied(f"{self.spec.language} language server is not running")
        msg_id = uuid.uuid4().hex
        protocol = self.client.protocol
        try:
            future = protocol.send_request_async(method, params, msg_id=msg_id)
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            raise ServerDied(str(exc)) from exc
        try:
            async with asyncio.timeout(time_limit):
                return await future
        except TimeoutError:
            raise ToolError(f"The {self.spec.language} language server did not answer {method} within "
                            f"{time_limit:.0f} s. Try again shortly (it may still be indexing), "
                            "or use Grep.") from None
        except RuntimeError as exc:
            # pygls fails pending requests with RuntimeError("Server process ... exited ...").
            raise ServerDied(str(exc)) from exc
        finally:
            if protocol._request_futures.pop(msg_id, None) is not None:
                protocol._result_types.pop(msg_id, None)
                with contextlib.suppress(Exception):
                    protocol.notify("$/cancelRequest", {"id": msg_id})

    def notify(self, method: str, params: Any) -> None:
        try:
            self.client.protocol.notify(method, params)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ServerDied(str(exc)) from exc

    def _register_handlers(self) -> None:
        client = self.client

        async def published(params: dict[str, Any]) -> None:
            uri = str(params.get("uri", ""))
            previous = self.diagnostics.get(uri)
            self.diagnostics[uri] = PublishedDiagnostics(
                version=params.get("version"), diagnostics=list(params.get("diagnostics") or []),
                serial=(previous.serial + 1) if previous else 1)
            async with self._diag_changed:
                self._diag_changed.notify_all()

        def configuration(params: dict[str, Any]) -> list[Any]:
            # The pinned interpreter and the cleaned config (pinning.py); null for everything else.
            settings = self.launch.settings
            return [settings.get(str(item.get("section") or "")) if isinstance(item, dict) else None
                    for item in params.get("items") or []]

        def folders(params: Any) -> list[dict[str, str]]:
            return [{"uri": self.root.as_uri(), "name": self.root.name}]

        def apply_edit(params: Any) -> dict[str, Any]:
            return {"applied": False, "failureReason": "the sidecar's language servers are read-only"}

        client.feature("textDocument/publishDiagnostics")(published)
        client.feature("workspace/configuration")(configuration)
        client.feature("workspace/workspaceFolders")(folders)
        client.feature("workspace/applyEdit")(apply_edit)
        for method in NULL_ANSWERED:
            client.feature(method)(_answer_null)
        for method in IGNORED_NOTIFICATIONS:
            client.feature(method)(_ignore)

    # ---- documents ------------------------------------------------------------------------
    async def sync(self, path: Path) -> int:
        """Open ``path`` (or send its new disk text) and refresh every other open document that changed
        on disk. Returns the version of ``path`` the server now has."""
        async with self._sync_lock:
            uri = path.as_uri()
            for other_uri, other in list(self.documents.items()):
                if other_uri != uri:
                    self._refresh(Path(_uri_path(other_uri)), other_uri, other)
            doc = self.documents.get(uri)
            if doc is None:
                st, text = _read_disk(path)
                self.documents[uri] = OpenDocument(version=1, mtime_ns=st.st_mtime_ns, size=st.st_size)
                self._sent_at[uri] = self.diagnostics_serial(uri)
                self.notify("textDocument/didOpen", {"textDocument": {
                    "uri": uri, "languageId": self.spec.language_id(path), "version": 1, "text": text}})
                return 1
            self._refresh(path, uri, doc)
            return doc.version

    def _refresh(self, path: Path, uri: str, doc: OpenDocument) -> None:
        try:
            st = path.stat()
        except OSError:
            del self.documents[uri]
            self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            return
        if (st.st_mtime_ns, st.st_size) == (doc.mtime_ns, doc.size):
            return
        st, text = _read_disk(path)
        doc.version += 1
        doc.mtime_ns, doc.size = st.st_mtime_ns, st.st_size
        self._sent_at[uri] = self.diagnostics_serial(uri)
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": doc.version},
                                               "contentChanges": [{"text": text}]})

    async def wait_diagnostics(self, uri: str, version: int, time_limit: float,
                               settle: float) -> list[dict[str, Any]] | None:
        """Diagnostics for ``uri`` at ``version`` (or, for servers that send no version, the first
        publish after we last sent its text), then ``settle`` seconds of quiet for follow-up publishes.
        None when nothing came within ``timeout``."""
        after_serial = self._sent_at.get(uri, 0)

        def fresh() -> bool:
            pub = self.diagnostics.get(uri)
            if pub is None:
                return False
            if pub.version is not None:
                return pub.version >= version
            return pub.serial > after_serial

        try:
            async with asyncio.timeout(time_limit), self._diag_changed:
                await self._diag_changed.wait_for(fresh)
        except TimeoutError:
            return None
        while True:
            seen = self.diagnostics[uri].serial

            def moved(seen: int = seen) -> bool:
                return self.diagnostics[uri].serial != seen

            try:
                async with asyncio.timeout(settle), self._diag_changed:
                    await self._diag_changed.wait_for(moved)
            except TimeoutError:
                return list(self.diagnostics[uri].diagnostics)

    def diagnostics_serial(self, uri: str) -> int:
        pub = self.diagnostics.get(uri)
        return pub.serial if pub else 0

    def describe_exit(self) -> str:
        code = self._process.returncode if self._process else None
        tail = "\n".join(list(self.stderr_tail)[-5:])
        return f"exit code {code}" + (f"; last stderr:\n{tail}" if tail else "")


def _read_disk(path: Path) -> tuple[os.stat_result, str]:
    return path.stat(), path.read_text(encoding="utf-8", errors="replace")


def _answer_null(params: Any) -> None:
    return None


def _ignore(params: Any) -> None:
    return None


def _uri_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse
    return unquote(urlparse(uri).path)


class LanguageServers:
    """The session's headless language servers, one per language, started on first use."""

    def __init__(self, session: Session, table: list[ServerSpec] | None = None,
                 finder: Callable[[ServerSpec, Path], list[str] | None] | None = None) -> None:
        self.root = session.cwd
        self.session = session
        # The repository's servers (lspServers, node_modules/.bin) only in a trusted workspace.
        self.trusted = workspace_trusted(session)
        self._own_table = table is None
        self.table = table if table is not None else load_server_table(session.cwd, trusted=self.trusted)
        self._finder = finder or (lambda spec, cwd: find_command(spec, cwd, self.trusted))
        self._servers: dict[str, ManagedServer] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._restarts: dict[str, list[float]] = {}
        self._closed = False

    def spec_for(self, path: Path) -> ServerSpec | None:
        suffix = path.suffix.lower()
        for spec in self.table:
            if suffix in spec.extensions:
                return spec
        return None

    def running(self, path: Path) -> ManagedServer | None:
        spec = self.spec_for(path)
        server = self._servers.get(spec.language) if spec else None
        return server if server is not None and server.alive else None

    async def server_for(self, path: Path) -> ManagedServer:
        """The live server for ``path``'s language, starting (or restarting) it when needed."""
        if self._closed:
            raise ToolError("This session is closing; its language servers are shut down.")
        await self._follow_trust()
        spec = self.spec_for(path)
        if spec is None:
            known = ", ".join(sorted({e for s in self.table for e in s.extensions}))
            raise ToolError(f"No language server is configured for {path.suffix or 'extensionless'} files "
                            f"(configured: {known}). Use Grep/Read instead, or add one under `lspServers` "
                            "in .claude/settings.json (see docs/lsp.md).")
        lock = self._locks.setdefault(spec.language, asyncio.Lock())
        async with lock:
            server = self._servers.get(spec.language)
            if server is not None and server.alive:
                return server
            if server is not None:
                log.warning("%s language server died (%s); restarting", spec.language, server.describe_exit())
                await server.close()
                self._note_restart(spec.language, server)
            command = self._finder(spec, self.root)
            if command is None:
                tried = " or ".join(f"`{' '.join(c)}`" for c in spec.commands)
                where = ("the project's node_modules/.bin, " if self.trusted else "")
                untrusted = ("" if self.trusted else " The workspace is not trusted, so programs inside it "
                             "(node_modules/.bin) and its lspServers settings were not considered; the user "
                             "can trust it (they are asked at the start of a session).")
                raise ToolError(f"No {spec.language} language server is installed: looked for {tried} in "
                                f"{where}the sidecar's environment and PATH. "
                                f"Install one with {spec.install_hint or 'your package manager'}, "
                                f"or use Grep/Read instead.{untrusted}")
            launch = await plan_launch(self.session, spec.language, command, spec.initialization_options,
                                       child_env(self.session), self.trusted)
            server = ManagedServer(spec, command, self.root, launch=launch)
            self._servers[spec.language] = server
            try:
                await server.start()
            except (OSError, ServerDied) as exc:
                await server.close()
                del self._servers[spec.language]
                raise ToolError(f"Could not start the {spec.language} language server `{' '.join(command)}`: "
                                f"{exc} ({server.describe_exit()}). Use Grep/Read instead.") from exc
            return server

    async def _follow_trust(self) -> None:
        """Servers started before the workspace was trusted (pinned, cleaned config) are restarted once it
        is, and the other way round, so each runs with what the current trust allows."""
        now = workspace_trusted(self.session)
        if now == self.trusted:
            return
        self.trusted = now
        if self._own_table:
            self.table = load_server_table(self.session.cwd, trusted=now)
        servers = list(self._servers.values())
        self._servers.clear()
        await asyncio.gather(*(s.close() for s in servers), return_exceptions=True)

    def _note_restart(self, language: str, server: ManagedServer) -> None:
        now = asyncio.get_running_loop().time()
        recent = [t for t in self._restarts.get(language, []) if now - t < RESTART_WINDOW] + [now]
        self._restarts[language] = recent
        if len(recent) > MAX_RESTARTS:
            raise ToolError(f"The {language} language server keeps crashing ({server.describe_exit()}). "
                            "Use Grep/Read instead for now.")

    async def request(self, path: Path, method: str, params: Callable[[], Any]) -> Any:
        """Sync ``path`` and send one request; when the server turns out to be dead, restart it and
        retry once. ``params`` is a thunk because it is rebuilt for the new server."""
        for attempt in (1, 2):
            server = await self.server_for(path)
            try:
                await server.sync(path)
                return await server.request(method, params())
            except ServerDied:
                if attempt == 2:
                    raise ToolError(f"The {server.spec.language} language server crashed while answering "
                                    f"({server.describe_exit()}). Try again, or use Grep/Read.") from None
                server.kill()
                await asyncio.sleep(0)
        return None  # pragma: no cover - the loop returns or raises

    async def close(self) -> None:
        self._closed = True
        servers = list(self._servers.values())
        self._servers.clear()
        await asyncio.gather(*(s.close() for s in servers), return_exceptions=True)




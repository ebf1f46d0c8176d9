"""LSP: semantic code intelligence (docs/contract.md §5.1, mechanism five: read-only, and still bounded).

Contract: ``LSP {operation, filePath, line, character, query?}``, 1-based line/character (in characters,
as the model sees them in Read); the wire is 0-based UTF-16, converted here both ways.

Governance: the queried file needs Read permission (``Read(...)`` rules and the roots apply), must be a
regular file under 10 MB, and the position must exist in it. Every file a result exposes passes the
same gate without asking: results outside the roots, denied by a rule, or in a gitignored file are
dropped and counted. Output is capped (100 locations, 50 symbols) with a note.

Execution: through the editor's language servers with ``_sidecar/lsp_query`` when the client
advertises ``lspQuery`` (docs/contract.md §3.3), else through the sidecar's own (``servers.py``). Both return
LSP JSON, so one presentation serves both.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from pydantic import Field

from sidecar.client_messages import LspOperation, LspQueryParams
from sidecar.errors import ClientRequestError, ToolError
from sidecar.permissions.request import PermissionRequest
from sidecar.tools.base import Location, Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.lsp.ignore import IgnoreMatcher
from sidecar.tools.lsp.service import LANGUAGE_SERVERS
from sidecar.workspace.paths import display_path, resolve_path

# servers (the headless language servers) is imported where it is used: it imports pygls and lsprotocol
# (seconds), which a session that never asks a language server does not need.

Operation = LspOperation  # the editor's _sidecar/lsp_query takes the same names

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_LOCATIONS = 100
MAX_SYMBOLS = 50
MAX_CONTEXT_CHARS = 200
MAX_HOVER_CHARS = 8000

# The LSP request behind each operation on the headless route.
METHODS: dict[str, str] = {
    "goToDefinition": "textDocument/definition",
    "findReferences": "textDocument/references",
    "hover": "textDocument/hover",
    "documentSymbol": "textDocument/documentSymbol",
    "workspaceSymbol": "workspace/symbol",
    "goToImplementation": "textDocument/implementation",
    "prepareCallHierarchy": "textDocument/prepareCallHierarchy",
    "incomingCalls": "callHierarchy/incomingCalls",
    "outgoingCalls": "callHierarchy/outgoingCalls",
}
# The server capability that must be present for each operation.
PROVIDERS: dict[str, str] = {
    "goToDefinition": "definitionProvider", "findReferences": "referencesProvider", "hover": "hoverProvider",
    "documentSymbol": "documentSymbolProvider", "workspaceSymbol": "workspaceSymbolProvider",
    "goToImplementation": "implementationProvider", "prepareCallHierarchy": "callHierarchyProvider",
    "incomingCalls": "callHierarchyProvider", "outgoingCalls": "callHierarchyProvider",
}
SYMBOL_KINDS = ["", "File", "Module", "Namespace", "Package", "Class", "Method", "Property", "Field",
                "Constructor", "Enum", "Interface", "Function", "Variable", "Constant", "String", "Number",
                "Boolean", "Array", "Object", "Key", "Null", "EnumMember", "Struct", "Event", "Operator",
                "TypeParameter"]
NOUNS: dict[str, tuple[str, str]] = {
    "goToDefinition": ("definition", "definitions"), "findReferences": ("reference", "references"),
    "goToImplementation": ("implementation", "implementations"),
}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WORD = re.compile(r"[\w$]+")


class LSPInput(ToolInput):
    """Ask a language server about code semantics: where a symbol is defined, every reference to it, its
    type and documentation, the symbols in a file or the whole workspace, the implementations of an
    interface or abstract method, and the callers and callees of a function.

    Use it instead of Grep when you need what a name *means* rather than where its text occurs: it
    follows imports, tells apart symbols with the same name, and finds subclasses and call chains.
    Use Grep for text, comments, strings and files no language server covers.

    Operations:
    - goToDefinition: where the symbol at the position is defined.
    - findReferences: every reference to it across the workspace (the definition included).
    - hover: its type signature and documentation.
    - documentSymbol: the classes, functions and variables of filePath (position ignored).
    - workspaceSymbol: symbols in the workspace whose name matches `query` (the name at the position when
      `query` is omitted).
    - goToImplementation: implementations of an interface, abstract class or method.
    - prepareCallHierarchy: the function or method at the position, as a call-hierarchy item.
    - incomingCalls: the functions that call the one at the position, with the call sites.
    - outgoingCalls: the functions the one at the position calls, with the call sites.

    `line` and `character` are 1-based, as Read numbers lines; point at any character of the symbol's
    name. Results are `path:line:col` with the source line, paths relative to the workspace root.
    Files outside the workspace, denied by a Read rule, or gitignored are left out (and counted).
    """

    operation: Operation = Field(description="The query to run (see the list above).")
    filePath: str = Field(description="The file to query: absolute, or relative to the workspace root.")
    line: int = Field(ge=1, description="1-based line number of the symbol (as Read shows it).")
    character: int = Field(ge=1, description="1-based character offset of the symbol within the line.")
    query: str | None = Field(default=None, description="workspaceSymbol only: the name (or part) to search.")


class LSPTool(Tool[LSPInput]):
    name: ClassVar[str] = "LSP"
    kind: ClassVar[ToolKind] = "search"
    Input: ClassVar[type[ToolInput]] = LSPInput

    # ---- contract ---------------------------------------------------------------------------
    def title(self, raw_input: dict[str, Any]) -> str:
        op = raw_input.get("operation") or "query"
        where = os.path.basename(str(raw_input.get("filePath") or ""))
        if where and raw_input.get("line"):
            where += f":{raw_input['line']}"
        query = raw_input.get("query")
        return " ".join(p for p in ("LSP", str(op), where, f"'{query}'" if query else "") if p)

    def locations(self, inp: LSPInput) -> list[Location]:
        return [Location(path=inp.filePath, line=inp.line)]

    # ---- governance -------------------------------------------------------------------------
    def is_read_only(self, inp: LSPInput) -> bool:
        return True

    def is_concurrency_safe(self, inp: LSPInput, ctx: ToolContext) -> bool:
        return True

    async def validate(self, inp: LSPInput, ctx: ToolContext) -> None:
        target = _target(inp, ctx)
        _position(inp, target, _read_lines(target.path))

    async def check_permission(self, inp: LSPInput, ctx: ToolContext) -> None:
        target = _target(inp, ctx)
        shown = display_path(target.path, ctx.session)
        await ctx.permissions.require(PermissionRequest(
            tool_name=self.name, access="read", title=f"LSP {inp.operation} in {shown}",
            raw_input=inp.model_dump(exclude_none=True), paths=[target.path], read_only=True,
            suggested_rule=f"Read({target.path})"), ctx)

    # ---- execution --------------------------------------------------------------------------
    async def run(self, inp: LSPInput, ctx: ToolContext) -> ToolOutput:
        target = _target(inp, ctx)
        lines = _read_lines(target.path)
        position = _position(inp, target, lines)
        query = inp.query if inp.query is not None else _word_at(lines, inp.line, inp.character)
        backend = _backend(ctx, target.path)
        view = ResultView(ctx, target.path, lines)
        params: dict[str, Any] = {"uri": target.path.as_uri(), "position": position}
        op = inp.operation

        if op in ("incomingCalls", "outgoingCalls"):
            items = _as_list(await backend("prepareCallHierarchy", params))
            if not items:
                return view.output(f"No function or method at {view.here(inp)} to show {op} for. Point at "
                                   "the name of a function or method (its definition or a call).", op)
            calls: list[Any] = []
            for item in items[:3]:
                calls.extend(_as_list(await backend(op, {**params, "item": item})))
            return view.output(view.calls(op, items[0], calls), op)

        if op == "workspaceSymbol":
            result = await backend(op, {**params, "query": query or ""})
        else:
            result = await backend(op, params)

        if op == "hover":
            text = view.hover(result, inp)
            if view.results:
                text = await view.hover_provenance(text, inp, backend, params, _library_dirs(ctx, target.path))
        elif op == "documentSymbol":
            text = view.document_symbols(_as_list(result))
        elif op == "workspaceSymbol":
            text = view.workspace_symbols(_as_list(result), query or "")
        elif op == "prepareCallHierarchy":
            text = view.call_items(_as_list(result), inp)
        else:
            text = view.locations(op, _as_list(result), inp)
        view.launch_note = _launch_note(ctx, target.path)
        return view.output(text, op)


# ---- the two routes ------------------------------------------------------------------------------

Backend = Callable[[Operation, dict[str, Any]], Awaitable[Any]]


def _backend(ctx: ToolContext, path: Path) -> Backend:
    if ctx.session.has_client_capability("lspQuery"):
        return _editor_backend(ctx)
    return _headless_backend(ctx, path)


def _editor_backend(ctx: ToolContext) -> Backend:
    async def ask(operation: Operation, params: dict[str, Any]) -> Any:
        wire: LspQueryParams = {"operation": operation, "uri": params["uri"]}
        if operation not in ("documentSymbol", "workspaceSymbol"):
            wire["position"] = params["position"]
        if operation == "workspaceSymbol":
            wire["query"] = params.get("query", "")
        if "item" in params:
            wire["item"] = params["item"]
        try:
            answer = await ctx.session.client.lsp_query(wire)
        except ClientRequestError as exc:
            raise ToolError(f"The editor could not answer {operation}: {exc.detail}. Make sure a "
                            "language extension for this file type is installed and active, or use "
                            "Grep/Read.") from exc
        return answer["result"]
    return ask


def _library_dirs(ctx: ToolContext, path: Path) -> tuple[Path, ...]:
    """Folders of the headless server's own toolchain (pinned interpreter's prefix, bundled stubs)."""
    servers = None if ctx.session.has_client_capability("lspQuery") else ctx.session.find_service(LANGUAGE_SERVERS)
    if servers is None:
        return ()
    server = servers.running(path)
    return server.launch.library_dirs if server is not None else ()


def _launch_note(ctx: ToolContext, path: Path) -> str:
    """Once per server: what the headless server was kept from running or reading (pinning.py), so the model
    knows why an import may show as unresolved before the workspace is trusted."""
    servers = None if ctx.session.has_client_capability("lspQuery") else ctx.session.find_service(LANGUAGE_SERVERS)
    if servers is None:
        return ""
    server = servers.running(path)
    left_out = [n for n in server.launch.notes if any(w in n for w in _LEFT_OUT)] if server is not None else []
    if server is None or not left_out or server.launch.told:
        return ""
    server.launch.told = True
    return (f"Note: the {server.spec.language} language server was kept from what the repository names — "
            + "; ".join(left_out) + ". What needs it (imports, types) may show as unresolved.")


_LEFT_OUT = ("ignored", "not run", "not loaded", "refused")


def _headless_backend(ctx: ToolContext, path: Path) -> Backend:
    from sidecar.tools.lsp.service import language_servers  # lazy: see the note at the top

    servers = language_servers(ctx.session)

    async def ask(operation: Operation, params: dict[str, Any]) -> Any:
        server = await servers.server_for(path)
        provider = PROVIDERS[operation]
        if not server.capabilities.get(provider):
            program = os.path.basename(server.command[0])
            raise ToolError(f"The {server.spec.language} language server ({program}) does not support "
                            f"{operation}. Try another operation (findReferences, goToDefinition) or Grep.")
        doc = {"uri": params["uri"]}

        def wire() -> Any:
            if operation == "documentSymbol":
                return {"textDocument": doc}
            if operation == "workspaceSymbol":
                return {"query": params.get("query", "")}
            if operation in ("incomingCalls", "outgoingCalls"):
                return {"item": params["item"]}
            out: dict[str, Any] = {"textDocument": doc, "position": params["position"]}
            if operation == "findReferences":
                out["context"] = {"includeDeclaration": True}
            return out

        return await servers.request(path, METHODS[operation], wire)
    return ask


# ---- the queried file ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Target:
    path: Path


def _target(inp: LSPInput, ctx: ToolContext) -> _Target:
    raw = inp.filePath
    if raw and not raw.startswith("file://") and not os.path.isabs(os.path.expanduser(raw)):
        raw = str(ctx.cwd / raw)
    resolved = resolve_path(raw, ctx.session, field="filePath")
    if resolved.kind == "missing":
        raise ToolError(f"{inp.filePath} does not exist. Check the path (Glob can find the file) and "
                        "call again.")
    if resolved.kind != "file":
        raise ToolError(f"{inp.filePath} is not a regular file; filePath must name a source file.")
    size = resolved.path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ToolError(f"{inp.filePath} is {size / 1024 / 1024:.1f} MB; the LSP tool refuses files over "
                        f"{MAX_FILE_BYTES // 1024 // 1024} MB. Use Grep to search it, or Read with "
                        "offset/limit.")
    return _Target(resolved.path)


def _read_lines(path: Path) -> list[str]:
    return _LINE_BREAK.split(path.read_text(encoding="utf-8", errors="replace"))


def _position(inp: LSPInput, target: _Target, lines: list[str]) -> dict[str, int]:
    """The wire position (0-based line, UTF-16 character) of the model's 1-based line/character."""
    if inp.operation in ("documentSymbol", "workspaceSymbol") and (
            inp.line > len(lines) or inp.character > len(lines[inp.line - 1]) + 1):
        return {"line": 0, "character": 0}
    if inp.line > len(lines):
        raise ToolError(f"line {inp.line} is past the end of {inp.filePath}, which has {len(lines)} lines. "
                        "Use the 1-based line number Read shows.")
    text = lines[inp.line - 1]
    if inp.character > len(text) + 1:
        raise ToolError(f"character {inp.character} is past the end of line {inp.line} of {inp.filePath} "
                        f"(it has {len(text)} characters). Use the 1-based column of the symbol's name.")
    return {"line": inp.line - 1, "character": _utf16_len(text[:inp.character - 1])}


def _word_at(lines: list[str], line: int, character: int) -> str | None:
    if line > len(lines):
        return None
    text = lines[line - 1]
    for m in _WORD.finditer(text):
        if m.start() <= character - 1 <= m.end():
            return m.group(0)
    return None


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _column(text: str, utf16: int) -> int:
    """1-based character column of a UTF-16 offset in ``text``."""
    if text.isascii():
        return min(utf16, len(text)) + 1
    units = 0
    for i, ch in enumerate(text):
        if units >= utf16:
            return i + 1
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(text) + 1


def _as_list(result: Any) -> list[Any]:
    if result is None:
        return []
    return list(result) if isinstance(result, list) else [result]


def _uri_to_path(uri: str) -> Path | None:
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return Path(os.path.realpath(unquote(parts.path)))


# ---- presentation --------------------------------------------------------------------------------

@dataclass
class _Hit:
    path: Path
    line: int  # 0-based
    character: int  # 0-based, UTF-16
    label: str = ""
    depth: int = 0


@dataclass
class ResultView:
    """Admits result files through the gate and renders results for the model."""

    ctx: ToolContext
    target: Path
    target_lines: list[str]
    dropped_outside: int = 0
    dropped_ignored: int = 0
    capped: str = ""
    launch_note: str = ""
    results: int = 0
    _admitted: dict[Path, str] = field(default_factory=dict)
    _lines: dict[Path, list[str] | None] = field(default_factory=dict)
    _ignore: IgnoreMatcher | None = None

    # ---- governance of result files -----------------------------------------------------------
    def admit(self, uri: str | None) -> Path | None:
        """The result's path when the model may see it, else None (and the drop is counted)."""
        path = _uri_to_path(uri or "")
        verdict = self._verdict(path) if path is not None else "outside"
        if verdict == "outside":
            self.dropped_outside += 1
            return None
        if verdict == "ignored":
            self.dropped_ignored += 1
            return None
        return path

    def _verdict(self, path: Path) -> str:
        if path == self.target:
            return "ok"
        cached = self._admitted.get(path)
        if cached is not None:
            return cached
        gate = self.ctx.permissions
        decision = gate.decide(PermissionRequest(
            tool_name="LSP", access="read", title=f"LSP result in {path}", raw_input={"file_path": str(path)},
            paths=[path], read_only=True))
        if decision.verdict != "allow":
            verdict = "outside"
        else:
            if self._ignore is None:
                self._ignore = IgnoreMatcher(self.ctx.roots)
            verdict = "ignored" if self._ignore.is_ignored(path) else "ok"
        self._admitted[path] = verdict
        return verdict

    def hits_from(self, raw: list[Any]) -> list[_Hit]:
        hits: list[_Hit] = []
        for loc in raw:
            if not isinstance(loc, dict):
                continue
            uri = loc.get("uri") or loc.get("targetUri")
            rng = loc.get("targetSelectionRange") or loc.get("range") or loc.get("targetRange")
            path = self.admit(uri)
            if path is None or not isinstance(rng, dict):
                continue
            start = rng.get("start") or {}
            hits.append(_Hit(path, int(start.get("line", 0)), int(start.get("character", 0))))
        return hits

    # ---- where a hover's text comes from ----------------------------------------------------------
    async def hover_provenance(self, text: str, inp: LSPInput, backend: Backend, params: dict[str, Any],
                               library: tuple[Path, ...]) -> str:
        """``text`` when every file the hovered symbol is defined in may be read, else a note.

        The hover shows the definition's signature, docstring and (for constants) its value, so it is
        held to what Read allows: a definition in a Read-denied file, or outside the roots and not the
        language toolchain's own library, hides the hover. So does a string ``Literal[...]`` value that
        none of the readable files involved spells (a value passed along from a file the model may not
        read: ``X: Final = secret.TOKEN``)."""
        try:
            definitions = _as_list(await backend("goToDefinition", params))
        except ToolError:
            definitions = []
        hidden = 0
        corpus = ["\n".join(self.target_lines)]
        for loc in definitions:
            if not isinstance(loc, dict):
                continue
            path = _uri_to_path(str(loc.get("uri") or loc.get("targetUri") or ""))
            if path is None or path == self.target:
                continue
            if not self._readable_source(path, library):
                hidden += 1
                continue
            lines = self.lines_of(path)
            if lines is not None:
                corpus.append("\n".join(lines))
        unseen = [v for v in _literal_strings(text) if not any(v in c for c in corpus)]
        if not hidden and not unseen:
            return text
        self.results = 0
        self.dropped_outside += hidden or 1
        word = _word_at(self.target_lines, inp.line, inp.character)
        what = f"`{word}` at {self.here(inp)}" if word else self.here(inp)
        why = ("it is defined in a file outside the workspace or denied by a Read rule" if hidden else
               "it shows a value that comes from a file outside the workspace or denied by a Read rule")
        return (f"The hover for {what} is not shown: {why}, which Read would not show either. "
                "Use goToDefinition or Read on files in the workspace instead.")

    def _readable_source(self, path: Path, library: tuple[Path, ...]) -> bool:
        decision = self.ctx.permissions.decide(PermissionRequest(
            tool_name="LSP", access="read", title=f"LSP hover source {path}", raw_input={"file_path": str(path)},
            paths=[path], read_only=True))
        if decision.verdict == "allow":
            return True
        if decision.verdict == "deny" or self.ctx.session.within_roots(path):
            return False
        return _is_library(path, library)

    # ---- rendering helpers ----------------------------------------------------------------------
    def lines_of(self, path: Path) -> list[str] | None:
        if path == self.target:
            return self.target_lines
        if path not in self._lines:
            try:
                self._lines[path] = _read_lines(path) if path.stat().st_size <= MAX_FILE_BYTES else None
            except OSError:
                self._lines[path] = None
        return self._lines[path]

    def where(self, path: Path, line: int, character: int) -> str:
        lines = self.lines_of(path)
        text = lines[line] if lines is not None and 0 <= line < len(lines) else ""
        return f"{display_path(path, self.ctx.session)}:{line + 1}:{_column(text, character)}"

    def context(self, path: Path, line: int) -> str:
        lines = self.lines_of(path)
        if lines is None or not 0 <= line < len(lines):
            return ""
        text = lines[line].strip()
        return text if len(text) <= MAX_CONTEXT_CHARS else text[:MAX_CONTEXT_CHARS] + "…"

    def here(self, inp: LSPInput) -> str:
        return f"{display_path(self.target, self.ctx.session)}:{inp.line}:{inp.character}"

    def cap(self, items: list[Any], limit: int, noun: str) -> list[Any]:
        if len(items) > limit:
            self.capped = (f"Showing the first {limit} of {len(items)} {noun}; narrow the query "
                           "(a more specific symbol or query) to see the rest.")
            return items[:limit]
        return items

    def notes(self) -> str:
        out: list[str] = []
        if self.capped:
            out.append(self.capped)
        if self.launch_note:
            out.append(self.launch_note)
        if self.dropped_outside:
            n = self.dropped_outside
            out.append(f"{n} result{'s' if n != 1 else ''} outside the workspace or denied by a Read rule "
                       f"{'were' if n != 1 else 'was'} not shown.")
        if self.dropped_ignored:
            n = self.dropped_ignored
            out.append(f"{n} result{'s' if n != 1 else ''} in gitignored files {'were' if n != 1 else 'was'} "
                       "not shown.")
        return "\n".join(out)

    def output(self, text: str, op: str) -> ToolOutput:
        notes = self.notes()
        full = f"{text}\n\n{notes}" if notes else text
        return ToolOutput.text(full, metadata={
            "operation": op, "file": str(self.target), "results": self.results,
            "dropped_outside": self.dropped_outside, "dropped_ignored": self.dropped_ignored,
            "capped": bool(self.capped)})

    def grouped(self, hits: list[_Hit], with_context: bool = True) -> str:
        """Hits grouped by file (files in first-seen order, lines sorted), one ``path:line:col`` each."""
        order: dict[Path, list[_Hit]] = {}
        for hit in hits:
            order.setdefault(hit.path, []).append(hit)
        blocks: list[str] = []
        for path, group in order.items():
            rows: list[str] = []
            for hit in sorted(group, key=lambda h: (h.line, h.character)):
                row = self.where(path, hit.line, hit.character)
                if hit.label:
                    row += f" {hit.label}"
                ctx_line = self.context(path, hit.line) if with_context else ""
                rows.append(f"{row}: {ctx_line}" if ctx_line else row)
            blocks.append("\n".join(rows))
        return "\n\n".join(blocks)

    # ---- per operation ----------------------------------------------------------------------------
    def locations(self, op: str, raw: list[Any], inp: LSPInput) -> str:
        one, many = NOUNS[op]
        hits = _dedupe(self.hits_from(raw))
        self.results = len(hits)
        if not hits:
            return f"No {one} found for the symbol at {self.here(inp)}{_quoted(self.target_lines, inp)}."
        hits = self.cap(hits, MAX_LOCATIONS, many)
        files = len({h.path for h in hits})
        head = f"Found {self.results} {one if self.results == 1 else many}"
        head += f" in {files} file{'s' if files != 1 else ''}:" if op == "findReferences" else ":"
        return f"{head}\n\n{self.grouped(hits)}"

    def hover(self, result: Any, inp: LSPInput) -> str:
        text = _hover_text(result.get("contents") if isinstance(result, dict) else None).strip()
        if not text:
            return f"No hover information for {self.here(inp)}{_quoted(self.target_lines, inp)}."
        self.results = 1
        if len(text) > MAX_HOVER_CHARS:
            text = text[:MAX_HOVER_CHARS] + "\n… (hover text cut)"
        rng = result.get("range") if isinstance(result, dict) else None
        at = self.here(inp)
        if isinstance(rng, dict):
            start = rng.get("start") or {}
            at = self.where(self.target, int(start.get("line", 0)), int(start.get("character", 0)))
        return f"Hover at {at}:\n\n{text}"

    def document_symbols(self, raw: list[Any]) -> str:
        hits: list[_Hit] = []

        def walk(symbols: list[Any], depth: int) -> None:
            for sym in symbols:
                if not isinstance(sym, dict):
                    continue
                if "location" in sym:  # SymbolInformation (flat)
                    path = self.admit(sym["location"].get("uri"))
                    rng = sym["location"].get("range") or {}
                else:
                    path, rng = self.target, sym.get("selectionRange") or sym.get("range") or {}
                if path is not None:
                    start = rng.get("start") or {}
                    hits.append(_Hit(path, int(start.get("line", 0)), int(start.get("character", 0)),
                                     _symbol_label(sym), depth))
                walk(sym.get("children") or [], depth + 1)

        walk(raw, 0)
        self.results = len(hits)
        shown = display_path(self.target, self.ctx.session)
        if not hits:
            return f"No symbols found in {shown}."
        hits = self.cap(hits, MAX_SYMBOLS, "symbols")
        rows = [f"{'  ' * h.depth}{h.label}  {self.where(h.path, h.line, h.character)}" for h in hits]
        plural = "s" if self.results != 1 else ""
        return f"Found {self.results} symbol{plural} in {shown}:\n\n" + "\n".join(rows)

    def workspace_symbols(self, raw: list[Any], query: str) -> str:
        hits: list[_Hit] = []
        for sym in raw:
            if not isinstance(sym, dict) or not isinstance(sym.get("location"), dict):
                continue
            path = self.admit(sym["location"].get("uri"))
            if path is None:
                continue
            start = (sym["location"].get("range") or {}).get("start") or {}
            hits.append(_Hit(path, int(start.get("line", 0)), int(start.get("character", 0)),
                             _symbol_label(sym)))
        self.results = len(hits)
        if not hits:
            return f"No workspace symbols match '{query}'."
        hits = self.cap(hits, MAX_SYMBOLS, "symbols")
        return (f"Found {self.results} symbol{'s' if self.results != 1 else ''} matching '{query}':\n\n"
                + self.grouped(hits, with_context=False))

    def call_items(self, raw: list[Any], inp: LSPInput) -> str:
        hits = [h for h in (self._item_hit(item) for item in raw) if h is not None]
        self.results = len(hits)
        if not hits:
            return f"No function or method at {self.here(inp)}{_quoted(self.target_lines, inp)}."
        hits = self.cap(hits, MAX_SYMBOLS, "items")
        return f"Call hierarchy item{'s' if len(hits) != 1 else ''}:\n\n" + self.grouped(hits)

    def calls(self, op: str, item: Any, raw: list[Any]) -> str:
        subject = _symbol_label(item) if isinstance(item, dict) else "the symbol"
        entries: list[str] = []
        locations = 0
        for call in raw:
            if not isinstance(call, dict):
                continue
            other = call.get("from") if op == "incomingCalls" else call.get("to")
            hit = self._item_hit(other)
            if hit is None or not isinstance(other, dict):
                continue
            # Call sites are in the caller (incoming) or in the queried function's file (outgoing).
            if op == "incomingCalls" or not isinstance(item, dict) or item.get("uri") == other.get("uri"):
                site_path: Path | None = hit.path
            else:
                site_path = self.admit(item.get("uri"))
            rows = [f"{self.where(hit.path, hit.line, hit.character)} {hit.label}"]
            if site_path is not None:
                for rng in call.get("fromRanges") or []:
                    start = rng.get("start") or {}
                    line, ch = int(start.get("line", 0)), int(start.get("character", 0))
                    site = f"  called at {self.where(site_path, line, ch)}"
                    ctx_line = self.context(site_path, line)
                    rows.append(f"{site}: {ctx_line}" if ctx_line else site)
                    locations += 1
            entries.append("\n".join(rows))
        self.results = len(entries)
        if not entries:
            who = "callers" if op == "incomingCalls" else "calls"
            return f"No {who} found for {subject}."
        entries = self.cap(entries, MAX_SYMBOLS, "callers" if op == "incomingCalls" else "callees")
        n = self.results
        head = (f"{subject} is called from {n} function{'s' if n != 1 else ''}:" if op == "incomingCalls"
                else f"{subject} calls {n} function{'s' if n != 1 else ''}:")
        return f"{head}\n\n" + "\n\n".join(entries)

    def _item_hit(self, item: Any) -> _Hit | None:
        if not isinstance(item, dict):
            return None
        path = self.admit(item.get("uri"))
        if path is None:
            return None
        start = (item.get("selectionRange") or item.get("range") or {}).get("start") or {}
        return _Hit(path, int(start.get("line", 0)), int(start.get("character", 0)), _symbol_label(item))


# Folder names of installed libraries and stubs outside the workspace (the toolchain's own code, not the
# user's files): a hover on a symbol defined there is shown.
LIBRARY_PARTS = frozenset({"site-packages", "dist-packages", "typeshed", "typeshed-fallback"})
_LITERAL = re.compile(r"Literal\[([^\]]*)\]")
_QUOTED = re.compile(r"b?'((?:\\.|[^'\\])*)'|b?\"((?:\\.|[^\"\\])*)\"")


def _is_library(path: Path, library: tuple[Path, ...]) -> bool:
    if any(path.is_relative_to(d) for d in library):
        return True
    parts = path.parts
    if LIBRARY_PARTS.intersection(parts):
        return True
    for i in range(len(parts) - 2):
        if parts[i] == "node_modules" and (parts[i + 1] == "@types" or parts[i + 1:i + 3] == ("typescript", "lib")):
            return True
    return False


def _literal_strings(text: str) -> list[str]:
    """The string values of the ``Literal[...]`` types in a hover (``Literal['a', "b"]`` → a, b)."""
    out: list[str] = []
    for m in _LITERAL.finditer(text):
        for q in _QUOTED.finditer(m.group(1)):
            value = q.group(1) if q.group(1) is not None else q.group(2)
            if value:
                out.append(value.replace("\\'", "'").replace('\\"', '"'))
    return out


def redact_literals(text: str, known: str) -> str:
    """``text`` with each string ``Literal[...]`` value that ``known`` does not spell shown as ``…``
    (diagnostics after an edit: the value may come from a file the model may not read)."""
    def literal(m: re.Match[str]) -> str:
        def value(q: re.Match[str]) -> str:
            group = 1 if q.group(1) is not None else 2
            plain = q.group(group).replace("\\'", "'").replace('\\"', '"')
            if not plain or plain in known:
                return q.group(0)
            return q.string[q.start():q.start(group)] + "…" + q.string[q.end(group):q.end()]
        return "Literal[" + _QUOTED.sub(value, m.group(1)) + "]"
    return _LITERAL.sub(literal, text)


def _dedupe(hits: list[_Hit]) -> list[_Hit]:
    seen: set[tuple[Path, int, int]] = set()
    out: list[_Hit] = []
    for h in hits:
        key = (h.path, h.line, h.character)
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


def _symbol_label(sym: dict[str, Any]) -> str:
    kind = sym.get("kind")
    kind_name = SYMBOL_KINDS[kind] if isinstance(kind, int) and 0 < kind < len(SYMBOL_KINDS) else "Symbol"
    label = f"{kind_name} {sym.get('name', '?')}"
    container = sym.get("containerName")
    if container:
        label += f" in {container}"
    return label


def _quoted(lines: list[str], inp: LSPInput) -> str:
    word = _word_at(lines, inp.line, inp.character)
    return f" (`{word}`)" if word else ""


def _hover_text(contents: Any) -> str:
    if contents is None:
        return ""
    if isinstance(contents, str):
        return contents
    if isinstance(contents, list):
        return "\n\n".join(t for t in (_hover_text(c) for c in contents) if t.strip())
    if isinstance(contents, dict):
        value = str(contents.get("value", ""))
        language = contents.get("language")
        return f"```{language}\n{value}\n```" if language else value
    return str(contents)

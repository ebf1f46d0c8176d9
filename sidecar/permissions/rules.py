"""Permission rules in Claude Code's syntax, and matching them against a request.

A rule is ``Tool`` or ``Tool(specifier)``:

- ``Bash(npm run test *)``, ``Bash(git status)``, ``Bash(npm run test:*)`` — shell commands, matched per
  subcommand by the Bash family's matcher (``sidecar.shell.rules.bash_rule_matches``).
- ``Read(./.env)``, ``Edit(src/**)``, ``Edit(/docs/*.md)``, ``Read(//etc/**)``, ``Read(~/.ssh/**)`` —
  gitignore-style path patterns. ``Read`` rules cover every tool that reads files, ``Edit`` rules every
  tool that writes them.
- ``WebFetch(domain:example.com)`` (``domain:*.example.com`` for subdomains).
- ``mcp__server`` (every tool of that MCP server), ``mcp__server__*``, ``mcp__server__tool``.
- Any other tool by name (``Task``, ``WebSearch``), optionally with a ``*`` glob specifier matched
  against the request's ``rule_subject``.

Evaluation (``evaluate``): deny → ask → allow. A deny from any settings source wins over everything.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sidecar.permissions.request import PermissionRequest
from sidecar.shell.rules import bash_rule_matches

if TYPE_CHECKING:
    import pathspec  # imported in _spec, on the first path rule checked (a fifth of a second at startup)

Behavior = Literal["allow", "ask", "deny"]
BEHAVIORS: tuple[Behavior, ...] = ("deny", "ask", "allow")

# Tools whose paths ``Read(...)`` / ``Edit(...)`` rules govern, by the request's access.
READ_RULE_TOOL = "Read"
EDIT_RULE_TOOL = "Edit"

_RULE_RE = re.compile(r"^\s*([A-Za-z0-9_\-*]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


class RuleSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    """One rule as written in a settings file."""

    tool: str
    specifier: str | None
    behavior: Behavior
    # Where it came from ("managed", "client", "local", "project", "user", "session") and the file.
    source: str = "session"
    source_path: str | None = None

    @property
    def text(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    def __str__(self) -> str:
        return self.text


def parse_rule(text: str, behavior: Behavior = "allow", source: str = "session",
               source_path: str | None = None) -> Rule:
    m = _RULE_RE.match(text)
    if not m:
        raise RuleSyntaxError(f"not a permission rule: {text!r}")
    tool, spec = m.group(1), m.group(2)
    if spec is not None:
        spec = spec.strip()
        if spec == "" or (spec == "*" and tool != "Bash"):
            spec = None  # ``Tool()`` / ``Tool(*)`` mean the whole tool
    return Rule(tool=tool, specifier=spec, behavior=behavior, source=source, source_path=source_path)


# ---- Bash specifiers: one matcher in the project, the Bash family's (``bash_rule_matches``) ---------

# ---- path specifiers ------------------------------------------------------------------------------

@dataclass(frozen=True)
class PathContext:
    """What relative path patterns are anchored to."""

    cwd: Path
    project_root: Path
    home: Path

    @classmethod
    def for_cwd(cls, cwd: Path, project_root: Path | None = None) -> PathContext:
        return cls(cwd=cwd, project_root=project_root or cwd, home=home_dir())


def home_dir() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def _resolve_dir(p: Path) -> Path:
    try:
        return p.resolve()
    except OSError:
        return p


def path_pattern_root(specifier: str, pctx: PathContext) -> tuple[Path, str]:
    """Split a path specifier into the directory it is anchored to and a gitignore pattern.

    ``//abs`` → filesystem root; ``~/x`` → home; ``/x`` → project root; ``./x`` → cwd, anchored;
    ``x`` → cwd, with gitignore's meaning (no slash: at any depth below cwd).
    """
    if specifier.startswith("//"):
        return Path("/"), specifier[1:]
    if specifier == "~" or specifier.startswith("~/"):
        return _resolve_dir(pctx.home), "/" + specifier[2:] if len(specifier) > 2 else "/**"
    if specifier.startswith("/"):
        return _resolve_dir(pctx.project_root), specifier
    if specifier.startswith("./"):
        return _resolve_dir(pctx.cwd), "/" + specifier[2:]
    return _resolve_dir(pctx.cwd), specifier


@lru_cache(maxsize=512)
def _spec(pattern: str) -> pathspec.GitIgnoreSpec:
    import pathspec  # lazy: see the TYPE_CHECKING import

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def path_rule_matches(specifier: str, path: Path, pctx: PathContext) -> bool:
    root, pattern = path_pattern_root(specifier, pctx)
    if pattern in ("/", "/**", "**"):
        return path == root or path.is_relative_to(root)
    if not path.is_relative_to(root):
        return False
    rel = path.relative_to(root).as_posix()
    if rel in ("", "."):
        return False
    return _spec(pattern).match_file(rel)


def path_rule_could_match_under(specifier: str, tree: Path, pctx: PathContext) -> bool:
    """Whether a path rule could match some file below the directory ``tree`` (conservative: a glob
    component that could match counts)."""
    root, pattern = path_pattern_root(specifier, pctx)
    if root.is_relative_to(tree):
        return True
    if not tree.is_relative_to(root):
        return False
    rel = [part for part in tree.relative_to(root).parts if part not in ("", ".")]
    body = pattern.rstrip("/")
    if "/" not in body:
        return True  # gitignore: a pattern without a slash matches at any depth
    for i, part in enumerate(body.lstrip("/").split("/")):
        if i >= len(rel) or part == "**":
            return True
        if not fnmatch.fnmatchcase(rel[i], part):
            return False
    return True  # the rule names the tree itself or a directory above it


def path_rule(tool: str, path: Path, cwd: Path) -> str:
    """The narrowest rule naming one path: ``Tool(/rel)`` inside ``cwd``, ``Tool(//abs)`` outside it."""
    if path.is_relative_to(cwd) and path != cwd:
        return f"{tool}(/{path.relative_to(cwd).as_posix()})"
    return f"{tool}(/{path.as_posix()})"


# ---- domains, MCP, generic ------------------------------------------------------------------------

def domain_rule_matches(specifier: str, subject: str | None) -> bool:
    if subject is None or not specifier.startswith("domain:") or not subject.startswith("domain:"):
        return False
    want = specifier[len("domain:"):].strip().lower().rstrip(".")
    host = subject[len("domain:"):].strip().lower().rstrip(".")
    if want.startswith("*."):
        return host.endswith(want[1:])
    return fnmatch.fnmatchcase(host, want)


def tool_name_matches(rule_tool: str, tool_name: str) -> bool:
    if rule_tool == tool_name:
        return True
    if rule_tool.startswith("mcp__"):
        parts = rule_tool.split("__")
        if len(parts) == 2 or (len(parts) == 3 and parts[2] == "*"):
            return tool_name.startswith(f"mcp__{parts[1]}__")
    return False


def rule_tool_applies(rule: Rule, request: PermissionRequest) -> bool:
    """Whether the rule names this request's tool (directly, or as Read/Edit for file access)."""
    if tool_name_matches(rule.tool, request.tool_name):
        return True
    if rule.tool == READ_RULE_TOOL and request.access == "read" and request.paths:
        return True
    return rule.tool == EDIT_RULE_TOOL and request.access == "write" and bool(request.paths)


def _command_parts(request: PermissionRequest) -> list[str]:
    if request.rule_parts:
        return list(request.rule_parts)
    return [request.rule_subject] if request.rule_subject else []


def rule_matches(rule: Rule, request: PermissionRequest, pctx: PathContext) -> bool:
    """Whether the rule covers the whole request (for ask/deny: any part of it, see ``covers_part``)."""
    if not rule_tool_applies(rule, request):
        return False
    if rule.specifier is None:
        return True
    spec = rule.specifier
    if rule.tool in (READ_RULE_TOOL, EDIT_RULE_TOOL) and request.paths:
        return all(path_rule_matches(spec, p, pctx) for p in request.paths)
    if request.tool_name == "Bash" or request.access == "execute":
        parts = _command_parts(request)
        return bool(parts) and all(bash_rule_matches(spec, part) for part in parts)
    if spec.startswith("domain:"):
        return domain_rule_matches(spec, request.rule_subject)
    if request.rule_subject is None:
        return False
    return fnmatch.fnmatchcase(request.rule_subject, spec)


def rule_touches(rule: Rule, request: PermissionRequest, pctx: PathContext) -> bool:
    """Whether the rule covers *any* part of the request: one denied subcommand denies the command,
    one denied path denies the call."""
    if not rule_tool_applies(rule, request):
        return False
    if rule.specifier is None:
        return True
    spec = rule.specifier
    if rule.tool in (READ_RULE_TOOL, EDIT_RULE_TOOL) and request.paths:
        return any(path_rule_matches(spec, p, pctx) for p in request.paths)
    if request.tool_name == "Bash" or request.access == "execute":
        parts = _command_parts(request) + list(request.match_parts)
        if request.rule_subject and request.rule_subject not in parts:
            parts.append(request.rule_subject)
        return any(bash_rule_matches(spec, part) for part in parts)
    return rule_matches(rule, request, pctx)


@dataclass
class RuleVerdict:
    behavior: Behavior | None
    rules: list[Rule]

    @property
    def rule(self) -> Rule | None:
        return self.rules[0] if self.rules else None


def evaluate(rules: Iterable[Rule], request: PermissionRequest, pctx: PathContext,
             auto_allowed_parts: Iterable[str] = ()) -> RuleVerdict:
    """deny → ask → allow; ``behavior`` is None when no rule decides.

    A compound command (``rule_parts``) is allowed only when every part is allowed, each possibly by a
    different rule; parts listed in ``auto_allowed_parts`` (read-only subcommands) need no rule.
    """
    rules = list(rules)
    for behavior in ("deny", "ask"):
        for rule in rules:
            if rule.behavior == behavior and (rule_touches(rule, request, pctx)
                                              or file_rule_touches(rule, request, pctx)):
                return RuleVerdict(behavior, [rule])
    allows = [r for r in rules if r.behavior == "allow"]
    for rule in allows:
        if rule_matches(rule, request, pctx):
            return RuleVerdict("allow", [rule])
    # Compound commands: every part allowed, by any rule.
    if request.rule_parts and len(request.rule_parts) > 1:
        auto = set(auto_allowed_parts)
        used: list[Rule] = []
        for part in request.rule_parts:
            if part in auto:
                continue
            single = PermissionRequest(tool_name=request.tool_name, access=request.access,
                                       title=request.title, raw_input=request.raw_input,
                                       rule_subject=part, rule_parts=[part])
            hit = next((r for r in allows if rule_matches(r, single, pctx)), None)
            if hit is None:
                return RuleVerdict(None, [])
            used.append(hit)
        if used:
            return RuleVerdict("allow", used)
    return RuleVerdict(None, [])


# ---- a shell command's file arguments: the same path policy as Read and Write ------------------------

def file_rule_touches(rule: Rule, request: PermissionRequest, pctx: PathContext) -> bool:
    """A ``Read(spec)`` rule naming one of a command's read files, an ``Edit(spec)`` one of its written
    files (``cat secrets/x`` is denied by ``Read(./secrets/**)`` as the Read tool would be)."""
    if rule.specifier is None:
        return False
    if rule.tool == READ_RULE_TOOL:
        paths = request.read_paths
    elif rule.tool == EDIT_RULE_TOOL:
        paths = request.write_paths
    else:
        return False
    return any(path_rule_matches(rule.specifier, p, pctx) for p in paths)


def command_paths_verdict(rules: Iterable[Rule], request: PermissionRequest, pctx: PathContext,
                          within_roots: Callable[[Path], bool]) -> str | None:
    """Why a command that could otherwise run without asking must ask because of its files, or None.

    - a read file outside the roots, unless a ``Read(...)`` allow rule covers it (as for the Read tool);
      a written file outside the roots, unless an ``Edit(...)`` allow rule covers it;
    - a file argument only known at run time that could lie outside the roots (``cat $HOME/x``);
    - a file argument only known at run time while a ``Read(...)`` deny rule exists (it cannot be
      checked against the rule before the command runs)."""
    rules = list(rules)

    def allowed(tool: str, path: Path) -> bool:
        return any(r.behavior == "allow" and r.tool == tool and r.specifier is not None
                   and path_rule_matches(r.specifier, path, pctx) for r in rules)

    for p in request.read_paths:
        if not within_roots(p) and not allowed(READ_RULE_TOOL, p):
            return f"reads {p}, outside the workspace roots"
    for p in request.write_paths:
        if not within_roots(p) and not allowed(EDIT_RULE_TOOL, p):
            return f"writes {p}, outside the workspace roots"
    for tree in request.tree_paths:
        covering = next((r for r in rules if r.behavior == "deny" and r.tool == READ_RULE_TOOL and r.specifier
                         and path_rule_could_match_under(r.specifier, tree, pctx)), None)
        if covering is not None:
            return (f"reads every file under {tree}, and the Read deny rule {covering.text} covers files there "
                    "(the Grep tool searches without them)")
    if request.unknown_paths and request.unknown_paths_outside:
        return f"cannot tell which files {request.unknown_paths[0]} names before it runs"
    if request.unknown_paths and any(r.behavior == "deny" and r.tool == READ_RULE_TOOL and r.specifier
                                     for r in rules):
        return (f"cannot check {request.unknown_paths[0]} against the Read deny rules before it runs")
    return None

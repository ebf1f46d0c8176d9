"""The decision table every tool call passes, as one pure function (docs/contract.md §6).

Tiers by reversibility, then the mode, then the user::

    forbidden (catastrophic)                         → deny, in every mode
    deny rule (any settings source)                  → deny   (a hook's allow never overrides it)
    PreToolUse hook said deny                        → deny
    plan mode and the call changes something         → deny   (ExitPlanMode asks to leave plan mode)
    ask rule / hook said ask                         → ask    (even in bypassPermissions)
    hook said allow                                  → allow
    read-only inside the workspace roots             → allow
    write into .git/.claude/.vscode/.idea            → ask    (unless a path rule allows exactly that)
    allow rule (settings or granted this session)    → allow
    bypassPermissions                                → allow
    acceptEdits and a write inside the roots         → allow  (the edit is still shown as a diff)
    otherwise                                        → ask the user

``decide`` never asks anyone and reads no settings: the caller hands it the rules, the mode and the roots.
The session's gate (``PermissionGate.decide``) and ``sidecar check-command`` both call it, so what the
CLI explains is what the Bash tool decides, in the same words (a ``Decision.reason`` is written here
only: the audit record and the CLI print it as it is).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from sidecar.permission_types import DecidedBy as DecidedBy
from sidecar.permission_types import Decision as Decision
from sidecar.permission_types import HookVerdict as HookVerdict
from sidecar.permission_types import PermissionRequest, within
from sidecar.permission_types import Verdict as Verdict
from sidecar.permissions.rules import (
    EDIT_RULE_TOOL,
    READ_RULE_TOOL,
    PathContext,
    Rule,
    command_paths_verdict,
    evaluate,
)

# Writes here ask even in bypassPermissions: they change the tooling that governs the agent. Compared
# case-insensitively (``casefold``): on macOS and Windows ``.Git/hooks`` *is* ``.git/hooks``.
PROTECTED_DIRS = (".git", ".claude", ".vscode", ".idea")
# Files the same holds for wherever they are: they start servers or instruct every later session.
PROTECTED_FILES = (".mcp.json", "CLAUDE.md", "AGENTS.md")
_PROTECTED_DIR_KEYS = frozenset(d.casefold() for d in PROTECTED_DIRS)
_PROTECTED_FILE_KEYS = frozenset(f.casefold() for f in PROTECTED_FILES)

SOURCE_LABELS = {
    "managed": "managed settings",
    "client": "the editor's settings",
    "local": ".claude/settings.local.json",
    "project": ".claude/settings.json",
    "user": "~/.claude/settings.json",
    "session": "this session",
    "cli": "the --settings file",
}




def decide(request: PermissionRequest, rules: Sequence[Rule], mode: str, roots: Sequence[Path],
           hook: HookVerdict | None = None, *, cwd: Path | None = None,
           saved_output: Path | None = None) -> Decision:
    """The verdict on ``request`` under ``rules`` and ``mode``, for a workspace of ``roots`` (relative rule
    paths anchored at ``cwd``, default the first root). ``saved_output``: the session's directory of
    whole tool outputs, which a read-only call may read wherever it is."""
    if request.forbidden_reason:
        return Decision("deny", f"refused in every mode: {request.forbidden_reason}", decided_by="safety")
    pctx = PathContext.for_cwd(cwd if cwd is not None else roots[0])
    verdict = evaluate(rules, request, pctx, request.read_only_parts)
    rule = verdict.rule
    if verdict.behavior == "deny" and rule is not None:
        return Decision("deny", f"denied by rule {rule.text} in {source_label(rule.source)}",
                        rule=rule.text, decided_by="rule", source=rule.source)
    if hook is not None and hook.decision == "deny":
        return Decision("deny", hook.reason or "blocked by a PreToolUse hook", decided_by="hook")
    # Plan mode forbids changes; a fetch of an unapproved domain changes nothing, so it is asked.
    if mode == "plan" and not request.read_only and request.access != "fetch":
        return Decision("deny", "plan mode allows no changes", decided_by="mode")
    if verdict.behavior == "ask" and rule is not None:
        return Decision("ask", f"rule {rule.text} asks", rule=rule.text, decided_by="rule",
                        source=rule.source)
    if hook is not None and hook.decision == "ask":
        return Decision("ask", hook.reason or "a PreToolUse hook asks", decided_by="hook")
    if hook is not None and hook.decision == "allow":
        return Decision("allow", hook.reason or "allowed by a PreToolUse hook", decided_by="hook")
    files_reason = None
    if request.read_paths or request.write_paths or request.unknown_paths or request.tree_paths:
        files_reason = command_paths_verdict(rules, request, pctx, lambda p: within(p, roots))
    inside = all(within(p, roots) for p in request.paths) and files_reason is None
    if request.read_only and inside:
        return Decision("allow", "read-only inside the workspace", decided_by="default")
    if (request.read_only and request.paths and saved_output is not None
            and all(within(p, [saved_output]) for p in request.paths)):
        return Decision("allow", "the session's own saved tool output", decided_by="default")
    protected = request.access == "write" and any(is_protected_write(p, roots) for p in request.paths)
    allow_rule = rule if verdict.behavior == "allow" else None
    if protected and not (allow_rule is not None and allow_rule.specifier is not None
                          and allow_rule.tool in (EDIT_RULE_TOOL, READ_RULE_TOOL, request.tool_name)):
        return Decision("ask", "writes to .git, .claude, .vscode, .idea, .mcp.json, CLAUDE.md, AGENTS.md "
                        "and git directories always ask", decided_by="safety")
    if allow_rule is not None:
        names = ", ".join(r.text for r in verdict.rules)
        return Decision("allow", f"allowed by rule {names} in {source_label(allow_rule.source)}",
                        rule=names, decided_by="rule", source=allow_rule.source)
    if mode == "bypassPermissions":
        return Decision("allow", "bypassPermissions mode", decided_by="mode")
    if mode == "acceptEdits" and request.access == "write" and inside:
        return Decision("allow", "acceptEdits mode", decided_by="mode")
    if not inside:
        return Decision("ask", files_reason or "outside the workspace roots", decided_by="default")
    return Decision("ask", request.ask_reason or "needs approval", decided_by="default")


def is_protected_write(path: Path, roots: Sequence[Path]) -> bool:
    """A path inside .git/.claude/.vscode/.idea (counted from the workspace root that holds it), or
    one that makes or changes a git directory without a ``.git`` component (``evil/HEAD``)."""
    base = next((r for r in roots if path == r or path.is_relative_to(r)), None)
    parts = path.relative_to(base).parts if base is not None else path.parts
    return (any(p.casefold() in _PROTECTED_DIR_KEYS for p in parts)
            or (bool(parts) and parts[-1].casefold() in _PROTECTED_FILE_KEYS)
            or builds_git_dir(path, base or Path(path.anchor)))


# What git looks for in a repository directory; ``HEAD`` and one more make a directory git will use
# (``git -C dir``, ``--git-dir``), whose ``config`` can then name programs git runs (core.fsmonitor).
GIT_DIR_MARKERS = ("HEAD", "config", "objects", "refs")
# Also git's when written beside a HEAD.
GIT_DIR_NAMES = (*GIT_DIR_MARKERS, "hooks", "info", "packed-refs", "commondir", "gitdir", "index",
                 "modules", "worktrees")


def builds_git_dir(path: Path, base: Path) -> bool:
    """Whether writing ``path`` makes (or writes inside) a directory that looks like a git directory.

    For each folder between ``base`` and ``path``: it has (or gets) a ``HEAD``, and also has another of
    ``config``/``objects``/``refs`` or gets one of git's names written beside the HEAD. A lone HEAD
    file is no repository."""
    if not path.is_relative_to(base):
        return False
    folder = base
    names = {n.casefold() for n in GIT_DIR_NAMES}
    for name in path.relative_to(base).parts:
        on_disk = {m for m in GIT_DIR_MARKERS if os.path.lexists(folder / m)}
        key = name.casefold()  # ``head`` is git's HEAD on a file system that ignores case
        head = "HEAD" in on_disk or key == "head"
        other = bool(on_disk - {"HEAD"}) or (key in names and key != "head")
        if head and other:
            return True
        folder = folder / name
    return False


def source_label(source: str) -> str:
    return SOURCE_LABELS.get(source, source)

"""What a tool asks the permission gate and what the gate answers: the gate's vocabulary.

Plain values, at the bottom of the import order so that ``sidecar.session`` can name the gate's surface
(``PermissionGatePort``) without importing the gate. ``sidecar.permissions`` re-exports them where they
were first declared (``permissions.request``, ``permissions.decide``, ``permissions.gate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Access = Literal["read", "write", "execute", "fetch", "other"]


def within(path: Path, roots: Sequence[Path]) -> bool:
    """``path`` is one of ``roots`` or below one (both resolved by the caller): the workspace test the
    decision table and ``Session.within_roots`` share."""
    return any(path == r or path.is_relative_to(r) for r in roots)


@dataclass
class PermissionRequest:
    tool_name: str
    access: Access
    title: str
    # The exact input, shown to the user as the tool call's rawInput.
    raw_input: dict[str, Any]
    # Canonical paths the call reads or writes (checked against roots, rules and protected dirs).
    paths: list[Path] = field(default_factory=list)
    # The string a rule specifier is matched against: a shell command, a domain ("domain:x") ...
    rule_subject: str | None = None
    # Parts matched one by one (subcommands of a compound shell command); all must be allowed.
    rule_parts: list[str] = field(default_factory=list)
    read_only: bool = False
    # Parts of ``rule_parts`` that are read-only by themselves (need no rule inside a compound command).
    read_only_parts: list[str] = field(default_factory=list)
    # More spellings of the parts, matched by deny and ask rules only (never by allow): each simple
    # command quote-removed with its program's basename, wrappers' inner commands included.
    match_parts: list[str] = field(default_factory=list)
    # The narrowest rule offered as "always allow", e.g. "Bash(npm run test *)".
    suggested_rule: str | None = None
    # ACP ToolCallContent shown with the question (a diff for edits).
    content: list[dict[str, Any]] = field(default_factory=list)
    # Why the call needs the user's approval when nothing else decides (a shell command's first part
    # that is not read-only, as the classifier says); None: "needs approval".
    ask_reason: str | None = None
    # Refused in every mode, bypass included (catastrophic shell commands): the reason.
    forbidden_reason: str | None = None
    # A shell command's file arguments (canonical), under the same path policy as Read and Write:
    # Read rules apply to ``read_paths``, Edit rules to ``write_paths``, both must stay in the roots.
    read_paths: list[Path] = field(default_factory=list)
    write_paths: list[Path] = field(default_factory=list)
    # File arguments only known at run time (``$VAR``, globs), as written; ``unknown_paths_outside``
    # when one of them could name a file outside the roots (``$HOME/x``, ``~/*``, ``../*``).
    unknown_paths: list[str] = field(default_factory=list)
    # Directories the command reads whole (``grep -r x dir``): checked against Read deny rules.
    tree_paths: list[Path] = field(default_factory=list)
    unknown_paths_outside: bool = False


Verdict = Literal["allow", "ask", "deny"]
DecidedBy = Literal["rule", "mode", "user", "hook", "default", "safety"]


@dataclass
class Decision:
    verdict: Verdict
    reason: str
    rule: str | None = None
    decided_by: DecidedBy = "default"
    source: str | None = None


@dataclass
class HookVerdict:
    """What a PreToolUse hook said about a call (``hooks.run_pre_tool_use`` returns it; the call's
    context carries it to the gate)."""

    decision: Literal["allow", "deny", "ask"]
    reason: str = ""


@dataclass
class UserAnswer:
    """The user's answer to a permission question."""

    allowed: bool
    always: bool = False
    feedback: str | None = None
    cancelled: bool = False
    option_id: str | None = None
    # What the model is told when it is a refusal, when the question has its own words for it (an edit
    # review: "The user rejected your edit to …", a proposal voided by a change on disk); None: the
    # general ``rejection_message``. ``reason``: the audit record's reason, when not the option chosen.
    message: str | None = None
    reason: str | None = None

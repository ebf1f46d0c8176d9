"""The permission request for a shell command: what the Bash tool asks the gate and what
``sidecar check-command`` decides on, built in one place from the classifier's ``Analysis``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.permissions.request import PermissionRequest
from sidecar.shell.classify import Analysis


def command_request(
    analysis: Analysis, raw_input: dict[str, Any] | None = None, suggested_rule: str | None = None
) -> PermissionRequest:
    """The rule-relevant request for ``analysis``: the command, its parts, its file arguments, the
    reason it needs approval and, for a catastrophic command, why it is refused."""
    request = PermissionRequest(
        tool_name="Bash",
        access="execute",
        title=analysis.command.strip().splitlines()[0][:200] if analysis.command.strip() else "Bash",
        raw_input=raw_input if raw_input is not None else {"command": analysis.command},
        rule_subject=analysis.command.strip(),
        rule_parts=analysis.rule_parts,
        read_only=analysis.read_only,
        read_only_parts=[s.text for s in analysis.subcommands if s.cls == "read-only"],
        match_parts=list(analysis.match_texts),
        suggested_rule=suggested_rule,
        ask_reason=ask_reason(analysis),
        forbidden_reason=analysis.catastrophic,
    )
    add_file_arguments(request, analysis)
    return request


def ask_reason(analysis: Analysis) -> str | None:
    """Why the command needs approval: the reason of its first part that is not read-only."""
    first = next((s for s in analysis.subcommands if s.cls != "read-only"),
                 analysis.subcommands[0] if analysis.subcommands else None)
    why = next((s.reason for s in analysis.subcommands if s.cls != "read-only" and s.reason), "")
    return why or (first.reason if first is not None else "") or None


def add_file_arguments(request: PermissionRequest, analysis: Analysis) -> None:
    """The command's file arguments onto ``request`` (the one path policy, docs/permissions.md).

    They come from the classifier (``Analysis.read_paths`` / ``write_paths`` / ``dynamic_paths``). A
    run-time word could lie outside the roots when it expands a variable or a command (``$HOME/x``,
    ``$(…)``), starts at ``/`` or ``~``, climbs with ``..``, or follows a ``cd`` in the same command."""
    request.read_paths = [Path(p) for p in analysis.read_paths]
    request.write_paths = [Path(p) for p in analysis.write_paths]
    request.tree_paths = [Path(p) for p in analysis.tree_paths]
    unknown = [str(w) for w in analysis.dynamic_paths]
    request.unknown_paths = unknown
    moved = any(s.words[:1] in (["cd"], ["pushd"]) for s in analysis.subcommands)
    request.unknown_paths_outside = any(_could_be_outside(w, moved) for w in unknown)


def _could_be_outside(word: str, moved: bool) -> bool:
    bare = word.strip("'\"")
    return (moved or "$" in bare or "`" in bare or bare.startswith(("/", "~")) or ".." in bare)

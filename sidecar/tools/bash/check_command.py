"""``sidecar check-command``: explain a shell command's parse, class and permission decision, never run it.

    sidecar check-command [--json] [--cwd DIR] [--settings FILE] CMD
    sidecar check-command [--cwd DIR] [--settings FILE] -      # one command a line → one JSON object a line

Each JSON object: ``{"command", "read_only", "decision", "rule", "subcommands": [{"text", "class"}],
"reason"}``. The decision is what the Bash tool's permission gate would decide in the settings' mode
(``defaultMode``, else ``default``) without asking anyone: ``allow``, ``ask`` (the user would be asked) or
``deny``. Rules come from ``--settings FILE`` alone when given (Claude Code format
``{"permissions": {"allow": [...], "ask": [...], "deny": [...]}}``), else from the usual settings files
for ``--cwd``. The rules engine is the shared one (``sidecar.permissions.rules.evaluate``).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.permissions.request import PermissionRequest
from sidecar.permissions.rules import PathContext, Rule, command_paths_verdict, evaluate
from sidecar.shell.classify import Analysis, Where, analyze


@dataclass
class Verdict:
    decision: str  # allow | ask | deny
    rule: str | None
    reason: str


def bash_request(
    analysis: Analysis, raw_input: dict[str, Any] | None = None, suggested_rule: str | None = None
) -> PermissionRequest:
    """The PermissionRequest the Bash tool sends for ``analysis`` (shared with ``bash.py``)."""
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
        forbidden_reason=analysis.catastrophic,
    )
    add_file_arguments(request, analysis)
    return request


def add_file_arguments(request: PermissionRequest, analysis: Analysis) -> None:
    """The command's file arguments onto ``request`` (the one path policy, docs/permissions.md).

    They come from the classifier (``Analysis.read_paths`` / ``write_paths`` / ``dynamic_paths``). A
    run-time word could lie outside the roots when it expands a variable or a command (``$HOME/x``,
    ``$(…)``), starts at ``/`` or ``~``, climbs with ``..``, or follows a ``cd`` in the same command."""
    request.read_paths = [Path(p) for p in getattr(analysis, "read_paths", [])]
    request.write_paths = [Path(p) for p in getattr(analysis, "write_paths", [])]
    request.tree_paths = [Path(p) for p in getattr(analysis, "tree_paths", [])]
    unknown = [str(w) for w in getattr(analysis, "dynamic_paths", [])]
    request.unknown_paths = unknown
    moved = any(s.words[:1] in (["cd"], ["pushd"]) for s in analysis.subcommands)
    request.unknown_paths_outside = any(_could_be_outside(w, moved) for w in unknown)


def _could_be_outside(word: str, moved: bool) -> bool:
    bare = word.strip("'\"")
    return (moved or "$" in bare or "`" in bare or bare.startswith(("/", "~")) or ".." in bare)


def decide(analysis: Analysis, rules: list[Rule], cwd: Path, mode: str = "default") -> Verdict:
    """The gate's decision for a Bash call, minus hooks and the user (see ``PermissionGate.decide``)."""
    if analysis.catastrophic:
        return Verdict("deny", None, f"refused in every mode: {analysis.catastrophic}")
    request = bash_request(analysis)
    verdict = evaluate(rules, request, PathContext.for_cwd(cwd), request.read_only_parts)
    rule_text = ", ".join(r.text for r in verdict.rules) if verdict.rules else None
    if verdict.behavior == "deny":
        return Verdict("deny", rule_text, f"denied by rule {rule_text}")
    if mode == "plan" and not analysis.read_only:
        return Verdict("deny", None, "plan mode allows no changes")
    if verdict.behavior == "ask":
        return Verdict("ask", rule_text, f"rule {rule_text} asks")
    files_reason = command_paths_verdict(rules, request, PathContext.for_cwd(cwd),
                                         lambda p: p == cwd or p.is_relative_to(cwd))
    if analysis.read_only and files_reason is None:
        return Verdict("allow", None, "read-only")
    if verdict.behavior == "allow":
        return Verdict("allow", rule_text, f"allowed by rule {rule_text}")
    if mode == "bypassPermissions":
        return Verdict("allow", None, "bypassPermissions mode")
    worst = max(analysis.subcommands, key=lambda s: (s.cls == "read-only" and -1) or 0, default=None)
    why = next((s.reason for s in analysis.subcommands if s.cls != "read-only" and s.reason), "")
    return Verdict("ask", None, files_reason or why or (worst.reason if worst else "needs approval"))


def load_rules(settings_file: Path | None, cwd: Path) -> tuple[list[Rule], str]:
    from sidecar.permissions.settings import Settings, load_settings, read_settings_file

    settings = Settings([read_settings_file("cli", settings_file)]) if settings_file else load_settings(cwd)
    mode = settings.default_mode() or "default"
    return settings.rules(), mode


def explain(command: str, rules: list[Rule], cwd: Path, mode: str = "default") -> dict[str, Any]:
    analysis = analyze(command, Where(cwd))
    verdict = decide(analysis, rules, cwd, mode)
    return {
        "command": command,
        "read_only": analysis.read_only,
        "decision": verdict.decision,
        "rule": verdict.rule,
        "subcommands": [{"text": s.text, "class": s.cls} for s in analysis.subcommands],
        "reason": verdict.reason,
    }


def _human(result: dict[str, Any]) -> str:
    lines = [f"command:   {result['command']}"]
    for s in result["subcommands"]:
        lines.append(f"  {s['class']:<13} {s['text']}")
    lines.append(f"read-only: {'yes' if result['read_only'] else 'no'}")
    rule = f" (rule {result['rule']})" if result["rule"] else ""
    lines.append(f"decision:  {result['decision']}{rule}: {result['reason']}")
    return "\n".join(lines)


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(
        prog="sidecar check-command",
        description="Explain how the Bash tool would parse, classify and permit a command "
        "without running it.",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--cwd", type=Path, default=None, help="directory the command would run in")
    parser.add_argument(
        "--settings",
        type=Path,
        default=None,
        help="a Claude Code settings file whose permissions decide (default: the usual files)",
    )
    parser.add_argument("command", help="the command, or - to read one command a line from stdin")
    return parser


def run(args: argparse.Namespace) -> int:
    cwd = (args.cwd or Path.cwd()).resolve()
    if args.settings is not None and not args.settings.exists():
        print(f"sidecar check-command: no such settings file: {args.settings}", file=sys.stderr)
        return 2
    rules, mode = load_rules(args.settings, cwd)
    if args.command == "-":
        out = sys.stdout
        for line in sys.stdin:
            command = line.rstrip("\r\n")
            if not command.strip():
                continue
            out.write(json.dumps(explain(command, rules, cwd, mode), ensure_ascii=False) + "\n")
        out.flush()
        return 0
    result = explain(args.command, rules, cwd, mode)
    print(json.dumps(result, ensure_ascii=False) if args.json else _human(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())

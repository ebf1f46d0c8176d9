"""``sidecar check-command``: explain a shell command's parse, class and permission decision, never run it.

    sidecar check-command [--json] [--cwd DIR] [--settings FILE] CMD
    sidecar check-command [--cwd DIR] [--settings FILE] -      # one command a line → one JSON object a line

Each JSON object: ``{"command", "read_only", "decision", "rule", "subcommands": [{"text", "class"}],
"reason"}``. The decision is what the Bash tool's permission gate would decide in the settings' mode
(``defaultMode``, else ``default``) without asking anyone: ``allow``, ``ask`` (the user would be asked) or
``deny``. Rules come from ``--settings FILE`` alone when given (Claude Code format
``{"permissions": {"allow": [...], "ask": [...], "deny": [...]}}``), else from the usual settings files
for ``--cwd``. The decision is the gate's own table (``sidecar.permissions.decide``).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.permissions.decide import decide as decide_request
from sidecar.permissions.rules import Rule
from sidecar.shell.classify import Analysis, Where, analyze
from sidecar.tools.bash.command_request import command_request


@dataclass
class Verdict:
    decision: str  # allow | ask | deny
    rule: str | None
    reason: str


def decide(analysis: Analysis, rules: list[Rule], cwd: Path, mode: str = "default") -> Verdict:
    """The gate's decision for a Bash call in ``cwd`` (the one root), minus hooks and the user: the
    shared table (``sidecar.permissions.decide``) on the request the Bash tool sends."""
    decision = decide_request(command_request(analysis), rules, mode, [cwd], cwd=cwd)
    rule_text = decision.rule if decision.decided_by == "rule" else None
    return Verdict(decision.verdict, rule_text, decision.reason)


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

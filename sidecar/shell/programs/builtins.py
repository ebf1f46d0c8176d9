"""Shell builtins: test/[, read, set, env, command."""

from __future__ import annotations

from sidecar.shell import options as _opts
from sidecar.shell.base import Verdict
from sidecar.shell.options import unquoted_expansion
from sidecar.shell.parse import SimpleCommand, assignable


def _check_command_builtin(args: list[str], lit: list[bool]) -> Verdict:
    if args and args[0] in ("-v", "-V"):
        return None
    return ("execute", "command runs a program")


def _check_env(args: list[str], lit: list[bool]) -> Verdict:
    return None if not args else ("execute", "env with arguments runs a program with a changed environment")


def _check_set(args: list[str], lit: list[bool]) -> Verdict:
    if (all(a.startswith(("-", "+")) for a in args) and "-o" not in args and "+o" not in args) or args in (
        ["-o", "pipefail"],
        ["-euo", "pipefail"],
        ["-eo", "pipefail"],
        ["-uo", "pipefail"],
    ):
        return None
    return ("unknown", "set changes shell state")


_TEST_UNARY = frozenset("-a -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x -G -L -N -O -S -z -n -o".split())


_TEST_BINARY = frozenset("= == != < > -eq -ne -lt -le -gt -ge -nt -ot -ef =~".split())


def _check_test_ro(cmd: SimpleCommand) -> str | None:
    words, raw, lit = cmd.args, cmd.raw_words[1:], cmd.literal[1:]
    if cmd.name == "[":
        if not words or words[-1] != "]":
            return "[ without ]"
        words, raw, lit = words[:-1], raw[:-1], lit[:-1]
    for k, w in enumerate(words):
        if lit[k] and w in ("-v", "-R"):
            return "test -v evaluates array subscripts, which can run code"
        if not lit[k]:
            if unquoted_expansion(raw[k]) or any(ch in _opts_glob for ch in raw[k]):
                return f"`{raw[k]}` is split or globbed at run time and could become a test operator"
            prev = words[k - 1] if k and lit[k - 1] else None
            nxt = words[k + 1] if k + 1 < len(words) and lit[k + 1] else None
            if not ((prev in _TEST_UNARY or prev in _TEST_BINARY) or nxt in _TEST_BINARY):
                return f"`{raw[k]}` is only known at run time and could become a test operator (-v)"
    return None


_opts_glob = set("*?[")


def _check_read_ro(cmd: SimpleCommand, parsed: _opts.Parsed) -> str | None:
    names = [cmd.args[i] for i in parsed.operands] + parsed.values.get("-a", [])
    for i in parsed.operands:
        if not cmd.literal[1 + i]:
            return "read into a variable named at run time"
    bad = [n for n in names if not assignable(n)]
    if bad:
        return f"read assigns {bad[0]}, which changes later commands (or evaluates a subscript)"
    return None


_SET_OK_OPTIONS = frozenset({"pipefail", "errexit", "nounset", "xtrace", "verbose", "noclobber", "noglob"})


def _check_set_ro(args: list[str]) -> str | None:
    i = 0
    while i < len(args):
        a = args[i]
        if a[:1] not in "-+" or len(a) < 2 or a == "--":
            return "set with arguments changes the positional parameters"
        letters = a[1:]
        for k, c in enumerate(letters):
            if c == "o":
                value = letters[k + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                if not letters[k + 1 :]:
                    i += 1
                if value not in _SET_OK_OPTIONS:
                    return f"set -o {value} changes how later commands run"
                break
            if c not in "euxvfC":
                return f"set -{c} changes how later commands run (-a exports, -k takes assignments anywhere)"
        i += 1
    return None

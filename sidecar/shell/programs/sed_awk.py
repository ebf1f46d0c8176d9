"""sed and awk: their option tables, the script or program read as the program would read it (sed's
``w``/``e``/``s///w``, awk's ``system``/pipes/redirections refused), and the files their scripts read."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from sidecar.shell import options as _opts
from sidecar.shell.base import Analysis, Verdict
from sidecar.shell.parse import SimpleCommand


def _check_sed(args: list[str]) -> Verdict:
    scripts: list[str] = []
    i = 0
    has_e = False
    while i < len(args):
        a = args[i]
        if (
            a in ("-i", "--in-place")
            or (a.startswith("-") and not a.startswith("--") and "i" in a[1:])
            or a.startswith("--in-place")
        ):
            return ("write", "sed -i edits files in place")
        if (
            a in ("-f", "--file")
            or a.startswith("--file=")
            or (a.startswith("-") and not a.startswith("--") and "f" in a[1:])
        ):
            return ("execute", "sed script file not inspected")
        if a in ("-e", "--expression"):
            has_e = True
            if i + 1 < len(args):
                scripts.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--expression="):
            has_e = True
            scripts.append(a.split("=", 1)[1])
        elif a in ("-l", "--line-length"):
            i += 1
        elif not a.startswith("-") and not has_e and not scripts:
            scripts.append(a)
        i += 1
    for s in scripts:
        if not _sed_script_is_safe(s):
            return ("write", "sed script may write files or run commands (w, e, W, s///e, s///w)")
    return None


_SED_SIMPLE = set("pPdDnNqQ=lgGhHxz{}!")


def _sed_script_is_safe(script: str, reads: list[str] | None = None) -> bool:
    """Whether the sed script cannot write or run anything; the files its ``r``/``R`` commands read are
    appended to ``reads``."""
    i, n = 0, len(script)

    def skip_regex(j: int, delim: str) -> int:
        while j < n and script[j] != delim:
            j += 2 if script[j] == "\\" else 1
        return j + 1

    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        # addresses
        if c.isdigit() or c in "$,~+":
            i += 1
            continue
        if c == "/":
            i = skip_regex(i + 1, "/")
            if i < n and script[i] in "IM":
                i += 1
            continue
        if c == "\\" and i + 1 < n:
            i = skip_regex(i + 2, script[i + 1])
            continue
        if c in _SED_SIMPLE:
            i += 1
            if c in "qQlL":
                while i < n and script[i].isdigit():
                    i += 1
            continue
        if c in ":btT":
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if c in "aic":
            # The text runs to the end of the line (a trailing backslash continues it); the next line
            # is a new command: `1a x⏎w F` writes F.
            i += 1
            while i < n and script[i] != "\n":
                i += 2 if script[i] == "\\" else 1
            continue
        if c == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        if c in "rRF":
            if c == "F":
                i += 1
                continue
            start = i + 1
            while i < n and script[i] != "\n":  # reads a file: judged as a read path
                i += 1
            if reads is not None and script[start:i].strip():
                reads.append(script[start:i].strip())
            continue
        if c in "sy":
            if i + 1 >= n:
                return False
            delim = script[i + 1]
            if delim in "\\\n":
                return False
            j = skip_regex(i + 2, delim)
            j = skip_regex(j, delim)
            if j > n:
                return False
            if c == "s":
                while j < n and script[j] not in ";\n}":
                    if script[j] not in "gpiIm0123456789M ":
                        return False  # e (execute), w (write) or something we do not know
                    j += 1
            i = j
            continue
        return False  # w, W, e, v and anything unknown
    return True


def _check_awk(args: list[str]) -> Verdict:
    program: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load") or a.startswith(
            ("--file=", "--exec=", "--include=", "--load=")
        ):
            return ("execute", "awk program file or extension not inspected")
        if a in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if a == "--":
            if i + 1 < len(args):
                program = args[i + 1]
            break
        if not a.startswith("-"):
            program = a
            break
        i += 1
    if program is None:
        return ("execute", "awk without a visible program")
    if re.search(r"system|\||>|@|getline|ENVIRON\[|PROCINFO|fflush|close", program):
        return ("execute", "awk program may run commands or write files (system, |, >)")
    return None


_ASSIGNMENT_OPERAND = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _script_file_args(cmd: SimpleCommand, spec: _opts.Spec, script_options: tuple[str, str], analysis: Analysis,
                      add: Callable[[str, bool, list[Path]], None]) -> None:
    """sed/awk: the files after the script (awk's ``var=value`` operands are not files), and the files a
    sed script reads with ``r``/``R``."""
    args, lit = cmd.args, cmd.literal[1:]
    parsed = _opts.parse_options(spec, args, cmd.raw_words[1:], lit)
    given = parsed.values.get(script_options[0], []) + parsed.values.get(script_options[1], [])
    operands = parsed.operands if given else parsed.operands[1:]
    scripts = given or [args[k] for k in parsed.operands[:1] if lit[k]]
    for k in operands:
        if spec is _AWK_SPEC and _ASSIGNMENT_OPERAND.match(args[k]):
            continue
        add(args[k], lit[k], analysis.read_paths)
    if spec is _SED_SPEC:
        for script in scripts:
            reads: list[str] = []
            _sed_script_is_safe(script, reads)
            for name in reads:
                add(name, True, analysis.read_paths)


_SED_SPEC = _opts.Spec(
    flags="nrEsuz", values="el",
    long_flags=frozenset({"--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered",
                          "--null-data", "--debug", "--posix", "--sandbox", "--follow-symlinks"}),
    long_values=frozenset({"--expression", "--line-length"}),
)


def _inline_programs(cmd: SimpleCommand, parsed: _opts.Parsed, options: tuple[str, str],
                     what: str) -> list[str] | str:
    """The programs a sed/awk command runs: those given with ``options`` (``-e``/its long form), else
    its first operand; a reason string when there is none or it is only known at run time."""
    programs = parsed.values.get(options[0], []) + parsed.values.get(options[1], [])
    if programs:
        return programs
    if not parsed.operands:
        return f"{what} without a visible program"
    k = parsed.operands[0]
    if not cmd.literal[1 + k]:
        return f"{what} program only known at run time"
    return [cmd.args[k]]


def _check_sed_ro(cmd: SimpleCommand) -> str | None:
    parsed = _opts.parse_options(_SED_SPEC, cmd.args, cmd.raw_words[1:], cmd.literal[1:])
    if not parsed.ok:
        return parsed.reason + " (sed -i edits in place, -f reads a script we do not see)"
    scripts = _inline_programs(cmd, parsed, ("-e", "--expression"), "sed")
    if isinstance(scripts, str):
        return scripts
    given_with_e = bool(parsed.values.get("-e") or parsed.values.get("--expression"))
    if given_with_e and not all(cmd.literal[1 + k] for k in range(len(cmd.args))):
        return "sed with words only known at run time"
    for s in scripts:
        if not _sed_script_is_safe(s):
            return "sed script may write files or run commands (w, W, e, s///e, s///w)"
    return None


_AWK_SPEC = _opts.Spec(
    flags="bcNPrS", values="Fve",
    long_flags=frozenset({"--posix", "--traditional", "--sandbox", "--characters-as-bytes", "--re-interval"}),
    long_values=frozenset({"--field-separator", "--assign", "--source"}),
)


def _check_awk_ro(cmd: SimpleCommand) -> str | None:
    parsed = _opts.parse_options(_AWK_SPEC, cmd.args, cmd.raw_words[1:], cmd.literal[1:])
    if not parsed.ok:
        return parsed.reason + " (awk -f/-E/-i/-l load code, -W and --profile/--dump-variables write)"
    programs = _inline_programs(cmd, parsed, ("-e", "--source"), "awk")
    if isinstance(programs, str):
        return programs
    for program in programs:
        if re.search(r"system|\||>|@|getline|ENVIRON|PROCINFO|fflush|close|printf?\s*>", program):
            return "awk program may run commands or write files (system, |, >)"
        if re.search(r"ARGV|ARGC", program):
            return "awk program changes ARGV/ARGC: it reads files no operand names"
    if any(re.match(r"ARG[VC]", v) for v in parsed.values.get("-v", []) + parsed.values.get("--assign", [])) or any(
            re.match(r"ARG[VC]", cmd.args[k]) for k in parsed.operands):
        return "awk assigns ARGV/ARGC: it reads files no operand names"
    return None

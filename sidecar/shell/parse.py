"""Shell command → simple commands, with bashlex.

Every simple command the shell would run becomes a ``SimpleCommand``: the parts of ``&&``, ``||``,
``;``, ``|`` and ``&``; commands in subshells, brace groups, loops and conditionals; ``$(…)``,
backticks and process substitutions (wherever they appear: words, assignments, redirection targets);
the strings given to ``sh -c`` / ``bash -c`` / ``eval`` (parsed again, recursively); the command that
``xargs`` runs and the one ``find -exec`` runs. Wrappers that only change how a command runs
(``timeout``, ``nice``, ``nohup``, ``time`` …) are unwrapped.

A command bashlex cannot parse yields ``ParsedCommand.error`` and no commands: callers must treat it
as not read-only. Nothing here decides safety; ``classify`` does.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

# bashlex is imported where it is used: it builds its parser tables at import (about a second).

# Shells whose ``-c STRING`` is parsed again as a command.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox-sh"})
# Wrappers that run the rest of their words as a command, and how many option words take a value.
WRAPPER_VALUE_OPTS: dict[str, frozenset[str]] = {
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
}
# Wrappers whose first positional word is not the command (timeout DURATION cmd).
WRAPPER_SKIP_POSITIONAL = {"timeout": 1}
MAX_DEPTH = 8


@dataclass
class Redirect:
    op: str  # '>', '>>', '>|', '&>', '>&', '<', '<>', '<<', '<<<' ...
    fd: int | None
    target: str | None  # the file word; None for an fd duplication (2>&1)
    dup_fd: int | None = None
    literal: bool = True

    @property
    def writes(self) -> bool:
        return self.op in (">", ">>", ">|", "&>", ">&", "<>", "&>>") and self.target is not None


@dataclass
class SimpleCommand:
    words: list[str]  # quote-removed words (expansions left as written)
    literal: list[bool]  # per word: no expansion, glob or brace that could change it at run time
    raw_words: list[str]  # words as written (quotes kept)
    assignments: list[str] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    # How it was reached: None (top level), "sh -c", "eval", "xargs", "find -exec", "$()", "<()", "wrapper".
    via: str | None = None
    # Run with arguments not visible here (xargs appends stdin words).
    extra_args: bool = False
    # An unquoted here-document whose body contains expansions or substitutions.
    dynamic_heredoc: bool = False
    # Set for a wrapper (sh -c …, eval, timeout …) whose inner commands were listed separately.
    transparent: bool = False
    # Holds the redirections of a compound command (``{ …; } > f``, ``while …; done < f``).
    redirect_only: bool = False

    @property
    def name(self) -> str:
        return self.words[0] if self.words else ""

    @property
    def args(self) -> list[str]:
        return self.words[1:]

    @property
    def text(self) -> str:
        """The command as the rules see it: assignments and words as written, single-spaced."""
        return " ".join([*self.assignments, *self.raw_words])


@dataclass
class ParsedCommand:
    source: str
    commands: list[SimpleCommand]
    error: str | None = None


# ---- pre-pass: constructs bashlex does not know, rewritten to same-length equivalents ------------

_QUOTED_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"])([A-Za-z_][A-Za-z0-9_]*)\2")
_BACKSLASH_HEREDOC = re.compile(r"<<(-?)[ \t]*\\([A-Za-z_][A-Za-z0-9_]*)")
_ARITH = re.compile(r"\$\(\(([^()`$]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z0-9_]+\}|\([^()`$]*\))*\)\)")
_DOUBLE_BRACKET = re.compile(r"\[\[ ((?:[^\]`$\n]|\$[A-Za-z_{][A-Za-z0-9_}]*|\][^\]])*?) \]\]")


def _pad(match: re.Match[str], replacement: str) -> str:
    return replacement + " " * (len(match.group(0)) - len(replacement))


def _prepare(source: str) -> tuple[str, list[tuple[int, int]]]:
    """Rewrite quoted here-doc delimiters, ``$((…))`` and ``[[ … ]]`` without moving any position.

    Returns the rewritten text and the spans of ``[[ … ]]`` tests (now the word ``true``)."""
    out = _QUOTED_HEREDOC.sub(lambda m: _pad(m, f"<<{m.group(1)}{m.group(3)}"), source)
    out = _BACKSLASH_HEREDOC.sub(lambda m: _pad(m, f"<<{m.group(1)}{m.group(2)}"), out)
    out = _ARITH.sub(lambda m: "1" * len(m.group(0)), out)
    tests = [m.span() for m in _DOUBLE_BRACKET.finditer(out)]
    out = _DOUBLE_BRACKET.sub(lambda m: _pad(m, "true"), out)
    return out, tests


_QUOTED_DELIMS = re.compile(r"<<-?[ \t]*(?:(['\"])([A-Za-z_][A-Za-z0-9_]*)\1|\\([A-Za-z_][A-Za-z0-9_]*))")


# ---- word analysis -----------------------------------------------------------------------------


def _unquoted_chars(raw: str) -> str:
    """The characters of a word outside quotes and not backslash-escaped."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(raw):
        c = raw[i]
        if quote == "'":
            if c == "'":
                quote = None
        elif c == "\\" and quote != "'":
            i += 2
            continue
        elif quote == '"':
            if c == '"':
                quote = None
        elif c in "'\"":
            quote = c
        else:
            out.append(c)
        i += 1
    return "".join(out)


_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


def _word_is_literal(node: Any, raw: str) -> bool:
    for part in getattr(node, "parts", []) or []:
        if part.kind in ("parameter", "commandsubstitution", "processsubstitution"):
            return False
    unq = _unquoted_chars(raw)
    if any(c in unq for c in "*?$`") or re.search(r"\[.*\]", unq):
        return False
    return not _BRACE.search(unq)


# ---- the walk ----------------------------------------------------------------------------------


class _Collector:
    def __init__(self, source: str, original: str, depth: int, tests: list[tuple[int, int]]) -> None:
        self.source = source
        self.tests = dict(tests)
        self.original = original
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.quoted_heredocs = {m.group(2) or m.group(3) for m in _QUOTED_DELIMS.finditer(original)}

    def raw(self, node: Any) -> str:
        start, end = node.pos
        return self.original[start : self.tests.get(start, end)]

    def walk(self, node: Any, via: str | None = None) -> None:
        kind = getattr(node, "kind", None)
        if kind == "command":
            self.command(node, via)
            return
        if kind == "commandsubstitution":
            self.walk(node.command, "$()")
            return
        if kind == "processsubstitution":
            self.walk(node.command, "<()")
            return
        for attr in ("parts", "list"):
            for child in getattr(node, attr, None) or []:
                self.walk(child, via)
        redirects = getattr(node, "redirects", None) or []
        if redirects:
            holder = SimpleCommand(words=[], literal=[], raw_words=[], via=via, redirect_only=True)
            holder.redirects = [self.redirect(r, holder) for r in redirects]
            self.commands.append(holder)
            for child in redirects:
                self.walk_children(child)
        import bashlex.ast  # lazy: see the note at the top

        for attr in ("command", "output", "heredoc"):
            child = getattr(node, attr, None)
            if isinstance(child, bashlex.ast.node):
                self.walk(child, via)

    def command(self, node: Any, via: str | None) -> None:
        cmd = SimpleCommand(words=[], literal=[], raw_words=[], via=via)
        nested: list[Any] = []
        for part in node.parts:
            if part.kind == "assignment":
                cmd.assignments.append(self.raw(part))
                nested.append(part)
            elif part.kind == "word":
                raw = self.raw(part)
                cmd.words.append(part.word)
                cmd.raw_words.append(raw)
                cmd.literal.append(part.pos[0] in self.tests or _word_is_literal(part, raw))
                nested.append(part)
            elif part.kind == "redirect":
                cmd.redirects.append(self.redirect(part, cmd))
                nested.append(part)
        self.commands.append(cmd)
        for part in nested:
            self.walk_children(part)
        self.unwrap(cmd)

    def walk_children(self, node: Any) -> None:
        import bashlex.ast  # lazy: see the note at the top

        for child in getattr(node, "parts", None) or []:
            self.walk(child)
        for attr in ("output", "heredoc"):
            child = getattr(node, attr, None)
            if isinstance(child, bashlex.ast.node):
                self.walk_children(child) if child.kind == "word" else None

    def redirect(self, node: Any, cmd: SimpleCommand) -> Redirect:
        op = node.type
        fd = node.input if isinstance(node.input, int) else None
        out = node.output
        if isinstance(out, int):
            return Redirect(op=op, fd=fd, target=None, dup_fd=out)
        if op in ("<<", "<<-"):
            delim = out.word if out is not None else ""
            body = getattr(getattr(node, "heredoc", None), "value", "") or ""
            if delim not in self.quoted_heredocs and re.search(r"\$|`", body):
                cmd.dynamic_heredoc = True
            return Redirect(op=op, fd=fd, target=None)
        if out is None:
            return Redirect(op=op, fd=fd, target=None)
        raw = self.raw(out)
        return Redirect(op=op, fd=fd, target=out.word, literal=_word_is_literal(out, raw))

    # ---- commands inside commands -----------------------------------------------------------
    def add_parsed(self, text: str, via: str) -> bool:
        if self.depth >= MAX_DEPTH:
            return False
        inner = parse(text, _depth=self.depth + 1)
        if inner.error is not None:
            return False
        for c in inner.commands:
            c.via = c.via or via
            self.commands.append(c)
        return True

    def add_words(
        self, words: list[str], raw: list[str], literal: list[bool], via: str, extra_args: bool = False
    ) -> None:
        if not words:
            return
        inner = SimpleCommand(
            words=list(words), literal=list(literal), raw_words=list(raw), via=via, extra_args=extra_args
        )
        self.commands.append(inner)
        self.unwrap(inner)

    def unwrap(self, cmd: SimpleCommand) -> None:
        name = cmd.name
        if not name or not cmd.literal[0]:
            return
        base = name.rsplit("/", 1)[-1]
        words, raw, lit = cmd.words, cmd.raw_words, cmd.literal
        if base in SHELLS:
            self._unwrap_shell(cmd)
        elif base == "eval" and len(words) > 1:
            if all(lit[1:]) and self.add_parsed(" ".join(words[1:]), "eval"):
                cmd.transparent = True
        elif base in WRAPPER_VALUE_OPTS:
            if base == "command" and len(words) > 1 and words[1] in ("-v", "-V"):
                return
            i = 1
            value_opts = WRAPPER_VALUE_OPTS[base]
            while i < len(words) and words[i].startswith("-") and words[i] != "-":
                if words[i] == "--":
                    i += 1
                    break
                i += 2 if words[i] in value_opts else 1
            i += WRAPPER_SKIP_POSITIONAL.get(base, 0)
            if i < len(words):
                self.add_words(words[i:], raw[i:], lit[i:], "wrapper")
                cmd.transparent = True
        elif base in ("sudo", "doas"):
            # Listed separately so the inner command is judged too; sudo itself stays a part.
            i = 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in ("-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U") else 1
            if i < len(words):
                self.add_words(words[i:], raw[i:], lit[i:], "sudo")
        elif base == "xargs":
            self._unwrap_xargs(cmd)
        elif base in ("find", "fd", "fdfind"):
            self._unwrap_find(cmd)

    def _unwrap_shell(self, cmd: SimpleCommand) -> None:
        words = cmd.words
        for i, w in enumerate(words[1:], start=1):
            if w.startswith("-") and not w.startswith("--") and "c" in w[1:]:
                if i + 1 < len(words) and cmd.literal[i + 1] and self.add_parsed(words[i + 1], "sh -c"):
                    cmd.transparent = True
                return
            if not w.startswith("-"):
                return

    def _unwrap_xargs(self, cmd: SimpleCommand) -> None:
        words = cmd.words
        takes_value = {
            "-I",
            "-L",
            "-n",
            "-P",
            "-d",
            "-s",
            "-E",
            "-e",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-lines",
            "--max-chars",
            "--replace",
            "--eof",
        }
        i = 1
        while i < len(words) and words[i].startswith("-"):
            w = words[i]
            if w == "--":
                i += 1
                break
            i += 2 if w in takes_value else 1
        if i < len(words):
            self.add_words(words[i:], cmd.raw_words[i:], cmd.literal[i:], "xargs", extra_args=True)
        else:
            self.add_words(["echo"], ["echo"], [True], "xargs", extra_args=True)
        cmd.transparent = True

    def _unwrap_find(self, cmd: SimpleCommand) -> None:
        words = cmd.words
        execs = (
            {"-exec", "-execdir", "-ok", "-okdir"}
            if cmd.name.endswith("find")
            else {"-x", "--exec", "-X", "--exec-batch"}
        )
        i = 1
        while i < len(words):
            if words[i] in execs:
                j = i + 1
                while j < len(words) and words[j] not in (";", "+", "\\;"):
                    j += 1
                self.add_words(
                    words[i + 1 : j],
                    cmd.raw_words[i + 1 : j],
                    cmd.literal[i + 1 : j],
                    "find -exec",
                    extra_args=True,
                )
                i = j
            i += 1


# A command of plain words (no operators, expansions, globs, escapes or redirections) splits the same
# with shlex as with bash; bashlex costs milliseconds, this microseconds.
_PLAIN = re.compile(r"[A-Za-z0-9_\-./=:,@%+ \t]*(?:(?:'[^']*'|\"[^\"$`\\!]*\")[A-Za-z0-9_\-./=:,@%+ \t]*)*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _parse_plain(command: str, depth: int) -> ParsedCommand | None:
    try:
        words = shlex.split(command)
        lexer = shlex.shlex(command, posix=False)
        lexer.whitespace_split = True
        raw = list(lexer)
    except ValueError:
        return None
    if len(words) != len(raw) or not words:
        return None
    n = 0
    while n < len(raw) and _ASSIGNMENT.match(raw[n]):
        n += 1
    cmd = SimpleCommand(
        words=words[n:], literal=[True] * (len(words) - n), raw_words=raw[n:], assignments=raw[:n]
    )
    collector = _Collector(command, command, depth, [])
    collector.commands.append(cmd)
    collector.unwrap(cmd)
    return ParsedCommand(command, collector.commands)


def parse(command: str, _depth: int = 0) -> ParsedCommand:
    """Parse ``command`` into the simple commands it would run. Never raises."""
    if not command.strip():
        return ParsedCommand(command, [])
    if _PLAIN.fullmatch(command):
        plain = _parse_plain(command, _depth)
        if plain is not None:
            return plain
    prepared, tests = _prepare(command)
    import bashlex  # lazy: see the note at the top

    try:
        trees = bashlex.parse(prepared)
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError, IndexError ...
        return ParsedCommand(command, [], error=f"{type(exc).__name__}: {exc}")
    collector = _Collector(prepared, command, _depth, tests)
    try:
        for tree in trees:
            collector.walk(tree)
    except Exception as exc:
        return ParsedCommand(command, [], error=f"{type(exc).__name__}: {exc}")
    return ParsedCommand(command, collector.commands)

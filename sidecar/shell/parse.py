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


@dataclass(frozen=True)
class Wrapper:
    """A program that runs the rest of its words as a command (``timeout 5 CMD``).

    ``flags``/``values``: options read exactly (clusters, attached values) — any other option, and the
    wrapper is not *transparent* (it stays a part of its own, judged like any program) although its inner
    command is still listed, so deny rules see through it. ``skip``: positional words before the command
    (``timeout DURATION``, ``flock FILE``, ``chroot DIR``). ``transparent``: the wrapper changes nothing
    that matters for read-only (timeout, nice, nohup …); others (sudo, setsid, flock …) stay parts.
    """

    flags: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()
    skip: int = 0
    transparent: bool = True
    string: frozenset[str] = frozenset()  # options whose value is a shell command string (-c)
    numeric: bool = False


def _w(flags: str = "", values: str = "", **kw: Any) -> Wrapper:
    return Wrapper(frozenset(flags.split()), frozenset(values.split()), **kw)


WRAPPERS: dict[str, Wrapper] = {
    "timeout": _w("--preserve-status --foreground -v --verbose", "-s --signal -k --kill-after", skip=1),
    "nice": _w("", "-n --adjustment", numeric=True),
    "nohup": _w(),
    "time": _w("-p -v --verbose -q --quiet --portability", "-f --format"),
    "stdbuf": _w("", "-i -o -e --input --output --error"),
    "command": _w("-p"),
    "builtin": _w(),
    "exec": _w("-c -l", "-a"),
    "ionice": _w("-t --ignore", "-c -n --class --classdata"),
    "env": _w("-i --ignore-environment -0 --null", "-u --unset", transparent=False),
    "setsid": _w("-c --ctty -f --fork -w --wait", transparent=False),
    "flock": _w("-s --shared -x --exclusive -e -n --nb --nonblock -u --unlock -o --close -F --no-fork "
                "--verbose", "-w --wait --timeout -E --conflict-exit-code", skip=1, transparent=False,
                string=frozenset({"-c", "--command"})),
    "watch": _w("-b --beep -e --errexit -g --chgexit -t --no-title -x --exec -c --color -p --precise",
                "-n --interval -d --differences", transparent=False),
    "strace": _w("-f -ff -c -C -q -qq -t -tt -ttt -T -v -V -x -xx -y -yy -k -w -Z -z",
                 "-e -o -p -s -u -E -a -b -I -O -S -P -X", transparent=False),
    "ltrace": _w("-f -c -C -i -r -S -t -tt -ttt -T", "-e -o -p -s -u -n -a -l", transparent=False),
    "chroot": _w("--skip-chdir", "--userspec --groups", skip=1, transparent=False),
    "unshare": _w("-m --mount -u --uts -i --ipc -n --net -p --pid -U --user -C --cgroup -T --time -f --fork "
                  "-r --map-root-user -c --map-current-user --mount-proc --kill-child", "-S -G --setuid "
                  "--setgid -R --root -w --wd", transparent=False),
    "script": _w("-a --append -e --return -f --flush -q --quiet -E", "-t --timing -O --log-out",
                 transparent=False, string=frozenset({"-c", "--command"})),
    "sudo": _w("-E -H -n -S -b -i -s -k -K -P -A -e", "-u -g -C -h -p -r -t -U -D", transparent=False),
    "doas": _w("-n -s", "-u -C", transparent=False),
    "xvfb-run": _w("-a", "-n -s -e -f -p", transparent=False),
    "firejail": _w("", "", transparent=False),
    "systemd-run": _w("--user --scope -q --quiet --wait -P --pipe -t --pty", "-u --unit -p --property",
                      transparent=False),
    "caffeinate": _w("-d -i -m -s -u", "-t -w"),
    "parallel": _w("-k --keep-order -q --quote -u --ungroup --line-buffer -v --verbose --dry-run",
                   "-j --jobs -n --max-args -N -I -d --delimiter", transparent=False),
}
MAX_DEPTH = 8
_XARGS_LONG_VALUE = frozenset({"--arg-file", "--delimiter", "--max-args", "--max-chars", "--max-procs",
                               "--process-slot-var"})
_XARGS_LONG_FLAG = frozenset({"--null", "--eof", "--replace", "--max-lines", "--open-tty", "--interactive",
                              "--no-run-if-empty", "--verbose", "--show-limits", "--exit"})


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
    # Per word, where it stands in the top-level command text (start, end); None for a command parsed
    # from a string (``sh -c``, ``eval``) or by the plain-word path. Used to run a glob's judged expansion.
    spans: list[tuple[int, int]] | None = None

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
    # Expansions or shell-state changes that can run code although no command shows it (``${x@P}``,
    # ``$((a[$(cmd)]))``, ``for PATH in …``): each makes the command not read-only.
    hazards: list[str] = field(default_factory=list)


# Names a command may assign (``for x in``, ``read x``) without changing what later commands run:
# lower-case names (bash's own and the environment's variables that matter are upper-case).
_ASSIGNABLE = re.compile(r"[a-z_][a-z0-9_]*")


def assignable(name: str) -> bool:
    """Whether assigning ``name`` leaves later commands' meaning unchanged (``PATH``, ``GIT_DIR`` do not)."""
    return _ASSIGNABLE.fullmatch(name) is not None


# ---- pre-pass: one quote-exact scan of the source -------------------------------------------------
#
# bashlex lacks ``[[ … ]]``, ``$((…))`` and quoted here-doc delimiters, and it does not look inside
# ``${…}``. One left-to-right scan, which tracks quotes, ``$(…)``/backticks, comments and here-doc
# bodies exactly as bash reads them, finds those constructs *only where bash would see them*:
#
# - ``[[ … ]]`` whose operands cannot run code becomes the word ``true`` (same length);
# - ``$((…))`` of numbers and operators only becomes ``1…1`` (same length);
# - a quoted here-doc delimiter loses its quotes (same length) and its position is remembered, so each
#   here-doc is judged by its own quoting, not by its delimiter's name;
# - everything that can run code through an expansion becomes a *hazard* (``${x@P}``, ``${!x}``,
#   ``${x:1}``, ``$(…)`` inside ``${…}``, ``$[…]``, ``((…))``, arithmetic with names …).
#
# Anything the scan leaves in place that bashlex does not know makes bashlex fail: the command asks.

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_PARAM = re.compile(r"[0-9]|[@*#?$!-]")
_ARITH_SAFE = re.compile(r"[0-9\s+\-*/%()<>=!&|^~?:,]*")
_ARITH_TEST_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_WORD_BREAK = set(" \t\n;&|()<>")
# ${name@op}: transformations that only quote or re-case the value (`@P` expands it as a prompt, which
# runs command substitutions: not listed).
_SAFE_TRANSFORMS = frozenset({"@Q", "@E", "@U", "@u", "@L", "@a", "@A", "@K", "@k"})
# ${name<op>word}: operators whose word is only expanded (no assignment, no arithmetic, no prompt).
_PARAM_OPS = (":-", ":+", ":?", "##", "%%", "-", "+", "?", "#", "%")


@dataclass
class Scan:
    prepared: str
    tests: list[tuple[int, int]] = field(default_factory=list)
    quoted_heredocs: set[int] = field(default_factory=set)  # positions of quoted delimiter words
    hazards: list[str] = field(default_factory=list)


def _param_hazard(body: str) -> str | None:
    """Why ``${body}`` can run code or change state, or None. Only plain forms are accepted."""
    if body.startswith("#"):
        rest = body[1:]
        if _IDENT.fullmatch(rest) or _SPECIAL_PARAM.fullmatch(rest) or rest == "":
            return None
    m = _IDENT.match(body) or _SPECIAL_PARAM.match(body)
    if m is None:
        return f"${{{body}}}: indirect or unusual parameter expansion"
    rest = body[m.end() :]
    if rest == "" or rest in _SAFE_TRANSFORMS:
        return None
    op = next((o for o in _PARAM_OPS if rest.startswith(o)), None)
    if op is None:
        return f"${{{body}}}: expansion that can evaluate, assign or re-expand (only :- :+ # % forms are read-only)"
    word = rest[len(op) :]
    if any(t in word for t in ("$(", "`", "${", "$[", "$((")):
        return f"${{{body}}}: substitution inside a parameter expansion"
    return None


def _scan(source: str) -> Scan:
    out = list(source)
    scan = Scan(source)
    n = len(source)
    stack: list[str] = ["top"]  # contexts: top, '"', '$(', '(', '`'
    pending: list[tuple[str, bool]] = []  # here-docs waiting for the next newline: (delimiter, strip tabs)
    i = 0

    def code() -> bool:
        return stack[-1] != '"'

    def word_start(j: int) -> bool:
        return j == 0 or source[j - 1] in _WORD_BREAK

    while i < n:
        c = source[i]
        ctx = stack[-1]
        if c == "\\":
            i += 2
            continue
        if ctx == '"':
            if c == '"':
                stack.pop()
                i += 1
                continue
            if c == "`":
                stack.append("`")
                i += 1
                continue
            if c == "$":
                i = _dollar(source, i, scan, stack, out)
                continue
            i += 1
            continue
        # code context
        if c == "'":
            j = source.find("'", i + 1)
            if j < 0:
                scan.hazards.append("unterminated quote")
                return scan
            i = j + 1
            continue
        if c == '"':
            stack.append('"')
            i += 1
            continue
        if c == "`":
            if ctx == "`":
                stack.pop()
            else:
                stack.append("`")
            i += 1
            continue
        if c == "#" and word_start(i):
            j = source.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "$":
            if source.startswith("$'", i):
                j = i + 2
                while j < n and source[j] != "'":
                    j += 2 if source[j] == "\\" else 1
                i = j + 1
                continue
            i = _dollar(source, i, scan, stack, out)
            continue
        if c == "(":
            if source.startswith("((", i) and word_start(i):
                scan.hazards.append("(( … )) evaluates arithmetic, which can run code through array subscripts")
            stack.append("(")
            i += 1
            continue
        if c == ")":
            if ctx in ("(", "$("):
                stack.pop()
            i += 1
            continue
        if c == "[" and source.startswith("[[", i) and word_start(i) and i + 2 < n and source[i + 2] in " \t":
            i = _double_bracket(source, i, scan, out)
            continue
        if c == "<" and source.startswith("<<", i) and not source.startswith("<<<", i):
            i = _heredoc_op(source, i, scan, out, pending)
            continue
        if c == "\n" and pending:
            i = _heredoc_bodies(source, i + 1, pending)
            pending.clear()
            continue
        i += 1
    scan.prepared = "".join(out)
    return scan


def _dollar(source: str, i: int, scan: Scan, stack: list[str], out: list[str]) -> int:
    """At a ``$`` in code or inside double quotes; returns the next position to scan."""
    n = len(source)
    if source.startswith("$((", i):
        depth, j = 0, i + 1
        while j < n:
            if source[j] == "(":
                depth += 1
            elif source[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        body = source[i + 3 : j - 1]
        if j < n and source[j - 1] == ")" and _ARITH_SAFE.fullmatch(body) and "\n" not in body:
            for k in range(i, j + 1):
                out[k] = "1"
            return j + 1
        scan.hazards.append("$(( … )) with names or substitutions evaluates arithmetic, which can run code")
        return j + 1
    if source.startswith("$(", i):
        stack.append("$(")
        return i + 2
    if source.startswith("$[", i):
        scan.hazards.append("$[ … ] evaluates arithmetic")
        return i + 2
    if source.startswith("${", i):
        depth, j = 1, i + 2
        while j < n and depth:
            if source[j] == "\\":
                j += 2
                continue
            if source.startswith("${", j):
                depth += 1
                j += 2
                continue
            if source[j] == "}":
                depth -= 1
            j += 1
        body = source[i + 2 : j - 1]
        why = _param_hazard(body)
        if why:
            scan.hazards.append(why)
        return j
    return i + 1


def _double_bracket(source: str, i: int, scan: Scan, out: list[str]) -> int:
    n = len(source)
    j = i + 2
    quote: str | None = None
    while j < n:
        c = source[j]
        if c == "\\" and quote != "'":
            j += 2
            continue
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "\n":
            break
        elif source.startswith("]]", j) and source[j - 1] in " \t" and (j + 2 >= n or source[j + 2] in _WORD_BREAK):
            break
        j += 1
    if j >= n or source[j] != "]" or quote:
        scan.hazards.append("[[ without a closing ]] on the same line")
        return j
    body = source[i + 2 : j]
    why = _test_hazard(body)
    if why:
        scan.hazards.append(why)
    else:
        end = j + 2
        scan.tests.append((i, end))
        for k in range(i, end):
            out[k] = " "
        out[i : i + 4] = list("true")
    return j + 2


def _test_hazard(body: str) -> str | None:
    if any(t in body for t in ("$(", "`", "${", "$[", "$((")):
        return "[[ … ]] with a substitution"
    try:
        words = shlex.split(body, posix=True)
        raw = shlex.split(body, posix=False)
    except ValueError:
        return "[[ … ]] that cannot be read"
    if len(words) != len(raw):
        return "[[ … ]] that cannot be read"
    for k, w in enumerate(raw):
        if w in ("-v", "-R"):
            return "[[ -v ]] evaluates array subscripts"
        if w in _ARITH_TEST_OPS:
            for side in (raw[k - 1] if k else "", raw[k + 1] if k + 1 < len(raw) else ""):
                if not re.fullmatch(r"-?[0-9]+", side):
                    return f"[[ {w} ]] evaluates its operands as arithmetic, which can run code"
    return None


def _heredoc_op(source: str, i: int, scan: Scan, out: list[str], pending: list[tuple[str, bool]]) -> int:
    n = len(source)
    j = i + 2
    strip = j < n and source[j] == "-"
    if strip:
        j += 1
    while j < n and source[j] in " \t":
        j += 1
    start = j
    delim: list[str] = []
    quoted = False
    quote: str | None = None
    while j < n:
        c = source[j]
        if quote:
            if c == quote:
                quote = None
            else:
                delim.append(c)
            j += 1
            continue
        if c in "'\"":
            quote, quoted = c, True
            j += 1
            continue
        if c == "\\" and j + 1 < n:
            quoted = True
            delim.append(source[j + 1])
            j += 2
            continue
        if c in _WORD_BREAK:
            break
        delim.append(c)
        j += 1
    text = "".join(delim)
    if quoted:
        if not _IDENT.fullmatch(text):
            scan.hazards.append("here-document with an unusual quoted delimiter")
        else:
            scan.quoted_heredocs.add(start)
            padded = text + " " * (j - start - len(text))
            out[start:j] = list(padded)
    pending.append((text, strip))
    return j


def _heredoc_bodies(source: str, i: int, pending: list[tuple[str, bool]]) -> int:
    """Skip the bodies of the pending here-docs starting at ``i``; returns the position after them."""
    n = len(source)
    for delim, strip in pending:
        while i < n:
            j = source.find("\n", i)
            line = source[i : n if j < 0 else j]
            i = n if j < 0 else j + 1
            if (line.lstrip("\t") if strip else line) == delim:
                break
    return i


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
    def __init__(self, original: str, depth: int, scan: Scan | None = None) -> None:
        self.tests = dict(scan.tests) if scan else {}
        self.original = original
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.hazards: list[str] = list(scan.hazards) if scan else []
        self.quoted_heredocs = scan.quoted_heredocs if scan else set()

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
        if kind == "for":
            var = node.parts[1] if len(node.parts) > 1 else None
            if var is not None and getattr(var, "kind", "") == "word" and not assignable(var.word):
                self.hazards.append(f"`for {var.word} in …` assigns a variable that changes later commands")
        if kind == "function":
            self.hazards.append("defines a shell function (it could replace a command's meaning)")
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
        cmd = SimpleCommand(words=[], literal=[], raw_words=[], via=via, spans=[] if self.depth == 0 else None)
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
                if cmd.spans is not None:
                    cmd.spans.append((part.pos[0], part.pos[0] + len(raw)))
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
            body = getattr(getattr(node, "heredoc", None), "value", "") or ""
            quoted = out is not None and out.pos[0] in self.quoted_heredocs
            if not quoted and re.search(r"\$|`", body):
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
        self.hazards.extend(inner.hazards)
        for c in inner.commands:
            c.via = c.via or via
            self.commands.append(c)
        return True

    def add_words(
        self, words: list[str], raw: list[str], literal: list[bool], via: str, extra_args: bool = False,
        spans: list[tuple[int, int]] | None = None,
    ) -> None:
        if not words:
            return
        inner = SimpleCommand(
            words=list(words), literal=list(literal), raw_words=list(raw), via=via, extra_args=extra_args,
            spans=None if spans is None else list(spans),
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
        elif base == "command" and len(words) > 1 and words[1] in ("-v", "-V"):
            return
        elif base in WRAPPERS:
            self._unwrap_wrapper(cmd, base, WRAPPERS[base])
        elif base == "xargs":
            self._unwrap_xargs(cmd)
        elif base in ("find", "fd", "fdfind"):
            self._unwrap_find(cmd)
        del raw

    def _unwrap_wrapper(self, cmd: SimpleCommand, base: str, spec: Wrapper) -> None:
        words, raw, lit = cmd.words, cmd.raw_words, cmd.literal
        clean = True
        i = 1
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            w = words[i]
            if not lit[i]:
                clean = False
                break
            if w == "--":
                i += 1
                break
            opt, eq, _v = w.partition("=")
            if spec.numeric and re.fullmatch(r"-[0-9]+", w):
                i += 1
            elif opt in spec.string:
                value = _v if eq else (words[i + 1] if i + 1 < len(words) else "")
                if (eq or (i + 1 < len(words) and lit[i + 1])) and self.add_parsed(value, "wrapper"):
                    pass
                else:
                    clean = False
                return
            elif opt in spec.values:
                i += 1 if eq else 2
            elif w in spec.flags:
                i += 1
            elif len(w) > 2 and not w.startswith("--") and "-" + w[1] in spec.values:
                i += 1  # attached value: -n5, -s9
            elif not w.startswith("--") and all("-" + c in spec.flags for c in w[1:]):
                i += 1  # a cluster of flags
            else:
                clean = False
                i += 1
        if base == "env":
            while i < len(words) and _ASSIGNMENT.match(words[i]):
                i += 1
        i += spec.skip
        if i + 1 < len(words) and words[i] in spec.string:
            if not (lit[i + 1] and self.add_parsed(words[i + 1], "wrapper")):
                self.add_words(words[i + 1 :], raw[i + 1 :], lit[i + 1 :], "wrapper", spans=_part(cmd.spans, i + 1))
            return
        if i < len(words):
            if base == "watch":
                if all(lit[i:]) and self.add_parsed(" ".join(words[i:]), "wrapper"):
                    return
            elif base == "parallel":
                end = words.index(":::", i) if ":::" in words[i:] else len(words)
                self.add_words(words[i:end], raw[i:end], lit[i:end], "wrapper", extra_args=True,
                               spans=_part(cmd.spans, i, end))
                return
            else:
                self.add_words(words[i:], raw[i:], lit[i:], "wrapper", spans=_part(cmd.spans, i))
            cmd.transparent = clean and spec.transparent

    def _unwrap_shell(self, cmd: SimpleCommand) -> None:
        """``sh -c STRING``: STRING is parsed again. The shell itself is transparent only with options
        that change nothing read-only cares about: ``-c -e -x -u -v -f -n -o X``, and (issue 29) ``-l`` /
        ``--login``, which reads the user's own profile files (``/etc/profile``, ``~/.profile``: not the
        repository's, and no aliases in a non-interactive shell). ``-i`` (``~/.bashrc``, aliases, history
        expansion) and ``--rcfile`` keep the shell a part of its own (not read-only), though STRING is
        still listed."""
        words = cmd.words
        clean = True
        i = 1
        while i < len(words):
            w = words[i]
            if not cmd.literal[i]:
                return
            if w in ("-o", "+o"):
                i += 2
                continue
            if not w.startswith(("-", "+")) or w in ("-", "--"):
                return
            if w != "--login" and (w.startswith("--") or not set(w[1:]) <= set("cexuvfnl")):
                clean = False
            if not w.startswith("--") and "c" in w[1:]:
                if i + 1 < len(words) and cmd.literal[i + 1] and self.add_parsed(words[i + 1], "sh -c"):
                    cmd.transparent = clean
                return
            i += 1

    def _unwrap_xargs(self, cmd: SimpleCommand) -> None:
        """GNU xargs's own getopt: ``-e``/``-i``/``-l`` take a value only when attached (``xargs -e sh
        cat`` runs ``sh``), the others attached or in the next word; long options need ``=`` for
        optional values. Anything else leaves xargs a part of its own (not read-only)."""
        words, lit = cmd.words, cmd.literal
        clean = True
        i = 1
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            w = words[i]
            if not lit[i]:
                clean = False
                break
            if w == "--":
                i += 1
                break
            if w.startswith("--"):
                name = w.split("=", 1)[0]
                if name in _XARGS_LONG_VALUE and "=" not in w:
                    i += 2
                    continue
                if name not in _XARGS_LONG_VALUE and name not in _XARGS_LONG_FLAG:
                    clean = False
                i += 1
                continue
            j, step = 1, 1
            while j < len(w):
                c = w[j]
                if c in "aEILnsPd":
                    step = 1 if j + 1 < len(w) else 2
                    break
                if c in "eil":
                    break  # optional value: only the rest of this word
                if c not in "0prtxo":
                    clean = False
                j += 1
            i += step
        if i < len(words):
            self.add_words(words[i:], cmd.raw_words[i:], cmd.literal[i:], "xargs", extra_args=True,
                           spans=_part(cmd.spans, i))
        else:
            self.add_words(["echo"], ["echo"], [True], "xargs", extra_args=True)
        cmd.transparent = clean

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
                    spans=_part(cmd.spans, i + 1, j),
                )
                i = j
            i += 1


def _part(spans: list[tuple[int, int]] | None, start: int, end: int | None = None) -> list[tuple[int, int]] | None:
    return None if spans is None else spans[start:end]


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
    collector = _Collector(command, depth)
    collector.commands.append(cmd)
    collector.unwrap(cmd)
    return ParsedCommand(command, collector.commands, hazards=collector.hazards)


def parse(command: str, _depth: int = 0) -> ParsedCommand:
    """Parse ``command`` into the simple commands it would run. Never raises."""
    if not command.strip():
        return ParsedCommand(command, [])
    if _PLAIN.fullmatch(command):
        plain = _parse_plain(command, _depth)
        if plain is not None:
            return plain
    scan = _scan(command)
    import bashlex  # lazy: see the note at the top

    try:
        trees = bashlex.parse(scan.prepared)
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError, IndexError ...
        return ParsedCommand(command, [], error=f"{type(exc).__name__}: {exc}", hazards=scan.hazards)
    collector = _Collector(command, _depth, scan)
    try:
        for tree in trees:
            collector.walk(tree)
    except Exception as exc:
        return ParsedCommand(command, [], error=f"{type(exc).__name__}: {exc}", hazards=collector.hazards)
    return ParsedCommand(command, collector.commands, hazards=collector.hazards)

"""The classifier's vocabulary, shared by the core walker (``classify``) and the per-program rules
(``programs/``): where a command runs (``Where``), what it does (``Subcommand``, ``Analysis``), the option
helpers every program's rules use, and path resolution."""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CLASSES = (
    "read-only",
    "write",
    "write-outside",
    "network",
    "process",
    "execute",
    "unknown",
    "destructive",
    "catastrophic",
)


_RANK = {c: i for i, c in enumerate(CLASSES)}


@dataclass
class Where:
    """Where relative paths resolve and what counts as inside the workspace."""

    cwd: Path
    roots: list[Path] = field(default_factory=list)
    home: Path = field(default_factory=lambda: Path(os.path.expanduser("~")))
    # The settings of the repository at a directory that name programs git would run by itself
    # (``diff.external``, a textconv or filter driver): a git command there is not read-only. Given by
    # the caller (``workspace.gitenv.repo_programs``); None: not checked (pure classification).
    git_programs: Callable[[Path], list[str]] | None = None
    # A ``cd`` earlier in the command went somewhere only known at run time (``cd $X``, ``cd -``,
    # ``popd``): relative paths, and the directory a program reads by default, are not known.
    cwd_unknown: bool = False

    def __post_init__(self) -> None:
        if not self.roots:
            self.roots = [self.cwd]


@dataclass
class Subcommand:
    text: str
    cls: str
    reason: str = ""
    words: list[str] = field(default_factory=list)


@dataclass
class Analysis:
    """What a command would do, part by part.

    ``read_paths`` / ``write_paths`` are the file arguments of the command, for the one path policy
    shared with Read/Write (docs/permissions.md): the files a program reads (``cat a``, ``grep x a``,
    ``< a``, ``sed -n p a``) and the ones it or a redirection writes (``> out``, ``cp a out``,
    ``tee out``), quote-removed, ``~`` expanded and made absolute against the cwd the part runs in
    (``cd`` in the same command is followed). They are a superset where the program is not known
    (every operand that could be a file is listed). ``dynamic_paths`` lists the file arguments only
    known at run time (globs, ``$VAR``, ``$(…)``), as written: a caller that must enforce a deny rule
    cannot check those statically and should ask.
    """

    command: str
    subcommands: list[Subcommand]
    read_only: bool
    error: str | None = None
    catastrophic: str | None = None  # the reason, when any part is catastrophic
    read_paths: list[Path] = field(default_factory=list)
    write_paths: list[Path] = field(default_factory=list)
    dynamic_paths: list[str] = field(default_factory=list)
    # Directories whose every file a program reads (``grep -r x dir``, ``rg x``, ``git grep``, ``diff -r``):
    # a Read deny rule covering any file below one of them makes the command ask.
    tree_paths: list[Path] = field(default_factory=list)
    # What deny/ask rules are matched against besides ``rule_parts``: every simple command that runs
    # (wrappers' inner commands included) as quote-removed words with the program's basename
    # (``'curl' x``, ``c\\url x``, ``/usr/bin/curl x``, ``env curl x`` all give ``curl x``), and as written.
    match_texts: list[str] = field(default_factory=list)
    # The command the Bash tool runs when it differs from ``command``: a read-only command's globs
    # replaced by the file names they matched when it was judged (quoted), so that it runs exactly the
    # words that were judged (a file created in between cannot become an option). None: run as written.
    run_command: str | None = None

    @property
    def rule_parts(self) -> list[str]:
        return [s.text for s in self.subcommands]

    @property
    def worst(self) -> str:
        return max((s.cls for s in self.subcommands), key=_RANK.__getitem__, default="read-only")


def _short_flags(args: list[str]) -> set[str]:
    """Single-letter flags of ``-abc`` clusters (before ``--``)."""
    out: set[str] = set()
    for a in args:
        if a == "--":
            break
        if a.startswith("-") and not a.startswith("--") and len(a) > 1:
            out.update(a[1:])
    return out


def _long_flags(args: list[str]) -> set[str]:
    out: set[str] = set()
    for a in args:
        if a == "--":
            break
        if a.startswith("--"):
            out.add(a.split("=", 1)[0])
    return out


def _positionals(args: list[str], value_opts: frozenset[str] = frozenset()) -> list[str]:
    out: list[str] = []
    i = 0
    after = False
    while i < len(args):
        a = args[i]
        if after:
            out.append(a)
        elif a == "--":
            after = True
        elif a.startswith("-") and a != "-":
            if a in value_opts:
                i += 1
        else:
            out.append(a)
        i += 1
    return out


Verdict = tuple[str, str] | None


def _resolve(word: str, where: Where) -> Path | None:
    if word in ("$HOME", "${HOME}", "~") or word.startswith(("$HOME/", "${HOME}/", "~/")):
        rest = word.split("/", 1)[1] if "/" in word else ""
        return Path(os.path.normpath(where.home / rest)) if rest else where.home
    if word == "~+" or word.startswith("~+/"):  # $PWD
        return Path(os.path.normpath(where.cwd / word[3:]))
    if word.startswith("~"):
        user, _, rest = word[1:].partition("/")
        try:
            home = Path(pwd.getpwnam(user).pw_dir)
        except (KeyError, ValueError):
            return None
        return Path(os.path.normpath(home / rest)) if rest else home
    p = Path(re.sub(r"^/+", "/", word))  # `//usr` is `/usr`
    if not p.is_absolute():
        p = where.cwd / p
    return Path(os.path.normpath(p))


def _add_tree(path: Path, analysis: Analysis) -> None:
    if path not in analysis.tree_paths:
        analysis.tree_paths.append(path)


def _inside(p: Path, roots: list[Path]) -> bool:
    return any(p == r or p.is_relative_to(r) for r in roots)

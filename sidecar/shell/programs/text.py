"""Text and file tools whose rules go beyond their option table (``options.SPECS``): sort, uniq, tree,
file, date, hostname, xxd (its own parser), pagers, man, jq, and the greps that walk trees or follow
symlinks."""

from __future__ import annotations

import itertools
import re

from sidecar.shell.base import Verdict, _long_flags, _positionals, _short_flags


def _check_rg(args: list[str], lit: list[bool]) -> Verdict:
    for a in args:
        if a in ("--pre", "--pre-glob", "--search-zip", "-z") or a.startswith(("--pre=", "--pre-glob=")):
            return ("execute", "rg --pre / --search-zip runs programs")
    return None


def _check_sort(args: list[str], lit: list[bool]) -> Verdict:
    if "o" in _short_flags(args) or any(a.startswith(("--output", "--compress-program")) for a in args):
        return ("write", "sort -o writes a file")
    if any(a.startswith("-") and not a.startswith("--") and "o" in a[1:] for a in args):
        return ("write", "sort -o writes a file")
    return None


def _check_uniq(args: list[str], lit: list[bool]) -> Verdict:
    if len(_positionals(args, frozenset({"-f", "-s", "-w"}))) > 1:
        return ("write", "uniq INPUT OUTPUT writes OUTPUT")
    return None


def _check_tree(args: list[str], lit: list[bool]) -> Verdict:
    if "o" in _short_flags(args) or "-o" in args or "--output" in _long_flags(args):
        return ("write", "tree -o writes a file")
    return None


def _check_file(args: list[str], lit: list[bool]) -> Verdict:
    if "C" in _short_flags(args) or "--compile" in _long_flags(args):
        return ("write", "file -C writes a magic file")
    return None


def _check_date(args: list[str], lit: list[bool]) -> Verdict:
    if (
        "s" in _short_flags(args)
        or "--set" in _long_flags(args)
        or any(re.fullmatch(r"\d{4,12}(\.\d\d)?", p) for p in _positionals(args))
    ):
        return ("process", "date -s sets the system clock")
    return None


def _check_hostname(args: list[str], lit: list[bool]) -> Verdict:
    if _positionals(args) or "F" in _short_flags(args) or "--file" in _long_flags(args):
        return ("process", "hostname NAME sets the host name")
    return None


def _check_xxd(args: list[str], lit: list[bool]) -> Verdict:
    if len(_positionals(args, frozenset({"-c", "-g", "-l", "-o", "-s", "-n"}))) > 1:
        return ("write", "xxd INFILE OUTFILE writes OUTFILE")
    return None


def _check_less(args: list[str], lit: list[bool]) -> Verdict:
    for a in args:
        if (
            a.startswith("+")
            or "!" in a
            or a in ("-o", "-O", "--log-file", "--LOG-FILE")
            or a.startswith(("-o", "-O", "--log-file", "--LOG-FILE", "--lesskey"))
        ):
            return ("execute", "less +cmd / -o can run commands or write a log")
    return None


def _check_man(args: list[str], lit: list[bool]) -> Verdict:
    for a in args:
        if a.startswith(("-P", "--pager", "-H", "--html", "-T", "--troff", "-l", "--local-file", "-t")):
            return ("execute", "man with a pager, browser or local file runs programs")
    return None


def _check_history(args: list[str], lit: list[bool]) -> Verdict:
    return ("write", "history with options changes or writes the history") if args else None


def _reads_trees(base: str, args: list[str]) -> bool:
    """Whether this grep reads whole directory trees (rg always does, unless it only lists names)."""
    if base == "rg":
        return not {"--files", "--type-list"} & _long_flags(args)
    if base in ("grep", "egrep", "fgrep", "zgrep"):
        longs = _long_flags(args)
        return bool({"r", "R"} & _short_flags(args) or {"--recursive", "--dereference-recursive"} & longs
                    or any(a in ("--directories=recurse", "-drecurse") for a in args)
                    or any(a == "-d" and b == "recurse" for a, b in itertools.pairwise(args)))
    return False


def _follows_links(base: str, args: list[str]) -> bool:
    """Whether this program follows the symlinks it meets while walking a tree (``grep -R``, ``rg -L``,
    ``du -L``, ``tree -l``, ``ls -RL``): a link anywhere below can lead it outside the roots."""
    shorts, longs = _short_flags(args), _long_flags(args)
    if base in ("grep", "egrep", "fgrep", "zgrep"):
        return "R" in shorts or "--dereference-recursive" in longs
    if base == "rg":
        return "L" in shorts or "--follow" in longs
    if base == "du":
        return "L" in shorts or "--dereference" in longs
    if base == "tree":
        return "l" in shorts
    if base in ("ls", "dir", "vdir"):
        return bool({"R", "--recursive"} & (shorts | longs)) and bool({"L", "--dereference"} & (shorts | longs))
    return False


# xxd's own parser (xxd.c), not getopt: each option is one word matched by its first two characters
# (``-ben`` is ``-b``; ``--bits`` is ``-bits``), no clusters; ``-c -g -o -s -l -n`` take a value attached or
# the whole next word, whatever it is (``-g -o`` makes ``-o`` the group size); ``--`` ends the options;
# any other word starting with ``-`` is a usage error. Then INFILE and OUTFILE (written).
_XXD_FLAGS = frozenset("abeupiCdrEv")


_XXD_VALUES = {"c": "ols", "g": "roup", "o": "ffset", "s": "eek", "l": "en", "n": "ame"}


def xxd_operands(args: list[str], lit: list[bool]) -> list[int] | str:
    """The indexes of xxd's operands (INFILE, OUTFILE) as xxd reads them, or why that is not known."""
    i = 0
    while i < len(args):
        if not lit[i]:
            return "xxd with a word only known at run time"
        a = args[i]
        pp = a[1:] if a.startswith("--") and len(a) > 2 else a
        if pp == "--":
            i += 1
            break
        if len(pp) < 2 or pp[0] != "-":
            break
        letter = pp[1]
        if letter == "c" and pp[2:].startswith("apitalize"):
            i += 1
        elif letter in _XXD_VALUES:
            rest = pp[2:]
            i += 1 if rest and not rest.startswith(_XXD_VALUES[letter]) else 2
        elif letter in _XXD_FLAGS:
            i += 1
        else:
            return f"xxd {a} is not an option xxd knows (xxd would stop with a usage message)"
    operands = list(range(i, len(args)))
    if any(not lit[k] for k in operands):
        return "xxd with a word only known at run time"
    return operands


PAGERS = frozenset({"less", "more", "most", "zless", "zmore", "bzless", "xzless", "pg"})


_JQ_FILE_OPTIONS = frozenset({"--from-file", "--rawfile", "--slurpfile", "--library-path"})


def _check_jq_ro(args: list[str]) -> str | None:
    """jq: options that read a file named in them (``-f`` filter file, ``-L`` module folder,
    ``--rawfile``/``--slurpfile NAME FILE``) and filters that load modules are not read-only."""
    for a in args:
        if a == "--":
            break
        if a.split("=", 1)[0] in _JQ_FILE_OPTIONS:
            return f"jq {a} reads a file named in the option"
        if a.startswith("-") and not a.startswith("--") and ("f" in a or "L" in a):
            return f"jq {a} reads a file named in the option (-f filter file, -L module folder)"
    if any(re.search(r"\b(import|include|modulemeta|get_search_list)\b", a) for a in args):
        return "jq import/include loads a module or data file from a search path"
    return None

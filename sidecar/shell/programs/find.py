"""find and fd (and what xargs reads from them): find's primaries from an allow-list, its starting points
and reference files, and which listings name only regular files."""

from __future__ import annotations

import itertools
import re

from sidecar.shell.base import Verdict, _long_flags, _short_flags
from sidecar.shell.options import starts_literal, unquoted_expansion
from sidecar.shell.parse import SimpleCommand


def _check_find(args: list[str], lit: list[bool]) -> Verdict:
    for a in args:
        if a in ("-delete",):
            return ("destructive", "find -delete removes files")
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            return ("execute", f"find {a} runs a command")
        if a in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            return ("write", f"find {a} writes a file")
    return None


def _check_fd(args: list[str], lit: list[bool]) -> Verdict:
    for a in args:
        if a in ("-x", "--exec", "-X", "--exec-batch") or a.startswith(("--exec=", "--exec-batch=")):
            return ("execute", "fd --exec runs a command")
    return None


def _find_files(args: list[str]) -> tuple[list[int], list[int]]:
    """find's starting points (the words before the first expression word) and the reference files of
    its ``-newer``/``-anewer``/``-cnewer``/``-samefile``/``-newerXY`` (Y not ``t``) tests, as indexes."""
    i = 0
    while i < len(args) and (args[i] in ("-H", "-L", "-P", "-D") or re.fullmatch(r"-O[0-9]", args[i])):
        i += 2 if args[i] == "-D" else 1
    starts: list[int] = []
    while i < len(args) and not args[i].startswith(("-", "(", "!", ")")) and args[i] != ",":
        starts.append(i)
        i += 1
    refs: list[int] = []
    while i < len(args):
        a = args[i]
        newer_xy = len(a) == 8 and a.startswith("-newer") and a[-1] != "t"
        if (a in ("-newer", "-anewer", "-cnewer", "-samefile") or newer_xy) and i + 1 < len(args):
            refs.append(i + 1)
            i += 1
        i += 1
    return starts, refs


def _names_regular_files(source: SimpleCommand | None) -> bool:
    """Whether ``source`` prints only names of regular files under its (checked) operands, so that a
    program ``xargs`` or ``-exec`` runs on them reads inside: ``find -type f`` (not ``-L``), ``fd -t f``,
    ``rg --files``/``rg -l`` and ``grep -rl`` (they do not follow symlinks). A listing that can hold a
    symlink (``ls``, ``git ls-files``, ``find . -name x``) could name one pointing outside the roots."""
    if source is None or not source.words or not source.literal[0]:
        return False
    base, args = source.name.rsplit("/", 1)[-1], source.args
    shorts, longs = _short_flags(args), _long_flags(args)
    if base == "find":
        return not {"-L", "-follow"} & set(args) and any(
            a == "-type" and b == "f" for a, b in itertools.pairwise(args))
    if base in ("fd", "fdfind"):
        return "L" not in shorts and "--follow" not in longs and (
            any((a in ("-t", "--type") and b == "f") for a, b in itertools.pairwise(args))
            or "-tf" in args or "--type=f" in args)
    if base == "rg":
        return "L" not in shorts and "--follow" not in longs and bool(
            {"--files", "--files-with-matches", "--files-without-match"} & longs or "l" in shorts)
    if base in ("grep", "egrep", "fgrep"):
        return "R" not in shorts and "--dereference-recursive" not in longs and bool(
            {"l", "L"} & shorts or {"--files-with-matches", "--files-without-match"} & longs)
    return False


_FIND_FLAGS = frozenset(
    "-print -print0 -ls -prune -quit -true -false -not ! -a -and -o -or , ( ) -empty -readable -writable "
    "-executable -nouser -nogroup -depth -d -mount -xdev -follow -noleaf -ignore_readdir_race "
    "-noignore_readdir_race -daystart -H -L -P".split()
)


_FIND_VALUES = frozenset(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -type -xtype -size -newer "
    "-anewer -cnewer -mtime -mmin -atime -amin -ctime -cmin -user -group -uid -gid -perm -links -inum "
    "-samefile -maxdepth -mindepth -printf -lname -ilname -fstype -used -D -newermt -newerct -newerat "
    "-newermm -newercc -newerBt".split()
)


def _check_find_ro(cmd: SimpleCommand) -> str | None:
    args, raw = cmd.args, cmd.raw_words[1:]
    i = 0
    while i < len(args):
        a, r = args[i], raw[i]
        if not cmd.literal[1 + i] and (unquoted_expansion(r) or not starts_literal(r)):
            return f"`{r}` is only known at run time and could be a find action"
        if a in _FIND_FLAGS or re.fullmatch(r"-O[0-9]", a):
            i += 1
        elif a in _FIND_VALUES:
            i += 2
        elif a.startswith("-"):
            return f"find {a} is not a predicate known to be read-only"
        else:
            i += 1
    return None

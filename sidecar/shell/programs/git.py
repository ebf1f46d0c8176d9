"""git: the read subcommands (an allow-list), the options that write, run a program or read a file named
in them (a deny-list by prefix: git's parse-options abbreviates), and what a git command reads — its
operands, ``REV:PATH``, ``-C`` folders, the top level when it lies above the roots (docs/bash.md)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path

from sidecar.shell.base import (
    Analysis,
    Verdict,
    Where,
    _add_tree,
    _inside,
    _long_flags,
    _positionals,
    _resolve,
    _short_flags,
)
from sidecar.shell.parse import SimpleCommand

_GIT_READ = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "rev-parse",
        "describe",
        "ls-files",
        "ls-tree",
        "blame",
        "annotate",
        "shortlog",
        "cat-file",
        "grep",
        "whatchanged",
        "rev-list",
        "name-rev",
        "merge-base",
        "show-ref",
        "for-each-ref",
        "count-objects",
        "check-ignore",
        "check-attr",
        "diff-tree",
        "diff-files",
        "diff-index",
        "show-branch",
        "cherry",
        "verify-commit",
        "verify-tag",
        "range-diff",
        "version",
        "var",
        "ls-remote_",
    }
)


_GIT_NETWORK = frozenset(
    {
        "fetch",
        "pull",
        "push",
        "clone",
        "ls-remote",
        "submodule",
        "remote-update",
        "send-email",
        "request-pull",
        "archive-remote",
        "lfs",
        "svn",
    }
)


_GIT_GLOBAL_VALUE = frozenset({"-C", "--namespace"})


_GIT_GLOBAL_FLAG = frozenset(
    {
        "--no-pager",
        "-P",
        "--no-optional-locks",
        "--literal-pathspecs",
        "--no-replace-objects",
        "--bare",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--paginate",
        "-p",
    }
)


# With one of these, `git branch NAME` / `git tag NAME` lists refs matching NAME instead of creating one.
GIT_REF_LISTING_FLAGS = frozenset({"l", "--list", "--contains", "--no-contains", "--merged", "--no-merged",
                                   "--points-at"})


def _check_git(args: list[str], lit: list[bool]) -> Verdict:
    if args in (["--version"], ["version"]):
        return None
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in _GIT_GLOBAL_VALUE:
            i += 2
        elif a in _GIT_GLOBAL_FLAG:
            i += 1
        else:
            return ("execute", f"git {a} can change what git runs")
    if i >= len(args):
        return None
    if not lit[i]:
        return ("unknown", "dynamic git subcommand")
    sub, rest = args[i], args[i + 1 :]
    if any(
        r.startswith(("--output", "--ext-diff", "--open-files-in-pager", "--upload-pack", "--exec"))
        or r == "-O"
        or (sub == "grep" and r.startswith("-O"))
        for r in rest
    ):
        return ("write", f"git {sub} with an option that writes or runs a program")
    flags = _short_flags(rest) | _long_flags(rest)
    pos = _positionals(rest)
    if sub in _GIT_READ:
        return None
    if sub in _GIT_NETWORK:
        forced = flags & {
            "f",
            "--force",
            "--force-with-lease",
            "--mirror",
            "--delete",
            "d",
            "--prune",
            "--force-if-includes",
        }
        if sub == "push" and (forced or any(p.startswith(("+", ":")) for p in pos)):
            return ("destructive", "git push that can overwrite or delete remote history")
        return ("network", f"git {sub} reaches the network")
    if sub == "branch":
        if flags & {"d", "D", "--delete", "f", "--force"}:
            cls = "destructive" if flags & {"D", "f", "--force"} else "write"
            return (cls, "git branch deletes a branch")
        if flags & {
            "m",
            "M",
            "c",
            "C",
            "--move",
            "--copy",
            "u",
            "--set-upstream-to",
            "--unset-upstream",
            "--edit-description",
            "--track",
            "t",
            "--no-track",
            "--create-reflog",
        }:
            return ("write", "git branch changes branches")
        if pos and not flags & GIT_REF_LISTING_FLAGS:
            return ("write", "git branch NAME creates a branch")
        return None
    if sub == "tag":
        if flags & {"d", "--delete"}:
            return ("write", "git tag -d deletes a tag")
        if pos and not flags & (GIT_REF_LISTING_FLAGS | {"v", "--verify"}):
            return ("write", "git tag NAME creates a tag")
        if flags & {"a", "s", "f", "m", "F", "u", "--annotate", "--sign", "--force", "--message", "--file"}:
            return ("write", "git tag creates a tag")
        return None
    if sub == "remote":
        if not pos or (pos[0] in ("get-url",)) or (pos[0] == "show" and "n" in flags):
            return None if not (pos and pos[0] not in ("get-url", "show")) else ("write", "git remote change")
        if pos[0] in ("show", "update", "prune"):
            return ("network", f"git remote {pos[0]} contacts the remote")
        return ("write", f"git remote {pos[0]} changes the repository configuration")
    if sub == "config":
        if flags & {
            "--get",
            "--get-all",
            "--get-regexp",
            "l",
            "--list",
            "--get-urlmatch",
            "--get-color",
            "--get-colorbool",
        } and not flags & {
            "e",
            "--edit",
            "--unset",
            "--unset-all",
            "--add",
            "--replace-all",
            "--rename-section",
            "--remove-section",
        }:
            return None
        if pos and pos[0] in ("get", "list") and not flags & {"e", "--edit"}:
            return None
        return ("write", "git config changes configuration")
    if sub == "stash":
        if pos and pos[0] in ("list", "show"):
            return None
        if pos and pos[0] in ("drop", "clear"):
            return ("destructive", f"git stash {pos[0]} discards stashed work")
        return ("write", "git stash changes the working tree")
    if sub == "reflog":
        if not pos or pos[0] == "show":
            return None
        return ("destructive", f"git reflog {pos[0]} rewrites the reflog")
    if sub == "worktree":
        if pos and pos[0] == "list":
            return None
        return ("write", "git worktree changes worktrees")
    if sub == "reset" and flags & {"--hard", "--merge", "--keep"}:
        return ("destructive", "git reset --hard discards uncommitted work")
    if sub == "clean" and not flags & {"n", "--dry-run"}:
        return ("destructive", "git clean deletes untracked files")
    if sub == "clean":
        return None
    if sub == "checkout" and (("--" in rest) or "." in pos or flags & {"f", "--force"}):
        return ("destructive", "git checkout of paths discards uncommitted changes")
    if sub == "restore" and not (flags & {"S", "--staged"} and not flags & {"W", "--worktree"}):
        return ("destructive", "git restore discards uncommitted changes")
    if sub in ("filter-branch", "filter-repo", "gc", "prune", "update-ref", "replace"):
        return ("destructive", f"git {sub} rewrites repository data")
    if sub in ("help",) and not rest:
        return None
    return ("write", f"git {sub} changes the repository")


GIT_PROGRAMS_REASON = "this repository's own git configuration names a program git would run"


GIT_OUTSIDE_REASON = "git here is pointed outside the workspace"


def _git_needs_no_repository(args: list[str]) -> bool:
    """``git --version``, ``git version``, ``git help …``, ``git --help``: no repository is read."""
    return args[:1] in (["--version"], ["version"], ["help"], ["--help"], ["-h"]) or (
        len(args) >= 2 and args[1] in ("--help", "-h"))


def _git_dir_arg(cmd: SimpleCommand, where: Where) -> Path:
    """The directory git works in: the cwd, moved by each leading ``-C dir``."""
    here, args = where.cwd, cmd.args
    for a, b in itertools.pairwise(args):
        if not a.startswith("-"):
            break
        if a == "-C":
            here = _resolve(b, Where(here, where.roots, where.home)) or here
    return here


_GIT_SHOWS_CONTENT = frozenset({"diff", "show", "cat-file", "range-diff", "diff-tree", "diff-index", "diff-files"})


def _git_shows_patches(args: list[str]) -> bool:
    shorts, longs = _short_flags(args), _long_flags(args)
    return bool({"p", "u", "U"} & shorts or {"--patch", "--unified", "--patch-with-stat", "--patch-with-raw",
                                              "--word-diff", "--color-words", "--full-diff"} & longs)


_TOPLEVELS: dict[Path, Path] = {}


_MAX_TOPLEVELS = 1024


def _git_toplevel(folder: Path) -> Path:
    """The work tree git finds from ``folder`` (the nearest folder above holding ``.git``, a directory or a
    gitdir file), else ``folder``.

    Cached per folder; a cached answer is checked with one stat (its ``.git`` still exists). Stale in the
    safe direction only: a ``.git`` created between ``folder`` and the cached top makes the real top nearer
    (deeper inside whatever holds the cached one), so a command asks at most once more than it needs to."""
    cached = _TOPLEVELS.get(folder)
    if cached is not None and os.path.lexists(cached / ".git"):
        return cached
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate / ".git"):
            if len(_TOPLEVELS) >= _MAX_TOPLEVELS:
                _TOPLEVELS.clear()
            _TOPLEVELS[folder] = candidate
            return candidate
    return folder


# git subcommands that show, with no pathspec, content or file names of the whole work tree or its history
# (not only below git's folder, as ``ls-files``, ``ls-tree`` and ``grep`` do).
_GIT_WHOLE_TREE = frozenset({"status", "diff", "show", "whatchanged", "diff-tree", "diff-index", "diff-files",
                             "range-diff", "cat-file"})


# log options that add, to each commit, the files it changed, their content or a search of it.
_GIT_LOG_FILES_LONG = frozenset({
    "--patch", "--unified", "--patch-with-stat", "--patch-with-raw", "--word-diff", "--color-words",
    "--full-diff", "--stat", "--numstat", "--shortstat", "--name-only", "--name-status", "--raw", "--summary",
    "--dirstat", "--dirstat-by-file", "--cumulative", "--compact-summary", "--cc", "--combined-all-paths",
    "--pickaxe-regex", "--pickaxe-all", "--find-object", "--diff-merges", "--remerge-diff", "--binary",
    "--line-prefix", "--check"})


_GIT_LOG_FILES_SHORT = "puUSGcm"


# log/diff options whose value may be the next word (``--author a.txt`` is no pathspec).
_GIT_SEPARATE_VALUE = frozenset({"--author", "--committer", "--grep", "--since", "--until", "--after",
                                 "--before", "-n", "--max-count", "--skip", "-S", "-G", "-L", "-O",
                                 "--min-parents", "--max-parents", "--exclude", "--since-as-filter",
                                 "--grep-reflog", "--format", "--pretty", "--date", "--encoding",
                                 "--decorate-refs", "--decorate-refs-exclude", "--find-object", "--anchored",
                                 "-I", "--ignore-matching-lines", "--diff-filter", "--relative"})


def _git_log_lists_files(rest: list[str]) -> bool:
    """Whether a ``log``/``reflog``/``stash list`` shows files: patches, stats, names, a pickaxe search."""
    for w in rest:
        if w == "--":
            return False
        if w.startswith("--"):
            if w.split("=", 1)[0] in _GIT_LOG_FILES_LONG:
                return True
        elif w.startswith("-") and len(w) > 1:
            for ch in w[1:]:
                if ch in _GIT_LOG_FILES_SHORT:
                    return True
                if ch in "nOL":  # -n5, -L1,2:file: a value follows (-L's file is a read path)
                    break
    return False


def _git_pathspecs(sub: str, rest: list[str], here: Path) -> list[str] | None:
    """The pathspecs of a git command that shows the whole tree by default, or None when it cannot be
    limited by one. After ``--`` every word; before it, for ``status`` every operand, for the others an
    operand naming an existing file that is not an option's value (git's own rule: a word that is no
    revision but a file is a path)."""
    if sub == "cat-file":
        return None
    out: list[str] = []
    after = False
    prev = ""
    for w in rest:
        if after:
            out.append(w)
        elif w == "--":
            after = True
        elif w.startswith("-") and w != "-":
            pass
        elif sub == "status" or (prev not in _GIT_SEPARATE_VALUE and ":" not in w
                                 and os.path.lexists(here / w)):
            out.append(w)
        prev = w
    return out


def _git_line_range_files(rest: list[str]) -> list[str]:
    """The files of ``log -L<start>,<end>:<file>`` / ``-L:<funcname>:<file>`` (from git's folder). Both
    readings of a value with more colons are returned: a file could hold a colon, a regex too."""
    values: list[str] = []
    for k, w in enumerate(rest):
        if w == "--":
            break
        if w == "-L" and k + 1 < len(rest):
            values.append(rest[k + 1])
        elif w.startswith("-L") and not w.startswith("--"):
            values.append(w[2:])
    files: list[str] = []
    for v in values:
        body = v[1:] if v.startswith(":") else v
        for candidate in (body.partition(":")[2], v.rpartition(":")[2]):
            if candidate and candidate not in files:
                files.append(candidate)
    return files


def _git_reads_whole_tree(sub: str, rest: list[str]) -> bool:
    """Whether this git command, without a pathspec, shows content or names of files anywhere in the
    work tree (``git status``, ``git diff``, ``git show REV``, ``git log -p``/``--stat`` …)."""
    if sub == "stash":
        pos = _positionals(rest)
        return bool(pos) and (pos[0] == "show" or (pos[0] == "list" and _git_log_lists_files(rest[1:])))
    if sub in ("log", "reflog"):
        return _git_log_lists_files(rest)
    if sub == "rev-list":
        return any(w.startswith("--objects") for w in rest)
    if sub == "ls-tree":
        return "--full-tree" in rest
    if sub == "diff" and "--no-index" in rest:
        return False
    if sub in ("show", "cat-file"):
        before = rest[: rest.index("--")] if "--" in rest else rest
        objects = [w for w in before if not w.startswith("-")]
        if sub == "cat-file" and any(w.startswith("--batch") for w in rest):
            return True  # objects named on stdin, or all of them
        if (sub == "show" and ("-s" in before or "--no-patch" in before) and not _git_log_lists_files(before)
                and not any(":" in w or "^{" in w for w in objects)):
            return False  # commits' messages only (`git show -s --format=%ci HEAD`)
        # only REV:PATH operands (each a file, judged as a read path) show no whole commit or tree
        return not objects or not all(w.partition(":")[2] for w in objects)
    return sub in _GIT_WHOLE_TREE


def _git_file_args(cmd: SimpleCommand, where: Where, analysis: Analysis,
                   add: Callable[[str, bool, list[Path]], None]) -> None:
    """git: the folder each ``-C`` names, and every operand of the subcommand as a path from git's
    folder (pathspecs, ``diff --no-index A B``, ``blame FILE``; revisions resolve inside and do no harm)."""
    args, lit = cmd.args, cmd.literal[1:]
    here = where
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            add(args[i + 1], lit[i + 1], analysis.read_paths)
            if lit[i + 1] and (target := _resolve(args[i + 1], here)) is not None:
                here = Where(target, where.roots, where.home, where.git_programs, where.cwd_unknown)
            i += 2
            continue
        i += 1
    if i >= len(args):
        return
    sub, rest, rest_lit = args[i], args[i + 1 :], lit[i + 1 :]
    top = _git_toplevel(here.cwd)
    operands = _positionals(rest)
    if (not _inside(Path(os.path.realpath(top)), here.roots) and _git_reads_whole_tree(sub, rest)
            and not _git_pathspecs(sub, rest, here.cwd)):
        # The repository reaches above the roots (a monorepo package, a dotfiles repository in $HOME): its
        # other files are outside. A pathspec keeps git to the paths it names (each judged below).
        if top not in analysis.read_paths:
            analysis.read_paths.append(top)
    limited = "--" in rest or any(":" in w for w in operands) or sub in ("blame", "annotate")
    if sub == "grep":
        _add_tree(here.cwd, analysis)  # tracked files below git's folder
    elif not limited and (sub in _GIT_SHOWS_CONTENT or (sub in ("log", "whatchanged") and _git_shows_patches(rest))):
        _add_tree(top, analysis)  # file contents from anywhere in the repository's history
    for word in operands:  # REV:PATH names a file: from the top, or from git's folder with ./ ../
        rev, colon, path = word.partition(":")
        if colon and path and not rev.startswith("-") and rest_lit[rest.index(word)]:
            base = here.cwd if path.startswith(("./", "../")) else top
            target = Path(os.path.normpath(base / path))
            if target not in analysis.read_paths:
                analysis.read_paths.append(target)
    if sub in ("log", "reflog", "whatchanged"):
        for value in _git_line_range_files(rest):
            if (p := _resolve(value, here)) is not None and p not in analysis.read_paths:
                analysis.read_paths.append(p)
    if sub == "grep" and not ({"e", "f"} & _short_flags(rest) or "--regexp" in _long_flags(rest)):
        operands = operands[1:]  # the pattern
    for word in operands:
        literal = rest_lit[rest.index(word)]
        if here is where or not literal:
            add(word, literal, analysis.read_paths)
        elif (p := _resolve(word, here)) is not None and p not in analysis.read_paths:
            analysis.read_paths.append(p)


_GIT_DANGEROUS_LONG = (
    "--output", "--ext-diff", "--textconv", "--filters", "--open-files-in-pager", "--exec", "--upload-pack",
    "--receive-pack", "--paginate", "--config-env", "--git-dir", "--work-tree", "--exec-path",
    "--output-directory", "--run", "--editor", "--web", "--browser", "--tool", "--extcmd", "--remote",
    # read a file named in the option (it could lie outside the roots), or run gpg
    "--contents", "--ignore-revs-file", "--exclude-from", "--file", "--show-signature", "--orderfile",
)


# Exact options of the read subcommands that are prefixes of a dangerous one (exact beats abbreviation).
_GIT_EXACT_OK = frozenset({"--text", "--remotes", "--output-indicator-new", "--output-indicator-old",
                           "--output-indicator-context", "--exclude", "--ignore-rev"})


# Short options that read a file named in them, per subcommand (``-O`` anywhere: diff's orderfile,
# grep's pager): git grep -f PATTERNS, git config -f FILE, git blame -S REVS, git ls-files -X EXCLUDES.
_GIT_SHORT_FILE = {"grep": "fO", "config": "f", "blame": "SO", "annotate": "SO", "ls-files": "XO"}


_GIT_GLOBAL_OK = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
                            "--no-replace-objects", "--glob-pathspecs", "--noglob-pathspecs",
                            "--icase-pathspecs"})


# Short options of the read subcommands whose value is attached (``-S<string>``, ``-n5``, ``-U3``): the
# letters after them are the value, not options.
_GIT_SHORT_VALUED = {"grep": "eABCm", "ls-files": "x"}


_GIT_SHORT_VALUED_DIFF = "SGnUMCBlL"  # log, show, diff … (-S<string>, -n5, -U3, -L<range>)


def _git_short_reads(cluster: str, sub: str) -> bool:
    letters = _GIT_SHORT_FILE.get(sub, "O")
    valued = _GIT_SHORT_VALUED.get(sub, _GIT_SHORT_VALUED_DIFF)
    for c in cluster[1:]:
        if c in letters:
            return True
        if c in valued:
            return False
    return False


def _check_git_ro(args: list[str], lit: list[bool]) -> str | None:
    """git: global options from an allow-list; subcommand options checked against what can run a
    program or write, *with git's parse-options abbreviations* (any prefix of a dangerous option counts);
    then the subcommand must be one that only reads (``_check_git``)."""
    if args in (["--version"], ["version"], ["--help"], ["help"], ["-h"]):
        return None  # usage and the command list, printed by git itself (no manual viewer)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a == "-C":
            i += 2
        elif a in _GIT_GLOBAL_OK:
            i += 1
        else:
            return f"git {a} can change what git runs (only -C, --no-pager and pathspec options are read-only)"
    if i >= len(args):
        return None
    if not all(lit[i:]):
        return "git with words only known at run time"
    sub, rest = args[i], args[i + 1 :]
    for r in rest:
        if r == "--":
            break
        if r == "--help" or (sub == "help" and rest):
            return (f"git {sub} --help opens the manual with the viewer git's configuration names (help.format, "
                    "man.viewer, web.browser: a repository's own config can name a program)")
        if r.startswith("--") and len(r) > 2:
            name = r.split("=", 1)[0]
            if name in _GIT_EXACT_OK and not (name == "--text" and sub in ("cat-file", "blame")):
                continue
            for bad in _GIT_DANGEROUS_LONG:
                if bad.startswith(name):
                    return (f"git {sub} {name} can write a file, read a file named in it or run a program "
                            "(abbreviations count)")
        elif r.startswith("-") and not r.startswith("--") and _git_short_reads(r, sub):
            return f"git {sub} {r} reads a file named in the option or opens a program (-O)"
    if sub in ("verify-commit", "verify-tag") or (sub == "tag" and ({"v"} & _short_flags(rest) or "--verify" in
                                                                   _long_flags(rest))):
        return f"git {sub} runs gpg to verify signatures"
    if any("%G" in r or "%(signature" in r for r in rest):
        return "a %G… format runs gpg to verify signatures"
    verdict = _check_git(args, lit)
    return None if verdict is None else verdict[1]

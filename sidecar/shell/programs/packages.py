"""Package managers and interpreters: pip's listings, npm (never read-only), ``--version`` only."""

from __future__ import annotations

from sidecar.shell.base import Verdict, _positionals


def _check_npm(args: list[str], lit: list[bool]) -> Verdict:
    pos = _positionals(args)
    if args in (["--version"], ["-v"]) or (
        pos
        and pos[0] in ("ls", "list", "ll", "la", "root", "prefix", "help")
        and not set(args) & {"-g", "--global"}
        and len(pos) <= 2
    ):
        return None
    if pos and pos[0] in ("run", "run-script", "test", "t", "start", "exec", "x", "rebuild", "build"):
        return ("execute", f"npm {pos[0]} runs package scripts")
    return ("network", "npm reaches the registry")


def _check_pip(args: list[str], lit: list[bool]) -> Verdict:
    pos = _positionals(args)
    if args in (["--version"], ["-V"]) or (pos and pos[0] in ("list", "show", "freeze", "check", "help")):
        return None
    return ("network", "pip reaches the package index")


def _check_version_only(args: list[str], lit: list[bool]) -> Verdict:
    if args and all(a in ("--version", "-V", "version") for a in args):
        return None
    return ("execute", "runs code")


_PIP_READ = frozenset({"list", "show", "freeze", "check"})


_PIP_OK = frozenset({"-l", "--local", "--user", "--not-required", "-e", "--editable", "--exclude-editable",
                     "--include-editable", "-v", "-q", "-f", "--files", "--all", "--verbose", "--quiet"})


def _check_pip_ro(args: list[str]) -> str | None:
    if args in (["--version"], ["-V"]):
        return None
    if not args or args[0] not in _PIP_READ:
        return "pip other than list/show/freeze/check"
    for a in args[1:]:
        if a.startswith("-") and a not in _PIP_OK and not a.startswith("--format="):
            return f"pip option {a} is not known to be read-only (--log writes, --outdated connects)"
    return None

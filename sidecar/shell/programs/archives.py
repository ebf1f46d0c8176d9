"""tar and unzip: only listings of a local archive are read-only."""

from __future__ import annotations

from sidecar.shell.base import Verdict, _long_flags, _short_flags


def _check_tar(args: list[str], lit: list[bool]) -> Verdict:
    if not args:
        return ("write", "tar")
    first = args[0].lstrip("-") if not args[0].startswith("--") else ""
    letters = set(first)
    long_ = _long_flags(args)
    if (
        ("t" in letters or "--list" in long_)
        and letters <= set("tvfzjJaP")
        and long_
        <= {"--list", "--file", "--verbose", "--gzip", "--bzip2", "--xz", "--zstd", "--auto-compress"}
        and not (_short_flags(args[1:]) - set("tvfzjJ"))
    ):
        return None
    return ("write", "tar creates or extracts files")


def _check_unzip(args: list[str], lit: list[bool]) -> Verdict:
    flags = _short_flags(args)
    if flags & {"l", "v", "Z", "t"} and not flags - {"l", "v", "Z", "t", "q"}:
        return None
    return ("write", "unzip extracts files")


def _check_tar_ro(args: list[str]) -> str | None:
    if not args:
        return "tar"
    first = args[0].lstrip("-") if not args[0].startswith("--") else ""
    rest_short = _short_flags(args[1:])
    long_ = _long_flags(args)
    if not (("t" in first or "--list" in long_) and set(first) <= set("tvfzjJ") and rest_short <= set("tvfzjJ")
            and long_ <= {"--list", "--file", "--verbose", "--gzip", "--bzip2", "--xz", "--zstd", "--auto-compress"}):
        return "tar that is not a plain listing"
    if any(":" in a for a in args):
        return "tar treats ARCHIVE with a colon as a remote file (rsh)"
    return None


def _check_unzip_ro(args: list[str]) -> str | None:
    flags = _short_flags(args)
    if flags & {"l", "v", "Z", "t"} and not flags - {"l", "v", "Z", "t", "q"} and not _long_flags(args):
        return None
    return "unzip extracts files"

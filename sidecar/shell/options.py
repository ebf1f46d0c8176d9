"""Option allow-lists: which options of a read-only program are known not to write, run or connect.

Default deny by construction: an option that is not listed here (exactly: GNU long options are
accepted only when spelled in full, since an abbreviation resolves against the program's *whole* option
table, e.g. ``sort --co=`` is ``--compress-program``) makes the command not read-only. Short options are
read the way ``getopt`` reads them: clusters (``-nO./x``), a value attached (``-fFILE``) or in the next
word. ``Spec.any_option`` marks programs audited to have no option that writes, runs a program or
connects (``cat``, ``wc``, ``grep`` …); for those every option and every run-time word is fine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Spec:
    flags: str = ""  # short options without a value
    values: str = ""  # short options that take a value (attached or the next word)
    optional: str = ""  # short options whose value is optional: only attached (``date -Iseconds``)
    long_flags: frozenset[str] = frozenset()  # --name (an optional value only as --name=v)
    long_values: frozenset[str] = frozenset()  # --name VALUE or --name=VALUE
    any_option: bool = False
    numeric: bool = False  # -NUM is an option (head -20, nice -5)
    max_operands: int | None = None  # uniq IN OUT: the second operand is written
    # Leading operands that are not files (grep PATTERN, sed SCRIPT, jq FILTER).
    not_files: int = 0
    no_file_operands: bool = False  # echo, printf, seq: operands are never files
    # Options whose value is a file the program reads (``grep -f FILE``, ``date -r FILE``): judged like
    # its operands (outside the roots asks). Their short letters must be in ``values`` to be parsed.
    reads: frozenset[str] = frozenset()
    # Options (or flags) that make the program read a file of file names (``wc --files0-from=F``,
    # ``sha256sum -c F``, ``file -f F``): which files it reads is only known at run time, so never read-only.
    lists: frozenset[str] = frozenset()


def _s(*names: str) -> frozenset[str]:
    return frozenset(names)


@dataclass
class Parsed:
    ok: bool
    reason: str = ""
    operands: list[int] = field(default_factory=list)  # indexes into args
    options: list[str] = field(default_factory=list)  # option names as resolved ("-o", "--output")
    values: dict[str, list[str]] = field(default_factory=dict)


_UNQUOTED_EXPANSION = re.compile(r"\$|`")


def unquoted_expansion(raw: str) -> bool:
    """Whether ``raw`` has a ``$``/backtick outside double quotes (its result is split into words)."""
    quote: str | None = None
    i = 0
    while i < len(raw):
        c = raw[i]
        if quote == "'":
            if c == "'":
                quote = None
        elif c == "\\":
            i += 2
            continue
        elif c == '"':
            quote = None if quote == '"' else '"'
        elif c == "'" and quote is None:
            quote = "'"
        elif c in "$`" and quote is None:
            return True
        i += 1
    return False


def starts_literal(raw: str) -> bool:
    """Whether the word's first character is a literal that is not ``-`` (it cannot become an option)."""
    s = raw.lstrip("\"'")
    return bool(s) and (s[0].isalnum() or s[0] in "./_~+,:@%=")


def parse_options(spec: Spec, args: list[str], raw: list[str], lit: list[bool]) -> Parsed:
    """Read ``args`` as the program's option parser would, against the allow-list ``spec``."""
    out = Parsed(True)
    i = 0
    after = False
    while i < len(args):
        a, r, known = args[i], raw[i], lit[i]
        if not known and not spec.any_option and not after:
            if unquoted_expansion(r):
                return Parsed(False, f"`{r}` is split into words at run time and could add options")
            if not (after or starts_literal(r)):
                return Parsed(False, f"`{r}` is only known at run time and could be an option")
        if after or not a.startswith("-") or a == "-" or not known:
            out.operands.append(i)
            i += 1
            continue
        if a == "--":
            after = True
            i += 1
            continue
        if a.startswith("--"):
            name, eq, _value = a.partition("=")
            if name in spec.long_values:
                if not eq:
                    i += 1
                    if i < len(args):
                        if unquoted_expansion(raw[i]) and not spec.any_option:
                            return Parsed(False, f"`{raw[i]}` is split into words at run time")
                        out.values.setdefault(name, []).append(args[i])
                else:
                    out.values.setdefault(name, []).append(_value)
                out.options.append(name)
            elif name in spec.long_flags:
                out.options.append(name)
            elif not spec.any_option:
                return Parsed(
                    False, f"`{name}` is not an option known to be read-only (abbreviations are not accepted)"
                )
            else:
                out.options.append(name)
            i += 1
            continue
        if spec.numeric and re.fullmatch(r"-[0-9]+", a):
            i += 1
            continue
        j = 1
        while j < len(a):
            c = a[j]
            if c in spec.optional:
                out.values.setdefault("-" + c, []).append(a[j + 1 :])
                out.options.append("-" + c)
                break
            if c in spec.values:
                value = a[j + 1 :]
                if not value:
                    i += 1
                    value = args[i] if i < len(args) else ""
                    if i < len(args) and unquoted_expansion(raw[i]) and not spec.any_option:
                        return Parsed(False, f"`{raw[i]}` is split into words at run time")
                out.values.setdefault("-" + c, []).append(value)
                out.options.append("-" + c)
                break
            if c in spec.flags:
                out.options.append("-" + c)
                j += 1
                continue
            if spec.any_option:
                out.options.append("-" + c)
                j += 1
                continue
            return Parsed(False, f"`-{c}` (in `{a}`) is not an option known to be read-only")
        i += 1
    if spec.max_operands is not None and len(out.operands) > spec.max_operands:
        return Parsed(False, f"more than {spec.max_operands} operand(s): the last one is written")
    return out


ANY = Spec(any_option=True)
ANY_NO_FILES = Spec(any_option=True, no_file_operands=True)

# Audited: GNU coreutils / util-linux / procps versions have no option that writes, runs or connects.
_ANY_PROGRAMS = (
    "cat head tail wc ls dir vdir basename dirname realpath readlink stat du df nl od hexdump strings cut tr "
    "rev column fold paste comm cmp diff grep egrep fgrep tac sha1sum sha224sum sha256sum sha384sum "
    "sha512sum md5sum cksum b2sum sum base32 jq ps pgrep pidof whereis zcat bzcat xzcat zgrep "
    "expand unexpand join fmt pr tsort look numfmt lscpu lsblk lsusb lspci vmstat iostat mpstat netstat "
    "file_any"
).split()
_ANY_NO_FILES_PROGRAMS = (
    "echo pwd true false : seq which whoami id groups uname printenv nproc tty uptime free getconf arch "
    "logname users who w last sleep expr factor yes cal ncal cd pushd popd dirs exit return break "
    "continue type"
).split()

SPECS: dict[str, Spec] = {name: ANY for name in _ANY_PROGRAMS}
SPECS.update({name: ANY_NO_FILES for name in _ANY_NO_FILES_PROGRAMS})
del SPECS["file_any"]

SPECS.update(
    {
        "printf": Spec(flags="", no_file_operands=True),  # bash's printf: only -v (assigns) exists
        "hash": Spec(flags="rlt", values="d", no_file_operands=True),  # not -p (sets a program path)
        "jobs": Spec(flags="lnprs", no_file_operands=True),  # not -x (runs a command)
        "wait": Spec(flags="fn", no_file_operands=True),  # not -p (assigns)
        "base64": Spec(flags="di", values="w", long_flags=_s("--decode", "--ignore-garbage", "--help", "--version"),
                       long_values=_s("--wrap")),
        # GNU shuf: -r is --repeat (no value); -o/--output writes (not listed).
        "shuf": Spec(flags="erz", values="in", long_flags=_s("--echo", "--repeat", "--zero-terminated"),
                     long_values=_s("--input-range", "--head-count", "--random-source"),
                     reads=_s("--random-source")),
        "sort": Spec(
            flags="bcCdfgGhiMmnrRsuVz",
            values="kStX",
            long_flags=_s(
                "--ignore-leading-blanks", "--dictionary-order", "--ignore-case", "--general-numeric-sort",
                "--ignore-nonprinting", "--month-sort", "--human-numeric-sort", "--numeric-sort",
                "--random-sort", "--reverse", "--version-sort", "--check", "--merge", "--stable", "--unique",
                "--zero-terminated", "--debug", "--help", "--version",
            ),
            long_values=_s("--key", "--field-separator", "--buffer-size", "--parallel", "--sort",
                           "--files0-from", "--random-source"),
            reads=_s("--random-source"), lists=_s("--files0-from"),
        ),
        "uniq": Spec(flags="cdDiuz", values="fsw", max_operands=1,
                     long_flags=_s("--count", "--repeated", "--all-repeated", "--unique", "--ignore-case",
                                   "--zero-terminated", "--group"),
                     long_values=_s("--skip-fields", "--skip-chars", "--check-chars")),
        "diff3": Spec(flags="aAeEimTxX3", values="L",
                      long_flags=_s("--text", "--show-all", "--ed", "--show-overlap", "--initial-tab", "--merge",
                                    "--overlap-only", "--easy-only", "--strip-trailing-cr"),
                      long_values=_s("--label")),
        "sdiff": Spec(flags="abBdEHilstWZ", values="Iw",
                      long_flags=_s("--text", "--ignore-blank-lines", "--ignore-space-change", "--minimal",
                                    "--ignore-tab-expansion", "--speed-large-files", "--ignore-case",
                                    "--left-column", "--suppress-common-lines", "--expand-tabs",
                                    "--ignore-all-space", "--ignore-trailing-space", "--strip-trailing-cr"),
                      long_values=_s("--ignore-matching-lines", "--width", "--tabsize")),
        "ss": Spec(flags="hVHnraloeimpTiszbE460twuxSM", values="fAF",
                   long_flags=_s("--numeric", "--resolve", "--all", "--listening", "--options", "--extended",
                                 "--memory", "--processes", "--info", "--summary", "--tcp", "--udp", "--unix",
                                 "--raw", "--ipv4", "--ipv6", "--no-header", "--oneline", "--events"),
                   long_values=_s("--filter"), reads=_s("-F", "--filter"), no_file_operands=True),
        # -I[FMT]: an optional value, attached only (`date -I 0101…` sets the clock from the operand).
        "date": Spec(flags="uR", values="dfr", optional="I",
                     long_flags=_s("--utc", "--universal", "--rfc-email", "--debug", "--iso-8601", "--rfc-3339",
                                   "--help", "--version"),
                     long_values=_s("--date", "--file", "--reference"), no_file_operands=True,
                     reads=_s("-f", "--file", "-r", "--reference")),
        "hostname": Spec(flags="sfdiIaAv", max_operands=0,
                         long_flags=_s("--short", "--fqdn", "--long", "--domain", "--ip-address",
                                       "--all-ip-addresses", "--alias", "--all-fqdns", "--verbose")),
        "tree": Spec(flags="adlfxiqNQpugshDFvtcUrCnASJ", values="LPIH",
                     long_flags=_s("--noreport", "--dirsfirst", "--du", "--si", "--prune", "--gitignore",
                                   "--matchdirs", "--ignore-case", "--help", "--version"),
                     long_values=_s("--filelimit", "--timefmt", "--sort", "--charset")),
        "file": Spec(flags="bcdEhiIkLlnNprsSzZ0", values="efFmP",
                     long_flags=_s("--brief", "--mime", "--mime-type", "--mime-encoding", "--keep-going",
                                   "--dereference", "--no-dereference", "--no-pad", "--preserve-date",
                                   "--raw", "--special-files", "--uncompress", "--print0", "--extension",
                                   "--apple", "--help", "--version"),
                     long_values=_s("--exclude", "--exclude-quiet", "--files-from", "--separator",
                                    "--magic-file", "--parameter"),
                     reads=_s("-m", "--magic-file"), lists=_s("-f", "--files-from")),
        "xxd": Spec(flags="abCEeiuRd", values="cglosn", max_operands=1,
                    long_flags=_s("-autoskip", "-bits", "-capitalize", "-EBCDIC", "-include", "-ps",
                                  "-postscript", "-plain", "-uppercase", "-version", "-help")),
        # Not -M/--manpath (pages from any folder); an operand with a slash is a file (refused in classify).
        "man": Spec(flags="kfawWdDhV", values="SsLem",
                    long_flags=_s("--apropos", "--whatis", "--all", "--where", "--path", "--location",
                                  "--where-cat", "--location-cat", "--regex", "--wildcard", "--names-only",
                                  "--exact", "--no-subpages", "--help", "--version"),
                    long_values=_s("--sections", "--locale", "--extension", "--systems"),
                    no_file_operands=True),
        "rg": Spec(
            flags="nNiISslcwvxFHhoqLuUaP0.b",
            values="egtTABCmrjEMd",
            long_flags=_s(
                "--hidden", "--no-ignore", "--no-ignore-vcs", "--no-ignore-dot", "--no-ignore-parent",
                "--files", "--json", "--vimgrep", "--no-heading", "--heading", "--with-filename",
                "--no-filename", "--line-number", "--no-line-number", "--column", "--no-column", "--count",
                "--count-matches", "--files-with-matches", "--files-without-match", "--fixed-strings",
                "--ignore-case", "--smart-case", "--case-sensitive", "--word-regexp", "--line-regexp",
                "--invert-match", "--multiline", "--multiline-dotall", "--pcre2", "--only-matching",
                "--trim", "--null", "--null-data", "--stats", "--type-list", "--follow", "--no-messages",
                "--quiet", "--passthru", "--passthrough", "--text", "--byte-offset", "--sort-files",
                "--no-config", "--unrestricted", "--debug", "--trace", "--help", "--version", "--crlf",
                "--pretty", "--block-buffered", "--line-buffered", "--binary", "--no-unicode",
                "--include-zero", "--max-columns-preview", "--one-file-system", "--glob-case-insensitive",
            ),
            long_values=_s(
                "--regexp", "--glob", "--iglob", "--type", "--type-not", "--after-context",
                "--before-context", "--context", "--max-count", "--max-depth", "--maxdepth", "--replace",
                "--sort", "--sortr", "--color", "--colors", "--max-filesize", "--threads", "--encoding",
                "--max-columns", "--field-match-separator", "--field-context-separator", "--context-separator",
                "--path-separator", "--engine", "--dfa-size-limit", "--regex-size-limit", "--type-add",
            ),
            not_files=1,
        ),
        "fd": Spec(
            flags="HIuFaLl0sipg1q",
            values="etEdcSo",
            long_flags=_s("--hidden", "--no-ignore", "--no-ignore-vcs", "--unrestricted", "--fixed-strings",
                          "--absolute-path", "--follow", "--print0", "--case-sensitive", "--ignore-case",
                          "--full-path", "--glob", "--regex", "--quiet", "--show-errors", "--prune",
                          "--one-file-system", "--list-details", "--help", "--version"),
            long_values=_s("--extension", "--type", "--exclude", "--max-depth", "--min-depth", "--exact-depth",
                           "--color", "--changed-within", "--changed-before", "--size", "--owner",
                           "--max-results", "--search-path", "--base-directory", "--threads"),
            not_files=1,
            reads=_s("--search-path", "--base-directory"),
        ),
        "read": Spec(flags="ers", values="adinNptu", no_file_operands=True),
        # Custom checks first (``_check_tar_ro``, ``_check_unzip_ro``); these specs find the archive read.
        "tar": Spec(flags="tvzjJ", values="f", long_flags=_s("--list", "--verbose", "--gzip", "--bzip2", "--xz",
                                                             "--zstd", "--auto-compress"),
                    long_values=_s("--file"), reads=_s("-f", "--file")),
        "unzip": Spec(flags="lvZtq"),
        "pip": Spec(), "pip3": Spec(),  # custom checks
    }
)
SPECS["fdfind"] = SPECS["fd"]
for _p in ("grep", "egrep", "fgrep", "zgrep"):
    SPECS[_p] = Spec(any_option=True, not_files=1, values="efABCmdD",
                     long_values=_s("--file", "--regexp", "--exclude-from", "--exclude-dir", "--include",
                                    "--exclude", "--label", "--max-count", "--context", "--after-context",
                                    "--before-context"),
                     reads=_s("-f", "--file", "--exclude-from"))
# jq's -f/--from-file, -L, --rawfile/--slurpfile read files named in options (the last two take two
# values): refused in ``classify``, as are ``import``/``include`` in the filter.
SPECS["jq"] = Spec(any_option=True, not_files=1)

# Options of the audited (``any_option``) programs whose value is a file read, or a file of file names.
# Their value-taking short letters are listed so that the value is not taken for an operand.
SPECS["wc"] = Spec(any_option=True, long_values=_s("--files0-from"), lists=_s("--files0-from"))
SPECS["du"] = Spec(any_option=True, values="BdtX", long_values=_s("--files0-from", "--exclude-from",
                                                                  "--block-size", "--max-depth", "--threshold",
                                                                  "--exclude", "--time-style"),
                   reads=_s("-X", "--exclude-from"), lists=_s("--files0-from"))
SPECS["diff"] = Spec(any_option=True, values="CDFILSUWxX",
                     long_values=_s("--exclude-from", "--from-file", "--to-file", "--exclude", "--label",
                                    "--starting-file", "--ignore-matching-lines", "--show-function-line"),
                     reads=_s("-X", "--exclude-from", "--from-file", "--to-file"))
SPECS["hexdump"] = Spec(any_option=True, values="efns", reads=_s("-f", "--format-file"),
                        long_values=_s("--format", "--format-file", "--length", "--skip"))
for _p in ("sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "md5sum", "b2sum", "cksum"):
    # -c reads a list of files (any paths) from its operands.
    SPECS[_p] = Spec(any_option=True, flags="c", values="al", long_values=_s("--algorithm", "--length"),
                     lists=_s("-c", "--check"))
SPECS["xzcat"] = Spec(any_option=True, lists=_s("--files", "--files0"))
SPECS["pgrep"] = Spec(any_option=True, values="dgGPstuUFr", long_values=_s("--pidfile"),
                      reads=_s("-F", "--pidfile"), no_file_operands=True)
SPECS["lspci"] = Spec(any_option=True, values="FipsdAO", reads=_s("-F", "-i", "-p"), no_file_operands=True)
SPECS["lsusb"] = Spec(any_option=True, values="Dsd", reads=_s("-D"), no_file_operands=True)
SPECS["lscpu"] = Spec(any_option=True, values="s", long_values=_s("--sysroot"), reads=_s("-s", "--sysroot"),
                      no_file_operands=True)
# whereis -B/-M/-S DIR… -f: directories to search, any number of them.
SPECS["whereis"] = Spec(any_option=True, flags="BMS", lists=_s("-B", "-M", "-S"), no_file_operands=True)
for _p in ("ps", "pidof", "lsblk", "vmstat", "iostat", "mpstat", "netstat"):
    SPECS[_p] = Spec(any_option=True, no_file_operands=True)
SPECS["look"] = Spec(any_option=True, not_files=1)

# Programs that are shell builtins here: found before any PATH lookup.
BUILTINS = frozenset(
    "echo printf pwd true false : cd pushd popd dirs exit return break continue type hash jobs wait read "
    "test [ set command builtin exec eval source . export unset declare local readonly alias shopt trap "
    "let getopts mapfile readarray ulimit umask times enable kill disown bg fg suspend compgen complete "
    "history fc bind caller logout".split()
)

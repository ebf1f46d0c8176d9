"""Each simple command → a class; a whole command → its parts, read-only or not, catastrophic or not.

Classes (ordered by risk): ``read-only`` < ``write`` < ``write-outside`` < ``network`` < ``process``
< ``execute`` < ``unknown`` < ``destructive`` < ``catastrophic``.

The rule of this module: *read-only* is a promise that the command cannot write a file, run code we
did not see, or reach the network. Anything we cannot prove that for (unknown programs, dynamic
words in flag position, unparsed syntax, scripts for awk/sed we cannot read) is not read-only.
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import os
import pwd
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from sidecar.shell import options as _opts
from sidecar.shell.expand import expand_word, has_glob
from sidecar.shell.gitdir import outside_places
from sidecar.shell.options import starts_literal, unquoted_expansion
from sidecar.shell.parse import ParsedCommand, Redirect, SimpleCommand, assignable, parse
from sidecar.shell.programs.docker import docker_ro

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

# Read-only whatever their flags and arguments (also with arguments we cannot see: xargs, $VAR).
FLAG_INSENSITIVE = frozenset(
    {
        "cat",
        "head",
        "tail",
        "wc",
        "ls",
        "dir",
        "vdir",
        "echo",
        "printf",
        "pwd",
        "true",
        "false",
        ":",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "stat",
        "du",
        "df",
        "nl",
        "od",
        "hexdump",
        "strings",
        "cut",
        "tr",
        "rev",
        "column",
        "fold",
        "paste",
        "comm",
        "cmp",
        "diff",
        "grep",
        "egrep",
        "fgrep",
        "tac",
        "seq",
        "which",
        "whoami",
        "id",
        "groups",
        "uname",
        "printenv",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "md5sum",
        "cksum",
        "b2sum",
        "sum",
        "base32",
        "base64",
        "test",
        "[",
        "expr",
        "jq",
        "nproc",
        "tty",
        "uptime",
        "free",
        "ps",
        "pgrep",
        "pidof",
        "lsof",
        "whereis",
        "locate",
        "cd",
        "pushd",
        "popd",
        "dirs",
        "sleep",
        "wait",
        "jobs",
        "type",
        "read",
        "getconf",
        "arch",
        "logname",
        "users",
        "who",
        "w",
        "last",
        "zcat",
        "bzcat",
        "xzcat",
        "zgrep",
        "lscpu",
        "lsblk",
        "lsusb",
        "lspci",
        "mount_list",
        "exit",
        "return",
        "break",
        "continue",
        "numfmt",
        "factor",
        "yes",
        "expand",
        "unexpand",
        "look",
        "join",
        "fmt",
        "pr",
        "shuf",
        "tsort",
        "env_list",
        "hash",
        "ldd_list",
        "md5",
        "shasum",
        "sha256",
        "diff3",
        "sdiff",
        "wdiff",
        "cal",
        "ncal",
        "vmstat",
        "iostat",
        "mpstat",
        "netstat",
        "ss",
        "uniq_list",
    }
)
# Read-only with literal arguments, after a flag check in ``_CHECKS``.
INTERPRETERS = frozenset(
    {
        "python",
        "python2",
        "python3",
        "node",
        "nodejs",
        "deno",
        "bun",
        "ruby",
        "perl",
        "php",
        "lua",
        "luajit",
        "Rscript",
        "R",
        "java",
        "julia",
        "scala",
        "kotlin",
        "swift",
        "groovy",
        "osascript",
        "pwsh",
        "powershell",
        "tclsh",
        "wish",
        "irb",
        "ipython",
        "jshell",
        "ts-node",
        "tsx",
        "elixir",
        "erl",
        "ghci",
        "runghc",
        "sh",
        "bash",
        "zsh",
        "dash",
        "ksh",
        "ash",
        "fish",
        "csh",
        "tcsh",
        "source",
        ".",
        "exec",
        "eval",
        "npx",
        "pnpx",
        "bunx",
        "uvx",
        "pipx",
        "make",
        "cmake",
        "ninja",
        "gradle",
        "gradlew",
        "mvn",
        "ant",
        "pytest",
        "tox",
        "nox",
        "jest",
        "vitest",
        "mocha",
        "tsc",
        "eslint",
        "prettier",
        "black",
        "ruff",
        "mypy",
        "cargo",
        "rustc",
        "go",
        "gcc",
        "g++",
        "cc",
        "c++",
        "clang",
        "clang++",
        "ld",
        "javac",
        "dotnet",
        "watch",
        "script",
        "expect",
        "parallel",
        "at",
        "batch",
        "vim",
        "vi",
        "nvim",
        "nano",
        "emacs",
        "code",
        "open",
        "xdg-open",
        "gdb",
        "lldb",
        "strace",
        "ltrace",
        "valgrind",
        "docker",
        "podman",
        "kubectl_exec",
        "sudo",
        "doas",
        "su",
        "runuser",
        "pkexec",
        "chroot",
        "unshare",
        "nsenter",
        "firejail",
        "bwrap",
        "alias",
        "trap",
        "export",
        "unset",
        "declare",
        "typeset",
        "local",
        "readonly",
        "shopt",
        "ulimit",
        "umask",
        "enable",
        "complete",
        "bind",
        "fc",
        "let",
        "coproc",
        "nc_exec",
        "flock",
        "setsid",
        "xvfb-run",
        "env",
        "busybox",
        "ssh-agent",
        "dbus-launch",
        "systemd-run",
        "entr",
        "nodemon",
        "direnv",
    }
)
NETWORK = frozenset(
    {
        "curl",
        "wget",
        "ssh",
        "scp",
        "sftp",
        "rsync",
        "nc",
        "ncat",
        "netcat",
        "telnet",
        "ftp",
        "tftp",
        "ping",
        "ping6",
        "dig",
        "nslookup",
        "host",
        "traceroute",
        "tracepath",
        "mtr",
        "http",
        "https",
        "httpie",
        "xh",
        "aria2c",
        "gh",
        "glab",
        "hub",
        "nmap",
        "whois",
        "socat",
        "mosh",
        "lftp",
        "axel",
        "kubectl",
        "helm",
        "aws",
        "gcloud",
        "az",
        "doctl",
        "heroku",
        "vercel",
        "netlify",
        "fly",
        "flyctl",
        "terraform",
        "pulumi",
        "ansible",
        "ansible-playbook",
        "apt",
        "apt-get",
        "aptitude",
        "yum",
        "dnf",
        "apk",
        "pacman",
        "zypper",
        "brew",
        "port",
        "snap",
        "flatpak",
        "gem",
        "bundle",
        "bundler",
        "composer",
        "conda",
        "mamba",
        "pip",
        "pip3",
        "uv",
        "poetry",
        "pipenv",
        "npm",
        "yarn",
        "pnpm",
        "deno_install",
        "sdkmanager",
        "nix",
        "git-lfs",
        "svn",
        "hg",
        "s3cmd",
        "gsutil",
        "rclone",
        "ngrok",
        "tailscale",
        "openssl_s_client",
    }
)
PROCESS = frozenset(
    {
        "kill",
        "pkill",
        "killall",
        "skill",
        "renice",
        "systemctl",
        "service",
        "disown",
        "bg",
        "fg",
        "launchctl",
        "crontab",
        "nohup_bg",
        "sysctl",
        "modprobe",
        "insmod",
        "rmmod",
        "swapon",
        "swapoff",
        "mount",
        "umount",
        "iptables",
        "ip6tables",
        "nft",
        "ufw",
        "useradd",
        "userdel",
        "usermod",
        "groupadd",
        "passwd",
        "chpasswd",
        "hostnamectl",
        "timedatectl",
        "loginctl",
        "journalctl_vacuum",
        "tmux",
        "screen",
    }
)
WRITE = frozenset(
    {
        "cp",
        "mv",
        "touch",
        "mkdir",
        "rmdir",
        "ln",
        "install",
        "chmod",
        "chown",
        "chgrp",
        "tee",
        "truncate",
        "patch",
        "split",
        "csplit",
        "zip",
        "gzip",
        "gunzip",
        "bzip2",
        "bunzip2",
        "xz",
        "unxz",
        "zstd",
        "unzstd",
        "7z",
        "rar",
        "unrar",
        "mkfifo",
        "mknod",
        "mktemp",
        "setfacl",
        "chattr",
        "ar",
        "cpio",
        "rename",
        "dos2unix",
        "unix2dos",
        "sponge",
        "link",
        "unlink",
        "tar",
        "unzip",
        "uniq",
        "sort",
        "sed",
        "awk",
        "gawk",
        "mawk",
        "nawk",
        "yq",
        "xxd",
        "tree",
        "date",
        "hostname",
        "less",
        "more",
        "most",
        "man",
        "history",
        "file",
        "rg",
        "fd",
        "fdfind",
        "find",
        "git",
        "ed",
        "ex",
    }
)
DESTRUCTIVE = frozenset(
    {
        "rm",
        "shred",
        "dd",
        "srm",
        "wipe",
        "fdisk",
        "sfdisk",
        "gdisk",
        "parted",
        "fstrim",
        "blkdiscard",
        "cryptsetup",
        "lvremove",
        "vgremove",
        "pvremove",
        "zpool",
        "zfs",
    }
)
CATASTROPHIC_NAMES = frozenset({"shutdown", "reboot", "halt", "poweroff", "mkswap", "wipefs", "mke2fs"})

SAFE_ENV_VARS = frozenset(
    {
        "LANG",
        "LANGUAGE",
        "TZ",
        "NO_COLOR",
        "FORCE_COLOR",
        "TERM",
        "COLUMNS",
        "LINES",
        "NODE_ENV",
        "RUST_BACKTRACE",
        "RUST_LOG",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "CI",
        "DEBUG",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "GREP_COLOR",
        "GREP_COLORS",
        "LS_COLORS",
        "TIME_STYLE",
        "COLORTERM",
    }
)


# Variables bash itself gives a meaning to, and the names and prefixes of variables that programs read
# to change what they run, read, write or connect to (a loader, a config file, a pager, a proxy, git's
# own …). An assignment of any other name changes nothing a read-only command does (issue 29): `FOO=bar`,
# `A=1 B=2 ls -la`. Matched case-insensitively: `http_proxy` is read as well as `HTTP_PROXY`.
_MEANINGFUL_VARIABLE = re.compile(
    r"(PATH|.*PATH|IFS|PS[0-9]|PROMPT_COMMAND.*|ENV|BASH.*|SHELL.*|CDPATH|GLOBIGNORE|HOME|OLDPWD|PWD|"
    r"HIST.*|INPUTRC|MAIL.*|OPT(IND|ARG|ERR)|TIMEFORMAT|TMOUT|FUNCNEST|EXECIGNORE|FIGNORE|COMP.*|READLINE.*|"
    r"POSIXLY_CORRECT|LD_.*|DYLD_.*|GCONV.*|LOCPATH|NLSPATH|MALLOC.*|GLIBC.*|LC_.*|LANG.*|TZ.*|TERMINFO.*|"
    r"TERMCAP|TMPDIR|TEMP|TMP|XDG_.*|GIT.*|GREP.*|LESS.*|MORE|PAGER|.*PAGER|EDITOR|VISUAL|BROWSER|MANOPT|"
    r"MAN.*|TAR.*|XZ.*|GZIP|BZIP.*|ZSTD.*|LZ.*|RIPGREP.*|FZF.*|JQ.*|MAGIC|PYTHON.*|NODE.*|NPM.*|RUBY.*|"
    r"PERL.*|JAVA.*|SSL.*|CURL.*|WGET.*|.*_PROXY|.*PROXY|SSH.*|GNUPG.*|GPG.*|DOCKER.*|PODMAN.*|CONTAINER.*|"
    r"KUBE.*|AWS.*|OPENSSL.*|SUDO.*|DISPLAY|WAYLAND.*|DBUS.*|XAUTH.*|SYSTEMD.*|HOSTALIASES|RES_OPTIONS|"
    r"LOCALDOMAIN|QUOTING_STYLE|TIME_STYLE|.*BLOCK_SIZE|BLOCKSIZE|SIMPLE_BACKUP_SUFFIX|VERSION_CONTROL|"
    r"SHLVL|UID|EUID|PPID|RANDOM|SRANDOM|SECONDS|LINENO|FUNCNAME|GROUPS|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|"
    r"EPOCH.*|auto_resume|histchars|SIDECAR.*|ANTHROPIC.*|CLAUDE.*)",
    re.IGNORECASE)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def safe_assignment(assignment: str, standalone: bool = False) -> bool:
    """Whether ``NAME=value`` changes nothing a read-only command does.

    A variable in ``SAFE_ENV_VARS`` whose value names no file (``TZ=/etc/x`` and ``TZ=:x`` read a time
    zone file, ``LANG=/x`` a locale folder; ``TZ=Europe/Paris`` is fine); or any other name that neither
    bash nor a program gives a meaning to (``_MEANINGFUL_VARIABLE``) and, for an assignment on its own
    (``standalone``: it stays in the shell and later commands see it only if it is exported), that is not
    already in the environment (assigning an exported variable changes what every later command gets)."""
    name, _, value = assignment.partition("=")
    if name in SAFE_ENV_VARS:
        value = value.strip("'\"")
        if name == "TZ":
            return not value.startswith(("/", ":", ".")) and ".." not in value
        return "/" not in value
    if not _NAME.fullmatch(name) or _MEANINGFUL_VARIABLE.fullmatch(name):
        return False
    return not (standalone and name in os.environ)


SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2", "/dev/zero"}
)
_BLOCK_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|mapper/|md|loop|dm-|sr|rdisk)")
SYSTEM_DIRS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/opt",
        "/proc",
        "/root",
        "/sbin",
        "/srv",
        "/sys",
        "/usr",
        "/var",
        "/System",
        "/Users",
        "/Library",
        "/Applications",
        "/private",
    }
)
_FORK_BOMB = re.compile(r"(\b\w+\b|:)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&")


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


# ---- flag helpers ---------------------------------------------------------------------------------


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


# ---- per-program checks: return None when read-only, else (class, reason) -------------------------

Verdict = tuple[str, str] | None


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


def _check_command_builtin(args: list[str], lit: list[bool]) -> Verdict:
    if args and args[0] in ("-v", "-V"):
        return None
    return ("execute", "command runs a program")


def _check_env(args: list[str], lit: list[bool]) -> Verdict:
    return None if not args else ("execute", "env with arguments runs a program with a changed environment")


def _check_set(args: list[str], lit: list[bool]) -> Verdict:
    if (all(a.startswith(("-", "+")) for a in args) and "-o" not in args and "+o" not in args) or args in (
        ["-o", "pipefail"],
        ["-euo", "pipefail"],
        ["-eo", "pipefail"],
        ["-uo", "pipefail"],
    ):
        return None
    return ("unknown", "set changes shell state")


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


_CHECKS = {
    "find": _check_find,
    "fd": _check_fd,
    "fdfind": _check_fd,
    "rg": _check_rg,
    "sort": _check_sort,
    "uniq": _check_uniq,
    "tree": _check_tree,
    "file": _check_file,
    "date": _check_date,
    "hostname": _check_hostname,
    "xxd": _check_xxd,
    "less": _check_less,
    "more": _check_less,
    "most": _check_less,
    "zless": _check_less,
    "man": _check_man,
    "history": _check_history,
    "tar": _check_tar,
    "unzip": _check_unzip,
    "command": _check_command_builtin,
    "env": _check_env,
    "set": _check_set,
    "npm": _check_npm,
    "pip": _check_pip,
    "pip3": _check_pip,
    "git": _check_git,
}
_VERSION_ONLY = frozenset(
    {
        "python",
        "python3",
        "node",
        "ruby",
        "perl",
        "php",
        "go",
        "cargo",
        "rustc",
        "java",
        "javac",
        "gcc",
        "g++",
        "clang",
        "make",
        "cmake",
        "docker",
        "deno",
        "bun",
        "yarn",
        "pnpm",
        "uv",
        "poetry",
        "tsc",
        "pytest",
        "ruff",
        "mypy",
        "black",
        "dotnet",
        "kubectl",
        "terraform",
        "gh",
        "aws",
        "helm",
        "bash",
        "zsh",
        "sh",
    }
)


# ---- catastrophic --------------------------------------------------------------------------------


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


_BRACE_GROUP = re.compile(r"\{([^{}]*,[^{}]*)\}")
_MAX_EXPANSIONS = 256


def _expand_braces(word: str) -> list[str]:
    """Bash's brace expansion of ``a{b,c}d`` (comma lists, nested by repetition), capped."""
    out: list[str] = []
    todo = [word]
    while todo and len(out) + len(todo) <= _MAX_EXPANSIONS:
        w = todo.pop()
        m = _BRACE_GROUP.search(w)
        if m is None:
            out.append(w)
            continue
        todo.extend(w[: m.start()] + alt + w[m.end() :] for alt in m.group(1).split(","))
    return out + todo


def _targets(word: str, where: Where) -> list[str]:
    """What a target word can name: braces expanded, globs matched against the real file system."""
    words = _expand_braces(word)
    out: list[str] = []
    for w in words:
        if any(c in w for c in "*?["):
            base = w if w.startswith(("/", "~")) else str(where.cwd / w)
            pattern = re.sub(r"^/+", "/", os.path.expanduser(base) if base.startswith("~") else base)
            matches = glob.glob(pattern)[:_MAX_EXPANSIONS]
            out.append(w)
            out.extend(matches)
        else:
            out.append(w)
    return out


def _is_root_like(word: str, where: Where) -> bool:
    for candidate in _targets(word, where):
        stripped = candidate.rstrip("/") or "/"
        if stripped.endswith("/*"):
            stripped = stripped[:-2] or "/"
        elif stripped in ("*", ".*"):
            stripped = "."
        target = _resolve(stripped, where)
        if target is None:
            continue
        if str(target) in SYSTEM_DIRS or target == where.home or target == where.home.parent:
            return True
        if candidate.startswith("~") and "/" not in candidate.rstrip("/"):
            return True  # ~user: someone's home folder
    return False


def catastrophic_reason(cmd: SimpleCommand, where: Where) -> str | None:
    name = cmd.name.rsplit("/", 1)[-1]
    args = cmd.args
    flags = _short_flags(args) | _long_flags(args)
    if name in CATASTROPHIC_NAMES or name.startswith("mkfs"):
        return f"`{name}` can destroy the system or a disk"
    if name in ("init", "telinit") and args and args[0] in ("0", "6"):
        return "`init 0/6` shuts the machine down"
    if name == "systemctl" and args and set(args) & {"poweroff", "reboot", "halt", "kexec", "suspend"}:
        return "systemctl poweroff/reboot shuts the machine down"
    if name == "rm" and (flags & {"r", "R", "--recursive", "--no-preserve-root"}):
        for a in _positionals(args):
            if _is_root_like(a, where):
                return f"`rm -r {a}` would delete the root, a system folder or the home folder"
    if name in ("chmod", "chown", "chgrp") and flags & {"R", "--recursive"}:
        for a in _positionals(args)[1:]:
            if _is_root_like(a, where):
                return f"`{name} -R` on {a} would break the system"
    if name == "mv":
        sources = _positionals(args, frozenset({"-t", "--target-directory", "-S", "--suffix"}))
        has_target_dir = any(
            (a.startswith("-t") and not a.startswith("--")) or a.startswith("--target-directory") for a in args
        )
        for a in sources if has_target_dir else sources[:-1]:
            if _is_root_like(a, where):
                return f"`mv {a}` would move away the root, a system folder or the home folder"
    if name == "find" and "-delete" in args:
        for a in args:
            if a in ("-H", "-L", "-P") or re.fullmatch(r"-O[0-9]", a):
                continue
            if a.startswith("-"):
                break
            if _is_root_like(a, where):
                return f"`find {a} -delete` would delete the root, a system folder or the home folder"
    if name == "dd":
        for a in args:
            if a.startswith("of=") and a[3:] not in SAFE_DEVICES and a[3:].startswith("/dev/"):
                return f"`dd {a}` writes onto a device"
    if name in ("shred", "wipe") and any(_BLOCK_DEVICE.match(a) for a in args):
        return f"`{name}` on a disk device destroys it"
    if (name == "kill" and "-1" in args[1:]) or (name == "kill" and args[-1:] == ["-1"]):
        return "`kill -1` signals every process"
    for r in cmd.redirects:
        if r.writes and r.target and _BLOCK_DEVICE.match(r.target):
            return f"writing to {r.target} destroys the disk"
    return None


# ---- one simple command ---------------------------------------------------------------------------


def _write_class(cmd: SimpleCommand, where: Where) -> str:
    """``write`` when every visible target stays in the workspace, else ``write-outside``."""
    name = cmd.name.rsplit("/", 1)[-1]
    targets = _positionals(cmd.args)
    if name in ("chmod", "chown", "chgrp"):
        targets = targets[1:]
    if name == "cp" and targets:
        targets = targets[-1:]
    if name == "dd":
        targets = [a[3:] for a in cmd.args if a.startswith("of=")]
    for t in targets:
        if "=" in t and name not in ("dd",):
            continue
        p = _resolve(t, where)
        if p is None or not any(p == r or p.is_relative_to(r) for r in where.roots):
            return "write-outside"
    return "write"


def classify_simple(cmd: SimpleCommand, where: Where) -> tuple[str, str]:
    """(class, reason) of one simple command, ignoring its redirections."""
    reason = catastrophic_reason(cmd, where)
    if reason:
        return "catastrophic", reason
    if not cmd.words:
        if all(safe_assignment(a, standalone=True) for a in cmd.assignments):
            return "read-only", ""
        return "unknown", "sets shell variables that change what later commands run"
    if not cmd.literal[0]:
        return "unknown", "the program name is only known at run time"
    name = cmd.name
    base, why_not = identity(name, where)
    if base is None:
        return "execute", why_not
    if cmd.assignments and not all(safe_assignment(a) for a in cmd.assignments):
        return "execute", "environment variables set for the command can change what it runs"
    if cmd.dynamic_heredoc:
        return "unknown", "here-document with substitutions"
    not_read_only = read_only_reason(cmd, base)
    if not_read_only is None and base == "git" and not _git_needs_no_repository(cmd.args):
        places = outside_places(_git_dir_arg(cmd, where), where.roots)
        if places:
            return "unknown", f"{GIT_OUTSIDE_REASON} ({places[0][0]}: {places[0][1]})"
    if not_read_only is None and base == "git" and where.git_programs is not None:
        programs = where.git_programs(_git_dir_arg(cmd, where))
        if programs:
            return "execute", f"{GIT_PROGRAMS_REASON} ({programs[0]})"
    if not_read_only is None:
        return "read-only", ""
    cls, why = _how_bad(cmd, base, where)
    return (cls, why) if cls not in ("read-only", "unknown") else ("unknown", not_read_only)


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


def _how_bad(cmd: SimpleCommand, base: str, where: Where) -> tuple[str, str]:
    """The class of a command the allow-lists did not accept: what it would most likely do."""
    args, lit = cmd.args, cmd.literal[1:]
    if cmd.extra_args or not all(lit):
        # Words we cannot see (xargs input, $VAR, globs, braces) could turn into flags.
        if base in _CHECKS or base in WRITE or base in _VERSION_ONLY:
            return (
                "write" if base in WRITE else "execute",
                "arguments only known at run time could add a writing or executing flag",
            )
    check = _CHECKS.get(base)
    if check is not None:
        verdict = check(args, lit)
        if verdict is None:
            return "read-only", ""
        cls, why = verdict
        return (_write_class(cmd, where) if cls == "write" else cls), why
    if base in ("sed",):
        verdict = _check_sed(args)
        if verdict is None:
            return "read-only", ""
        cls, why = verdict
        return (_write_class(cmd, where) if cls == "write" else cls), why
    if base in ("awk", "gawk", "mawk", "nawk"):
        verdict = _check_awk(args)
        return ("read-only", "") if verdict is None else verdict
    if base in _VERSION_ONLY and _check_version_only(args, lit) is None:
        return "read-only", ""
    if base in DESTRUCTIVE:
        if base == "rm" and not (_short_flags(args) | _long_flags(args)) & {
            "r",
            "R",
            "f",
            "--recursive",
            "--force",
        }:
            return _write_class(cmd, where), "rm deletes files"
        return "destructive", f"{base} deletes or overwrites data"
    if base in WRITE:
        return _write_class(cmd, where), f"{base} writes files"
    if base in NETWORK:
        return "network", f"{base} reaches the network"
    if base in PROCESS:
        return "process", f"{base} controls processes or the system"
    if base in INTERPRETERS:
        return "execute", f"{base} runs code"
    return "unknown", f"{base} is not a known read-only command"


_NET_DEVICE = re.compile(r"/dev/(tcp|udp)/")


def _redirect_part(r: Redirect, where: Where) -> Subcommand | None:
    if r.target is not None and _NET_DEVICE.search(r.target):
        return Subcommand(f"{r.op} {r.target}", "network", "bash opens a network connection for /dev/tcp, /dev/udp")
    if r.target is not None and not r.literal and not r.writes:
        return Subcommand(f"{r.op} {r.target}", "unknown", "input redirected from a file named at run time")
    if not r.writes or r.target is None:
        return None
    if r.literal and r.target in SAFE_DEVICES:
        return None
    text = f"{r.op} {r.target}"
    if r.literal and _BLOCK_DEVICE.match(r.target):
        return Subcommand(text, "catastrophic", f"writing to {r.target} destroys the disk")
    fake = SimpleCommand(words=["tee", r.target], literal=[True, r.literal], raw_words=["tee", r.target])
    return Subcommand(text, _write_class(fake, where), "output redirection writes a file")


_WRITERS = frozenset("cp mv touch mkdir rmdir ln install chmod chown chgrp tee truncate rm shred unlink link "
                     "mkfifo".split())


_MAX_GLOB_MATCHES = 4096
_GLOB_CHARS = re.compile(r"[*?\[]")


def _glob_matches(word: str, where: Where, into: list[Path]) -> bool:
    """A glob's matches now, each where it leads (``cat *`` reads what a symlink among them points to):
    the ones outside the roots go into ``into``, as do brace alternatives. False when there are more
    than we look at (a glob with a run-time part is left to ``dynamic_paths``)."""
    if "$" in word or "`" in word:
        return True
    matches: list[str] = []
    for pattern in _expand_braces(word.replace('"', "").replace("'", "")):
        if not _GLOB_CHARS.search(pattern):  # a brace alternative: `cat {a,/etc/passwd}`
            p = _resolve(pattern, where)
            if p is None:
                return False
            matches.append(str(p))
            continue
        if any(part.startswith(".") and _GLOB_CHARS.search(part) and fnmatch.fnmatchcase("..", part)
               for part in pattern.split("/")):
            return False  # `.*` matches `..` in bash before 5.2 (globskipdots)
        base = pattern if pattern.startswith(("/", "~")) else str(where.cwd / pattern)
        matches += glob.glob(os.path.expanduser(base))
        if len(matches) > _MAX_GLOB_MATCHES:
            return False
    for m in matches:
        p = Path(os.path.realpath(m))
        if not _inside(p, where.roots) and p not in into:
            into.append(p)
    return True


# Programs that read their working directory when given no file operand (``ls``, ``find``, ``git status``
# …) besides the ones with an option table: after ``cd /`` (or with the cwd outside the roots) they read
# outside the roots although no word names a path.
_READS_CWD = frozenset({"find", "git", "sed", "awk", "gawk", "mawk", "nawk"})


def _file_args(cmd: SimpleCommand, where: Where, analysis: Analysis, names_unknown: bool = False) -> None:
    """Add ``cmd``'s file arguments to ``analysis.read_paths`` / ``write_paths`` / ``dynamic_paths``."""
    def add(word: str, literal: bool, into: list[Path]) -> None:
        if not literal:
            analysis.dynamic_paths.append(word)
            if not where.cwd_unknown and not _glob_matches(word, where, into):
                analysis.dynamic_paths.append(f"$({word})")  # more matches than we look at
            return
        if where.cwd_unknown and not word.startswith(("/", "~")):
            # after `cd $X`: relative to a folder only known at run time
            analysis.dynamic_paths.append("$PWD" if word == "." else f"$PWD/{word}")
            return
        p = _resolve(word, where)
        if p is None:  # `~-/x` ($OLDPWD), `~nosuchuser`: only known at run time
            analysis.dynamic_paths.append(word)
            return
        p = Path(os.path.realpath(p))  # as Read/Write judge a path: a symlink counts where it points
        if p not in into:
            into.append(p)

    for r in cmd.redirects:
        if r.target is None or r.target in SAFE_DEVICES:
            continue
        if r.op in ("<", "<>"):
            add(r.target, r.literal, analysis.read_paths)
        if r.writes:
            add(r.target, r.literal, analysis.write_paths)
    if not cmd.words or cmd.redirect_only or not cmd.literal[0]:
        return
    base = cmd.name.rsplit("/", 1)[-1]
    args, raw, lit = cmd.args, cmd.raw_words[1:], cmd.literal[1:]
    spec = _opts.SPECS.get(base)
    if base == "xxd":
        found = xxd_operands(args, lit)
        for k in [] if isinstance(found, str) else found[:1]:
            add(args[k], lit[k], analysis.read_paths)
        return
    if base in _WRITERS:
        targets = _positionals(args)
        if base in ("chmod", "chown", "chgrp"):
            targets = targets[1:]
        for n, t in enumerate(targets):
            k = args.index(t)
            copy_source = base in ("cp", "install", "ln") and n < len(targets) - 1
            add(t, lit[k], analysis.read_paths if copy_source else analysis.write_paths)
        return
    reads_files = base in _READS_CWD or (spec is not None and not spec.no_file_operands)
    if reads_files and (where.cwd_unknown or not _inside(Path(os.path.realpath(where.cwd)), where.roots)):
        # The folder it runs in: what `ls`, `find`, `git status`, `grep -r x` read when no path is given.
        add(".", True, analysis.read_paths)
    if reads_files and names_unknown:
        analysis.dynamic_paths.append("$(file names xargs reads)")  # file names read from stdin or a file, or symlinks
    if base == "git":
        _git_file_args(cmd, where, analysis, add)
        return
    if base == "find":
        starts, refs = _find_files(args)
        for k in starts + refs:
            add(args[k], lit[k], analysis.read_paths)
        if {"-L", "-follow"} & set(args):
            _linked_outside([args[k] for k in starts if lit[k]] or ["."], where, analysis)
        return
    if base == "sed":
        _script_file_args(cmd, _SED_SPEC, ("-e", "--expression"), analysis, add)
        return
    if base in ("awk", "gawk", "mawk", "nawk"):
        _script_file_args(cmd, _AWK_SPEC, ("-e", "--source"), analysis, add)
        return
    if base == "diff" and ({"r"} & _short_flags(args) or "--recursive" in _long_flags(args)):
        for k, a in enumerate(args):
            if not a.startswith("-") and lit[k] and (p := _resolve(a, where)) is not None:
                _add_tree(p, analysis)
        if "--no-dereference" not in _long_flags(args):  # diff -r follows the symlinks it meets
            _linked_outside([a for k, a in enumerate(args) if not a.startswith("-") and lit[k]], where, analysis)
    if spec is None or (spec.no_file_operands and not spec.reads):
        return
    if spec.any_option and not (spec.values or spec.long_values):
        parsed = _opts.parse_options(_opts.Spec(any_option=True), args, raw, lit)
    else:
        parsed = _opts.parse_options(spec, args, raw, lit)
    for name in spec.reads:
        for value in parsed.values.get(name, []):
            add(value, True, analysis.read_paths)
    if spec.no_file_operands:
        return
    operands = parsed.operands
    patterns_given = any(o in parsed.options for o in ("-e", "-f", "--regexp", "--file")) or (
        base == "rg" and bool({"--files", "--type-list"} & set(parsed.options)))
    skip = 0 if patterns_given else spec.not_files
    for k in operands[skip:]:
        add(args[k], lit[k], analysis.read_paths)
    if _reads_trees(base, args):
        trees = [_resolve(args[k], where) for k in operands[skip:] if lit[k]]
        for tree in [t for t in trees if t is not None] or ([] if operands[skip:] else [where.cwd]):
            _add_tree(tree, analysis)
    if _follows_links(base, args):
        _linked_outside([args[k] for k in operands[skip:] if lit[k]] or ["."], where, analysis)


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


_MAX_WALK = 20_000


def _linked_outside(words: list[str], where: Where, analysis: Analysis) -> None:
    """For a program that follows symlinks below ``words``: each symlink there that leads outside the
    roots is a read path; a tree too large to look through (or a folder only known at run time) asks."""
    if where.cwd_unknown:
        return  # every path is already unknown
    seen = 0
    for word in words:
        top = _resolve(word, where)
        if top is None:
            continue
        stack = [str(top)]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > _MAX_WALK:
                    analysis.dynamic_paths.append(f"$(symlinks below {word})")
                    return
                if entry.is_symlink():
                    target = Path(os.path.realpath(entry.path))
                    if not _inside(target, where.roots) and target not in analysis.read_paths:
                        analysis.read_paths.append(target)
                elif entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                    stack.append(entry.path)


def _add_tree(path: Path, analysis: Analysis) -> None:
    if path not in analysis.tree_paths:
        analysis.tree_paths.append(path)


# Longer commands are not parsed (bashlex is linear but slow: ~0.1 s per KB here); they ask.
MAX_CLASSIFIED_CHARS = 64 * 1024
_ROUGH_SPLIT = re.compile(r"[;&|\n()`{}]+|\$\(|\bdo\b|\bthen\b|\belse\b")
_ROUGH_DROP = re.compile(r"[\\'\"]")


def _too_long(command: str) -> Analysis:
    """A command over the cap: not classified (asks). Deny/ask rules still see every rough command in
    it (split at operators, quotes and backslashes dropped, program basename, up to 8 leading words
    dropped for wrappers), in one linear pass."""
    texts: list[str] = []
    for segment in _ROUGH_SPLIT.split(command):
        words = _ROUGH_DROP.sub("", segment).split()
        for k in range(min(len(words), 8)):
            texts.append(" ".join([words[k].rsplit("/", 1)[-1], *words[k + 1 :]]))
    sub = Subcommand(command, "unknown", f"longer than {MAX_CLASSIFIED_CHARS} characters: not classified")
    return Analysis(command, [sub], False, "too long", match_texts=texts)


def analyze(command: str, where: Where, parsed: ParsedCommand | None = None) -> Analysis:
    """Classify every part of ``command``; the command is read-only only when all parts are."""
    if len(command) > MAX_CLASSIFIED_CHARS:
        return _too_long(command)
    parsed = parsed or parse(command)
    if _FORK_BOMB.search(command):
        sub = Subcommand(command.strip(), "catastrophic", "a fork bomb exhausts the machine")
        return Analysis(command, [sub], False, parsed.error, sub.reason)
    if parsed.error is not None:
        reason = parsed.hazards[0] if parsed.hazards else "the command could not be parsed"
        sub = Subcommand(command.strip(), "unknown", reason)
        return Analysis(command, [sub], False, parsed.error)
    subs: list[Subcommand] = [Subcommand(command.strip(), "unknown", why) for why in parsed.hazards[:1]]
    result = Analysis(command, subs, False)
    cwd, cwd_unknown = where.cwd, where.cwd_unknown
    rewrites: list[tuple[int, int, str]] = []  # globs' judged expansions, by their place in ``command``
    glob_words: list[str] = []
    last: SimpleCommand | None = None  # the last command outside xargs (what a pipe into xargs reads)
    xargs_unknown = exec_unknown = False
    for cmd in parsed.commands:
        here = Where(cwd, where.roots, where.home, where.git_programs, cwd_unknown)
        program = cmd.name.rsplit("/", 1)[-1] if cmd.words and cmd.literal[0] else ""
        if program == "xargs" and cmd.via != "xargs":
            # what xargs reads: a pipe from the command before it, unless it reads a file (-a, < list)
            reads_file = bool(cmd.redirects) or any(a.startswith(("-a", "--arg-file")) for a in cmd.args)
            xargs_unknown = reads_file or not _names_regular_files(last)
        elif program in ("find", "fd", "fdfind"):
            exec_unknown = not _names_regular_files(cmd)
        unknown_names = (cmd.via == "xargs" and xargs_unknown) or (cmd.via == "find -exec" and exec_unknown)
        cmd, refused = _expanded(cmd, here, rewrites, glob_words)
        if refused is not None:
            subs.append(Subcommand(" ".join(cmd.raw_words), "unknown", refused, list(cmd.words)))
        _file_args(cmd, here, result, unknown_names)
        if cmd.words and cmd.via not in ("xargs", "find -exec"):
            last = cmd
        if cmd.words:
            for text in (" ".join([cmd.name.rsplit("/", 1)[-1], *cmd.args]), " ".join(cmd.raw_words)):
                if text not in result.match_texts:
                    result.match_texts.append(text)
        if not cmd.transparent and not cmd.redirect_only:
            cls, why = classify_simple(cmd, here)
            text = cmd.text if cmd.assignments and cls != "read-only" else " ".join(cmd.raw_words) or cmd.text
            subs.append(Subcommand(text, cls, why, list(cmd.words)))
            if cmd.name in ("cd", "pushd", "popd"):
                target = _cd_target(cmd, here)
                cwd, cwd_unknown = (cwd, True) if target is None else (target, False)
        elif cmd.transparent:
            wrapper_reason = catastrophic_reason(cmd, here)
            if wrapper_reason:
                subs.append(Subcommand(" ".join(cmd.raw_words), "catastrophic", wrapper_reason, list(cmd.words)))
            elif cmd.assignments and not all(safe_assignment(a) for a in cmd.assignments):
                subs.append(
                    Subcommand(cmd.text, "execute", "environment variables change what runs", list(cmd.words))
                )
        for r in cmd.redirects:
            part = _redirect_part(r, here)
            if part is not None:
                subs.append(part)
    result.read_only = all(s.cls == "read-only" for s in subs)
    result.catastrophic = next((s.reason for s in subs if s.cls == "catastrophic"), None)
    if rewrites and result.read_only:
        # Only a read-only command: in any other, an earlier part may create or remove the files a later
        # glob matches (`mkdir b && cd b && ls *`), and the user (or a rule) approves the command as written.
        text = command
        for start, end, words in sorted(set(rewrites), reverse=True):
            text = text[:start] + words + text[end:]
        result.run_command = text
    elif glob_words:
        # Run as written: bash expands these when the command runs, and an earlier part may have changed
        # what they match. Their file names are only known then (a deny rule cannot be checked now).
        result.dynamic_paths.extend(w for w in glob_words if w not in result.dynamic_paths)
    return result


# Programs that read ``@FILE`` arguments as files of more arguments before parsing options, even after
# ``--`` (binutils' response files): never read-only with a word only known when bash expands it.
RESPONSE_FILE_PROGRAMS = frozenset({"strings", "nm", "objdump", "readelf", "size", "addr2line", "c++filt",
                                    "ar", "strip", "objcopy", "elfedit", "gprof", "ld", "as", "windres"})
# Programs whose own parser reads an option after ``--`` too (or has no ``--``).
_NO_DASHDASH = frozenset({"echo", "expr", "find", "test", "["})


def _expanded(cmd: SimpleCommand, where: Where, rewrites: list[tuple[int, int, str]],
              glob_words: list[str]) -> tuple[SimpleCommand, str | None]:
    """``cmd`` with its brace and glob words expanded the way bash will expand them (issue 27), and why it
    cannot be read-only when an expansion makes an option or a response file (else None). The globs'
    expansions go into ``rewrites`` (the run uses exactly the words judged here), the globs that matched
    into ``glob_words``."""
    if not cmd.words or not cmd.literal[0] or all(cmd.literal[1:]):
        return cmd, None
    base = cmd.name.rsplit("/", 1)[-1]
    if base in RESPONSE_FILE_PROGRAMS:
        return cmd, (f"{base} reads @FILE arguments as files of options (even after --); a word that bash "
                     "expands could become one")
    if where.cwd_unknown:
        return cmd, None  # relative to a folder only known at run time: left as run-time words
    words, raw, lit = [cmd.words[0]], [cmd.raw_words[0]], [True]
    options_end = False
    refused: str | None = None
    for k in range(1, len(cmd.words)):
        word, raw_word = cmd.words[k], cmd.raw_words[k]
        if cmd.literal[k] or any(t in raw_word for t in ("$", "`", "<(", ">(")):
            options_end = options_end or (cmd.literal[k] and word == "--" and base not in _NO_DASHDASH)
            words.append(word)
            raw.append(raw_word)
            lit.append(cmd.literal[k])
            continue
        expansion = expand_word(raw_word, where.cwd, where.home)
        if expansion is None:
            refused = refused or f"`{raw_word}` is expanded by bash in a way not worked out here"
            words.append(word)
            raw.append(raw_word)
            lit.append(False)
            continue
        globbed = has_glob(raw_word)
        if globbed:
            if cmd.spans is None:
                refused = refused or (f"`{raw_word}` is a glob inside a command string (sh -c, eval): its "
                                      "matches are only known when it runs")
            else:
                start, end = cmd.spans[k]
                rewrites.append((start, end, " ".join(_quote(w) for w in expansion)))
        option = next((w for w in expansion if w.startswith("-") and w != "-"), None)
        if option is not None and not options_end:
            refused = refused or (f"`{raw_word}` expands to `{option}`, which {base} would read as an option "
                                  "(a file name or brace can be option-like)")
        if globbed and expansion == [word]:
            # Matched nothing: bash passes the pattern itself (quotes removed); judged as a run-time word,
            # as before (it must not look like an option), and run quoted.
            words.append(word)
            raw.append(raw_word)
            lit.append(False)
            continue
        if globbed:
            glob_words.append(raw_word)
        words += expansion
        raw += [_quote(w) for w in expansion]
        lit += [True] * len(expansion)
    expanded = SimpleCommand(words=words, literal=lit, raw_words=raw, assignments=list(cmd.assignments),
                             redirects=list(cmd.redirects), via=cmd.via, extra_args=cmd.extra_args,
                             dynamic_heredoc=cmd.dynamic_heredoc, transparent=cmd.transparent,
                             redirect_only=cmd.redirect_only)
    return expanded, refused


def _quote(word: str) -> str:
    return word if re.fullmatch(r"[A-Za-z0-9_./=:,@%+^-]+", word) else "'" + word.replace("'", "'\\''") + "'"


def _cd_target(cmd: SimpleCommand, where: Where) -> Path | None:
    """Where ``cd``/``pushd`` go when that is known before the command runs; None for ``popd``,
    ``cd -``, ``pushd +N``, a run-time word or a name CDPATH could redirect (the Bash tool's commands run
    without CDPATH, see ``shells.ShellManager.env``)."""
    args = [a for a in cmd.args if a not in ("-L", "-P", "-e", "-@")]
    lit = all(cmd.literal[1:])
    if cmd.name == "popd" or not lit or (cmd.name == "pushd" and (not args or "-n" in args)):
        return None
    if not args:
        return where.home  # `cd` alone: $HOME
    if len(args) != 1 or args[0] == "-" or args[0].startswith(("+", "-")):
        return None
    return _resolve(args[0], where)


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


def is_read_only(command: str, cwd: Path | None = None) -> bool:
    return analyze(command, Where(cwd or Path.cwd())).read_only


# ---- read-only by construction: allow-lists --------------------------------------------------------

# Directories whose programs are the system's (a program found elsewhere — a workspace file, a
# virtualenv, node_modules/.bin — is not the program its name suggests).
SYSTEM_BIN_DIRS = (
    "/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin", "/usr/lib/git-core",
    "/opt/homebrew/bin", "/usr/libexec",
)


def _inside(p: Path, roots: list[Path]) -> bool:
    return any(p == r or p.is_relative_to(r) for r in roots)


@lru_cache(maxsize=1024)
def _lookup(name: str, path_env: str) -> tuple[str | None, bool]:
    """(first executable found on PATH, whether every PATH entry before it is absolute)."""
    for entry in path_env.split(os.pathsep):
        if not entry or not entry.startswith("/"):
            return None, False  # "" and relative entries search the cwd
        candidate = os.path.join(entry, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate, True
    return None, True


def identity(name: str, where: Where) -> tuple[str | None, str]:
    """The system program ``name`` runs (its basename), or None and why it is not one we know."""
    base = name.rsplit("/", 1)[-1]
    if "/" in name:
        if not name.startswith("/"):
            return None, f"runs {name}, a file relative to the working directory"
        real = Path(os.path.realpath(name))
        if _inside(real, where.roots) or not str(real.parent).startswith(SYSTEM_BIN_DIRS):
            return None, f"runs {name}, which is not a system program"
        return base, ""
    if name in _opts.BUILTINS:
        return name, ""
    found, clean = _lookup(name, os.environ.get("PATH", ""))
    if not clean:
        return None, "PATH searches the working directory"
    if found is None:
        return base, ""  # not installed: bash fails with "command not found", nothing runs
    real = Path(os.path.realpath(found))
    if _inside(real, where.roots) or _inside(Path(found), where.roots):
        return None, f"`{name}` resolves to {found}, inside the workspace"
    return base, ""


_TEST_UNARY = frozenset("-a -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x -G -L -N -O -S -z -n -o".split())
_TEST_BINARY = frozenset("= == != < > -eq -ne -lt -le -gt -ge -nt -ot -ef =~".split())


def _check_test_ro(cmd: SimpleCommand) -> str | None:
    words, raw, lit = cmd.args, cmd.raw_words[1:], cmd.literal[1:]
    if cmd.name == "[":
        if not words or words[-1] != "]":
            return "[ without ]"
        words, raw, lit = words[:-1], raw[:-1], lit[:-1]
    for k, w in enumerate(words):
        if lit[k] and w in ("-v", "-R"):
            return "test -v evaluates array subscripts, which can run code"
        if not lit[k]:
            if unquoted_expansion(raw[k]) or any(ch in _opts_glob for ch in raw[k]):
                return f"`{raw[k]}` is split or globbed at run time and could become a test operator"
            prev = words[k - 1] if k and lit[k - 1] else None
            nxt = words[k + 1] if k + 1 < len(words) and lit[k + 1] else None
            if not ((prev in _TEST_UNARY or prev in _TEST_BINARY) or nxt in _TEST_BINARY):
                return f"`{raw[k]}` is only known at run time and could become a test operator (-v)"
    return None


_opts_glob = set("*?[")


def _check_read_ro(cmd: SimpleCommand, parsed: _opts.Parsed) -> str | None:
    names = [cmd.args[i] for i in parsed.operands] + parsed.values.get("-a", [])
    for i in parsed.operands:
        if not cmd.literal[1 + i]:
            return "read into a variable named at run time"
    bad = [n for n in names if not assignable(n)]
    if bad:
        return f"read assigns {bad[0]}, which changes later commands (or evaluates a subscript)"
    return None


_SET_OK_OPTIONS = frozenset({"pipefail", "errexit", "nounset", "xtrace", "verbose", "noclobber", "noglob"})


def _check_set_ro(args: list[str]) -> str | None:
    i = 0
    while i < len(args):
        a = args[i]
        if a[:1] not in "-+" or len(a) < 2 or a == "--":
            return "set with arguments changes the positional parameters"
        letters = a[1:]
        for k, c in enumerate(letters):
            if c == "o":
                value = letters[k + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                if not letters[k + 1 :]:
                    i += 1
                if value not in _SET_OK_OPTIONS:
                    return f"set -o {value} changes how later commands run"
                break
            if c not in "euxvfC":
                return f"set -{c} changes how later commands run (-a exports, -k takes assignments anywhere)"
        i += 1
    return None


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


def read_only_reason(cmd: SimpleCommand, base: str) -> str | None:
    """None when ``cmd`` (program ``base``) is read-only by the allow-lists, else why not."""
    args, raw, lit = cmd.args, cmd.raw_words[1:], cmd.literal[1:]
    spec = _opts.SPECS.get(base)
    if cmd.extra_args and not (spec is not None and spec.any_option):
        return "arguments only known at run time (xargs, find -exec) could add options"
    if base in ("test", "["):
        return _check_test_ro(cmd)
    if base == "set":
        return _check_set_ro(args) if all(lit) else "set with words only known at run time"
    if base == "env":
        return None if not args else "env with arguments runs a program with a changed environment"
    if base == "command":
        return None if args[:1] in (["-v"], ["-V"]) and all(lit) else "command runs a program"
    if base == "history":
        return "history with options changes or writes the history" if args else None
    if base == "sed":
        return _check_sed_ro(cmd)
    if base in ("awk", "gawk", "mawk", "nawk"):
        return _check_awk_ro(cmd)
    if base == "find":
        return _check_find_ro(cmd)
    if base == "git":
        return _check_git_ro(args, lit)
    if base == "xxd":
        parsed_xxd = xxd_operands(args, lit)
        return parsed_xxd if isinstance(parsed_xxd, str) else (
            "xxd INFILE OUTFILE writes OUTFILE" if len(parsed_xxd) > 1 else None)
    if base in ("docker", "podman"):
        return docker_ro(args, lit, base)
    if base in _VERSION_ONLY:
        return None if args and all(a in ("--version", "-V") for a in args) else f"{base} runs code"
    if spec is None:
        if base in PAGERS:
            return (f"{base} is a pager: it runs the LESSOPEN input preprocessor and has shell escapes "
                    "(cat or head read a file without them)")
        return f"{base} is not a known read-only command"
    if not spec.any_option and not all(lit) and base in ("tar", "unzip", "pip", "pip3"):
        return "words only known at run time"
    if base == "tar":
        return _check_tar_ro(args)
    if base == "unzip":
        return _check_unzip_ro(args)
    if base in ("pip", "pip3"):
        return _check_pip_ro(args)
    parsed = _opts.parse_options(spec, args, raw, lit)
    if not parsed.ok:
        return parsed.reason
    listed = next((o for o in parsed.options if o in spec.lists), None)
    if listed is not None:
        return f"{base} {listed} reads the files a list names (not its operands): which ones is only known at run time"
    if base == "jq":
        return _check_jq_ro(args)
    if base == "strings" and any(a.startswith("@") for a in args):
        return "strings @FILE reads options from a file"
    if base == "ps" and any(not a.startswith("-") and "e" in a for a in args):
        return "ps e shows the environment of processes (their secrets too)"
    if base == "man" and any("/" in args[k] for k in parsed.operands):
        return "man NAME with a slash formats that file as a manual page"
    if base == "read":
        return _check_read_ro(cmd, parsed)
    if base == "date" and any(not args[k].startswith("+") for k in parsed.operands):
        return "date MMDDhhmm sets the system clock"
    return None


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

"""Each simple command → a class; a whole command → its parts, read-only or not, catastrophic or not.

Classes (ordered by risk): ``read-only`` < ``write`` < ``write-outside`` < ``network`` < ``process``
< ``execute`` < ``unknown`` < ``destructive`` < ``catastrophic``.

The rule of this module: *read-only* is a promise that the command cannot write a file, run code we
did not see, or reach the network. Anything we cannot prove that for (unknown programs, dynamic
words in flag position, unparsed syntax, scripts for awk/sed we cannot read) is not read-only.

This module is the core walker; the rules of each program family live in ``programs/<family>.py`` and the
shared vocabulary (``Where``, ``Analysis``, option helpers) in ``base.py`` (docs/architecture.md, "Where
things go").
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from functools import lru_cache
from pathlib import Path

from sidecar.shell import options as _opts
from sidecar.shell.base import (
    Analysis,
    Subcommand,
    Where,
    _add_tree,
    _inside,
    _long_flags,
    _positionals,
    _resolve,
    _short_flags,
)
from sidecar.shell.expand import expand_word, has_glob
from sidecar.shell.gitdir import outside_places
from sidecar.shell.parse import ParsedCommand, Redirect, SimpleCommand, parse
from sidecar.shell.programs.archives import _check_tar, _check_tar_ro, _check_unzip, _check_unzip_ro
from sidecar.shell.programs.builtins import (
    _check_command_builtin,
    _check_env,
    _check_read_ro,
    _check_set,
    _check_set_ro,
    _check_test_ro,
)
from sidecar.shell.programs.docker import docker_ro
from sidecar.shell.programs.find import _check_fd, _check_find, _check_find_ro, _find_files, _names_regular_files
from sidecar.shell.programs.git import (
    GIT_OUTSIDE_REASON,
    GIT_PROGRAMS_REASON,
    _check_git,
    _check_git_ro,
    _git_dir_arg,
    _git_file_args,
    _git_needs_no_repository,
)
from sidecar.shell.programs.packages import _check_npm, _check_pip, _check_pip_ro, _check_version_only
from sidecar.shell.programs.sed_awk import (
    _AWK_SPEC,
    _SED_SPEC,
    _check_awk,
    _check_awk_ro,
    _check_sed,
    _check_sed_ro,
    _script_file_args,
)
from sidecar.shell.programs.text import (
    PAGERS,
    _check_date,
    _check_file,
    _check_history,
    _check_hostname,
    _check_jq_ro,
    _check_less,
    _check_man,
    _check_rg,
    _check_sort,
    _check_tree,
    _check_uniq,
    _check_xxd,
    _follows_links,
    _reads_trees,
    xxd_operands,
)

__all__ = [
    "DESTRUCTIVE",
    "FLAG_INSENSITIVE",
    "GIT_OUTSIDE_REASON",
    "GIT_PROGRAMS_REASON",
    "INTERPRETERS",
    "MAX_CLASSIFIED_CHARS",
    "NETWORK",
    "PROCESS",
    "RESPONSE_FILE_PROGRAMS",
    "SAFE_ENV_VARS",
    "WRITE",
    "Analysis",
    "Subcommand",
    "Where",
    "analyze",
    "catastrophic_reason",
    "classify_simple",
    "identity",
    "is_read_only",
    "read_only_reason",
    "safe_assignment",
    "xxd_operands",
]

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


# ---- flag helpers ---------------------------------------------------------------------------------


# ---- per-program checks: return None when read-only, else (class, reason) -------------------------


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


def is_read_only(command: str, cwd: Path | None = None) -> bool:
    return analyze(command, Where(cwd or Path.cwd())).read_only


# ---- read-only by construction: allow-lists --------------------------------------------------------

# Directories whose programs are the system's (a program found elsewhere — a workspace file, a
# virtualenv, node_modules/.bin — is not the program its name suggests).
SYSTEM_BIN_DIRS = (
    "/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin", "/usr/lib/git-core",
    "/opt/homebrew/bin", "/usr/libexec",
)


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



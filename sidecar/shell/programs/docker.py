"""docker / podman: the inspection subcommands that only ask the user's own daemon (issue 29).

Read-only: ``ps``, ``images``, ``logs``, ``inspect``, ``version``, ``info``, ``top``-free listings
(``container|image|network|volume|context ls``, ``image history``, ``port``, ``system df``, ``stats
--no-stream``), ``compose ps|ls|images|version`` and ``compose config`` with a names-only flag, each with
the options listed here and nothing else. Not read-only: any global option (``-H``/``--host`` and
``--context`` reach another daemon, ``--config`` reads another configuration), ``compose -f FILE``
(a file named in an option) and plain ``compose config``, which prints the project with every
``env_file`` it names read in (such a file can lie anywhere: an outside read). Anything else —
``run``, ``exec``, ``build``, ``cp``, ``events`` … — asks.
"""

from __future__ import annotations

_LIST = frozenset({"-a", "--all", "-q", "--quiet", "--no-trunc", "--format", "-f", "--filter", "-n", "--last",
                   "-l", "--latest", "-s", "--size", "--digests", "--tree"})
_VALUED = frozenset({"--format", "-f", "--filter", "-n", "--last", "--since", "--until", "--tail", "--type",
                     "--status"})
_OPTIONS: dict[tuple[str, ...], frozenset[str]] = {
    ("ps",): _LIST, ("container", "ls"): _LIST, ("container", "list"): _LIST, ("container", "ps"): _LIST,
    ("images",): _LIST, ("image", "ls"): _LIST, ("image", "list"): _LIST,
    ("network", "ls"): _LIST, ("network", "list"): _LIST, ("volume", "ls"): _LIST, ("volume", "list"): _LIST,
    ("context", "ls"): _LIST, ("context", "list"): _LIST,
    ("logs",): frozenset({"--details", "-f", "--follow", "--since", "--until", "-n", "--tail", "-t",
                          "--timestamps"}),
    ("container", "logs"): frozenset({"--details", "-f", "--follow", "--since", "--until", "-n", "--tail", "-t",
                                      "--timestamps"}),
    ("inspect",): frozenset({"-f", "--format", "-s", "--size", "--type"}),
    ("container", "inspect"): frozenset({"-f", "--format", "-s", "--size"}),
    ("image", "inspect"): frozenset({"-f", "--format"}),
    ("network", "inspect"): frozenset({"-f", "--format", "-v", "--verbose"}),
    ("volume", "inspect"): frozenset({"-f", "--format"}),
    ("version",): frozenset({"-f", "--format"}), ("info",): frozenset({"-f", "--format"}),
    ("history",): frozenset({"-H", "--human", "--no-trunc", "-q", "--quiet", "--format"}),
    ("image", "history"): frozenset({"-H", "--human", "--no-trunc", "-q", "--quiet", "--format"}),
    ("port",): frozenset(), ("container", "port"): frozenset(),
    ("system", "df"): frozenset({"-v", "--verbose", "--format"}),
    ("stats",): frozenset({"--no-stream", "-a", "--all", "--no-trunc", "--format"}),
    ("compose", "ps"): frozenset({"-a", "--all", "-q", "--quiet", "--services", "--format", "--status",
                                  "--filter", "--no-trunc", "--orphans"}),
    ("compose", "ls"): frozenset({"-a", "--all", "-q", "--quiet", "--format", "--filter"}),
    ("compose", "images"): frozenset({"-q", "--quiet", "--format"}),
    ("compose", "version"): frozenset({"--short", "-f", "--format"}),
    ("compose", "config"): frozenset({"--services", "--volumes", "--profiles", "--images", "--networks",
                                      "-q", "--quiet", "--hash"}),
}
# compose config prints the whole project only without one of these (names only, or nothing).
_COMPOSE_NAMES_ONLY = frozenset({"--services", "--volumes", "--profiles", "--images", "--networks", "-q",
                                 "--quiet"})
# compose's own options before its subcommand: the project name and directory (its files are the
# project's, below the roots), never -f/--file or --env-file.
_COMPOSE_GLOBAL = frozenset({"-p", "--project-name", "--ansi", "--progress"})


def docker_ro(args: list[str], lit: list[bool], program: str = "docker") -> str | None:
    """None when this docker/podman command only inspects (see the module docstring), else why not."""
    if args in (["--version"], ["-v"], ["version"], ["--help"], ["help"]):
        return None
    if not all(lit):
        return f"{program} with words only known at run time"
    if not args or args[0].startswith("-"):
        return f"{program} {args[0] if args else ''} (a global option can name another daemon or configuration)"
    rest = args
    key: tuple[str, ...]
    if rest[0] == "compose":
        rest = rest[1:]
        while rest and rest[0].startswith("-"):
            name = rest[0].split("=", 1)[0]
            if name not in _COMPOSE_GLOBAL:
                return f"{program} compose {rest[0]} (-f and --env-file read files named in them)"
            rest = rest[1:] if "=" in rest[0] else rest[2:]
        if not rest:
            return f"{program} compose without a subcommand"
        key = ("compose", rest[0])
        rest = rest[1:]
    elif len(rest) > 1 and (rest[0], rest[1]) in _OPTIONS:
        key, rest = (rest[0], rest[1]), rest[2:]
    else:
        key, rest = (rest[0],), rest[1:]
    allowed = _OPTIONS.get(key)
    if allowed is None:
        return f"{program} {' '.join(key)} is not an inspection subcommand known to be read-only"
    seen: set[str] = set()
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("--help", "-h"):
            return None
        if word.startswith("-") and word != "-":
            name, eq, _value = word.partition("=")
            if name not in allowed:
                return f"{program} {' '.join(key)} {name} is not an option known to be read-only"
            seen.add(name)
            if name in _VALUED and not eq:
                i += 1
        i += 1
    if key == ("compose", "config") and not seen & _COMPOSE_NAMES_ONLY:
        return (f"{program} compose config prints the project with every env_file it names read in (such a "
                "file can lie outside the workspace); --services, --volumes or --images list names only")
    if key == ("stats",) and "--no-stream" not in seen:
        return f"{program} stats without --no-stream never ends"
    return None

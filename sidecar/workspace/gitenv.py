"""The environment every git the agent runs gets: no repository-controlled program runs (issue 15).

A repository's ``.git/config`` can name programs git runs on its own: ``core.fsmonitor`` (on every
``git status``), hooks, a pager, transports (``ext::``). A workspace that was written by a command the
agent ran must not turn the sidecar's own ``git status`` (system prompt, checkpoints) or the model's
``git log`` into code execution. So every git the sidecar starts, and every Bash command (git reads the
same variables), carries command-line-scope configuration through ``GIT_CONFIG_COUNT`` /
``GIT_CONFIG_KEY_n`` / ``GIT_CONFIG_VALUE_n``, which wins over the repository's config:

- ``core.fsmonitor=false`` (the hook never runs), ``core.hooksPath=/dev/null`` (no hook is found),
  ``core.pager=cat`` and ``GIT_PAGER=cat`` (no pager program), ``protocol.ext.allow=never``;
- ``safe.bareRepository=explicit``: a directory that merely *looks* like a git dir (``evil/HEAD``,
  ``evil/config``, ``evil/objects``) is not used as a repository unless named with ``--git-dir``;
- ``GIT_EXTERNAL_DIFF`` is removed from the environment.

Not covered by configuration: ``diff.external``, per-driver ``textconv``/``command`` and ``filter``
drivers from the repository's config (a ``.git/config`` that came with an unpacked archive). Git has
no setting that turns the diff ones off (an empty ``diff.external`` makes every ``git diff`` fail with
"cannot run"), so ``repo_programs`` lists the keys of the repository's own configuration that name a
program: a git command there is never read-only (it asks, saying which key), and the sidecar's own
``git status`` blanks the repository's filter drivers (``filter_overrides``; an empty ``clean`` is no
filter). ``.git/config`` is read-only inside the Bash sandbox and the Write tool asks before touching it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

SAFE_GIT_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("protocol.ext.allow", "never"),
    ("safe.bareRepository", "explicit"),
)


def safe_git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: ``os.environ``) plus the configuration above, after any it already carries."""
    env = dict(os.environ if base is None else base)
    try:
        start = max(0, int(env.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        start = 0
    for i, (key, value) in enumerate(SAFE_GIT_CONFIG, start):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    env["GIT_CONFIG_COUNT"] = str(start + len(SAFE_GIT_CONFIG))
    env["GIT_PAGER"] = "cat"
    env.pop("GIT_EXTERNAL_DIFF", None)
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    return env


# Keys whose value is a program git runs by itself (for reading commands too: diff, log -p, status).
_PROGRAM_KEY = re.compile(
    r"(diff\.external|diff\..+\.(textconv|command)|filter\..+\.(clean|smudge|process)|merge\..+\.driver"
    r"|gpg\.(.+\.)?program|core\.(sshcommand|askpass|editor|gitproxy|alternaterefscommand)|sequence\.editor"
    r"|credential\.(.+\.)?helper|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack))",
    re.IGNORECASE)
_REPO_SCOPES = ("local", "worktree")


def repo_programs(directory: Path) -> list[str]:
    """``key=value`` of each setting in the repository's own configuration (local and worktree scope,
    includes followed) that names a program git may run, for the repository at ``directory``; ``[]``
    outside a repository. The user's global and system configuration are theirs, and not listed."""
    try:
        done = subprocess.run(["git", "config", "--list", "--show-scope", "--includes", "-z"], cwd=directory,
                              capture_output=True, timeout=5, env=safe_git_env())
    except (OSError, subprocess.SubprocessError):
        return []
    fields = done.stdout.decode("utf-8", "replace").split("\0")
    found: list[str] = []
    for scope, entry in zip(fields[::2], fields[1::2], strict=False):
        key, _, value = entry.partition("\n")
        if scope in _REPO_SCOPES and _PROGRAM_KEY.fullmatch(key):
            found.append(f"{key}={value}")
    return found


def filter_overrides(programs: list[str]) -> list[str]:
    """``-c`` options that blank the repository's filter drivers named in ``programs`` for one git run."""
    out: list[str] = []
    for key in {entry.split("=", 1)[0].lower() for entry in programs}:
        if key.startswith("filter.") and key.rsplit(".", 1)[-1] in ("clean", "smudge", "process"):
            out += ["-c", f"{key}="]
    return out

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

Not covered by configuration: ``diff.external`` and per-driver ``textconv``/``command`` from the
repository's config. Git has no setting that turns them off (an empty ``diff.external`` makes every
``git diff`` fail with "cannot run"), so they are guarded where they come from: ``.git/config`` is
read-only inside the Bash sandbox and the Write tool asks before touching it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

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

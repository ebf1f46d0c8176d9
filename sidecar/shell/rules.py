"""Claude Code's ``Bash(...)`` specifiers, matched against one subcommand; the narrowest suggestion.

- ``Bash(npm run test)``: exactly that command (whitespace runs count as one space).
- ``Bash(npm run test *)``: a trailing `` *`` keeps the word boundary and also matches the bare
  command: ``ls *`` matches ``ls`` and ``ls -la``, never ``lsof``.
- ``Bash(npm test:*)``: the legacy prefix form, the same word-boundary prefix.
- ``*`` elsewhere matches any text (``git * main``); ``\\*`` is a literal star. ``Bash(*)`` and a bare
  ``Bash`` match everything.

Matching is per subcommand (the parse splits ``&&``, ``|`` …): a rule never spans two commands, so
``Bash(echo *)`` does not allow ``echo ok && curl -X POST …``. Pure functions; the permissions engine
(``sidecar.permissions.rules``) imports ``bash_rule_matches``.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache

from sidecar.shell.classify import DESTRUCTIVE, WRITE


def _normalize(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=4096)
def _compile(specifier: str) -> re.Pattern[str] | str:
    spec = _normalize(specifier)
    if spec in ("", "*"):
        return re.compile(r".*", re.DOTALL)
    if spec.endswith(":*"):
        prefix = spec[:-2].rstrip()
        return re.compile(re.escape(prefix) + r"(?: .*)?", re.DOTALL)
    tail_any = spec.endswith(" *") and not spec.endswith("\\ *")
    body = spec[:-2] if tail_any else spec
    pieces: list[str] = []
    i = 0
    has_wild = False
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body) and body[i + 1] == "*":
            pieces.append(re.escape("*"))
            i += 2
            continue
        if c == "*":
            pieces.append(".*")
            has_wild = True
        else:
            pieces.append(re.escape(c))
        i += 1
    if not has_wild and not tail_any:
        return body.replace("\\*", "*")
    pattern = "".join(pieces) + (r"(?: .*)?" if tail_any else "")
    return re.compile(pattern, re.DOTALL)


def bash_rule_matches(specifier: str, subcommand: str) -> bool:
    """Whether the ``Bash(<specifier>)`` rule covers ``subcommand`` (one simple command)."""
    compiled = _compile(specifier)
    command = _normalize(subcommand)
    if isinstance(compiled, str):
        return command == compiled
    return compiled.fullmatch(command) is not None


# Programs whose second (and sometimes third) word names what they do: `git commit`, `npm run test`.
_SUBCOMMAND_TOOLS = frozenset(
    {
        "git",
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "cargo",
        "go",
        "docker",
        "podman",
        "kubectl",
        "helm",
        "pip",
        "pip3",
        "uv",
        "poetry",
        "pipenv",
        "conda",
        "brew",
        "apt",
        "apt-get",
        "gh",
        "dotnet",
        "mvn",
        "gradle",
        "rustup",
        "deno",
        "terraform",
        "aws",
        "gcloud",
        "az",
        "systemctl",
        "make",
        "just",
        "nx",
        "turbo",
        "rake",
        "bundle",
        "mix",
        "composer",
        "swift",
        "flutter",
        "dart",
        "ng",
        "tox",
        "nox",
        "hatch",
        "pdm",
        "rye",
        "pixi",
    }
)
# ... and these add one more word: `npm run <script>`, `docker compose <cmd>`, `uv run <tool>`.
_THIRD_WORD = {
    ("npm", "run"),
    ("pnpm", "run"),
    ("yarn", "run"),
    ("bun", "run"),
    ("docker", "compose"),
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("uv", "pip"),
    ("cargo", "+nightly"),
    ("go", "mod"),
    ("gh", "pr"),
    ("gh", "issue"),
    ("gh", "repo"),
    ("kubectl", "config"),
    ("npm", "run-script"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("rye", "run"),
    ("pixi", "run"),
}
_PYTHON = frozenset({"python", "python3"})

# Programs that run whatever code or command their arguments give them (issue 27): an interpreter with
# ``-c``/``-e`` or a script, a shell, ``eval``, a package runner that fetches and runs a package, ``make``
# (any target, ``--eval``, ``-f``), wrappers that run another command. A rule ``Bash(python3 *)`` would
# allow any Python program from then on, so "always allow" offers only the exact command for these.
GIVEN_CODE = frozenset(
    "python python2 python3 pypy pypy3 node nodejs deno bun ruby perl php lua luajit Rscript R java julia "
    "scala kotlin swift groovy osascript pwsh powershell tclsh wish irb ipython jshell ts-node tsx elixir "
    "erl ghci runghc sh bash zsh dash ksh ash fish csh tcsh busybox source . exec eval npx pnpx bunx uvx "
    "pipx make gmake cmake ninja watch script expect parallel at batch vim vi nvim emacs gdb lldb strace "
    "ltrace valgrind sudo doas su runuser pkexec chroot unshare nsenter firejail bwrap flock setsid "
    "xvfb-run env xargs nohup timeout nice time stdbuf ionice systemd-run entr nodemon direnv ssh "
    "command builtin trap alias".split())
# Subcommands of otherwise ordinary tools that run code given to them: `uv run X`, `docker run IMAGE`.
_GIVEN_CODE_SUB = {
    ("go", "run"), ("go", "generate"), ("go", "tool"), ("cargo", "run"), ("cargo", "script"),
    ("docker", "run"), ("docker", "exec"), ("podman", "run"), ("podman", "exec"), ("kubectl", "exec"),
    ("kubectl", "run"), ("npm", "exec"), ("npm", "x"), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"),
    ("yarn", "exec"), ("bun", "x"), ("deno", "run"), ("deno", "eval"), ("dotnet", "run"), ("dotnet", "exec"),
    ("uv", "run"), ("uv", "tool"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"), ("hatch", "run"),
    ("rye", "run"), ("pixi", "run"), ("conda", "run"), ("mamba", "run"), ("git", "-c"), ("gh", "extension"),
}


def _exact(text: str) -> str:
    """``Bash(<the command as written>)``: matches that command only (``*`` taken literally)."""
    return f"Bash({' '.join(text.split()).replace('*', chr(92) + '*')})"


def suggest_rule(subcommand_words: list[str], text: str | None = None) -> str:
    """The narrowest "always allow" rule a user would want for this command; ``text`` is the part as the
    rules see it (as written), used for an exact rule.

    ``npm run test -- -x`` → ``Bash(npm run test *)``; ``git commit -m x`` → ``Bash(git commit *)``;
    ``python -m pytest -q`` → ``Bash(python -m pytest *)``; ``pytest -q`` → ``Bash(pytest *)``;
    commands that write or delete, and programs that run the code they are given (``python3 -c …``,
    ``bash -c …``, ``npx x``, ``make x``, ``uv run python …``), get the exact command.
    """
    words = [w for w in subcommand_words if w]
    if not words:
        return "Bash"
    name = words[0]
    base = name.rsplit("/", 1)[-1]
    exact = _exact(text) if text and "\n" not in text else f"Bash({_join(words)})"
    prefix: list[str]
    if base in _PYTHON and len(words) > 2 and words[1] == "-m" and words[2] not in GIVEN_CODE:
        prefix = words[:3]  # one module, run the same way: only its arguments vary
    elif base in GIVEN_CODE:
        return exact
    elif base in _SUBCOMMAND_TOOLS and len(words) > 1 and not words[1].startswith("-"):
        prefix = words[:2]
        if (base, words[1]) in _THIRD_WORD and len(words) > 2 and not words[2].startswith("-"):
            if words[2].rsplit("/", 1)[-1] in GIVEN_CODE:
                return exact  # `uv run pytest *` is one program, `uv run python -c …` any code
            prefix = words[:3]
        elif (base, words[1]) in _GIVEN_CODE_SUB:
            return exact
    elif base in WRITE or base in DESTRUCTIVE or ("/" in name and not name.startswith("./")):
        return exact
    else:
        prefix = words[:1]
    if len(prefix) == len(words):
        return f"Bash({_join(prefix)})" if base not in _SUBCOMMAND_TOOLS else f"Bash({_join(prefix)} *)"
    return f"Bash({_join(prefix)} *)"


def describe_rule(rule: str) -> str:
    """What saving ``rule`` would allow besides the command asked about, in one sentence."""
    spec = rule[len("Bash("):-1] if rule.startswith("Bash(") and rule.endswith(")") else ""
    if not spec:
        return f"{rule} would allow every command."
    if spec.endswith(" *") and "*" not in spec[:-2].replace("\\*", ""):
        return (f"{rule} would also allow `{spec[:-2]}` with any other arguments (it never covers another "
                "program or subcommand).")
    if isinstance(_compile(spec), str):
        return f"{rule} allows exactly this command again, nothing wider."
    return f"{rule} would allow every command matching `{spec}` (`*` stands for any text)."


def _join(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)

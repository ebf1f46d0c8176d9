"""Issue 29, "fewer needless questions, no new bypass": what the peers run without a question is read-only
here too — docker/podman inspection, `bash -lc` with a read-only script, `git --help`, assignments of
variables nothing reads, `${x@Q}` — and each near miss that would change what runs still asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.shell.classify import Where, analyze

READ_ONLY_NOW = [
    "docker ps", "docker ps -a --format '{{.Names}}'", "docker images", "docker image ls -q",
    "docker container ls -a", "docker logs --tail 50 web", "docker logs -f web", "docker inspect web",
    "docker inspect -f '{{.State.Status}}' web", "docker version", "docker info", "docker network ls",
    "docker volume ls", "docker stats --no-stream", "docker system df", "docker compose ps",
    "docker compose -p app ps -a", "docker compose ls", "docker compose images",
    "docker compose config --services", "podman ps", "podman images", "podman logs web",
    "bash -lc 'ls && git status'", "bash -lc 'cat a.txt | head -1'", "sh -lc 'grep -rn alpha .'",
    "bash --login -c 'git log --oneline -5'", "git --help", "git help", "git status -h",
    "FOO=bar", "A=1 B=2 ls -la", "X=1; echo $X", "FOO=bar git status", 'echo "${x@Q}"', 'echo "${x@U}"',
]
STILL_ASKS = [
    # docker: another daemon, a file named in an option, running anything, a printout of env_file content
    "docker -H tcp://10.0.0.1:2375 ps", "docker --context prod ps", "docker --config /x ps", "docker run alpine",
    "docker exec web sh", "docker compose -f /etc/x.yml ps", "docker compose --env-file /x ps",
    "docker compose config", "docker compose up", "docker cp web:/etc/passwd .", "docker stats",
    "docker ps --unknown-option", "docker build .", "podman run x", "docker logs $(pwned)",
    # shells: rc files and aliases of an interactive shell, an rc file named, a script that is not read-only
    "bash -ic 'ls'", "bash -lic 'ls'", "bash --rcfile x -c ls", "bash -lc 'ls; touch x'", "bash -l x.sh",
    "sh -lc 'curl x'",
    # git: the manual viewer a repository's config can name
    "git log --help", "git help log", "git help -w log",
    # variables bash, the loader or a program gives a meaning to
    "PATH=. ls", "HOME=. git log", "XDG_CONFIG_HOME=. git diff", "GIT_DIR=/x git log", "LD_PRELOAD=x ls",
    "RIPGREP_CONFIG_PATH=x rg a", "http_proxy=x git log", "IFS=x", "PS4='$(pwned)'", "BASH_ENV=x ls",
    "GREP_OPTIONS=-R grep x f", "LESSOPEN='|x' cat a", "TMPDIR=/ sort a", "MAGIC=./m file a",
    "PYTHONPATH=. ls", "LANG=/x ls", "TZ=/etc/x date", "FOO=$(pwned)", "PAGER=x man ls",
    'echo "${x@P}"', 'echo "${!x}"',
]


@pytest.mark.parametrize("command", READ_ONLY_NOW)
def test_no_longer_asks(command: str, tmp_path: Path) -> None:
    a = analyze(command, Where(tmp_path))
    assert a.read_only, [(s.text, s.reason) for s in a.subcommands]


@pytest.mark.parametrize("command", STILL_ASKS)
def test_near_misses_still_ask(command: str, tmp_path: Path) -> None:
    assert not analyze(command, Where(tmp_path)).read_only


def test_an_exported_variable_is_not_harmless_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`FOO=bar` on its own changes what later commands get only if FOO is already exported."""
    assert analyze("FOO_27=bar; ls", Where(tmp_path)).read_only
    monkeypatch.setenv("FOO_27", "x")
    assert not analyze("FOO_27=bar; ls", Where(tmp_path)).read_only
    assert analyze("FOO_27=bar ls", Where(tmp_path)).read_only  # for ls alone: ls reads no FOO_27

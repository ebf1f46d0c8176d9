"""The effect oracle (issue 15): every command the classifier calls read-only is really run, in a scratch
workspace inside bubblewrap, and must leave no trace.

What counts as an effect:
- any change in the scratch workspace (a snapshot of every path: kind, mode, size, content hash), which
  holds canaries where an attacker would aim (``.claude/settings.local.json``, ``.git/config``,
  ``.git/hooks``, ``.mcp.json``) and a git repository;
- any tripwire program run: ``pwned``, ``evil``, ``x.sh`` on PATH (after the system dirs), ``./x.sh``,
  ``./git`` and ``./cat`` in the workspace; each appends to a log outside the workspace;
- any connection to a loopback listener the corpus names (``/dev/tcp/127.0.0.1/PORT``, curl to it).

The corpus: the classifier's own read-only tables, the issue's examples, the kinds of commands the
peers (Codex, Gemini CLI, Roo, Cline) call safe, and generated combinations of wrappers × options ×
expansions. Commands the classifier does not call read-only are not run (they would ask). The test prints
how many commands it ran, and the agreement with the peers' safe cases (must stay >= 90 %, issue 29).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from sidecar.shell.classify import Where, analyze
from sidecar.workspace.gitenv import safe_git_env
from tests.bash.test_classify import READ_ONLY
from tests.bash.test_issue15 import ISSUE_EXAMPLES, STILL_READ_ONLY

TRIPWIRES = ("pwned", "evil", "x.sh")

# Commands of the kinds the peers' suites (Codex is_safe_command, Gemini CLI shell tests, Roo/Cline
# auto-approve lists) call safe; written here from those cases, not copied.
PEER_SAFE = [
    "ls", "ls -la", "ls -lah sub", "cat a.txt", "head -n 5 a.txt", "tail -n 3 a.txt", "wc -l a.txt",
    "pwd", "echo hello", "echo 'a b'", "grep -n alpha a.txt", "grep -rn alpha .", "grep -c x a.txt",
    "rg alpha", "rg -n alpha sub", "rg --files", "rg -l alpha", "which ls", "cd sub", "cd sub && ls",
    "find . -name '*.txt'", "find . -type f", "find . -maxdepth 1", "git status", "git log -n 1",
    "git log --oneline", "git diff", "git diff --stat", "git show HEAD", "git branch", "git branch -a",
    "sed -n '1,2p' a.txt", "sed -n 1p a.txt", "nl a.txt", "true", "false", "seq 3", "tr a b < a.txt",
    "cut -c1-3 a.txt", "rev a.txt", "expr 1 + 1", "id", "uname -a", "whoami", "numfmt --to=si 1000",
    "paste a.txt b.txt", "stat a.txt", "sort a.txt", "uniq a.txt", "tac a.txt", "base64 a.txt",
    "od -c a.txt", "file a.txt", "du -sh .", "df -h", "date", "env", "printenv HOME", "tree",
    "cat a.txt | grep alpha", "ls && pwd", "ls | wc -l", "git status && git diff", "bash -lc 'ls'",
    "bash -c 'ls'", "sh -c 'echo ok'", "diff a.txt b.txt", "cmp a.txt b.txt", "comm a.txt b.txt",
    "md5sum a.txt", "sha256sum a.txt", "realpath a.txt", "basename sub/c.txt", "dirname sub/c.txt",
    "readlink -f a.txt", "column -t a.txt", "fold -w 5 a.txt", "tail -c 10 a.txt", "jq . data.json",
    "git rev-parse HEAD", "git ls-files", "git remote -v", "git blame a.txt", "git grep alpha",
    "sort -u a.txt", "sort -n a.txt", "awk '{print $1}' a.txt", "printf '%s\\n' x", "xxd a.txt | head",
    "ls -R", "git log --stat -1", "git show --stat", "git tag", "git config --get user.name",
    "git describe --always", "find . -name '*.txt' -print", "grep -i ALPHA a.txt", "test -f a.txt",
    "[ -d sub ]", "hostname", "uptime", "nproc", "ps aux", "whereis ls", "type ls", "command -v ls",
    "sleep 0", "yes | head -2", "cat -n a.txt", "less a.txt", "more a.txt", "man -w ls",
    # issue 29: what the peers run without a question and we asked for
    "docker ps", "docker ps -a", "docker ps --format '{{.Names}}'", "docker images", "docker image ls",
    "docker container ls -a", "docker logs web", "docker logs --tail 50 web", "docker logs -f -n 10 web",
    "docker inspect web", "docker inspect -f '{{.State.Status}}' web", "docker version", "docker info",
    "docker network ls", "docker volume ls", "docker stats --no-stream", "docker system df",
    "docker compose ps", "docker compose ps -a", "docker compose ls", "docker compose images",
    "docker compose config --services", "docker compose version", "podman ps", "podman images",
    "podman logs web", "docker --version", "bash -lc 'ls && git status'", "bash -lc 'cat a.txt | head -1'",
    "bash -lc 'git log --oneline -5'", "bash -lc pwd", "sh -lc 'grep -rn alpha .'", "bash --login -c 'ls'",
    "git --help", "git help", "git status -h", "FOO=bar", "A=1 B=2 ls -la", "X=1; echo $X",
    "echo \"${x@Q}\"", "echo \"${HOME@Q}\"", "FOO=bar git status",
]

# Generated: wrappers × programs-with-options × expansions. Most are not read-only (and are not run);
# the ones that are must hold up when run.
WRAPPERS = ["{}", "timeout 5 {}", "nice -n 1 {}", "time -p {}", "command {}", "nohup {}", "stdbuf -o0 {}",
            "env {}", "bash -c '{}'", "sh -c '{}'", "xargs -a list.txt {}", "time -o out.txt {}",
            "xargs -e pwned {}", "bash -lc '{}'", "setsid {}", "exec {}"]
PROGRAMS = [
    "sort a.txt", "sort -o out.txt a.txt", "sort --o=out.txt a.txt", "seq 200000 | sort --co=pwned -S 1K",
    "sort --compress-program=pwned --batch-size=2 a.txt b.txt c.txt", "sort -uoout.txt a.txt",
    "shuf -o out.txt a.txt", "base64 a.txt", "git grep -O alpha", "git grep -nOpwned alpha",
    "git grep --op=pwned alpha", "git log -p", "git -p log", "git log --output=out.txt",
    "git log --out=out.txt", "git diff --ext-diff HEAD~1", "sed -n 1p a.txt", "sed '1a x\nw out.txt' a.txt",
    "sed 's/a/b/w out.txt' a.txt", "sed '1e pwned' a.txt", "awk '{print}' a.txt", "awk -fprog.awk a.txt",
    "awk 'BEGIN{system(\"pwned\")}'", "find . -name a.txt", "find . -fprint out.txt",
    "find . -exec pwned \\;", "rg alpha", "rg --pre pwned alpha", "rg --hostname-bin pwned alpha",
    "tree -o out.txt", "date -u", "date --s=2020-01-01", "less -oout.txt a.txt", "xxd a.txt out.txt",
    "uniq a.txt out.txt", "diff3 --diff-program=pwned a.txt b.txt c.txt", "sdiff -o out.txt a.txt b.txt",
    "cat a.txt", "grep -n alpha a.txt", "ls sub", "wc -c a.txt", "head -1 a.txt",
]
EXPANSIONS = ["", " $(pwned)", " `pwned`", " ${x:-$(pwned)}", " $((a[$(pwned)]))", " \"${x@P}\"",
              " ${!x}", " < /dev/tcp/127.0.0.1/{port}", " > out.txt", " 2>/dev/null", " *.txt",
              " {a,b}.txt", " *", " opt/*", " a{,.out}", " {-o,}out.txt"]
# File names a repository can ship that become options when a glob expands (issue 27): planted at the top
# of the scratch workspace and, with a file to write, in `opt/` (`cd opt && sort *` runs `sort -oout.txt`).
PLANTED = ("-R", "@list.txt", "--from-file=list.txt", "-fprog.awk", "--files=list.txt", "-oout.txt",
           "--output=out.txt")
HAND = [
    "echo '[[ '; pwned; echo ' ]]'", "echo '$(( '; pwned; echo ' ))'", "cat <<'E'\nsafe\nE\ncat <<E\n$(pwned)\nE",
    "jobs -x pwned", "hash -p ./x.sh ls; ls", "set -a; GIT_DIR=x", "read x < a.txt; echo ${x@P}",
    "x='a[$(pwned)]'; test -v \"$x\"", "printf -v 'a[$(pwned)]' x", "read 'a[$(pwned)]' < a.txt",
    "for PATH in .; do x.sh; done", "./git log", "./cat a.txt", "./x.sh", "cat < /dev/tcp/127.0.0.1/{port}",
    "exec 3<>/dev/tcp/127.0.0.1/{port}", "curl -s http://127.0.0.1:{port}/", "cat a.txt | xargs -e pwned cat",
    "man -C prog.awk ls", "pip --log out.txt list", "ss -K", "base64 -o out.txt a.txt", "mawk -W exec prog.awk",
    "echo x > /dev/udp/127.0.0.1/{port}", "[[ $((1)) -eq 1 ]] && echo y", "[[ $x -eq 1 ]]", "echo ${HOME:x}",
    "cd opt && sort *", "cd opt && shuf -r -n 1 *", "cd opt && uniq *", "cd opt && xxd *", "shuf -r -o out.txt a.txt",
    "xxd -g -o -ben a.txt out.txt", "uniq a.txt{,.out}", "xxd a.txt{,.hex}", "cd opt && tree *", "cd opt && file *",
]


class Listener:
    """A loopback TCP listener that counts connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self.stop = True
        self.thread.join(2)
        self.sock.close()


def _tripwire(path: Path, log: Path, name: str) -> None:
    path.write_text(f"#!/bin/sh\necho {name} >> {log}\n")
    path.chmod(0o755)


def _scratch(root: Path, log: Path) -> Path:
    ws = root / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha one\nbeta two\ngamma three\n")
    (ws / "b.txt").write_text("alpha\nbeta\n")
    (ws / "c.txt").write_text("c\n")
    (ws / "list.txt").write_text("a.txt\nb.txt\n")
    (ws / "data.json").write_text('{"k": [1, 2]}\n')
    (ws / "prog.awk").write_text('BEGIN { system("pwned") }\n')
    (ws / "sub").mkdir()
    (ws / "sub" / "c.txt").write_text("sub file\n")
    for name in ("x.sh", "git", "cat"):
        _tripwire(ws / name, log, "./" + name)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.local.json").write_text("{}\n")
    (ws / ".mcp.json").write_text("{}\n")
    for name in PLANTED:
        (ws / name).write_text("x\n")
    (ws / "opt").mkdir()
    (ws / "opt" / "-oout.txt").write_text("x\n")
    (ws / "opt" / "a.txt").write_text("alpha\n")
    env = {**safe_git_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root / "home")}
    for argv in (["git", "init", "-q"], ["git", "add", "a.txt", "b.txt"], ["git", "commit", "-qm", "one"],
                 ["git", "commit", "-q", "--allow-empty", "-m", "two"], ["git", "status"]):
        subprocess.run(argv, cwd=ws, env=env, check=True, capture_output=True)
    return ws


def _snapshot(ws: Path) -> dict[str, tuple[str, int, int, str]]:
    out: dict[str, tuple[str, int, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            kind = "l" if p.is_symlink() else "d" if p.is_dir() else "f"
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if kind == "f" else ""
            out[str(p.relative_to(ws))] = (kind, st.st_mode, st.st_size if kind == "f" else 0, digest)
    return out


def _corpus(port: int) -> list[str]:
    generated = [w.format(p) + e for w, p, e in itertools.product(WRAPPERS, PROGRAMS, EXPANSIONS)]
    commands = [*READ_ONLY, *STILL_READ_ONLY, *ISSUE_EXAMPLES, *PEER_SAFE, *HAND, *generated]
    return list(dict.fromkeys(c.replace("{port}", str(port)) for c in commands))


# ~950 real processes per pass: 60-110 s on the shared 2-core box, more under a loaded CI
@pytest.mark.timeout(600)
@pytest.mark.parametrize("sandboxed", [True, False], ids=["bubblewrap", "no-sandbox"])
def test_no_read_only_command_has_an_effect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandboxed: bool) -> None:
    """Every read-only command of the corpus, run in bubblewrap and (issue 27) without it: macOS, Windows
    and Linux without user namespaces have no sandbox, so a writer called read-only must be caught by
    its effect, not by the read-only bind."""
    if sandboxed and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    log = log_dir / "ran"
    trip = tmp_path / "trip"
    trip.mkdir()
    for name in TRIPWIRES:
        _tripwire(trip / name, log, name)
    home = tmp_path / "home"
    home.mkdir()
    scratch_tmp = tmp_path / "tmp"  # TMPDIR of the unsandboxed pass (bubblewrap's /tmp is a tmpfs)
    scratch_tmp.mkdir()
    ws = _scratch(tmp_path, log)
    path = f"/usr/local/bin:/usr/bin:/bin:{trip}"
    monkeypatch.setenv("PATH", path)  # the classifier resolves programs on the PATH the commands get
    env = {**safe_git_env({"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb"}),
           "x": "a[$(pwned)]", "TMPDIR": "/tmp" if sandboxed else str(scratch_tmp)}
    listener = Listener()
    where = Where(ws, home=home)
    ran: list[str] = []
    effects: list[str] = []
    watched = [ws, home, trip, scratch_tmp]

    def snapshot() -> dict[str, tuple[str, int, int, str]]:
        return {f"{n}:{k}": v for n, d in enumerate(watched) for k, v in _snapshot(d).items()}

    state = {"before": snapshot()}

    def observe(command: str) -> list[str]:
        argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                "--bind", str(ws), str(ws), "--bind", str(log_dir), str(log_dir), "--ro-bind", str(trip), str(trip),
                "--ro-bind", str(home), str(home), "--unshare-pid",
                "--die-with-parent", "--chdir", str(ws), "--", "/bin/bash", "-c", command]
        if not sandboxed:
            argv = ["/bin/bash", "-c", command]
        hits = listener.hits
        try:
            subprocess.run(argv, env=env, cwd=ws, stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
                           start_new_session=True)
        except subprocess.TimeoutExpired:
            pass
        seen: list[str] = []
        after = snapshot()
        changed = sorted(k for k in state["before"].keys() | after.keys() if state["before"].get(k) != after.get(k))
        if changed:
            seen.append(f"{command!r} changed {changed[:5]}")
            state["before"] = after
        if log.exists() and log.read_text():
            seen.append(f"{command!r} ran {log.read_text().split()}")
            log.write_text("")
        if listener.hits != hits:
            seen.append(f"{command!r} connected to 127.0.0.1:{listener.port}")
        return seen

    try:
        # The oracle can fail: each of these has an effect it must see (and none is read-only).
        controls = ["touch made.txt", "pwned", "./x.sh", f"cat < /dev/tcp/127.0.0.1/{listener.port}",
                    "echo '{\"permissions\": {}}' > .claude/settings.local.json", "./git log",
                    "seq 200000 | sort --co=pwned -S 1K", "echo '[[ '; touch p; echo ' ]]'",
                    # the planted names and the writers the option tables once called read-only
                    "cd opt && sort *", "shuf -r -n 1 -o out.txt a.txt", "xxd -g -o -ben a.txt out.txt",
                    "uniq a.txt{,.out}", "xxd a.txt{,.hex}", *([] if sandboxed else ["touch $TMPDIR/x"])]
        for command in controls:
            assert observe(command), f"the oracle saw no effect from {command!r}"
            assert not analyze(command, where).read_only, command
        state["before"] = snapshot()
        corpus = _corpus(listener.port)
        for command in corpus:
            if not analyze(command, where).read_only:
                continue
            ran.append(command)
            effects += observe(command)
    finally:
        listener.close()
    agreed = [c for c in PEER_SAFE if analyze(c, where).read_only]
    agreement = len(agreed) / len(PEER_SAFE)
    print(f"\neffect oracle ({'bubblewrap' if sandboxed else 'no sandbox'}): {len(corpus)} commands classified, "
          f"{len(ran)} read-only ones run, "
          f"{len(effects)} with an effect; peers' safe cases agreed: {len(agreed)}/{len(PEER_SAFE)} "
          f"({agreement:.1%}); not agreed: {[c for c in PEER_SAFE if c not in agreed]}")
    assert not effects, "\n".join(effects)
    assert len(ran) >= 300
    assert agreement >= 0.90

"""Reads outside the workspace roots ask (docs/permissions.md, "One path policy"): the words that name no
path but still make a read-only program read outside — a `cd` before it, git's `-C`/`--no-index`/file
options, an option's value (`grep -f F`, `date -r F`), a sed `r F`, xargs input, a symlink — and pagers.

Two oracles: the exact verdict `check_command.decide` gives (what the Bash tool's gate does without a
rule), and a read oracle: every command of the corpus that is allowed is really run in bubblewrap inside a
scratch workspace next to a folder and a home holding canaries; no canary's name or content may appear in
what it prints.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sidecar.session import Session
from sidecar.shell.classify import Where, analyze
from sidecar.tools.bash.check_command import decide, explain, load_rules
from sidecar.workspace.gitenv import safe_git_env
from tests.bash.test_bash_runtime import run_bash
from tests.bash.test_classify import READ_ONLY
from tests.bash.test_effect_oracle import PEER_SAFE
from tests.bash.test_issue15 import STILL_READ_ONLY

CANARY = "CANARY-CONTENT-7f3a"
CANARY_NAME = "canary-name-7f3a.txt"

# Each reads outside the roots (or cannot be known not to) and must ask. {out}: a folder outside.
ASK = [
    # a literal cd, then a program that reads its working folder
    "cd {out} && ls", "cd {out} && ls -la", "cd {out} && find . -name '*'", "cd {out} && grep -r CANARY",
    "cd {out} && rg CANARY", "cd {out} && du -a", "cd {out} && git status", "cd {out} && cat *",
    "pushd {out} && ls", "cd sub && cd ../.. && ls", "cd && ls -a", "cd ~ && ls -a",
    # a cd only known at run time
    "cd $HOME && ls -a", "cd \"$HOME\" && cat .canary-home", "cd - && ls", "cd {out}; popd; ls",
    # git: file operands in every mode, -C, options that read a file or run gpg
    "git diff --no-index {secret} a.txt", "git diff --no-index -- {secret} a.txt",
    "git -C {out} status", "git -C {out} log", "git log -- {out}", "git blame {secret}",
    "git blame --contents {secret} a.txt", "git blame --cont={secret} a.txt",
    "git blame -S {secret} a.txt", "git blame --ignore-revs-file={secret} a.txt",
    "git diff -O{secret}", "git grep -f {secret}", "git grep --no-index alpha {out}",
    "git config -f {secret} --list", "git config --file={secret} --list",
    "git ls-files -o --exclude-from={secret}", "git ls-files -o -X {secret}",
    "git log --show-signature -1", "git log --format=%G? -1", "git verify-commit HEAD", "git tag -v v1",
    # pagers: LESSOPEN runs a preprocessor, shell escapes
    "less a.txt", "more a.txt", "less -R a.txt",
    # an operand or an option's value outside
    "find {out}", "find {out} -name '*'", "find . -newer {secret}",
    "find . -samefile {secret}", "find . -neweraB {secret}",
    "sed -n p {secret}", "sed '1r {secret}' a.txt", "sed 'R {secret}' a.txt",
    "awk '{print}' {secret}", "grep -f {secret} a.txt",
    "grep --file={secret} a.txt", "date -f {secret}", "date -r {secret}",
    "jq -f {secret} data.json", "jq -n --rawfile s {secret} '$s'",
    "jq 'import \"x\" as $x; .' data.json", "diff --from-file={secret} a.txt",
    "diff -X {secret} a.txt b.txt", "hexdump -f {secret} a.txt",
    "strings @{secret}", "file -m {secret} a.txt", "du -X {secret} .",
    "shuf --random-source={secret} a.txt", "rg --files {out}", "rg -e alpha {out}",
    "tar --list --file={out}/x.tar", "tar -t -f {out}/x.tar", "unzip -l {out}/x.zip", "man {secret}",
    "man -M {out} ls", "lscpu -s {out}", "pgrep -F {secret}",
    # a list of files read from a file
    "sha256sum -c sums.txt", "md5sum --check sums.txt", "wc --files0-from=list0", "du --files0-from=list0",
    "sort --files0-from=list0", "file -f list.txt", "xzcat --files=list.txt", "whereis -B {out} -f ls",
    # xargs input that is not a listing of the workspace
    "xargs cat < list.txt", "cat list.txt | xargs cat", "xargs -a list.txt cat", "echo {secret} | xargs cat",
    # a symlink inside that points outside, and system-wide indexes
    "cat link.txt", "ls linkdir", "cd linkdir && ls", "cd linkdir && git status", "cd linkdir && cat *",
    "locate " + CANARY_NAME, "ls -d .*", "cat sub/.?/" + CANARY_NAME, "cat *", "grep alpha *.txt", "wc -l *",
    "ls | xargs cat", "find . -name '*.txt' | xargs cat", "git ls-files | xargs cat", "find . -exec cat {} +",
    "find -L . -type f | xargs cat", "grep -Rl alpha . | xargs cat",
    # programs that follow the symlinks they meet in a tree (linkdir points outside)
    "grep -R CANARY .", "grep --dereference-recursive CANARY .", "rg -L CANARY", "rg --follow CANARY",
    "find -L . -name '*'", "find . -follow -name '*'", "du -L .", "ls -RL", "tree -l", "diff -r . sub",
    # the environment of every process
    "ps auxe", "ps e",
    # words that become outside paths when bash expands them; awk's ARGV; variables that name files
    "cat {a.txt,{secret}}", "cat ~-/" + CANARY_NAME, "cat ~nosuchuser/x", "cd {out}; cd {ws}; cat ~-/" + CANARY_NAME,
    "awk 'BEGIN{ARGV[1]=\"{secret}\"; ARGC=2} {print}'", "awk '{print}' ARGC=3 a.txt",
    "awk -v ARGC=2 '{print}' a.txt", "TZ={secret} date", "TZ=:{secret} date", "LANG={out} sort a.txt",
]

# Ordinary read-only commands in the workspace: they run without asking.
ALLOW = [
    "ls", "ls -la", "ls sub", "cat a.txt", "grep -rn alpha .", "grep -n alpha a.txt", "rg alpha", "rg --files",
    "rg -l alpha sub", "find . -name '*.txt'", "find . -newer a.txt", "find . -newermt 2020-01-01",
    "head -n 2 a.txt", "tail -n 1 a.txt", "wc -l a.txt", "git status", "git log --oneline", "git diff",
    "git diff HEAD~1 -- a.txt", "git show HEAD", "git show HEAD:a.txt", "git log -p -1", "git log -S alpha",
    "git log -SOops", "git blame a.txt", "git blame --ignore-rev HEAD a.txt", "git grep alpha",
    "git grep -e alpha -- sub", "git ls-files", "git ls-files -o --exclude='*.o'", "git -C sub log -1",
    "git diff --no-index a.txt b.txt", "git log --format='%H %s' -1", "git tag -l", "cd sub && ls",
    "cd sub && cat c.txt", "cd sub && cd .. && ls", "find . -type f -name '*.txt' | xargs wc -l",
    "find . -type f -print0 | xargs -0 grep -n alpha",
    "rg -l alpha | xargs wc -l", "grep -rl alpha . | xargs cat",
    "find . -type f | xargs wc -l", "cat sub/*", "wc -l sub/*.txt",
    "sed -n 1p a.txt", "sed '1r b.txt' a.txt", "awk '{print $1}' a.txt",
    "awk '{print}' x=1 a.txt", "jq . data.json", "du -sh .", "sort a.txt", "date -r a.txt", "date -u",
    "grep -f b.txt a.txt", "diff a.txt b.txt", "sha256sum a.txt", "strings a.txt", "hexdump -C a.txt",
    "man -w ls", "cd {out}; cd {ws} && ls", "grep -r alpha .", "ls -R", "du -a .", "diff -r sub sub",
    "diff -r --no-dereference . sub", "ps aux", "ps -ef", "cat {a,b}.txt", "cat ~+/a.txt", "cat sub/{c,d}.txt",
    "TZ=Europe/Paris date", "ls -d .g*", "cat .??*", "LANG=C sort a.txt", "NO_COLOR=1 ls",
    "xargs echo < list.txt", "tar -tf x.tar",
]


def _workspace(root: Path) -> tuple[Path, Path, Path]:
    ws, out, home = root / "ws", root / "outside", root / "home"
    for d in (ws, out, home, ws / "sub"):
        d.mkdir()
    (out / CANARY_NAME).write_text(CANARY + "\n")
    # What the workspace's own files name (a list, a symlink) is not a canary name: only their content is.
    listed = out / "listed.txt"
    listed.write_text(CANARY + "\n")
    (home / ".canary-home").write_text(CANARY + "\n")
    (ws / "a.txt").write_text("alpha one\nbeta two\n")
    (ws / "b.txt").write_text("alpha\n")
    (ws / "sub" / "c.txt").write_text("sub file\n")
    (ws / "data.json").write_text('{"k": 1}\n')
    (ws / "list.txt").write_text(f"{listed}\n")
    (ws / "list0").write_bytes(f"{listed}\0".encode())
    digest = hashlib.sha256((CANARY + "\n").encode()).hexdigest()
    (ws / "sums.txt").write_text(f"{digest}  {listed}\n")
    (ws / "link.txt").symlink_to(listed)
    (ws / "linkdir").symlink_to(out)
    subprocess.run(["tar", "-cf", str(ws / "x.tar"), "-C", str(ws), "a.txt"], check=True)
    shutil.copy(ws / "x.tar", out / "x.tar")
    env = {**safe_git_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(home)}
    for argv in (["git", "init", "-q"], ["git", "add", "a.txt", "b.txt", "sub"], ["git", "commit", "-qm", "one"],
                 ["git", "commit", "-q", "--allow-empty", "-m", "two"], ["git", "tag", "v1"]):
        subprocess.run(argv, cwd=ws, env=env, check=True, capture_output=True)
    return ws, out, home


def _fill(command: str, ws: Path, out: Path) -> str:
    return command.replace("{secret}", str(out / CANARY_NAME)).replace("{out}", str(out)).replace("{ws}", str(ws))


def _decision(command: str, ws: Path, home: Path) -> tuple[str, str]:
    verdict = decide(analyze(command, Where(ws, home=home)), [], ws)
    return verdict.decision, verdict.reason


@pytest.fixture
def scratch(tmp_path: Path) -> tuple[Path, Path, Path]:
    return _workspace(tmp_path)


@pytest.mark.parametrize("command", ASK)
def test_reads_outside_ask(command: str, scratch: tuple[Path, Path, Path]) -> None:
    ws, out, home = scratch
    decision, reason = _decision(_fill(command, ws, out), ws, home)
    assert decision == "ask", (command, reason)
    assert reason


@pytest.mark.parametrize("command", ALLOW)
def test_ordinary_reads_run(command: str, scratch: tuple[Path, Path, Path]) -> None:
    ws, out, home = scratch
    decision, reason = _decision(_fill(command, ws, out), ws, home)
    assert (decision, reason) == ("allow", "read-only inside the workspace"), command


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("cd / && ls", "reads /, outside the workspace roots"),
        ("cd / && ls -la", "reads /, outside the workspace roots"),
        ("cd /etc && git status", "reads /etc, outside the workspace roots"),
        ("git diff --no-index /etc/passwd f", "reads /etc/passwd, outside the workspace roots"),
        ("git diff --no-index -- /etc/passwd f", "reads /etc/passwd, outside the workspace roots"),
        ("git -C /etc log", "reads /etc, outside the workspace roots"),
        ("cd $X && ls", "cannot tell which files $PWD names before it runs"),
        ("less f", "less is a pager: it runs the LESSOPEN input preprocessor and has shell escapes "
                   "(cat or head read a file without them)"),
        ("more f", "more is a pager: it runs the LESSOPEN input preprocessor and has shell escapes "
                   "(cat or head read a file without them)"),
        ("git blame --contents=f g", "git blame --contents can write a file, read a file named in it or run "
                                     "a program (abbreviations count)"),
        ("git diff -Oorder", "git diff -Oorder reads a file named in the option or opens a program (-O)"),
        ("git log --show-signature", "git log --show-signature can write a file, read a file named in it or "
                                     "run a program (abbreviations count)"),
        ("sha256sum -c sums", "sha256sum -c reads the files a list names (not its operands): which ones is only "
                              "known at run time"),
        ("cat list | xargs cat", "cannot tell which files $(file names xargs reads) names before it runs"),
        ("date -r /etc/passwd", "reads /etc/passwd, outside the workspace roots"),
        ("sed '1r /etc/passwd' f", "reads /etc/passwd, outside the workspace roots"),
    ],
)
def test_exact_verdicts(command: str, reason: str, tmp_path: Path) -> None:
    result = explain(command, [], tmp_path)
    assert (result["decision"], result["reason"]) == ("ask", reason)


# File names a repository can ship that become options when a glob expands (issue 27).
PLANTED = ("-R", "@list.txt", "--from-file=link.txt", "-flist.txt", "--files=list.txt")
GLOBBED = ["grep -n CANARY *", "grep CANARY *", "strings *", "strings -- *", "diff *", "hexdump *", "xzcat *",
           "cat *", "head *", "wc *", "ls *", "grep {-R,sub} CANARY", "diff {--from-file=link.txt,a.txt}",
           "strings {@,}list.txt", "rg CANARY *", "sort *", "od *", "tail *", "cd p1 && grep CANARY *",
           "cd p2 && strings -- *", "cd p3 && diff *", "cd p1 && cat *", "cd p2 && cat *", "cd p3 && wc *"]


# ~950 real processes per pass: 60-110 s on the shared 2-core box, more under a loaded CI
@pytest.mark.timeout(600)
@pytest.mark.parametrize("sandboxed", [True, False], ids=["bubblewrap", "no-sandbox"])
def test_no_allowed_command_reads_outside(tmp_path: Path, sandboxed: bool) -> None:
    """Every allowed command of the corpus, run next to canaries, in bubblewrap and without it (the
    read-only bind of `/` never stopped a read; macOS and Windows have no sandbox at all)."""
    if sandboxed and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    ws, out, home = _workspace(tmp_path)
    for name in PLANTED:
        (ws / name).write_text("x\n")
    for folder, name in (("p1", "-R"), ("p2", "@list.txt"), ("p3", "--from-file=l")):
        (ws / folder).mkdir()
        (ws / folder / name).write_text("x\n")
        (ws / folder / "l").symlink_to(out / CANARY_NAME if folder == "p3" else out)
        (ws / folder / "list.txt").write_text(f"{out / CANARY_NAME}\n")
    env = {**safe_git_env({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
                           "TERM": "dumb"})}
    where = Where(ws, home=home)

    def leaked(command: str) -> str | None:
        argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                "--ro-bind", str(tmp_path), str(tmp_path), "--unshare-pid", "--die-with-parent",
                "--chdir", str(ws), "--", "/bin/bash", "-c", command]
        if not sandboxed:
            argv = ["/bin/bash", "-c", command]
        try:
            done = subprocess.run(argv, env=env, cwd=ws, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            return None
        text = (done.stdout + done.stderr).decode("utf-8", "replace")
        return text if CANARY in text or CANARY_NAME in text else None

    # The oracle can fail: each of these prints a canary when run, and none runs without asking.
    for control in ["cat {secret}", "cd {out} && ls", "git diff --no-index {secret}"
                    + " a.txt", "cat link.txt", "xargs cat < list.txt", "cd && cat .canary-home",
                    "cd p1 && grep -n CANARY *", "cd p2 && strings *", "cd p3 && diff * list.txt",
                    "diff {--from-file=link.txt,a.txt}"]:
        command = _fill(control, ws, out)
        assert leaked(command), f"the oracle saw no canary from {command!r}"
        assert decide(analyze(command, where), [], ws).decision == "ask", command
    corpus = list(dict.fromkeys(_fill(c, ws, out) for c in [*ASK, *ALLOW, *READ_ONLY, *STILL_READ_ONLY,
                                                               *PEER_SAFE, *GLOBBED]))
    ran: list[str] = []
    leaks: list[str] = []
    for command in corpus:
        if decide(analyze(command, where), [], ws).decision != "allow":
            continue
        ran.append(command)
        if (text := leaked(command)) is not None:
            leaks.append(f"{command!r} printed {text[:200]!r}")
    print(f"\nread oracle ({'bubblewrap' if sandboxed else 'no sandbox'}): {len(corpus)} commands, {len(ran)} "
          f"allowed ones run, {len(leaks)} leaked")
    assert not leaks, "\n".join(leaks)
    assert len(ran) >= 150


async def test_bash_child_has_no_lessopen_or_cdpath(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LESSOPEN", "| /bin/echo pwned %s")
    monkeypatch.setenv("LESSCLOSE", "/bin/echo pwned %s %s")
    monkeypatch.setenv("CDPATH", "/etc")
    text, err = await run_bash(session, 'echo "[${LESSOPEN-unset}][${LESSCLOSE-unset}][${CDPATH-unset}]"')
    assert not err
    assert text.splitlines()[0] == "[unset][unset][unset]"


async def test_cd_outside_then_ls_asks_the_user(session: Session) -> None:
    channel = session.channel
    await run_bash(session, "ls")
    assert not channel.requests  # type: ignore[attr-defined]
    await run_bash(session, "cd / && ls")
    methods = [m for m, _ in channel.requests]  # type: ignore[attr-defined]
    assert methods == ["session/request_permission"]


def test_unknown_cwd_marks_relative_paths(tmp_path: Path) -> None:
    a = analyze("cd $X && cat f", Where(tmp_path))
    assert a.read_only and "$PWD/f" in a.dynamic_paths and "$PWD" in a.dynamic_paths
    assert os.fspath(tmp_path / "f") not in map(os.fspath, a.read_paths)


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        ("git show HEAD:secrets/k", "deny"),
        ("git show HEAD:./secrets/k", "deny"),
        ("cd sub && git show HEAD:../secrets/k", "deny"),
        ("git cat-file -p HEAD:secrets/k", "deny"),
        ("git blame secrets/k", "deny"),
        ("git log -L1,1:secrets/k", "deny"),
        ("git log -L1,1:a.txt", "allow"),
        ("git log -p", "ask"),
        ("git diff", "ask"),
        ("git show HEAD", "ask"),
        ("git show HEAD:a.txt", "allow"),
        ("git diff -- a.txt", "allow"),
        ("git log -p -- sub", "allow"),
        ("git blame a.txt", "allow"),
        ("git log --oneline", "allow"),
        ("git status", "allow"),
    ],
)
def test_git_reads_meet_read_deny_rules(command: str, decision: str, scratch: tuple[Path, Path, Path]) -> None:
    """What git shows of the repository's files is judged by the Read rules: a REV:PATH or file operand is
    that file; a patch of the whole history (`git log -p`, `git diff`, `git show REV`) reads every file."""
    ws, _out, home = scratch
    settings = ws.parent / "settings.json"
    settings.write_text('{"permissions": {"deny": ["Read(./secrets/**)"]}}')
    rules, _mode = load_rules(settings, ws)
    assert decide(analyze(command, Where(ws, home=home)), rules, ws).decision == decision


# ---- a workspace root that is a subfolder of a git repository (monorepo package, dotfiles in $HOME) ----

def _nested_repo(root: Path) -> tuple[Path, Path]:
    """A repository at ``root/repo`` whose work tree holds the workspace ``repo/pkg``, and next to it a
    committed secret that is then modified, plus an untracked one: the files git would show outside."""
    top, home = root / "repo", root / "home"
    ws = top / "pkg"
    for d in (ws / "sub", home):
        d.mkdir(parents=True)
    (top / "secret.txt").write_text(CANARY + "\n")
    (ws / "a.txt").write_text("alpha one\n")
    (ws / "sub" / "c.txt").write_text("sub file\n")
    env = {**safe_git_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(home)}
    for argv in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "one"]):
        subprocess.run(argv, cwd=top, env=env, check=True, capture_output=True)
    (top / "secret.txt").write_text(CANARY + "\n" + CANARY + " changed\n")
    (top / CANARY_NAME).write_text("untracked\n")
    (ws / "a.txt").write_text("alpha two\n")
    return ws, home


NESTED_ASK = [
    "git log -p", "git log -p -1", "git log --stat", "git log --name-only", "git log --name-status",
    "git log --raw", "git log -S " + CANARY, "git log -p --author a.txt", "git whatchanged", "git show",
    "git show HEAD", "git show --stat HEAD", "git show HEAD:secret.txt", "git show HEAD:../secret.txt",
    "git show HEAD:", "git diff", "git diff HEAD", "git diff --cached HEAD~0", "git diff --stat",
    "git diff --name-only", "git status", "git status --short", "git blame ../secret.txt",
    "git grep " + CANARY + " -- ../", "git grep " + CANARY + " -- ':/'", "git ls-files ..",
    "git ls-files -- ../", "git ls-tree --full-tree -r HEAD", "git cat-file -p HEAD", "git cat-file -p HEAD^{tree}",
    "git cat-file -p HEAD:secret.txt", "git rev-list --objects HEAD", "git diff-tree -r HEAD",
    "git diff-index HEAD", "git diff-files", "git diff -- ':!a.txt'", "git log -p -- ..", "git -C .. log",
    "git stash show", "GIT_DIR=../.git git log", "GIT_WORK_TREE=.. git status -- .",
    "git log -L1,1:../secret.txt", "git log -L 1,1:../secret.txt", "git show -s HEAD:", "git show -s --stat HEAD",
]
NESTED_ALLOW = [
    "git log --oneline", "git log -1 --format=%s", "git log -p -- .", "git log -p -1 -- a.txt",
    "git log --stat -- sub", "git log -p a.txt", "git log -p -- '*.txt'", "git show HEAD -- .",
    "git show --stat HEAD -- sub", "git diff -- .", "git diff HEAD -- a.txt", "git diff sub",
    "git diff --stat -- .", "git status -- .", "git status --short .", "git grep alpha",
    "git grep -e alpha -- sub", "git ls-files", "git ls-tree -r HEAD", "git blame a.txt", "git branch",
    "git rev-parse HEAD", "git describe --always", "git shortlog -s HEAD", "git diff --no-index a.txt sub/c.txt",
    "cd sub && git log -p -- .", "cd sub && git status .", "git log -L1,1:a.txt", "git show -s HEAD",
    "git show -s --format=%ci HEAD",
]


@pytest.fixture
def nested(tmp_path: Path) -> tuple[Path, Path]:
    return _nested_repo(tmp_path)


@pytest.mark.parametrize("command", NESTED_ASK)
def test_repository_above_the_root_asks_for_the_rest_of_it(command: str, nested: tuple[Path, Path]) -> None:
    ws, home = nested
    decision, reason = _decision(command, ws, home)
    assert decision == "ask", (command, reason)


@pytest.mark.parametrize("command", NESTED_ALLOW)
def test_repository_above_the_root_limited_to_the_root_runs(command: str, nested: tuple[Path, Path]) -> None:
    ws, home = nested
    assert _decision(command, ws, home) == ("allow", "read-only inside the workspace"), command


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("git log -p", "reads {top}, outside the workspace roots"),
        ("git status", "reads {top}, outside the workspace roots"),
        ("git diff", "reads {top}, outside the workspace roots"),
        ("git show HEAD", "reads {top}, outside the workspace roots"),
        ("git log --stat", "reads {top}, outside the workspace roots"),
        ("git show HEAD:secret.txt", "reads {top}/secret.txt, outside the workspace roots"),
        ("git show HEAD:../secret.txt", "reads {top}/secret.txt, outside the workspace roots"),
        ("git blame ../secret.txt", "reads {top}/secret.txt, outside the workspace roots"),
        ("git log -L1,1:../secret.txt", "reads {top}/secret.txt, outside the workspace roots"),
        ("GIT_DIR=../.git git log", "environment variables set for the command can change what it runs"),
    ],
)
def test_repository_above_the_root_exact_verdicts(command: str, reason: str, nested: tuple[Path, Path]) -> None:
    ws, home = nested
    assert _decision(command, ws, home) == ("ask", reason.format(top=ws.parent))


def test_repository_at_the_root_is_unchanged(nested: tuple[Path, Path]) -> None:
    """The same commands with the repository's top as the workspace root run as before."""
    ws, home = nested
    top = ws.parent
    for command in ("git log -p", "git status", "git diff", "git show HEAD", "git log --stat",
                    "git show HEAD:secret.txt", "git cat-file -p HEAD"):
        assert _decision(command, top, home) == ("allow", "read-only inside the workspace"), command


def test_toplevel_lookup_follows_a_removed_git_dir(tmp_path: Path) -> None:
    """The cached top level is checked again: once the workspace's own `.git` is gone, git would find the
    repository above it, and so does the classifier."""
    ws, home = _nested_repo(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=ws, env=safe_git_env(), check=True, capture_output=True)
    assert _decision("git status", ws, home) == ("allow", "read-only inside the workspace")
    shutil.rmtree(ws / ".git")
    assert _decision("git status", ws, home) == ("ask", f"reads {ws.parent}, outside the workspace roots")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="the oracle runs commands inside bubblewrap")
def test_no_allowed_git_command_shows_the_repository_above(tmp_path: Path) -> None:
    """The read oracle with the root a subfolder of a repository: every allowed command of the corpus
    runs in bubblewrap; none prints the parent's canary (its content, or the untracked file's name)."""
    ws, home = _nested_repo(tmp_path)
    env = {**safe_git_env({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
                           "TERM": "dumb"}), "GIT_PAGER": "cat"}
    where = Where(ws, home=home)

    def run(command: str) -> str:
        argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                "--ro-bind", str(tmp_path), str(tmp_path), "--unshare-pid", "--die-with-parent",
                "--chdir", str(ws), "--", "/bin/bash", "-c", command]
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
        return (done.stdout + done.stderr).decode("utf-8", "replace")

    for control in ("git log -p", "git diff", "git status", "git show HEAD:secret.txt", "git show HEAD"):
        assert CANARY in run(control) or CANARY_NAME in run(control), f"the oracle saw no canary from {control!r}"
        assert decide(analyze(control, where), [], ws).decision == "ask", control
    corpus = list(dict.fromkeys([*NESTED_ASK, *NESTED_ALLOW, *(_fill(c, ws, ws.parent) for c in ALLOW
                                                                 if "git" in c)]))
    ran: list[str] = []
    leaks: list[str] = []
    for command in corpus:
        if decide(analyze(command, where), [], ws).decision != "allow":
            continue
        ran.append(command)
        text = run(command)
        if CANARY in text or CANARY_NAME in text:
            leaks.append(f"{command!r} printed {text[:200]!r}")
    assert not leaks, "\n".join(leaks)
    assert len(ran) >= len(NESTED_ALLOW)

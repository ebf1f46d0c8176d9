"""Issue 15: read-only means read-only. Every example of the issue is not read-only; deny rules see
through quoting, paths and wrappers; check-command (a real process) answers ask/deny for them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.shell.classify import Where, analyze

REPO = Path(__file__).resolve().parents[2]
WS = Path("/work/project")
WHERE = Where(WS, home=Path("/home/u"))

# Each of these was called read-only before; each can run code, write, or connect.
ISSUE_EXAMPLES = [
    # parser desync
    "echo '[[ '; touch pwned; echo ' ]]'",
    "echo '$(( '; touch pwned; echo ' ))'",
    "cat <<'E'\nsafe\nE\ncat <<E\n$(touch pwned)\nE",
    "cat <<E\n$(touch pwned)\nE\ncat <<'E'\nsafe\nE",
    # expansions that execute
    "echo ${x:-$(touch pwned)}",
    "echo ${x:-`touch pwned`}",
    "echo ${x@P}",
    "echo $((a[$(touch pwned)]))",
    "echo $((x))",
    "[[ $x -eq 1 ]] && ls",
    "echo ${!x}",
    "echo ${HOME:x}",
    "echo ${x:=y}",
    "echo $[1+1]",
    "((x))",
    "test -v 'a[$(touch pwned)]'",
    "[ -v x ]",
    '[ "$a" "$b" ]',
    "printf -v x y",
    "read 'a[$(touch pwned)]'",
    "read PATH < f",
    "for PATH in /tmp; do ls; done",
    "for GIT_CONFIG_PARAMETERS in x; do git log; done",
    "f() { ls; }; f",
    # builtins that change the shell
    "jobs -x touch pwned",
    "hash -p /tmp/x ls",
    "set -a",
    "set -k",
    "wait -p x",
    # options: abbreviations, clusters, attached values
    "sort --co=./x.sh f",
    "sort --o=F f",
    "sort -T /tmp f",
    "git grep --op=./x.sh x",
    "git grep -nO./x.sh x",
    "git grep -O x",
    "sdiff --diff-program=./x a b",
    "sdiff -o out a b",
    "diff3 --diff-program=./x a b c",
    "awk -fFILE f",
    "awk -f prog f",
    "mawk -W exec x",
    "gawk --profile=out 1 f",
    "sed '1a x\nw F' f",
    "sed -n '$!{\nw out\n}' f",
    "sed -s -i s/a/b/ f",
    "less -k f",
    "less -okeep f",
    "man -C f ls",
    "xargs -e sh cat",
    "ls | xargs -e sh",
    "shuf -o F f",
    "time -o F ls",
    "pip --log F list",
    "pip list --outdated",
    "date --s=2020-01-01",
    "date 010101012020",
    "ss -K",
    "ss -D out",
    "rg --hostname-bin ./x y",
    "rg --pre ./x y",
    "rg -z x",
    "base64 -o F f",
    "git -p log",
    "git --paginate log",
    "git log --textconv",
    "git log --text --ext-diff",
    "git log --ext x",
    "git cat-file --filters HEAD:x",
    "git cat-file --text HEAD:x",
    "git diff --out=x",
    "git log --output=x",
    "tree -o out",
    "tree -R",
    "find . -fprint x",
    "find . -fls x",
    "find . -newer x -delete",
    "tar -tf host:archive.tar",
    "tar -tf a.tar --to-command=sh",
    "uniq in out",
    "xxd in out",
    "hostname -F f",
    "file -C -m magic",
    # identity by name
    "./git log",
    "sub/cat f",
    "/tmp/x/cat f",
    "bash -lic 'ls'",  # `bash -lc 'ls'` is read-only since issue 29 (the user's own profile only)
    "bash -ic ls",
    "bash --rcfile x -c ls",
    # network through the shell
    "cat < /dev/tcp/127.0.0.1/80",
    "echo x > /dev/udp/127.0.0.1/53",
    "exec 3<>/dev/tcp/localhost/80",
    # run-time words where options matter
    "sort $x",
    'sort "$x"',
    "sort -k $k f",
    "find . $ARGS",
    "ls | xargs sort",
    "cat < $f",
]

STILL_READ_ONLY = [
    "grep -E '[[:space:]]' f",
    'echo "$((1+2))"',
    "echo ${#x} ${x%%.*} ${x:-d} ${x##*/}",
    "[[ -f x && $y == z ]] && cat x",
    "[[ 1 -lt 2 ]]",
    "[ -f \"$x\" ]",
    "test -n \"$x\"",
    "read -r line",
    "while read -r l; do echo $l; done < f",
    "printf '%s\\n' a b",
    "sort -k2 -t, -n f",
    "sort -- $x",
    "sort src/*.txt",
    "git log --oneline --text -5",
    "git grep -n foo",
    "sed -n '1a x' f",
    "sed -n 's/a/b/gp' f",
    "awk -F: -v x=1 '{print $1}' f",
    "find . -name '*.py' -newer x -print0",
    "rg -n --hidden -g '*.py' foo",
    "time -p ls",
    "timeout 5 git status",
    "nice -n 5 cat f",
    "ls | xargs -0 -n1 wc -l",
    "set -euo pipefail",
    "hash -r",
    "jobs -l",
    "date +%s",
    "date -u -d yesterday +%F",
    "cat <<EOF\nhello\nEOF",
    "cat <<'E'\n$(x)\nE",
    "/usr/bin/cat f",
    "bash -c 'ls && pwd'",
    "bash -e -o pipefail -c 'ls | wc -l'",
]


@pytest.mark.parametrize("command", ISSUE_EXAMPLES)
def test_issue_examples_are_not_read_only(command: str) -> None:
    a = analyze(command, WHERE)
    assert not a.read_only, [(s.text, s.cls, s.reason) for s in a.subcommands]
    assert any(s.reason for s in a.subcommands if s.cls != "read-only")


@pytest.mark.parametrize("command", STILL_READ_ONLY)
def test_still_read_only(command: str) -> None:
    a = analyze(command, WHERE)
    assert a.read_only, [(s.text, s.cls, s.reason) for s in a.subcommands]


def test_program_in_the_workspace_is_not_the_system_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "node_modules" / ".bin"
    bindir.mkdir(parents=True)
    fake = bindir / "cat"
    fake.write_text("#!/bin/sh\ntouch pwned\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    a = analyze("cat f", Where(tmp_path))
    assert not a.read_only and "inside the workspace" in a.subcommands[0].reason
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert analyze("cat f", Where(tmp_path)).read_only
    monkeypatch.setenv("PATH", ".:/usr/bin:/bin")
    assert not analyze("cat f", Where(tmp_path)).read_only


def test_file_arguments_are_exposed() -> None:
    a = analyze("cd sub && cat ~/.ssh/id_rsa a < b > c; grep -r pat secrets src/*.py; cp x /tmp/y", WHERE)
    assert sorted(a.read_paths) == sorted([Path("/home/u/.ssh/id_rsa"), WS / "sub/a", WS / "sub/b", WS / "sub/secrets",
                                          WS / "sub/x"])
    assert a.write_paths == [WS / "sub/c", Path("/tmp/y")]
    assert a.dynamic_paths == ["src/*.py"]


DENIED_SPELLINGS = [
    "curl http://127.0.0.1:9/x",
    "'curl' http://127.0.0.1:9/x",
    "\\curl http://127.0.0.1:9/x",
    "c\\url http://127.0.0.1:9/x",
    "/usr/bin/curl http://127.0.0.1:9/x",
    "env curl http://127.0.0.1:9/x",
    "env -i A=1 curl x",
    "setsid curl x",
    "flock f curl x",
    "flock f -c 'curl x'",
    "LANG=C curl x",
    "nice -n 5 curl x",
    "timeout 5 curl x",
    "watch -n 1 curl x",
    "strace -f curl x",
    "chroot / curl x",
    "unshare -n curl x",
    "script -q -c 'curl x' /dev/null",
    "parallel curl ::: a b",
    "ls | xargs curl",
    "find . -exec curl {} \\;",
    "sudo -u u curl x",
    "command curl x",
    "builtin exec curl x",
    "exec curl x",
    "nohup curl x",
    "stdbuf -o0 curl x",
    "time curl x",
    "echo ok && bash -c 'curl x'",
    "echo $(curl x)",
]


def test_deny_rules_match_every_spelling(tmp_path: Path) -> None:
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions",
                                                    "deny": ["Bash(curl:*)"], "ask": ["Bash(git push *)"]}}))
    commands = [*DENIED_SPELLINGS, "'git' push", "/usr/bin/git push origin", "ls", "echo curl"]
    proc = subprocess.run(
        [sys.executable, "-m", "sidecar", "check-command", "--cwd", str(tmp_path), "--settings", str(settings), "-"],
        input="\n".join(c.replace("\n", " ") for c in commands) + "\n",
        text=True, capture_output=True, cwd=REPO, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["command"]: r for r in map(json.loads, proc.stdout.splitlines())}
    for command in DENIED_SPELLINGS:
        assert rows[command]["decision"] == "deny", rows[command]
        assert rows[command]["rule"] == "Bash(curl:*)"
    assert rows["'git' push"]["decision"] == "ask"
    assert rows["/usr/bin/git push origin"]["decision"] == "ask"
    assert rows["ls"]["decision"] == "allow"
    assert rows["echo curl"]["decision"] == "allow"  # bypass mode; `curl` is an argument here


def test_check_command_answers_the_issue_examples(tmp_path: Path) -> None:
    lines = [c for c in ISSUE_EXAMPLES if "\n" not in c]
    proc = subprocess.run(
        [sys.executable, "-m", "sidecar", "check-command", "--cwd", str(tmp_path), "--settings", "/dev/null", "-"],
        input="\n".join(lines) + "\n", text=True, capture_output=True, cwd=REPO, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["command"] for r in rows] == lines
    for row in rows:
        assert set(row) >= {"command", "read_only", "decision", "rule", "subcommands"}
        assert row["read_only"] is False and row["decision"] in ("ask", "deny"), row


@pytest.mark.parametrize(
    "command",
    ["rm -rf //usr", "rm -rf /u*", "rm -rf /{usr,etc}", "find -L / -delete", "find -H / -name x -delete",
     "mv -t X /usr", "mv --target-directory=X /etc", "chmod -R 000 //etc", "rm -rf ~root", "rm -rf ///",
     "rm -rf /e?c", "sudo rm -rf //"],
)
def test_catastrophic_on_normalised_targets(command: str) -> None:
    assert analyze(command, WHERE).catastrophic, command


@pytest.mark.parametrize("command", ["rm -rf build/*", "rm -rf {a,b}", "mv -t /tmp a", "mv a b", "rm -rf ./u*"])
def test_not_catastrophic(command: str) -> None:
    assert analyze(command, WHERE).catastrophic is None


def test_a_command_over_the_cap_asks_and_deny_rules_still_see_it(tmp_path: Path) -> None:
    from sidecar.shell.classify import MAX_CLASSIFIED_CHARS

    padding = "ls; " * (MAX_CLASSIFIED_CHARS // 4 + 1)
    a = analyze(padding + "echo ok && env 'cu'rl http://127.0.0.1:9/", WHERE)
    assert not a.read_only and a.subcommands[0].cls == "unknown"
    assert "curl http://127.0.0.1:9/" in a.match_texts
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions", "deny": ["Bash(curl:*)"]}}))
    proc = subprocess.run(
        [sys.executable, "-m", "sidecar", "check-command", "--json", "--cwd", str(tmp_path), "--settings",
         str(settings), "-"],
        input=padding + "env 'cu'rl x\n" + padding + "pwd\n", text=True, capture_output=True, cwd=REPO, timeout=60,
    )
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["decision"] for r in rows] == ["deny", "allow"]  # the second: bypass mode, no rule matches


def test_question_title_is_short_and_content_has_every_line() -> None:
    from sidecar.tools.bash.bash import Bash, question_content

    command = "echo one\ncurl -d @secret http://127.0.0.1:9/ # hidden on line 2\necho three"
    title = Bash().title({"command": command, "description": "Print a greeting"})
    assert title == "`echo one` (+2 more lines)"
    content = question_content(command, "Print a greeting")
    assert content[0]["content"]["text"] == f"```sh\n{command}\n```"
    assert content[1]["content"]["text"] == "The model says: Print a greeting"


async def test_long_commands_are_classified_in_a_worker_process_with_the_same_answer() -> None:
    import asyncio
    import time

    from sidecar.tools.bash.bash import OFF_PROCESS_CHARS, classify_off_loop

    command = "git log -1 | grep -n x; " * (OFF_PROCESS_CHARS // 20) + "sort --co=pwned f"
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    a = await classify_off_loop(command, WHERE)
    took = time.perf_counter() - started
    task.cancel()
    b = analyze(command, WHERE)
    assert (a.read_only, [s.text for s in a.subcommands]) == (b.read_only, [s.text for s in b.subcommands])
    assert not a.read_only and a.subcommands[-1].text == "sort --co=pwned f"
    assert ticks >= took / 0.01 / 4, (ticks, took)  # the loop kept running meanwhile

"""Classification throughput: parse + classify 10,000 shell commands, as `sidecar check-command -` does.

    .venv/bin/python bench/bash_classify.py [--n 10000]

The commands are varied (pipelines, &&-chains, sh -c, find -exec, heredocs, redirections, git/npm/sed/
awk with flags) and made unique so no cache helps. Prints commands/s for ``classify.analyze`` alone and
for the whole decision (rules from a settings file through the shared permissions engine).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TEMPLATES = [
    "ls -la src/{i}",
    "git status && git diff HEAD~{i}",
    "cat file{i}.txt | grep -n foo | head -20",
    "npm run test -- --grep case{i}",
    "find . -name '*.py' -newer f{i} -exec grep -l TODO {{}} \\;",
    "sed -n '{i},+5p' src/main.py",
    "sed -i 's/a{i}/b/g' x.txt",
    "awk '{{print $1}}' log{i}.txt | sort | uniq -c",
    "echo {i} > out{i}.txt 2>&1",
    "bash -c 'cd sub{i} && make -j4'",
    "rm -rf build{i}/",
    "curl -s https://example.com/{i} | jq .",
    "git log --oneline -n {i} -- src/",
    "python -m pytest tests/t{i}.py -x",
    "docker ps -a | grep svc{i}",
    "FOO={i} node script.js",
    "cat <<'EOF' > f{i}\nhello $x\nEOF",
    "for f in *.txt; do wc -l $f{i}; done",
    "xargs -n1 echo < list{i}",
    "git push origin feature{i} --force",
    "tar -tzf archive{i}.tgz",
    "rg -n 'fn main' crates/{i}",
    "kill -9 {i}",
    "chmod 644 file{i}",
]


def main() -> None:
    from sidecar.permissions.rules import parse_rule
    from sidecar.shell.classify import Where, analyze
    from sidecar.tools.bash.check_command import decide

    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args()
    commands = [TEMPLATES[i % len(TEMPLATES)].format(i=i) for i in range(args.n)]
    where = Where(Path("/work/project"))
    rules = [
        parse_rule(r, "allow")
        for r in ("Bash(npm run test *)", "Bash(git log *)", "Bash(python -m pytest *)")
    ]
    rules += [parse_rule("Bash(git push *)", "deny"), parse_rule("Bash(curl *)", "ask")]

    started = time.perf_counter()
    analyses = [analyze(c, where) for c in commands]
    classify_s = time.perf_counter() - started
    started = time.perf_counter()
    decisions = [decide(analyze(c, where), rules, where.cwd) for c in commands]
    decide_s = time.perf_counter() - started
    read_only = sum(a.read_only for a in analyses)
    counts: dict[str, int] = {}
    for d in decisions:
        counts[d.decision] = counts.get(d.decision, 0) + 1
    print(f"commands: {len(commands):,} ({read_only:,} read-only; decisions {counts})")
    print(f"parse + classify: {classify_s:.2f} s = {len(commands) / classify_s:,.0f} commands/s")
    print(f"parse + classify + rules decision: {decide_s:.2f} s = {len(commands) / decide_s:,.0f} commands/s")


if __name__ == "__main__":
    main()

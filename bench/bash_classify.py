"""Classification throughput: parse + classify 10,000 shell commands, as `sidecar check-command -` does.

    .venv/bin/python bench/bash_classify.py [--n 10000]
    .venv/bin/python bench/bash_classify.py --long      # issue 15: long commands, event-loop latency

``--long``: one command of 8, 16, 32, 64 KiB (the cap, ``classify.MAX_CLASSIFIED_CHARS``) and of 1 MiB is
classified; the time per KiB shows it is linear, and the 1 MiB command (over the cap) asks at once. Then,
as the Bash tool does (``classify_off_loop``: a worker process), the cap-sized command is classified while another
"session" pings the event loop every 10 ms: the worst delay of a ping is printed (must stay < 50 ms).
Numbers, not a timed test.

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


UNIT = "git log --oneline -5 | grep -n foo && cat 'a b' \"$x\" | sort -k2 > /dev/null; "


def long_command(size: int) -> str:
    return (UNIT * (size // len(UNIT) + 1))[:size].rsplit(";", 1)[0] + ";"


def bench_long() -> None:
    import asyncio

    from sidecar.shell.classify import MAX_CLASSIFIED_CHARS, Where, analyze
    from sidecar.tools.bash.bash import classify_off_loop

    where = Where(Path("/work/project"))
    analyze("ls", where)  # bashlex import, once
    print("size        time      per KiB    read-only  parts")
    for size in (8 * 1024, 16 * 1024, 32 * 1024, 64 * 1024, 1024 * 1024):
        command = long_command(size)
        started = time.perf_counter()
        a = analyze(command, where)
        took = time.perf_counter() - started
        print(f"{size // 1024:>5} KiB  {took:8.3f} s  {took * 1000 / (size / 1024):7.2f} ms  {a.read_only!s:>9}  "
              f"{len(a.subcommands):>5}  {a.subcommands[0].reason if not a.read_only else ''}")

    async def latency() -> tuple[float, float, int]:
        command = long_command(MAX_CLASSIFIED_CHARS)
        worst = 0.0
        pings = 0
        done = asyncio.Event()

        async def other_session() -> None:
            nonlocal worst, pings
            while not done.is_set():
                asked = time.perf_counter()
                await asyncio.sleep(0.01)
                worst = max(worst, time.perf_counter() - asked - 0.01)
                pings += 1

        await classify_off_loop(long_command(8 * 1024), where)  # start the worker process first
        pinger = asyncio.create_task(other_session())
        started = time.perf_counter()
        await classify_off_loop(command, where)
        took = time.perf_counter() - started
        done.set()
        await pinger
        return took, worst, pings

    async def baseline(seconds: float) -> float:
        worst, end = 0.0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            asked = time.perf_counter()
            await asyncio.sleep(0.01)
            worst = max(worst, time.perf_counter() - asked - 0.01)
        return worst

    took, worst, pings = asyncio.run(latency())
    idle = asyncio.run(baseline(took))
    print(f"baseline: the same pings for {took:.1f} s with nothing classified: worst extra delay {idle * 1000:.1f} ms "
          "(the machine's own noise)")
    print(f"off the loop: {MAX_CLASSIFIED_CHARS // 1024} KiB classified in {took:.2f} s in the worker process; "
          f"{pings} pings of another session meanwhile, worst extra delay {worst * 1000:.1f} ms "
          f"({'within' if worst < 0.05 else 'OVER'} 50 ms)")


def main() -> None:
    if "--long" in sys.argv:
        bench_long()
        return
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

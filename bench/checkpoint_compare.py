"""Checkpoint Compare: ``_sidecar/sessions/compare`` of a turn that changed a few files of a mid-size workspace.

    .venv/bin/python bench/checkpoint_compare.py [--files 2000] [--n 7]

A spawned ``sidecar serve --acp`` talks to the scripted Messages API server. The workspace (a git repository
with ``--files`` committed files of ~2 KB in 40 folders) gets one turn whose Bash call changes 5 files and
creates 1; then ``_sidecar/sessions/compare`` to that message is timed, request to answer (it snapshots the
work tree now, diffs the turn's snapshots and reads each changed file's two texts). Reference, in the same
run and interleaved: ``git status --porcelain`` then ``git diff`` in the same repository — what a user runs to
see the same changes (a scan of the tree for changes, and the changed files' texts), two processes as the
compare's own git work is several. Medians of ``--n`` rounds each; the first round of each is a warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from foundation_common import PYTHON, REPO, header, isolated_env, median, ms, row

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer

GOAL = 3.0  # ratio to git status + git diff


def make_workspace(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"pkg{i % 40:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i:05d}.py").write_text("".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(50)))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def git_view(work: Path) -> float:
    """The reference, timed: the same changes as git shows them."""
    started = time.perf_counter()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=work, capture_output=True, check=True)
    diff = subprocess.run(["git", "diff"], cwd=work, capture_output=True, check=True)
    took = time.perf_counter() - started
    if status.stdout.count(b"\n") != 6 or b"yield" not in diff.stdout:
        raise RuntimeError(f"git saw something else: {status.stdout!r}")
    return took


async def run(files: int, n: int) -> int:
    header(f"checkpoint compare, {files} files, 6 changed")
    server = ScriptedModelServer().start()
    env, tmp = isolated_env(server.base_url)
    work = Path(tmp.name) / "ws"
    work.mkdir()
    make_workspace(work, files)
    sidecar = SidecarProcess(framing="acp", env=env, cwd=str(REPO), argv=[PYTHON, "-m", "sidecar", "serve", "--acp"])
    ours: list[float] = []
    theirs: list[float] = []
    try:
        await sidecar.start()
        await sidecar.initialize()
        session = (await sidecar.request("session/new", {"cwd": str(work), "mcpServers": []}))["sessionId"]
        await sidecar.request("session/set_mode", {"sessionId": session, "modeId": "bypassPermissions"})
        change = " && ".join([*(f"sed -i s/return/yield/ pkg{i:02d}/mod{i:05d}.py" for i in range(5)),
                              "printf 'new\\n' > pkg00/added.py"])
        server.add_turns([{"content": [{"type": "tool_use", "name": "Bash", "input": {"command": change}}]},
                          {"content": [{"type": "text", "text": "changed"}]}])
        result = await sidecar.request("session/prompt", {
            "sessionId": session, "prompt": [{"type": "text", "text": "change five files"}]}, timeout=300)
        message = result["_meta"]["sidecar"]["userMessageId"]
        for i in range(n + 1):
            started = time.perf_counter()
            compared = await sidecar.request("_sidecar/sessions/compare",
                                             {"sessionId": session, "toMessageId": message}, timeout=120)
            took = time.perf_counter() - started
            if len(compared["files"]) != 6:
                raise RuntimeError(f"compare listed {[f['path'] for f in compared['files']]}")
            git_took = git_view(work)
            if i:
                ours.append(took)
                theirs.append(git_took)
    finally:
        await sidecar.close()
        server.stop()
        tmp.cleanup()
    ratio = median(ours) / median(theirs)
    print(f"_sidecar/sessions/compare: median {ms(median(ours))} (runs {' '.join(f'{v * 1000:.0f}' for v in ours)} ms)")
    print(f"reference git status --porcelain + git diff: median {ms(median(theirs))} "
          f"(runs {' '.join(f'{v * 1000:.0f}' for v in theirs)} ms)")
    print(f"ratio {ratio:.2f}× (goal ≤ {GOAL:.0f}×: the compare also snapshots the tree and reads both texts of "
          "each file, in several git processes)")
    row("checkpoint_compare", f"compare, {files} files / 6 changed", f"{ratio:.2f}× ({ms(median(ours))})",
        f"<= {GOAL:.0f}× git status + diff", ratio <= GOAL)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--n", type=int, default=7)
    args = parser.parse_args()
    return asyncio.run(run(args.files, args.n))


if __name__ == "__main__":
    raise SystemExit(main())

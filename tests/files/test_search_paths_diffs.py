"""Glob and Grep through the dispatcher; the canonicaliser; the diff module."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from sidecar.errors import ToolError
from sidecar.tools.files.glob import rg_binary, split_walk
from sidecar.workspace.diffs import apply_hunks, make_diff
from sidecar.workspace.paths import resolve_path
from tests.files.helpers import Agent


def _tree(ws: Path) -> None:
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "src").mkdir()
    (ws / "build").mkdir()
    for i, name in enumerate(["src/a.py", "src/b.py", "build/gen.py", "x.log", "top.py", "src/c.ts"]):
        p = ws / name
        p.write_text(f"def f{i}():\n    return 'needle {i}'\n")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))


async def test_glob_gitignore_newest_first_and_cap(agent: Agent, ws: Path) -> None:
    _tree(ws)
    text, err, _ = await agent.call("Glob", pattern="**/*.py")
    assert not err
    assert text.split("\n") == [str(ws / "top.py"), str(ws / "src/b.py"), str(ws / "src/a.py")]
    text, _, _ = await agent.call("Glob", pattern="*.ts", path=str(ws / "src"))
    assert text == str(ws / "src/c.ts")
    text, _, _ = await agent.call("Glob", pattern=str(ws) + "/src/*.py")
    assert text.split("\n") == [str(ws / "src/b.py"), str(ws / "src/a.py")]
    text, _, _ = await agent.call("Glob", pattern="*.nothing")
    assert text == "No files found"
    many = ws / "many"
    many.mkdir()
    for i in range(130):
        (many / f"f{i}.txt").write_text("x")
    text, _, out = await agent.call("Glob", pattern="many/*.txt")
    assert len(text.split("\n")) == 101 and "showing the 100 most recently modified of 130 files" in text
    assert out.metadata["truncated"] is True


async def test_glob_split_walk_lists_what_one_ripgrep_lists_in_its_order(agent: Agent, ws: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Glob walks big trees as two ripgreps (one per half of the top-level entries); the names, the count
    and the order, ties included, are those of a single sorting ripgrep, whatever the folder names."""
    (ws / ".gitignore").write_text("build/\n*.log\nnode_modules\n")
    folders = ["a[1]", "b*c", "{x,y}", "sp ace", "back\\slash", "q?", "!bang", "#hash", "ünï", "plain",
               ".hidden", "build", "node_modules"]
    for n in folders:
        for k, rel in enumerate([f"{n}/f{i}.py" for i in range(9)] + [f"{n}/sub/g.py", f"{n}/x.log"]):
            p = ws / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("x")
            os.utime(p, (1_000_000 + k % 3, 1_000_000 + k % 3))  # many equal mtimes in both halves
    for k in range(4):
        (ws / f"top{k}.py").write_text("t")
        os.utime(ws / f"top{k}.py", (1_000_001, 1_000_001))
    assert len(split_walk(ws)) == 2
    monkeypatch.setattr("sidecar.tools.files.glob.spare_core", lambda: True)  # split even on a busy machine
    for pattern in ["**/*.py", "**/*", "*.log", "**/sub/*", "b*/*", "*.nothing"]:
        single = [rg_binary(), "--files", "--hidden", "--no-require-git", "--no-config", "--glob", "!.git",
                  "--glob", pattern, "--sortr=modified", "--null"]
        out_one = await asyncio.to_thread(subprocess.run, single, cwd=ws, capture_output=True, check=False)
        one = out_one.stdout.decode().split("\0")[:-1]
        text, err, out = await agent.call("Glob", pattern=pattern)
        assert not err
        expected = [str(ws / n) for n in one[:100]] or ["No files found"]
        assert text.split("\n")[:100] == expected, pattern
        assert out.metadata["count"] == len(one)
    text, err, _ = await agent.call("Glob", pattern="{unclosed")
    assert err and text.startswith("Glob failed:")


async def test_grep_modes_and_flags(agent: Agent, ws: Path) -> None:
    _tree(ws)
    text, err, _ = await agent.call("Grep", pattern="needle [01]")
    assert not err and text == f"Found 2 files\n{ws / 'src/b.py'}\n{ws / 'src/a.py'}"
    text, _, _ = await agent.call("Grep", pattern="NEEDLE 5", **{"-i": True, "output_mode": "content"})
    assert text == f"{ws / 'src/c.ts'}:2:    return 'needle 5'"
    text, _, _ = await agent.call("Grep", pattern="needle 4", output_mode="content", **{"-B": 1, "-n": False})
    assert text == f"{ws / 'top.py'}-def f4():\n{ws / 'top.py'}:    return 'needle 4'"
    text, _, _ = await agent.call("Grep", pattern="needle", output_mode="count", type="py")
    assert "Found 3 total occurrences across 3 files." in text
    text, _, _ = await agent.call("Grep", pattern="needle", glob="*.ts", output_mode="content")
    assert text == f"{ws / 'src/c.ts'}:2:    return 'needle 5'"
    text, _, _ = await agent.call("Grep", pattern=r"f0\(\):\n\s+return", multiline=True)
    assert text == f"Found 1 file\n{ws / 'src/a.py'}"
    text, _, _ = await agent.call("Grep", pattern="needle", output_mode="content", head_limit=1, offset=1)
    assert len(text.split("\n\n")[0].split("\n")) == 1 and "Use offset=2" in text
    text, err, _ = await agent.call("Grep", pattern="(unclosed")
    assert err and text.startswith("Grep failed:")
    text, _, _ = await agent.call("Grep", pattern="-x-not-there")
    assert text == "No files found"


def test_paths_canonicalised(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "f.txt").write_text("x")
    (tmp_path / "out").mkdir()
    (ws / "escape").symlink_to(tmp_path / "out")
    session = SimpleNamespace(cwd=ws, within_roots=lambda p: p == ws or p.is_relative_to(ws))
    r = resolve_path(f"{ws}/sub/../sub/f.txt", session)  # type: ignore[arg-type]
    assert r.path == ws / "sub" / "f.txt" and r.inside_roots and r.kind == "file"
    assert resolve_path(f"{ws}/escape/new.txt", session).inside_roots is False  # type: ignore[arg-type]
    assert resolve_path(f"{ws}/sub%2F..%2F..%2Fout", session).path == tmp_path.resolve() / "out"  # type: ignore[arg-type]
    assert resolve_path(f"{ws}\u2215sub\u2215f.txt", session).path == ws / "sub" / "f.txt"  # type: ignore[arg-type]
    assert resolve_path(f"{ws}\uff0fsub\uff0f\uff0e\uff0e\uff0fsub/f.txt", session).path == ws / "sub" / "f.txt"  # type: ignore[arg-type]
    assert resolve_path((ws / "sub" / "f.txt").as_uri(), session).kind == "file"  # type: ignore[arg-type]
    with pytest.raises(ToolError, match=f"Did you mean {ws}/sub/f.txt"):
        resolve_path("sub/f.txt", session)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="NUL"):
        resolve_path(f"{ws}/a\x00b", session)  # type: ignore[arg-type]


def test_diffs_hunks_and_partial_apply() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 41))
    new = old.replace("line 5\n", "line five\n").replace("line 30\n", "line thirty\nline 30.5\n")
    d = make_diff(old, new, "f.txt")
    assert d.hunk_dicts() == [{"index": 0, "oldStart": 2, "oldLines": 7, "newStart": 2, "newLines": 7},
                              {"index": 1, "oldStart": 27, "oldLines": 7, "newStart": 27, "newLines": 8}]
    assert "@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n" in d.unified
    assert apply_hunks(old, new, [1]) == old.replace("line 30\n", "line thirty\nline 30.5\n")
    assert apply_hunks(old, new, [0, 1]) == new and apply_hunks(old, new, []) == old
    rnd = random.Random(3)
    for _ in range(300):
        a = [rnd.choice("abc") + "\n" for _ in range(rnd.randint(0, 25))]
        b = list(a)
        for _ in range(3):
            if b and rnd.random() < 0.5:
                b.pop(rnd.randrange(len(b)))
            else:
                b.insert(rnd.randint(0, len(b)), "z\n")
        A, B = "".join(a), "".join(b)
        n = len(make_diff(A, B, "x").hunks)
        for k in range(n):
            part = apply_hunks(A, B, [k])
            assert len(make_diff(A, part, "x").hunks) == 1
        assert apply_hunks(A, B, range(n)) == B


async def test_grep_context_gives_lines_around_each_match(agent: Agent, ws: Path) -> None:
    f = ws / "ctx.txt"
    f.write_text("".join(f"line {i}\n" for i in range(1, 21)).replace("line 6\n", "match A\n")
                 .replace("line 15\n", "match B\n"))
    text, err, _ = await agent.call("Grep", pattern="^match", path=str(f), output_mode="content", context=2)
    assert not err
    # rg prints a single file without its name; "--" separates the two groups
    assert text == "4-line 4\n5-line 5\n6:match A\n7-line 7\n8-line 8\n--\n13-line 13\n14-line 14\n" \
        "15:match B\n16-line 16\n17-line 17"
    same, _, _ = await agent.call("Grep", pattern="^match", path=str(f), output_mode="content", **{"-C": 2})
    assert same == text
    # -C wins over context when both are given; -A/-B still narrow one side
    one, _, _ = await agent.call("Grep", pattern="match A", path=str(f), output_mode="content",
                                 context=5, **{"-C": 1})
    assert one == "5-line 5\n6:match A\n7-line 7"
    grep = agent.dispatcher.registry.get("Grep")
    assert grep is not None
    schema = grep.input_schema()["properties"]
    assert {"context", "-C", "-A", "-B", "-n", "-i", "head_limit", "offset", "multiline", "type", "glob"} <= set(schema)


def test_diffs_agree_with_an_independent_unidiff_parser() -> None:
    """``make_diff``'s text is a well-formed unified diff: ``unidiff`` (a separate parser, used here as the
    oracle) reads the same hunk headers and counts, and applying its lines to the old text gives the new."""
    import unidiff

    rng = random.Random(7)
    for _ in range(300):
        old_lines = [f"l{rng.randrange(12)}\n" for _ in range(rng.randint(0, 30))]
        new_lines = list(old_lines)
        for _ in range(rng.randint(1, 4)):
            at = rng.randint(0, len(new_lines))
            op = rng.choice(["ins", "del", "mod"])
            if op == "ins" or not new_lines:
                new_lines.insert(at, f"n{rng.randrange(99)}\n")
            elif op == "del":
                del new_lines[min(at, len(new_lines) - 1)]
            else:
                new_lines[min(at, len(new_lines) - 1)] = f"m{rng.randrange(99)}\n"
        old, new = "".join(old_lines), "".join(new_lines)
        if rng.random() < 0.3:
            new = new.rstrip("\n")
        d = make_diff(old, new, "f.txt")
        if not d.changed:
            assert d.unified == "" and old == new
            continue
        (parsed,) = unidiff.PatchSet(d.unified)
        assert [{"index": i, "oldStart": h.source_start, "oldLines": h.source_length,
                 "newStart": h.target_start, "newLines": h.target_length} for i, h in enumerate(parsed)] \
            == d.hunk_dicts()
        assert (parsed.added, parsed.removed) == (d.added, d.removed)
        # Rebuild the new text from the old one and unidiff's view of the hunks.
        src = old.splitlines(keepends=True)
        out: list[str] = []
        pos = 0
        for h in parsed:
            start = h.source_start - 1 if h.source_length else h.source_start
            out.extend(src[pos:start])
            kept_last = False
            for line in h:
                if line.line_type == "\\":  # "\\ No newline": the line before
                    if kept_last:
                        out[-1] = out[-1].removesuffix("\n")
                    continue
                kept_last = line.is_added or line.is_context
                if kept_last:
                    out.append(line.value)
            pos = start + h.source_length
        out.extend(src[pos:])
        assert "".join(out) == new

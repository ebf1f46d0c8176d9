"""Safe rebase of stale edits (issue 19): an Edit lands on top of an outside change far from it, and
is refused when the change is near it; never a byte of either side lost (1,000 seeded interleavings)."""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import pytest

from sidecar.workspace.ledger import LEDGER, ReadLedger
from sidecar.workspace.rebase import MARGIN
from tests.files.helpers import Agent

FORMATTER = """
import sys
p = sys.argv[1]
lines = open(p).read().split("\\n")
# A formatter that normalises the imports at the top and the spacing of one far-away line.
lines[0] = "import os"
lines[1] = "import sys"
lines[-3] = lines[-3].replace("=", " = ")
open(p, "w").write("\\n".join(lines))
"""


def source(n: int = 30) -> str:
    body = [f"v{i}=compute({i})" for i in range(2, n - 3)]
    return "\n".join(["import sys,os", "import re", *body, "tail=1", "end=2", ""])


async def run_formatter(path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", FORMATTER, str(path))
    assert await proc.wait() == 0


async def test_formatter_away_from_the_edit_is_merged_and_shown(agent: Agent, ws: Path) -> None:
    f = ws / "mod.py"
    f.write_text(source())
    await agent.call("Read", file_path=str(f))
    await asyncio.sleep(0.01)
    await run_formatter(f)
    formatted = f.read_text()
    assert formatted != source()
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="v14=compute(14)",
                                    new_string="v14=compute(14) * 2")
    assert not err, text
    # The file is the merge: the formatter's change and the edit, both whole.
    assert f.read_text() == formatted.replace("v14=compute(14)", "v14=compute(14) * 2")
    assert f.read_text().startswith("import os\nimport sys\nv2=compute(2)\n")
    assert "tail = 1\n" in f.read_text()
    # The model is told what changed outside its region, as a short diff.
    assert text.startswith("The file mod.py has been updated.")
    assert "Note: mod.py had been changed since you read it" in text
    assert "-import sys,os\n-import re\n+import os\n+import sys\n" in text
    assert "-tail=1\n+tail = 1\n" in text
    assert "v14" not in text.split("```diff")[1]  # the edit itself is not part of the outside diff
    # The merge is now the agent's view: the next Edit needs no re-read.
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="tail = 1", new_string="tail = 0")
    assert not err, text
    assert "Note:" not in text


async def test_change_inside_the_region_is_refused_bytes_intact(agent: Agent, ws: Path) -> None:
    f = ws / "mod.py"
    f.write_text(source())
    await agent.call("Read", file_path=str(f))
    await asyncio.sleep(0.01)
    # The user changes the line two lines below the edit (inside the margin).
    changed = source().replace("v16=compute(16)", "v16=compute(16)  # mine")
    f.write_text(changed)
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="v14=compute(14)",
                                    new_string="v14=compute(14) * 2")
    assert err
    assert text.startswith("mod.py was modified since read (by the user, a formatter or another process).")
    assert f"(The change is within {MARGIN} lines of the text you are replacing" in text
    assert f.read_text() == changed
    # A change of the edited line itself: refused too.
    await agent.call("Read", file_path=str(f))
    await asyncio.sleep(0.01)
    f.write_text(changed.replace("v14=compute(14)", "v14=compute(140)"))
    text, err, _ = await agent.call("Edit", file_path=str(f), old_string="v14=compute(14)",
                                    new_string="v14=compute(14) * 2")
    assert err and "was modified since read" in text
    assert f.read_text() == changed.replace("v14=compute(14)", "v14=compute(140)")


async def test_no_kept_content_means_refused(ws: Path, tmp_path: Path) -> None:
    """Past the ledger's memory budget the read content is not kept, and a stale edit is refused."""
    agent = Agent(ws, tmp_path, mode="acceptEdits")
    agent.session.provide(LEDGER, ReadLedger(agent.session, content_budget=10))
    try:
        f = ws / "big.py"
        f.write_text(source())
        await agent.call("Read", file_path=str(f))
        assert agent.session.service(LEDGER).seen_content(f) is None
        await asyncio.sleep(0.01)
        await run_formatter(f)
        text, err, _ = await agent.call("Edit", file_path=str(f), old_string="v14=compute(14)",
                                        new_string="v14=compute(14) * 2")
        assert err and "was modified since read" in text
    finally:
        await agent.close()


def _apply(lines: list[str], at: int, kind: str, tag: str) -> list[str]:
    out = list(lines)
    if kind == "modify":
        out[at] = out[at] + tag
    elif kind == "insert":
        out.insert(at, tag)
    else:
        del out[at]
    return out


@pytest.mark.timeout(600)
async def test_random_interleavings_never_lose_a_byte(ws: Path, tmp_path: Path) -> None:
    """1,000 seeded cases: the agent reads, outside edits and agent edits alternate without re-reading.
    Each agent edit either lands, and then the file is exactly the outside version with the agent's
    line replaced, or is refused and the file is byte for byte the outside version. Edits far from the
    outside change always land."""
    rng = random.Random(19)
    agent = Agent(ws, tmp_path, mode="bypassPermissions")
    landed = refused = 0
    try:
        for case in range(1000):
            f = ws / f"p{case % 7}.txt"
            n = rng.randint(8, 40)
            lines = [f"line {case}.{i} {rng.choice(['a', 'bb', 'x = 1', '  y'])}" for i in range(n)]
            if rng.random() < 0.2:
                lines = [ln.replace(" ", "\r") if rng.random() < 0.1 else ln for ln in lines]
            eol = rng.choice(["\n", "\n", "\r\n"])
            f.write_bytes((eol.join(lines) + eol).encode())
            _, err, _ = await agent.call("Read", file_path=str(f))
            assert not err
            view = list(lines)  # what the agent knows
            for step in range(rng.randint(1, 3)):
                # Someone else changes the file.
                kind = rng.choice(["modify", "insert", "delete"])
                at = rng.randrange(len(lines)) if kind != "insert" else rng.randint(0, len(lines))
                if kind == "delete" and len(lines) < 6:
                    kind = "modify"
                    at = min(at, len(lines) - 1)
                lines = _apply(lines, at, kind, f" ext{case}.{step}")
                f.write_bytes((eol.join(lines) + eol).encode())
                outside = f.read_bytes()
                # The agent edits a line of the version it knows.
                target = rng.randrange(len(view))
                old = view[target]
                new = old + f" agent{case}.{step}"
                text, err, _ = await agent.call("Edit", file_path=str(f), old_string=old, new_string=new)
                after = f.read_bytes()
                if err:
                    refused += 1
                    assert after == outside, (case, step, text)
                    assert "was modified since read" in text or "occurs" in text or "not found" in text, text
                    distance = abs(target - at)
                    unique = sum(1 for ln in lines if old in ln) == 1 and sum(1 for ln in view if old in ln) == 1
                    if unique and distance > MARGIN + 2 and "was modified since read" in text:
                        raise AssertionError(f"case {case}: refused an edit {distance} lines away: {text}")
                    f.write_bytes(outside)
                    await agent.call("Read", file_path=str(f))
                    view = list(lines)
                    continue
                landed += 1
                i = lines.index(old)
                lines[i] = new
                assert after == (eol.join(lines) + eol).encode(), (case, step)
                view = list(lines)
                if "Note:" in text:
                    assert f"ext{case}.{step}" in text or "delete" in kind, text
    finally:
        await agent.close()
    assert landed > 600 and refused > 50, (landed, refused)

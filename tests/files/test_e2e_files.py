"""The real tool path: the scripted model asks, a spawned `sidecar serve --acp` runs the tools, and the
scripted server records the result text the model got back."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import Harness


def _results(model: ScriptedModelServer) -> list[tuple[str, bool]]:
    out = []
    for req in model.message_requests():
        for r in req.tool_results():
            out.append(("".join(b.get("text", "") for b in r["content"] if b.get("type") == "text"),
                        bool(r.get("is_error"))))
    # Each request repeats the history: keep the distinct results in order.
    seen: list[tuple[str, bool]] = []
    for item in out:
        if item not in seen:
            seen.append(item)
    return seen


def _tool(name: str, **inp: Any) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": name, "input": inp}]}


async def test_read_twice_edit_counts_and_special_files(acp_sidecar: Harness, workspace: Path,
                                                        model_server: ScriptedModelServer) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("alpha\nbeta\nalpha\ngamma\nalpha\n")
    os.mkfifo(workspace / "fifo")
    model_server.add_turns([
        _tool("Read", file_path=str(notes)),
        _tool("Read", file_path=str(notes)),
        _tool("Edit", file_path=str(notes), old_string="alpha", new_string="ALPHA"),
        _tool("Edit", file_path=str(notes), old_string="delta", new_string="DELTA"),
        _tool("Read", file_path="/dev/zero"),
        _tool("Read", file_path=str(workspace / "fifo")),
        _tool("Read", file_path="/dev/stdin"),
        {"content": [{"type": "text", "text": "done"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await asyncio.wait_for(acp_sidecar.prompt(session, "go"), 60) == "end_turn"
    results = _results(model_server)
    assert results[0] == ("     1\talpha\n     2\tbeta\n     3\talpha\n     4\tgamma\n     5\talpha", False)
    assert results[1][0].startswith("File unchanged since last read: lines 1-2000 of notes.txt")
    assert results[2] == ("old_string occurs 3 times in notes.txt (lines 1, 3, 5); it must occur exactly once. "
                          "Include more surrounding lines to make it unique, or set replace_all to true to "
                          "change every occurrence.", True)
    assert results[3][1] and results[3][0].startswith("old_string was not found in notes.txt (0 matches).")
    assert results[4][1] and "character device" in results[4][0]
    assert results[5][1] and "FIFO" in results[5][0]
    assert results[6][1] and "not a regular file" in results[6][0]
    assert notes.read_text() == "alpha\nbeta\nalpha\ngamma\nalpha\n"


async def test_formatter_rewrite_notice_then_stale_edit_refused(acp_sidecar: Harness, workspace: Path,
                                                                 model_server: ScriptedModelServer) -> None:
    f = workspace / "hello.py"
    model_server.add_turns([
        _tool("Read", file_path=str(f)),
        _tool("Edit", file_path=str(f), old_string="Hello", new_string="Hi"),
        {"content": [{"type": "text", "text": "edited"}]},
        _tool("Edit", file_path=str(f), old_string="Hi", new_string="Hey"),
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    session = await acp_sidecar.new_session(workspace)
    assert await acp_sidecar.prompt(session, "edit it") == "end_turn"
    assert f.read_text() == 'def greet(name):\n    return f"Hi, {name}!"\n'
    # The formatter rewrites the file right after the agent's Edit.
    await asyncio.sleep(0.3)
    f.write_text("def greet(name):\n    return f'Hi, {name}!'\n")
    await asyncio.sleep(0.5)
    assert await acp_sidecar.prompt(session, "now change Hi to Hey") == "end_turn"
    requests = model_server.message_requests()
    second_prompt = json.dumps(requests[3].body["messages"][-1])
    assert "hello.py was modified by the user or a linter; re-read before editing." in second_prompt
    results = _results(model_server)
    assert results[-1][1] and "hello.py was modified since read" in results[-1][0]
    assert f.read_text() == "def greet(name):\n    return f'Hi, {name}!'\n"


async def test_image_whose_extension_lies_goes_to_the_model_with_its_real_media_type(
        acp_sidecar: Harness, workspace: Path, model_server: ScriptedModelServer) -> None:
    from PIL import Image
    Image.new("RGB", (4, 4), (0, 128, 255)).save(workspace / "photo.png", format="JPEG")  # a JPEG named .png
    model_server.add_turns([_tool("Read", file_path=str(workspace / "photo.png")),
                            {"content": [{"type": "text", "text": "a blue square"}]}])
    session = await acp_sidecar.new_session(workspace)
    assert await asyncio.wait_for(acp_sidecar.prompt(session, "look"), 60) == "end_turn"
    assert model_server.rejections == []  # the real API refuses an image whose bytes contradict its media type
    sent = model_server.message_requests()[1].tool_results()[0]["content"]
    image = next(b for b in sent if b.get("type") == "image")
    assert image["source"]["media_type"] == "image/jpeg"
    assert acp_sidecar.text(session).endswith("a blue square")

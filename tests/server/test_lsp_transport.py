"""What is particular to the LSP transport: capabilities, document sync, $/progress."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sidecar.client.connection import SidecarProcess
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO


async def test_lsp_initialize_sync_and_progress(sidecar_env: dict[str, str], model_server: ScriptedModelServer,
                                                workspace: Path, tmp_path: Path) -> None:
    process = SidecarProcess(framing="lsp", env=sidecar_env, cwd=str(REPO),
                             argv=[sys.executable, "-m", "sidecar", "serve"],
                             stderr=open(tmp_path / "lsp.stderr", "wb"))
    created: list[Any] = []

    async def create_progress(params: dict[str, Any]) -> None:
        created.append(params["token"])
        return None

    process.handlers["window/workDoneProgress/create"] = create_progress
    await process.start()
    try:
        result = await process.initialize(
            {"_meta": {"sidecar": {"reviewEdit": False}}},
            lsp_capabilities={"window": {"workDoneProgress": True}})
        caps = result["capabilities"]
        assert caps["experimental"]["acp"]["agentCapabilities"]["loadSession"] is True
        for feature in ("definitionProvider", "hoverProvider", "referencesProvider", "completionProvider"):
            assert not caps.get(feature), feature
        assert caps["textDocumentSync"]["change"] == 1  # full sync

        target = workspace / "hello.py"
        uri = target.as_uri()
        await process.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": target.read_text()}})
        await process.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                        "contentChanges": [{"text": "# unsaved work\n"}]})
        model_server.add_turns([
            {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(target)}}]},
            {"content": [{"type": "tool_use", "name": "Write",
                          "input": {"file_path": str(target), "content": "print('overwritten')\n"}}]},
            {"content": [{"type": "text", "text": "done"}]},
        ])
        session = (await process.request("session/new", {"cwd": str(workspace), "mcpServers": []}))["sessionId"]
        before = target.read_text()
        stop = await process.request("session/prompt", {"sessionId": session,
                                                        "prompt": [{"type": "text", "text": "rewrite hello"}]})
        assert stop["stopReason"] == "end_turn"
        write_result = model_server.message_requests()[2].tool_results()[0]
        assert write_result.get("is_error") is True
        assert "unsaved" in write_result["content"][0]["text"].lower()
        assert target.read_text() == before  # the user's file on disk is untouched

        progress = [n["params"] for n in process.notifications if n["method"] == "$/progress"]
        assert created and [p["value"]["kind"] for p in progress] == ["begin", "end"]
        assert {p["token"] for p in progress} == set(created)
    finally:
        await process.close()


async def test_plain_lsp_client_is_asked_with_show_message_request(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, workspace: Path, tmp_path: Path) -> None:
    process = SidecarProcess(framing="lsp", env=sidecar_env, cwd=str(REPO),
                             argv=[sys.executable, "-m", "sidecar", "serve"],
                             stderr=open(tmp_path / "lsp.stderr", "wb"))
    asked: list[dict[str, Any]] = []

    async def show_message_request(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return next(a for a in params["actions"] if "allow" in a["title"].lower())

    process.handlers["window/showMessageRequest"] = show_message_request
    await process.start()
    try:
        await process.request("initialize", {"processId": None, "rootUri": None, "capabilities": {"window": {}}})
        await process.notify("initialized", {})
        target = workspace / "made-by-plain-client.txt"
        model_server.add_turns([
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": f"touch {target}"}}]},
            {"content": [{"type": "text", "text": "made"}]},
        ])
        session = (await process.request("session/new", {"cwd": str(workspace), "mcpServers": []}))["sessionId"]
        stop = await process.request("session/prompt", {"sessionId": session,
                                                        "prompt": [{"type": "text", "text": "touch it"}]})
        assert stop["stopReason"] == "end_turn"
        assert len(asked) == 1 and "touch" in asked[0]["message"]
        assert target.exists()
    finally:
        await process.close()


async def test_edit_lands_in_the_unsaved_buffer_not_on_disk(
        sidecar_env: dict[str, str], model_server: ScriptedModelServer, workspace: Path, tmp_path: Path) -> None:
    """With unsaved changes in the editor, Edit goes to the buffer through workspace/applyEdit (against its
    text and version); the review diff is against the buffer; the disk file is untouched."""
    process = SidecarProcess(framing="lsp", env=sidecar_env, cwd=str(REPO),
                             argv=[sys.executable, "-m", "sidecar", "serve"],
                             stderr=open(tmp_path / "lsp.stderr", "wb"))
    target = workspace / "hello.py"
    target.write_text('def greet(name):\n    return f"Hello, {name}!"\n' + "".join(f"\nX{i} = {i}\n" for i in range(4)))
    uri = target.as_uri()
    on_disk = target.read_bytes()
    editor = {"text": target.read_text() + "\n\n# unsaved work of the user\n", "version": 2}
    applied: list[dict[str, Any]] = []
    asked: list[dict[str, Any]] = []

    def offset(text: str, pos: dict[str, int]) -> int:
        lines = text.split("\n")
        return sum(len(line) + 1 for line in lines[:pos["line"]]) + pos["character"]

    async def apply_edit(params: dict[str, Any]) -> dict[str, Any]:
        applied.append(params)
        (change,) = params["edit"]["documentChanges"]
        if change["textDocument"] != {"uri": uri, "version": editor["version"]}:
            return {"applied": False, "failureReason": "version mismatch"}
        text = editor["text"]
        for e in change["edits"]:
            a, b = offset(text, e["range"]["start"]), offset(text, e["range"]["end"])
            text = text[:a] + e["newText"] + text[b:]
        editor["text"], editor["version"] = text, editor["version"] + 1
        await process.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": editor["version"]},
                                                        "contentChanges": [{"text": text}]})
        return {"applied": True}

    async def permission(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        option = next(o for o in params["options"] if o["kind"] == "allow_once")
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    process.handlers["workspace/applyEdit"] = apply_edit
    process.handlers["session/request_permission"] = permission
    await process.start()
    try:
        await process.initialize({}, lsp_capabilities={"window": {}, "workspace": {"applyEdit": True}})
        await process.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": target.read_text()}})
        await process.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                        "contentChanges": [{"text": editor["text"]}]})
        model_server.add_turns([
            {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(target)}}]},
            {"content": [{"type": "tool_use", "name": "Edit", "input": {
                "file_path": str(target), "old_string": "Hello", "new_string": "Howdy"}}]},
            {"content": [{"type": "text", "text": "done"}]},
        ])
        session = (await process.request("session/new", {"cwd": str(workspace), "mcpServers": []}))["sessionId"]
        stop = await process.request("session/prompt", {"sessionId": session,
                                                        "prompt": [{"type": "text", "text": "greet differently"}]})
        assert stop["stopReason"] == "end_turn"
        result = model_server.message_requests()[2].tool_results()[0]
        text = result["content"][0]["text"]
        assert result.get("is_error") is not True, text
        assert text.startswith("The file hello.py has been updated in the editor's open buffer")
        assert "+# unsaved work of the user" in text  # the model is told of the unsaved change it had not seen
        assert editor["text"] == on_disk.decode().replace("Hello", "Howdy") + "\n\n# unsaved work of the user\n"
        assert editor["version"] == 3
        assert target.read_bytes() == on_disk  # disk untouched until the user saves
        (edit,) = applied[0]["edit"]["documentChanges"][0]["edits"]
        assert edit == {"range": {"start": {"line": 1, "character": 14}, "end": {"line": 1, "character": 18}},
                        "newText": "owdy"}  # only what differs: "ello" -> "owdy"
        # The user reviewed the change against the buffer, not the disk.
        diff = next(c for c in asked[-1]["toolCall"]["content"] if c["type"] == "diff")
        assert diff["oldText"].endswith("# unsaved work of the user\n")
    finally:
        await process.close()

"""The editor route: when the client advertises lspQuery/diagnostics, the sidecar asks it instead of
starting language servers, and governs what comes back the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sidecar.errors import ToolError
from sidecar.tools.context import ToolContext
from sidecar.tools.lsp.diagnostics import diagnostics_after_edit, diagnostics_snapshot
from sidecar.tools.lsp.service import LANGUAGE_SERVERS
from tests.lsp.conftest import EditorChannel, copy_fixtures, isolated_home, make_session, run_lsp


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in isolated_home(tmp_path).items():
        monkeypatch.setenv(key, value)


def loc(path: Path, line: int, character: int) -> dict[str, Any]:
    pos = {"line": line, "character": character}
    return {"uri": path.as_uri(), "range": {"start": pos, "end": pos}}


async def test_definition_through_the_editor_is_governed_like_headless(tmp_path: Path) -> None:
    lsp = copy_fixtures(tmp_path)
    root = lsp / "py_project"

    async def lsp_query(params: dict[str, Any]) -> dict[str, Any]:
        assert params["operation"] == "findReferences"
        return {"result": [
            loc(root / "app/main.py", 5, 4),
            loc(root / "generated/cache.py", 0, 21),       # gitignored
            loc(lsp / "outside_lib/extlib.py", 0, 4),      # outside the roots
            {"targetUri": (root / "app/main.py").as_uri(),  # a LocationLink
             "targetRange": {"start": {"line": 10, "character": 0}, "end": {"line": 10, "character": 9}},
             "targetSelectionRange": {"start": {"line": 10, "character": 21},
                                      "end": {"line": 10, "character": 31}}},
        ]}

    channel = EditorChannel({"lspQuery": True}, {"_sidecar/lsp_query": lsp_query})
    session = make_session(root, tmp_path / "store", channel)
    text = await run_lsp(session, "findReferences", root / "app/main.py", 6, 7)
    assert channel.requests == [("_sidecar/lsp_query", {
        "operation": "findReferences", "uri": (root / "app/main.py").as_uri(),
        "position": {"line": 5, "character": 6}})]
    assert text == (
        "Found 2 references in 1 file:\n\n"
        "app/main.py:6:5: def total_area(shapes: list[Shape]) -> float:\n"
        'app/main.py:11:22: return f"total: {total_area(shapes):.1f} ({helper()})"\n\n'
        "1 result outside the workspace or denied by a Read rule was not shown.\n"
        "1 result in gitignored files was not shown.")
    assert session.find_service(LANGUAGE_SERVERS) is None  # no headless server was started


async def test_call_hierarchy_through_the_editor_passes_the_prepared_item(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path) / "py_project"
    main = root / "app/main.py"
    item = {"name": "report", "kind": 12, "uri": main.as_uri(),
            "range": {"start": {"line": 9, "character": 0}, "end": {"line": 10, "character": 60}},
            "selectionRange": {"start": {"line": 9, "character": 4}, "end": {"line": 9, "character": 10}}}
    caller = {**item, "name": "main",
              "selectionRange": {"start": {"line": 13, "character": 4}, "end": {"line": 13, "character": 8}}}

    async def lsp_query(params: dict[str, Any]) -> dict[str, Any]:
        if params["operation"] == "prepareCallHierarchy":
            return {"result": [item]}
        assert params["operation"] == "incomingCalls" and params["item"] == item
        return {"result": [{"from": caller, "fromRanges": [
            {"start": {"line": 14, "character": 10}, "end": {"line": 14, "character": 16}}]}]}

    channel = EditorChannel({"lspQuery": True}, {"_sidecar/lsp_query": lsp_query})
    session = make_session(root, tmp_path / "store", channel)
    text = await run_lsp(session, "incomingCalls", main, 10, 5)
    assert [p["operation"] for _, p in channel.requests] == ["prepareCallHierarchy", "incomingCalls"]
    assert text == ("Function report is called from 1 function:\n\n"
                    "app/main.py:14:5 Function main\n"
                    "  called at app/main.py:15:11: print(report([Circle(1.0), Square(2.0)]))")


async def test_utf16_positions_are_converted_both_ways(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    src = root / "emoji.py"
    src.write_text('s = "😀😀"; total = 1\nprint(total)\n')

    async def lsp_query(params: dict[str, Any]) -> dict[str, Any]:
        # `total` on line 1 is at character 11 (code points) = UTF-16 offset 13 (two surrogate pairs).
        assert params["position"] == {"line": 0, "character": 13}
        return {"result": [loc(src, 0, 13)]}

    channel = EditorChannel({"lspQuery": True}, {"_sidecar/lsp_query": lsp_query})
    session = make_session(root, tmp_path / "store", channel)
    text = await run_lsp(session, "goToDefinition", src, 1, 12)
    assert text == 'Found 1 definition:\n\nemoji.py:1:12: s = "😀😀"; total = 1'


async def test_an_editor_error_becomes_an_actionable_tool_error(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path) / "py_project"
    channel = EditorChannel({"lspQuery": True}, {})  # advertises but cannot answer
    session = make_session(root, tmp_path / "store", channel)
    with pytest.raises(ToolError, match="The editor could not answer hover: method not found"):
        await run_lsp(session, "hover", root / "app/main.py", 6, 5)


async def test_diagnostics_from_the_editor(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path) / "py_project"
    square = root / "shapes/square.py"
    error = {"range": {"start": {"line": 8, "character": 15}, "end": {"line": 8, "character": 21}},
             "severity": 1, "source": "Pylance", "code": "reportReturnType",
             "message": 'Type "Literal[\'side\']" is not assignable to return type "float"'}
    warning = {**error, "severity": 2, "message": "unused"}
    answers = [[], [warning, error]]

    async def diagnostics(params: dict[str, Any]) -> dict[str, Any]:
        assert params == {"uris": [square.as_uri()]}
        return {"items": [{"uri": square.as_uri(), "diagnostics": answers.pop(0)}]}

    channel = EditorChannel({"diagnostics": True}, {"_sidecar/diagnostics": diagnostics})
    session = make_session(root, tmp_path / "store", channel)
    ctx = ToolContext(session=session, tool_call_id="toolu_1")
    before = await diagnostics_snapshot(ctx, square)
    text = await diagnostics_after_edit(ctx, square, before)
    assert text == ("\n\n<new-diagnostics>\nThe edit introduced 1 new error in shapes/square.py:\n"
                    "  shapes/square.py:9:16: error: Type \"Literal['side']\" is not assignable to "
                    "return type "
                    "\"float\" (Pylance reportReturnType)\n</new-diagnostics>")


async def test_a_hover_through_the_editor_is_shown_only_when_its_definition_may_be_read(tmp_path: Path) -> None:
    lsp = copy_fixtures(tmp_path)
    root = lsp / "py_project"
    main = root / "app/main.py"
    outside = lsp / "outside_lib/extlib.py"
    stdlib = tmp_path / "usr/lib/python3.11/site-packages/mod.py"  # a library outside the roots
    answers: dict[str, list[dict[str, Any]]] = {}

    async def lsp_query(params: dict[str, Any]) -> dict[str, Any]:
        if params["operation"] == "hover":
            return {"result": {"contents": {"kind": "markdown", "value": "helper: Literal['outside the workspace']"}}}
        assert params["operation"] == "goToDefinition" and params["position"] == {"line": 10, "character": 47}
        return {"result": answers["definition"]}

    channel = EditorChannel({"lspQuery": True}, {"_sidecar/lsp_query": lsp_query})
    session = make_session(root, tmp_path / "store", channel)
    answers["definition"] = [loc(outside, 0, 4)]
    text = await run_lsp(session, "hover", main, 11, 48)
    assert text == ("The hover for `helper` at app/main.py:11:48 is not shown: it is defined in a file outside the "
                    "workspace or denied by a Read rule, which Read would not show either. Use goToDefinition or "
                    "Read on files in the workspace instead.\n\n"
                    "1 result outside the workspace or denied by a Read rule was not shown.")
    stdlib.parent.mkdir(parents=True)
    stdlib.write_text("def helper() -> str:\n    return 'outside the workspace'\n")
    answers["definition"] = [loc(stdlib, 0, 4)]
    text = await run_lsp(session, "hover", main, 11, 48)
    assert text == "Hover at app/main.py:11:48:\n\nhelper: Literal['outside the workspace']"

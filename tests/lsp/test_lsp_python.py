"""The LSP tool against a real basedpyright on fixtures/lsp/py_project (headless route).

One session (and so one basedpyright process) serves the whole module: starting the server is the
slow part, and sharing it also exercises document sync across queries.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from sidecar.errors import ToolError
from sidecar.session import Session
from sidecar.tools.context import ToolContext
from sidecar.tools.lsp.diagnostics import diagnostics_after_edit, diagnostics_snapshot
from sidecar.tools.lsp.service import language_servers
from tests.lsp.conftest import copy_fixtures, isolated_home, make_session, pid_alive, run_lsp

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(180)]


@dataclass
class Project:
    root: Path  # py_project, the session's cwd
    session: Session

    def path(self, rel: str) -> Path:
        return self.root / rel


@pytest.fixture(scope="module")
def module_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("lsp_py")
    mp = pytest.MonkeyPatch()
    for key, value in isolated_home(tmp).items():
        mp.setenv(key, value)
    yield tmp
    mp.undo()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def project(module_env: Path) -> AsyncIterator[Project]:
    root = copy_fixtures(module_env) / "py_project"
    session = make_session(root, module_env / "store")
    yield Project(root, session)
    await language_servers(session).close()


async def test_go_to_definition_follows_the_method_to_its_base_class(project: Project) -> None:
    # main.py line 7: `    return sum(shape.area() for shape in shapes)`; `area` starts at column 22.
    text = await run_lsp(project.session, "goToDefinition", project.path("app/main.py"), 7, 23)
    assert text == "Found 1 definition:\n\nshapes/base.py:7:9: def area(self) -> float:"


async def test_find_references_drops_the_gitignored_file(project: Project) -> None:
    text = await run_lsp(project.session, "findReferences", project.path("app/main.py"), 6, 5)
    assert text == (
        "Found 2 references in 1 file:\n\n"
        "app/main.py:6:5: def total_area(shapes: list[Shape]) -> float:\n"
        'app/main.py:11:22: return f"total: {total_area(shapes):.1f} ({helper()})"\n\n'
        "2 results in gitignored files were not shown.")
    assert "generated" not in text


async def test_hover_shows_the_signature(project: Project) -> None:
    text = await run_lsp(project.session, "hover", "app/main.py", 6, 5)  # a relative filePath works too
    assert text == ("Hover at app/main.py:6:5:\n\n```python\n"
                    "(function) def total_area(shapes: list[Shape]) -> float\n```")


async def test_document_symbol_lists_the_outline(project: Project) -> None:
    text = await run_lsp(project.session, "documentSymbol", project.path("app/main.py"))
    assert text == ("Found 5 symbols in app/main.py:\n\n"
                    "Function total_area  app/main.py:6:5\n"
                    "  Variable shapes  app/main.py:6:16\n"
                    "Function report  app/main.py:10:5\n"
                    "  Variable shapes  app/main.py:10:12\n"
                    "Function main  app/main.py:14:5")


async def test_workspace_symbol_finds_every_area_method(project: Project) -> None:
    text = await run_lsp(project.session, "workspaceSymbol", project.path("app/main.py"), query="area")
    assert text == ("Found 4 symbols matching 'area':\n\n"
                    "app/main.py:6:5 Function total_area\n\n"
                    "shapes/base.py:7:9 Method area in Shape\n\n"
                    "shapes/circle.py:10:9 Method area in Circle\n\n"
                    "shapes/square.py:8:9 Method area in Square")


async def test_workspace_symbol_without_query_uses_the_name_at_the_position(project: Project) -> None:
    text = await run_lsp(project.session, "workspaceSymbol", project.path("shapes/square.py"), 4, 8)
    assert text.startswith("Found 1 symbol matching 'Square':\n\nshapes/square.py:4:7 Class Square")


async def test_go_to_implementation_finds_the_subclass_overrides(project: Project) -> None:
    text = await run_lsp(project.session, "goToImplementation", project.path("app/main.py"), 7, 23)
    assert "shapes/circle.py:10:9: def area(self) -> float:" in text
    assert "shapes/square.py:8:9: def area(self) -> float:" in text


async def test_prepare_call_hierarchy(project: Project) -> None:
    text = await run_lsp(project.session, "prepareCallHierarchy", project.path("app/main.py"), 10, 5)
    assert text == ("Call hierarchy item:\n\n"
                    "app/main.py:10:5 Function report: def report(shapes: list[Shape]) -> str:")


async def test_incoming_calls_name_the_caller_and_call_site(project: Project) -> None:
    text = await run_lsp(project.session, "incomingCalls", project.path("app/main.py"), 10, 5)
    assert text == ("Function report is called from 1 function:\n\n"
                    "app/main.py:14:5 Function main\n"
                    "  called at app/main.py:15:11: print(report([Circle(1.0), Square(2.0)]))")


async def test_outgoing_calls_drop_the_callee_outside_the_roots(project: Project) -> None:
    text = await run_lsp(project.session, "outgoingCalls", project.path("app/main.py"), 10, 5)
    assert text == ("Function report calls 1 function:\n\n"
                    "app/main.py:6:5 Function total_area\n"
                    "  called at app/main.py:11:22: "
                    'return f"total: {total_area(shapes):.1f} ({helper()})"\n\n'
                    "1 result outside the workspace or denied by a Read rule was not shown.")
    assert "outside_lib" not in text and "extlib" not in text


async def test_definition_outside_the_roots_is_dropped_with_a_count(project: Project) -> None:
    # `helper` (line 11, column 48) is defined in ../outside_lib/extlib.py, outside the workspace.
    text = await run_lsp(project.session, "goToDefinition", project.path("app/main.py"), 11, 48)
    assert text == ("No definition found for the symbol at app/main.py:11:48 (`helper`).\n\n"
                    "1 result outside the workspace or denied by a Read rule was not shown.")


async def test_a_read_deny_rule_hides_results_in_that_file(project: Project) -> None:
    settings = project.path(".claude/settings.json")
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"deny": ["Read(./shapes/square.py)"]}}))
    try:
        text = await run_lsp(project.session, "goToImplementation", project.path("app/main.py"), 7, 23)
        assert "shapes/circle.py:10:9" in text
        assert "square.py" not in text
        assert "1 result outside the workspace or denied by a Read rule was not shown." in text
        with pytest.raises(ToolError, match="denied"):
            await run_lsp(project.session, "hover", project.path("shapes/square.py"), 4, 8)
    finally:
        settings.unlink()


async def test_a_file_changed_on_disk_is_seen_by_the_next_query(project: Project) -> None:
    # circle.py is not open in the server: the change reaches it as workspace/didChangeWatchedFiles.
    server = language_servers(project.session).running(project.path("app/main.py"))
    assert server is not None
    forwarded = server.watched_changes
    circle = project.path("shapes/circle.py")
    original = circle.read_text()
    circle.write_text(original.replace("class Circle(Shape):", "\n\nclass Circle(Shape):"))
    try:
        for _ in range(100):
            if server.watched_changes > forwarded:
                break
            await asyncio.sleep(0.05)
        text = await run_lsp(project.session, "goToImplementation", project.path("app/main.py"), 7, 23)
        assert "shapes/circle.py:12:9: def area(self) -> float:" in text
    finally:
        circle.write_text(original)


async def test_a_20_mb_file_is_refused(project: Project) -> None:
    big = project.path("big.py")
    big.write_text("x = 1\n" * (20 * 1024 * 1024 // 6 + 1))
    try:
        with pytest.raises(ToolError) as err:
            await run_lsp(project.session, "hover", big, 1, 1)
        assert err.value.message == (f"{big} is 20.0 MB; the LSP tool refuses files over 10 MB. "
                                     "Use Grep to search it, or Read with offset/limit.")
    finally:
        big.unlink()


async def test_a_position_past_the_end_is_explained(project: Project) -> None:
    with pytest.raises(ToolError) as err:
        await run_lsp(project.session, "hover", project.path("shapes/base.py"), 99, 1)
    assert err.value.message == (f"line 99 is past the end of {project.path('shapes/base.py')}, which has "
                                 "13 lines. Use the 1-based line number Read shows.")
    with pytest.raises(ToolError, match="character 40 is past the end of line 4"):
        await run_lsp(project.session, "hover", project.path("shapes/base.py"), 4, 40)


async def test_a_missing_file_is_explained(project: Project) -> None:
    with pytest.raises(ToolError, match=r"does not exist\. Check the path"):
        await run_lsp(project.session, "hover", project.path("nope.py"), 1, 1)


async def test_a_file_type_without_a_server_names_the_way_out(project: Project) -> None:
    notes = project.path("notes.txt")
    notes.write_text("hello\n")
    try:
        with pytest.raises(ToolError, match=r"No language server is configured for \.txt files"):
            await run_lsp(project.session, "hover", notes, 1, 1)
    finally:
        notes.unlink()


async def test_a_type_error_written_to_disk_shows_up_as_a_new_diagnostic(project: Project) -> None:
    ctx = ToolContext(session=project.session, tool_call_id="toolu_diag")
    square = project.path("shapes/square.py")
    original = square.read_text()
    before = await diagnostics_snapshot(ctx, square)
    assert before == []
    square.write_text(original.replace("return self.side * self.side", 'return "side"'))
    try:
        text = await diagnostics_after_edit(ctx, square, before)
        assert text.startswith("\n\n<new-diagnostics>\nThe edit introduced 1 new error in shapes/square.py:\n"
                               "  shapes/square.py:9:16: error: Type \"Literal['side']\" is not "
                               "assignable to return type \"float\"")
        assert text.endswith("</new-diagnostics>")
        # The same errors again are not "new".
        again = await diagnostics_snapshot(ctx, square)
        assert await diagnostics_after_edit(ctx, square, again) == ""
    finally:
        square.write_text(original)


async def test_a_killed_server_is_restarted_on_the_next_query(project: Project) -> None:
    servers = language_servers(project.session)
    await run_lsp(project.session, "hover", project.path("app/main.py"), 6, 5)
    server = servers.running(project.path("app/main.py"))
    assert server is not None and server.pid is not None
    old_pid = server.pid
    os.killpg(old_pid, signal.SIGKILL)
    text = await run_lsp(project.session, "goToDefinition", project.path("app/main.py"), 7, 23)
    assert text == "Found 1 definition:\n\nshapes/base.py:7:9: def area(self) -> float:"
    restarted = servers.running(project.path("app/main.py"))
    assert restarted is not None and restarted.pid not in (None, old_pid)
    assert not pid_alive(old_pid)


async def test_close_stops_every_server_process(module_env: Path) -> None:
    root = copy_fixtures(module_env / "close") / "py_project"
    session = make_session(root, module_env / "store2")
    await run_lsp(session, "hover", root / "app/main.py", 6, 5)
    server = language_servers(session).running(root / "app/main.py")
    assert server is not None and server.pid is not None
    pid = server.pid
    await language_servers(session).close()
    assert not pid_alive(pid)
    with pytest.raises(ToolError, match="closing"):
        await run_lsp(session, "hover", root / "app/main.py", 6, 5)

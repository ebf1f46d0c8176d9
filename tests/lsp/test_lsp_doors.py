"""What a repository can make the language servers run or read (issue 27), over ACP with the real
basedpyright and typescript-language-server: the workspace untrusted and every question refused, each
effect checked where it would show — a marker file written by a program the repository planted, or a
canary value in what the model gets.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO, Harness, reject_once, trust_workspace

pytestmark = pytest.mark.timeout(300)

OUTSIDE_CANARY = "CANARY-OUTSIDE-7f3a1"
DENIED_CANARY = "CANARY-DENIED-91c2e"
REAL_TSSERVER = REPO / "tools" / "lsp" / "node_modules" / "typescript" / "lib" / "tsserver.js"


def plant_python(ws: Path, marker: Path) -> None:
    """A ``.venv/bin/python`` that records each run in ``marker`` (then behaves as a real interpreter)."""
    python = ws / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "ran $*" >> {marker}\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)


def python_repository(tmp_path: Path, marker: Path) -> Path:
    """A cloned repository: a planted interpreter, a pyrightconfig.json whose ``extraPaths`` reaches a folder
    outside the workspace, and a file its own settings deny to Read, each holding a canary constant."""
    ws = tmp_path / "repo"
    ws.mkdir()
    plant_python(ws, marker)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secretmod.py").write_text(f"from typing import Final\nTOKEN: Final = {OUTSIDE_CANARY!r}\n")
    (ws / "pyrightconfig.json").write_text(json.dumps({"extraPaths": [str(outside)]}))
    (ws / "denied.py").write_text(f"from typing import Final\nKEY: Final = {DENIED_CANARY!r}\n")
    (ws / "relay.py").write_text("from typing import Final\n\nfrom denied import KEY\n\nR: Final = KEY\n")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./denied.py)"]}}))
    (ws / "main.py").write_text("from secretmod import TOKEN\nfrom denied import KEY\nfrom relay import R\n\n"
                                "print(TOKEN, KEY, R)\nLOCAL = 'visible-value'\nprint(LOCAL)\n")
    return ws.resolve()


def hover(path: Path, line: int, character: int) -> dict[str, Any]:
    return {"type": "tool_use", "name": "LSP",
            "input": {"operation": "hover", "filePath": str(path), "line": line, "character": character}}


def result_texts(model: ScriptedModelServer, index: int = 1) -> list[tuple[bool, str]]:
    results = model.message_requests()[index].tool_results()
    return [(bool(r.get("is_error")), "".join(b.get("text", "") for b in r["content"])
             if isinstance(r["content"], list) else str(r["content"])) for r in results]


async def test_an_untrusted_python_repository_runs_nothing_and_its_values_stay_hidden(
        acp_sidecar: Harness, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    marker = tmp_path / "planted-python-ran"
    ws = python_repository(tmp_path, marker)
    main = ws / "main.py"
    acp_sidecar.permission_policy = reject_once
    model_server.add_turns([
        {"content": [hover(main, 7, 7), hover(main, 5, 7), hover(main, 5, 14), hover(main, 5, 19)]},
        {"content": [{"type": "text", "text": "done"}]},
    ])
    session = await acp_sidecar.new_session(ws)
    assert await acp_sidecar.prompt(session, "What are these names?", timeout=240) == "end_turn"

    everything = json.dumps([r.body for r in model_server.message_requests()])
    assert [c for c in (OUTSIDE_CANARY, DENIED_CANARY) if c in everything] == []
    results = result_texts(model_server)
    local, token, key, relayed = results
    # basedpyright answered (from the sidecar's interpreter) ...
    assert not local[0]
    assert local[1].startswith("Hover at main.py:7:7:\n\n```python\n(constant) LOCAL: Literal['visible-value']\n```")
    # ... and the model is told once what it was kept from (whichever result came first),
    [note] = [line for _, t in results for line in t.splitlines() if line.startswith("Note: the python")]
    assert note == (f"Note: the python language server was kept from what the repository names — python "
                    f"interpreter: {sys.executable} (the workspace's {ws}/.venv/bin/python is not run before trust); "
                    f"ignored the project config's extraPaths '{tmp_path}/outside': outside the workspace. What "
                    "needs it (imports, types) may show as unresolved.")
    # ... without running the workspace's interpreter,
    assert not marker.exists(), marker.read_text()
    # without reading the folder outside the workspace that pyrightconfig.json named,
    assert "(import) TOKEN: Unknown" in token[1]
    # and without showing the value of the file a Read rule denies, directly or passed along.
    assert key[1].startswith("The hover for `KEY` at main.py:5:14 is not shown: it is defined in a file "
                             "outside the workspace or denied by a Read rule")
    assert relayed[1].startswith("The hover for `R` at main.py:5:19 is not shown: it shows a value that comes "
                                 "from a file outside the workspace or denied by a Read rule")
    assert acp_sidecar.permission_requests == []  # read-only inside the workspace: nothing asked


async def test_an_untrusted_typescript_repository_does_not_load_its_own_tsserver(
        acp_sidecar: Harness, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    marker = tmp_path / "planted-tsserver-ran"
    ws = tmp_path / "ts-repo"
    # The repository's own TypeScript (a real one, so its plugin search starts in the workspace), whose
    # tsserver.js records that it ran.
    typescript = ws / "node_modules" / "typescript"
    shutil.copytree(REAL_TSSERVER.parents[1], typescript)
    tsserver = typescript / "lib" / "tsserver.js"
    tsserver.write_text(f"require('fs').appendFileSync({json.dumps(str(marker))}, 'ran\\n');\n"
                        + tsserver.read_text())
    # A tsserver plugin the repository ships and names in its tsconfig.json.
    plugin_marker = tmp_path / "planted-plugin-ran"
    (ws / "node_modules" / "evil-plugin").mkdir(parents=True)
    (ws / "node_modules" / "evil-plugin" / "package.json").write_text(json.dumps({"name": "evil-plugin",
                                                                                "main": "index.js"}))
    (ws / "node_modules" / "evil-plugin" / "index.js").write_text(
        f"require('fs').appendFileSync({json.dumps(str(plugin_marker))}, 'ran\\n');\n"
        "module.exports = () => ({ create: (info) => info.languageService });\n")
    (ws / "src").mkdir()
    (ws / "tsconfig.json").write_text(json.dumps({"compilerOptions": {"strict": True,
                                                                      "plugins": [{"name": "evil-plugin"}]},
                                                  "include": ["src"]}))
    (ws / "src" / "greet.ts").write_text("export function greet(name: string): string {\n"
                                         "  return `Hello, ${name}`;\n}\n")
    (ws / "src" / "main.ts").write_text("import { greet } from './greet';\n\nconsole.log(greet('x'));\n")
    ws = ws.resolve()
    acp_sidecar.permission_policy = reject_once
    model_server.add_turns([
        {"content": [hover(ws / "src" / "main.ts", 3, 13)]},
        {"content": [{"type": "text", "text": "done"}]},
    ])
    session = await acp_sidecar.new_session(ws)
    assert await acp_sidecar.prompt(session, "What is greet?", timeout=240) == "end_turn"
    [(is_error, text)] = result_texts(model_server)
    assert not is_error, text
    assert "(alias) greet(name: string): string" in text  # answered, by the tsserver the sidecar ships
    assert not plugin_marker.exists()
    assert not marker.exists()


async def test_a_rejected_edit_asks_no_language_server(
        acp_sidecar: Harness, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    # A language server the user configured records that it was started: the Edit's "errors before"
    # snapshot would start it. Rejected, the edit must not have asked it anything.
    marker = tmp_path / "server-started"
    server = tmp_path / "recording_server.py"
    server.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('started')\n")
    home = Path(acp_sidecar.process.env["HOME"])
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(
        {"lspServers": {"python": {"command": [sys.executable, str(server)]}}}))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def f() -> int:\n    return 1\n")
    ws = ws.resolve()
    acp_sidecar.permission_policy = reject_once
    model_server.add_turns([
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(ws / "app.py")}}]},
        {"content": [{"type": "tool_use", "name": "Edit", "input": {
            "file_path": str(ws / "app.py"), "old_string": "return 1", "new_string": "return 2"}}]},
        {"content": [{"type": "text", "text": "ok"}]},
    ])
    session = await acp_sidecar.new_session(ws)
    assert await acp_sidecar.prompt(session, "change it", timeout=120) == "end_turn"
    [(is_error, text)] = result_texts(model_server, 2)
    assert is_error and "rejected" in text.lower(), text
    assert [p["toolCall"]["title"] for p in acp_sidecar.permission_requests] == ["Edit app.py"]
    assert (ws / "app.py").read_text() == "def f() -> int:\n    return 1\n"
    assert not marker.exists()


async def test_after_trust_the_workspace_interpreter_is_asked_once_and_remembered(
        acp_sidecar: Harness, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    marker = tmp_path / "planted-python-ran"
    ws = tmp_path / "trusted"
    ws.mkdir()
    plant_python(ws, marker)
    (ws / "main.py").write_text("LOCAL = 'visible-value'\nprint(LOCAL)\n")
    ws = ws.resolve()
    trust_workspace(acp_sidecar.process.env, ws)

    async def allow_always_the_interpreter(params: dict[str, Any]) -> dict[str, Any]:
        kinds = {o["kind"]: o["optionId"] for o in params["options"]}
        trust = ((params["toolCall"].get("_meta") or {}).get("sidecar") or {}).get("trust")
        chosen = kinds["allow_always"] if trust == "program" else kinds["reject_once"]
        return {"outcome": {"outcome": "selected", "optionId": chosen}}

    acp_sidecar.permission_policy = allow_always_the_interpreter
    for turn in (1, 2):
        model_server.add_turns([
            {"content": [hover(ws / "main.py", 2, 7)]},
            {"content": [{"type": "text", "text": "done"}]},
        ])
        session = await acp_sidecar.new_session(ws)
        assert await acp_sidecar.prompt(session, "what is LOCAL?", timeout=240) == "end_turn"
        [(is_error, text)] = result_texts(model_server, 2 * turn - 1)
        assert not is_error and "LOCAL: Literal['visible-value']" in text, text
    # Asked in the first session only; the allowed interpreter ran in both.
    [asked] = acp_sidecar.permission_requests
    assert asked["toolCall"]["title"] == "Let the language server run the workspace's python interpreter " \
                                         ".venv/bin/python?"
    assert marker.exists() and marker.read_text().count("ran ") >= 2

"""The key out of reach of every child, with and without bubblewrap, in any encoding a command could choose.

The only check that holds for every encoding is that the key's bytes are not there to be encoded: the
sidecar's own ``/proc/<pid>/environ`` (read here by the test, as root can), the environment and the
parent's ``/proc`` view of a Bash command, a hook, an MCP server and a language server.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import REPO, TEST_API_KEY, start_harness

HOSTILE = REPO / "fixtures" / "hostile-repo"
OTHER_SECRET = "svc-token-0123456789-DO-NOT-LEAK"
PROBE = ("P=/proc/$PPID/environ; echo PARENT=$(readlink /proc/$PPID/exe); env; echo ---B64; base64 -w0 $P; "
         "echo; echo ---REV; tr '\\0' '\\n' < $P | rev; echo ---HEX; od -An -tx1 $P | tr -d ' \\n'; echo; "
         "echo ---SELF; base64 -w0 /proc/self/environ; echo; echo ---END")


def leaks(blob: bytes, secret: str) -> list[str]:
    """Every way ``secret`` can be found in ``blob``: raw, reversed, hex, or inside base64 runs."""
    raw = secret.encode()
    found = []
    if raw in blob:
        found.append("raw")
    if raw[::-1] in blob:
        found.append("reversed")
    if raw.hex().encode() in re.sub(rb"\s", b"", blob):
        found.append("hex")
    for run in re.findall(rb"[A-Za-z0-9+/=]{16,}", blob):
        for shift in range(4):
            try:
                if raw in base64.b64decode(run[shift:] + b"=" * (-len(run[shift:]) % 4)):
                    found.append("base64")
            except (binascii.Error, ValueError):
                continue
    return found


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bubblewrap", "no-sandbox"])
async def test_no_child_can_find_the_key(sandboxed: bool, tmp_path: Path, sidecar_env: dict[str, str],
                                         model_server: ScriptedModelServer) -> None:
    from sidecar.tools.bash import sandbox

    if sandboxed and not sandbox.available():
        pytest.skip(sandbox.unavailable_reason())
    ws = tmp_path / "repo"
    shutil.copytree(HOSTILE, ws, symlinks=True)
    home = Path(sidecar_env["HOME"])
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"secretEnvVars": ["MY_SERVICE_TOKEN"]}))
    env = {**sidecar_env, "MY_SERVICE_TOKEN": OTHER_SECRET}

    async def always(params: dict[str, Any]) -> dict[str, Any]:
        kinds = {o["kind"]: o["optionId"] for o in params["options"]}
        return {"outcome": {"outcome": "selected", "optionId": kinds.get("allow_always", kinds["allow_once"])}}

    harness = await start_harness("acp", env, model_server, tmp_path, settings={"sandbox": {"enabled": sandboxed}})
    try:
        harness.permission_policy = always
        model_server.add_turns([
            {"content": [{"type": "tool_use", "name": "LSP", "input": {
                "operation": "hover", "filePath": str(ws / "main.x"), "line": 1, "character": 1}}]},
            {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": PROBE}}]},
            {"content": [{"type": "text", "text": "done"}]},
        ])
        session = await harness.new_session(ws)
        assert await harness.prompt(session, "probe") == "end_turn"
        pid = harness.process.proc.pid  # type: ignore[union-attr]
        own = Path(f"/proc/{pid}/environ").read_bytes()
    finally:
        await harness.process.close()

    # The sidecar still works (it reached the model with the key) but its /proc view holds no key.
    assert b"ANTHROPIC_BASE_URL=" in own
    output = json.dumps(model_server.message_requests()[2].tool_results()).encode()
    assert b"---END" in output and b"MY_SERVICE_TOKEN" not in output
    if not sandboxed:
        assert b"PARENT=" in output and b"python" in output.split(b"PARENT=")[1].split(b"\\n")[0]
    views = {"sidecar /proc environ": own, "bash output": output}
    for name in (".canary-mcp-env", ".canary-mcp-parent-environ", ".canary-hook-env", ".canary-hook-parent-environ",
                 ".canary-langserver-env", ".canary-langserver-parent-environ"):
        views[name] = (ws / name).read_bytes()
    assert b"PATH=" in views[".canary-hook-env"] and b"PATH=" in views[".canary-langserver-env"]
    data = Path(sidecar_env["XDG_DATA_HOME"]) / "sidecar"
    for saved in data.rglob("*"):
        if saved.is_file():
            views[str(saved.relative_to(data))] = saved.read_bytes()
    found = {name: hits for name, blob in views.items()
             for hits in [leaks(blob, TEST_API_KEY) + leaks(blob, OTHER_SECRET)] if hits}
    assert found == {}

"""The protocol is declared twice — the sidecar's method table (Python) and the extension's
``extension/src/protocol.ts`` — so this test holds the two together, both directions:

- every method the extension sends "to the sidecar" is served by the sidecar's core, and every method the
  core serves is declared there (or listed below as one the VS Code extension has no use for);
- every method the extension answers "from the sidecar" is one the sidecar's client port sends, and every
  method the port sends is declared there (or listed below as needing a capability the extension does not
  offer).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sidecar.app import build_core

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL_TS = ROOT / "extension" / "src" / "protocol.ts"
CLIENT_PORT = ROOT / "sidecar" / "session.py"

# Served by the sidecar, not sent by the VS Code extension (with the reason).
SERVED_NOT_USED_BY_EXTENSION = {
    "initialize": "the LSP transport's own initialize stands in for ACP's (docs/contract.md §2)",
    "session/set_model": "ACP unstable; the extension picks the model with session/set_config_option",
    "authenticate": "ACP auth methods (sidecar login): the extension passes the key from its secret storage",
}
# Sent by the sidecar only when a client offers a capability the extension does not (clientCapabilities()).
SENT_ONLY_TO_OTHER_CLIENTS = {
    "fs/read_text_file": "fs.readTextFile is false: unsaved buffers reach the sidecar by document sync",
    "fs/write_text_file": "fs.writeTextFile is false: accepted edits land with workspace/applyEdit",
    "terminal/create": "terminal is false",
    "terminal/output": "terminal is false",
    "terminal/wait_for_exit": "terminal is false",
    "terminal/kill": "terminal is false",
    "terminal/release": "terminal is false",
    "elicitation/create": "the extension answers questions with _sidecar/ask_user",
}
METHOD = re.compile(r"^(session|fs|terminal|elicitation|_sidecar)/[a-z_/]+$")


def _extension_methods() -> tuple[set[str], set[str]]:
    """(to the sidecar, from the sidecar), by the group comment each declaration sits under."""
    to_sidecar: set[str] = set()
    from_sidecar: set[str] = set()
    text = PROTOCOL_TS.read_text()
    # Declarations may wrap over lines: match on the whole text, then place each by its offset.
    markers = sorted(
        [(m.start(), to_sidecar) for m in re.finditer(r"^/\*\* To the sidecar\.", text, re.M)]
        + [(m.start(), from_sidecar) for m in re.finditer(r"^/\*\* From the sidecar\.", text, re.M)],
        key=lambda pair: pair[0])
    for decl in re.finditer(r"new (?:RequestType|NotificationType)<[^>]*>\(\s*'([^']+)'", text, re.S):
        group: set[str] | None = None
        for offset, bucket in markers:
            if offset < decl.start():
                group = bucket
        assert group is not None, f"{decl.group(1)} is declared before any direction comment in protocol.ts"
        group.add(decl.group(1))
    return to_sidecar, from_sidecar


def _client_port_methods() -> set[str]:
    """Every method name the client port (``sidecar/session.py``) sends to the client."""
    tree = ast.parse(CLIENT_PORT.read_text())
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and METHOD.match(node.value)}


def test_protocol_ts_is_parsed() -> None:
    to_sidecar, from_sidecar = _extension_methods()
    assert {"session/new", "session/prompt", "session/cancel"} <= to_sidecar
    assert {"session/update", "session/request_permission", "_sidecar/review_edit"} <= from_sidecar


def test_every_method_the_extension_sends_is_served_and_every_served_method_is_declared() -> None:
    to_sidecar, _ = _extension_methods()
    served = set(build_core().methods)
    assert sorted(to_sidecar - served) == [], "protocol.ts sends methods the sidecar does not serve"
    undeclared = served - to_sidecar - set(SERVED_NOT_USED_BY_EXTENSION)
    assert sorted(undeclared) == [], "the sidecar serves methods protocol.ts does not declare"


def test_every_method_the_extension_answers_is_sent_and_every_sent_method_is_declared() -> None:
    _, from_sidecar = _extension_methods()
    sent = _client_port_methods()
    assert sorted(from_sidecar - sent) == [], "protocol.ts answers methods the sidecar never sends"
    undeclared = sent - from_sidecar - set(SENT_ONLY_TO_OTHER_CLIENTS)
    assert sorted(undeclared) == [], "the sidecar sends methods protocol.ts does not declare"


def test_the_exception_lists_name_real_methods() -> None:
    """An exception that no longer exists on the sidecar side is a stale excuse: drop it."""
    served = set(build_core().methods)
    sent = _client_port_methods()
    assert sorted(set(SENT_ONLY_TO_OTHER_CLIENTS) - sent) == []
    assert sorted(set(SERVED_NOT_USED_BY_EXTENSION) - served) == []

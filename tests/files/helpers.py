"""A real Session with an in-test ClientChannel, driven through the real Dispatcher (the tool path)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar.permissions.gate import govern
from sidecar.session import ConnectionState, Session
from sidecar.store import SessionStore
from sidecar.tools.builtin import file_tools
from sidecar.tools.dispatch import Dispatcher, ToolCall
from sidecar.tools.registry import ToolRegistry
from sidecar.workspace.watcher import WATCHER


@dataclass
class RecordingChannel:
    """Records notifications and permission requests; answers them with ``answer`` (allow_once by default)."""

    client_capabilities: dict[str, Any] = field(default_factory=dict)
    state: ConnectionState = field(default_factory=ConnectionState)
    notifications: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str = "allow_once"

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.requests.append((method, params))
        if method == "session/request_permission":
            return {"outcome": {"outcome": "selected", "optionId": self.answer}}
        raise AssertionError(f"unexpected request {method}")

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))

    def permission_requests(self) -> list[dict[str, Any]]:
        return [p for m, p in self.requests if m == "session/request_permission"]


_ids = itertools.count(1)


class Agent:
    def __init__(self, root: Path, tmp: Path, mode: str = "default") -> None:
        self.channel = RecordingChannel()
        self.session = govern(Session(id=f"sess_test{next(_ids)}", cwd=root, channel=self.channel,
                               store=SessionStore(tmp / "store")), trusted=True)
        self.session.mode = mode  # type: ignore[assignment]
        self.dispatcher = Dispatcher(self.session, ToolRegistry(file_tools()))

    async def call(self, name: str, **inp: Any) -> tuple[str, bool, Any]:
        result = await self.dispatcher.run(ToolCall(id=f"toolu_{next(_ids)}", name=name, input=inp))
        return result.output.joined_text(), result.output.is_error, result.output

    async def close(self) -> None:
        watcher = self.session.find_service(WATCHER)
        if watcher is not None:
            await watcher.close()


def assert_large_read(got: str, metadata: dict[str, Any], expected: Any, size: int) -> None:
    """A Read of a large file (``_read_large_range``) against the whole-file path's result ``expected``
    (a ToolOutput) for the same range. Where the file was counted (``total_lines`` given) the text is the
    same. A range from the start of an uncounted file is the same but for its note, which says the file
    goes on (and gives its size) instead of the line count: that range never reaches the last line. A
    range from the end read from the end (``from_end``) shows the same lines' text, numbered from the end
    (-1 the last line), and says so."""
    want = expected.joined_text()
    total = expected.metadata.get("total_lines")
    if metadata.get("from_end"):
        body, _, note = got.partition("\n\n(Large file: ")
        want_body = want.split("\n\n(")[0]
        numbers = [int(line.split("\t", 1)[0]) for line in body.split("\n")]
        assert [line.split("\t", 1)[1] for line in body.split("\n")] == \
            [line.split("\t", 1)[1] for line in want_body.split("\n")[-len(numbers):]]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))) and numbers[-1] < 0
        assert metadata["range"] == [numbers[0], numbers[-1]]
        assert expected.metadata["range"][1] - total - 1 == numbers[-1]
        assert f"{size} bytes. Showing its lines {numbers[0]} to {numbers[-1]}, counted from the end" in note
        return
    if metadata.get("total_lines") is None and total is not None:
        assert metadata["range"][1] < total, "an uncounted range ends before the last line"
        want = want.replace(f" of {total}", f" of a {size:,}-byte file that goes on", 1)
        assert got == want
        return
    assert got == want
    for key in ("range", "total_lines"):
        assert metadata.get(key) == expected.metadata.get(key), key

"""The client port's contract (``sidecar.session.ClientPort``): every request method raises
``ClientRequestError`` when the client fails, and reads the client's raw answer into its typed result."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import sidecar.session as session_module
from sidecar.client_messages import PermissionOption
from sidecar.errors import ClientGone, ClientRequestError, RpcError
from sidecar.session import ClientPort, ConnectionState

Answer = Callable[[dict[str, Any]], Awaitable[object]]


class ScriptedClient:
    """A channel whose answer to each method is scripted; every request is kept."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.client_capabilities: dict[str, Any] = {}
        self.state = ConnectionState()
        self.answers = answers
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.notifications: list[tuple[str, dict[str, Any]]] = []

    async def request(self, method: str, params: dict[str, Any]) -> object:
        self.requests.append((method, params))
        answer = self.answers[method]
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return await answer(params)
        return answer

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))


def port_for(answers: dict[str, object]) -> tuple[ClientPort, ScriptedClient]:
    client = ScriptedClient(answers)
    return ClientPort("sess_port", client), client


OPTIONS = [PermissionOption(optionId="allow_once", name="Allow once", kind="allow_once")]
# One call of every request method of the port, with the wire method it sends.
CALLS: list[tuple[str, Callable[[ClientPort], Awaitable[object]]]] = [
    ("session/request_permission", lambda p: p.request_permission(
        {"toolCallId": "t1", "title": "Run make", "kind": "execute"}, OPTIONS)),
    ("_sidecar/review_edit", lambda p: p.review_edit({
        "toolCallId": "t1", "path": "/w/a.py", "oldText": "a\n", "newText": "b\n", "unifiedDiff": "", "hunks": []})),
    ("_sidecar/ask_user", lambda p: p.ask_user({"toolCallId": "t1", "questions": []})),
    ("elicitation/create", lambda p: p.elicit({"toolCallId": "t1", "mode": "form", "message": "?",
                                               "requestedSchema": {}})),
    ("workspace/applyEdit", lambda p: p.apply_buffer_edit({"label": "x", "edit": {"documentChanges": []}})),
    ("fs/read_text_file", lambda p: p.read_text_file("/w/a.py")),
    ("fs/write_text_file", lambda p: p.write_text_file("/w/a.py", "text")),
    ("_sidecar/lsp_query", lambda p: p.lsp_query({"operation": "hover", "uri": "file:///w/a.py"})),
    ("_sidecar/diagnostics", lambda p: p.diagnostics(["file:///w/a.py"])),
    ("terminal/create", lambda p: p.create_terminal("make", [], "/w", 1000)),
    ("terminal/output", lambda p: p.terminal_output("term_1")),
    ("terminal/wait_for_exit", lambda p: p.wait_for_terminal_exit("term_1")),
    ("terminal/kill", lambda p: p.kill_terminal("term_1")),
    ("terminal/release", lambda p: p.release_terminal("term_1")),
]
FAILURES: list[tuple[BaseException, str, int | None]] = [
    (RpcError(-32603, "the editor broke"), "error", -32603),
    (ClientGone(), "gone", None),
    (BrokenPipeError(32, "Broken pipe"), "gone", None),
]


@pytest.mark.parametrize(("method", "call"), CALLS, ids=[m for m, _ in CALLS])
@pytest.mark.parametrize(("failure", "kind", "code"), FAILURES, ids=["error", "gone", "pipe"])
async def test_every_request_raises_client_request_error_when_the_client_fails(
        method: str, call: Callable[[ClientPort], Awaitable[object]], failure: BaseException, kind: str,
        code: int | None) -> None:
    port, client = port_for({method: failure})
    with pytest.raises(ClientRequestError) as caught:
        await call(port)
    assert (caught.value.method, caught.value.kind, caught.value.code) == (method, kind, code)
    assert [m for m, _ in client.requests] == [method]
    if kind == "error":
        assert caught.value.describe() == f"{method} answered error -32603: the editor broke"


async def test_an_fs_request_without_an_answer_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    never: asyncio.Future[object] = asyncio.get_running_loop().create_future()

    async def hang(params: dict[str, Any]) -> object:
        return await never
    monkeypatch.setattr(session_module, "CLIENT_FS_TIMEOUT", 0.05)
    port, _ = port_for({"fs/read_text_file": hang})
    with pytest.raises(ClientRequestError) as caught:
        await port.read_text_file("/w/a.py")
    assert (caught.value.kind, caught.value.detail) == ("timeout", "no answer within 0.05 s")


@pytest.mark.parametrize(("method", "answer", "detail"), [
    ("fs/read_text_file", {"text": "x"}, "the answer has no text content"),
    ("terminal/create", {}, "answered without a terminalId: {}"),
    ("terminal/output", {"output": 3}, "answered without output: {'output': 3}"),
    ("_sidecar/diagnostics", None, "the answer has no items"),
])
async def test_an_answer_without_the_promised_fields_is_invalid(method: str, answer: object, detail: str) -> None:
    port, _ = port_for({method: answer})
    call = dict(CALLS)[method]
    with pytest.raises(ClientRequestError) as caught:
        await call(port)
    assert (caught.value.kind, caught.value.detail) == ("invalid", detail)


async def test_the_answers_are_read_into_their_types() -> None:
    port, client = port_for({
        "session/request_permission": {"outcome": {"outcome": "selected", "optionId": "allow_once",
                                                   "_meta": {"feedback": "only this once"}}},
        "_sidecar/review_edit": {"outcome": "accepted", "acceptedHunks": [0, True, "1", 2], "finalText": 7},
        "_sidecar/ask_user": {"outcome": "answered", "answers": {"Which?": "A", "More?": ["x", 2], "Odd?": 5}},
        "elicitation/create": {"action": "accept", "content": ["not", "an", "object"]},
        "workspace/applyEdit": {"applied": False, "failureReason": "version mismatch"},
        "_sidecar/lsp_query": ["not an object"],
        "_sidecar/diagnostics": {"items": [{"uri": "file:///w/a.py", "diagnostics": [{"message": "bad"}, 3]},
                                           "junk", {"uri": "file:///w/b.py"}]},
        "terminal/output": {"output": "done\n", "exitStatus": {"exitCode": True, "signal": "SIGTERM"}},
        "terminal/wait_for_exit": None,
    })
    assert await dict(CALLS)["session/request_permission"](port) == {"optionId": "allow_once",
                                                                     "feedback": "only this once"}
    assert await dict(CALLS)["_sidecar/review_edit"](port) == {"outcome": "accepted", "acceptedHunks": [0, 2]}
    assert await dict(CALLS)["_sidecar/ask_user"](port) == {
        "outcome": "answered", "answers": {"Which?": ["A"], "More?": ["x", "2"], "Odd?": []}}
    assert await dict(CALLS)["elicitation/create"](port) == {"action": "accept", "content": {}}
    assert await dict(CALLS)["workspace/applyEdit"](port) == {"applied": False, "failureReason": "version mismatch"}
    assert await dict(CALLS)["_sidecar/lsp_query"](port) == {"result": None}
    assert await dict(CALLS)["_sidecar/diagnostics"](port) == {"items": [
        {"uri": "file:///w/a.py", "diagnostics": [{"message": "bad"}]}, {"uri": "file:///w/b.py", "diagnostics": []}]}
    assert await dict(CALLS)["terminal/output"](port) == {
        "output": "done\n", "truncated": False, "exitStatus": {"exitCode": None, "signal": "SIGTERM"}}
    assert await dict(CALLS)["terminal/wait_for_exit"](port) == {"exitCode": None, "signal": None}
    # The port adds the session id; the caller never does.
    sent = dict(client.requests)
    assert sent["elicitation/create"]["sessionId"] == sent["_sidecar/ask_user"]["sessionId"] == "sess_port"


@pytest.mark.parametrize("answer", [{"outcome": {"outcome": "cancelled"}}, {"outcome": "selected"}, None, "yes"])
async def test_a_permission_answer_other_than_a_selection_is_a_cancel(answer: object) -> None:
    port, _ = port_for({"session/request_permission": answer})
    assert await dict(CALLS)["session/request_permission"](port) is None


@pytest.mark.parametrize("answer", [{"outcome": "maybe"}, {}, None, ["accepted"]])
async def test_a_review_answer_without_a_known_outcome_is_cancelled(answer: object) -> None:
    port, _ = port_for({"_sidecar/review_edit": answer})
    assert await dict(CALLS)["_sidecar/review_edit"](port) == {"outcome": "cancelled"}


async def test_the_connection_state_decides_buffer_edits_and_notifications() -> None:
    """What the connection knows (``channel.state``) is what the port reads: applyEdit, the hidden panel."""
    port, client = port_for({})
    client.client_capabilities = {"_meta": {"sidecar": {"notify": True}}}
    assert not port.can_edit_buffers()
    await port.notify_user("turn_ended", "The agent finished", "Fix\nthe build")
    assert client.notifications == []  # the panel shows it already
    client.state.applies_buffer_edits = True
    client.state.panel_visible = False
    assert port.can_edit_buffers()
    await port.notify_user("turn_ended", "The agent finished", "Fix\nthe build")
    assert client.notifications == [("_sidecar/notify", {"sessionId": "sess_port", "kind": "turn_ended",
                                                         "message": "The agent finished",
                                                         "title": "Fix\\nthe build"})]

"""session/new and session/load params: what editors send is read without ACP's generated schema (so the
first session of a fresh process never waits for its import), with the schema's result; anything else
goes through the schema, with its checks and messages."""

from __future__ import annotations

from typing import Any

import pytest
from acp import schema

from sidecar.errors import RpcError
from sidecar.server.core import parse, parse_session_params

PLAIN: list[dict[str, Any]] = [
    {"sessionId": "sess_1", "cwd": "/w", "mcpServers": []},
    {"sessionId": "sess_1", "cwd": "/w", "mcpServers": [], "additionalDirectories": ["/a", "/b"]},
    {"sessionId": "sess_1", "cwd": "/w", "mcpServers": [], "additionalDirectories": None, "_meta": {"x": 1}},
    {"sessionId": "sess_1", "cwd": "/w", "mcpServers": [], "somethingNew": True},
]


@pytest.mark.parametrize("params", PLAIN)
@pytest.mark.parametrize("load", [True, False])
def test_plain_params_read_without_the_schema_match_it(params: dict[str, Any], load: bool) -> None:
    quick = parse_session_params(params, load=load)
    assert not isinstance(quick, schema.BaseModel)
    full = parse(schema.LoadSessionRequest if load else schema.NewSessionRequest, params)
    assert quick.cwd == full.cwd
    assert quick.session_id == (full.session_id if load else None)


STDIO = {"name": "files", "command": "/bin/mcp", "args": [], "env": []}


@pytest.mark.parametrize("params", [
    {"sessionId": "sess_1", "cwd": "/w", "mcpServers": [STDIO]},
    {"session_id": "sess_1", "cwd": "/w", "mcpServers": []},
    {"sessionId": "sess_1", "cwd": "/w", "mcpServers": [], "additionalDirectories": ["/a", 2]},
    {"sessionId": "sess_1", "cwd": "/w", "mcpServers": [{"name": "x"}]},
    {"sessionId": "sess_1", "cwd": "/w", "mcpServers": [], "_meta": "not an object"},
])
def test_other_params_go_through_the_schema(params: dict[str, Any]) -> None:
    assert isinstance(parse_session_params(params, load=True), schema.LoadSessionRequest)


@pytest.mark.parametrize("params", [
    {"sessionId": "sess_1", "cwd": 42, "mcpServers": []},
    {"sessionId": 7, "cwd": "/w", "mcpServers": []},
    {"sessionId": "sess_1", "cwd": "/w"},
])
def test_bad_params_get_the_schema_s_message(params: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as quick:
        parse_session_params(params, load=True)
    with pytest.raises(RpcError) as full:
        parse(schema.LoadSessionRequest, params)
    assert quick.value.message == full.value.message
    assert quick.value.message.startswith("Invalid params: ")

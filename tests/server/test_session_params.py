"""session/new and session/load params: what editors send is read without ACP's generated schema (so the
first session of a fresh process never waits for its import), with the schema's result; anything else
goes through the schema, with its checks and messages."""

from __future__ import annotations

from typing import Any

import pytest
from acp import schema

from sidecar.errors import RpcError
from sidecar.server.plain_params import (
    parse,
    parse_config_option_params,
    parse_initialize_params,
    parse_mode_params,
    parse_prompt_params,
    parse_session_params,
)

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


# session/prompt, session/set_mode, session/set_config_option: the same split (the warm-up no longer
# imports the schema, so an idle sidecar does not hold its ~9 MB).
LINK = {"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py"}
PLAIN_PROMPTS: list[dict[str, Any]] = [
    {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "hello"}]},
    {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "look"}, LINK], "_meta": {"x": 1}},
    {"sessionId": "sess_1", "prompt": [{**LINK, "title": "A", "description": "d", "mimeType": "text/x-python"}]},
    {"sessionId": "sess_1", "prompt": [{"type": "resource", "resource": {"uri": "file:///w/a.py", "text": "x = 1\n",
                                                                         "mimeType": "text/x-python"}}]},
    {"sessionId": "sess_1", "prompt": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]},
    {"sessionId": "sess_1", "prompt": []},
    {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "hi"}], "somethingNew": True},
]


@pytest.mark.parametrize("params", PLAIN_PROMPTS)
def test_plain_prompt_params_read_without_the_schema_match_it(params: dict[str, Any]) -> None:
    quick = parse_prompt_params(params)
    assert not isinstance(quick, schema.BaseModel)
    assert quick.session_id == parse(schema.PromptRequest, params).session_id


@pytest.mark.parametrize("params", [
    {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "hi", "annotations": {"priority": 1}}]},
    {"sessionId": "sess_1", "prompt": [{**LINK, "size": 12}]},
    {"sessionId": "sess_1", "prompt": [{"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAA"}}]},
    {"sessionId": "sess_1", "prompt": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]},
    {"session_id": "sess_1", "prompt": [{"type": "text", "text": "hi"}]},
    {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "hi"}], "_meta": "not an object"},
])
def test_other_prompt_params_go_through_the_schema(params: dict[str, Any]) -> None:
    assert isinstance(parse_prompt_params(params), schema.PromptRequest)


@pytest.mark.parametrize(("params", "model"), [
    ({"sessionId": "sess_1", "prompt": [{"type": "text"}]}, schema.PromptRequest),
    ({"sessionId": "sess_1", "prompt": [{"type": "resource_link", "uri": "file:///a"}]}, schema.PromptRequest),
    ({"sessionId": "sess_1", "prompt": "hello"}, schema.PromptRequest),
    ({"sessionId": 3, "prompt": [{"type": "text", "text": "hi"}]}, schema.PromptRequest),
    ({"prompt": [{"type": "text", "text": "hi"}]}, schema.PromptRequest),
    ({"sessionId": "sess_1"}, schema.SetSessionModeRequest),
    ({"sessionId": "sess_1", "modeId": 2}, schema.SetSessionModeRequest),
    ({"sessionId": "sess_1", "configId": "model"}, schema.SetSessionConfigOptionSelectRequest),
    ({"sessionId": "sess_1", "configId": "model", "value": True}, schema.SetSessionConfigOptionSelectRequest),
])
def test_bad_prompt_mode_and_option_params_get_the_schema_s_message(params: dict[str, Any], model: Any) -> None:
    reader = {schema.PromptRequest: parse_prompt_params, schema.SetSessionModeRequest: parse_mode_params,
              schema.SetSessionConfigOptionSelectRequest: parse_config_option_params}[model]
    assert _same_message(reader, model, params).startswith("Invalid params: ")


def test_plain_mode_and_option_params_match_the_schema() -> None:
    mode = {"sessionId": "sess_1", "modeId": "plan", "_meta": {}}
    quick_mode, full_mode = parse_mode_params(mode), parse(schema.SetSessionModeRequest, mode)
    assert not isinstance(quick_mode, schema.BaseModel)
    assert (quick_mode.session_id, quick_mode.mode_id) == (full_mode.session_id, full_mode.mode_id)
    option = {"sessionId": "sess_1", "configId": "effort", "value": "high"}
    quick, full = parse_config_option_params(option), parse(schema.SetSessionConfigOptionSelectRequest, option)
    assert not isinstance(quick, schema.BaseModel)
    assert (quick.session_id, quick.config_id, quick.value) == (full.session_id, full.config_id, full.value)
    assert isinstance(parse_mode_params({"session_id": "sess_1", "modeId": "plan"}), schema.SetSessionModeRequest)


@pytest.mark.parametrize("params", [
    {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
    {"protocolVersion": 0},
    {"protocolVersion": 65535, "clientCapabilities": None, "_meta": {"sidecar": {}}},
])
def test_plain_initialize_params_read_without_pydantic_match_the_model(params: dict[str, Any]) -> None:
    from sidecar.server.params import InitializeRequest

    quick, full = parse_initialize_params(params), parse(InitializeRequest, params)
    assert not isinstance(quick, InitializeRequest)
    assert (quick.protocol_version, quick.client_capabilities) == (full.protocol_version, full.client_capabilities)


@pytest.mark.parametrize(("params", "version", "caps"), [
    ({"protocolVersion": "2"}, 2, None),  # coerced as ACP's schema does
    ({"protocolVersion": "junk", "clientCapabilities": "junk"}, 1, None),
    ({"protocolVersion": True}, 1, None),
    ({"protocol_version": 1}, 1, None),
])
def test_other_initialize_params_go_through_the_model(params: dict[str, Any], version: int, caps: Any) -> None:
    from sidecar.server.params import InitializeRequest

    req = parse_initialize_params(params)
    assert isinstance(req, InitializeRequest)
    assert (req.protocol_version, req.client_capabilities) == (version, caps)


@pytest.mark.parametrize("params", [{}, {"protocolVersion": -1}, {"protocolVersion": 70000}])
def test_bad_initialize_params_get_the_model_s_message(params: dict[str, Any]) -> None:
    from sidecar.server.params import InitializeRequest

    message = _same_message(parse_initialize_params, InitializeRequest, params)
    assert message.startswith("Invalid params: protocolVersion")


def _same_message(reader: Any, model: Any, params: dict[str, Any]) -> str:
    """The quick reader refuses ``params`` with the message the model's own check gives; that message."""
    with pytest.raises(RpcError) as quick:
        reader(params)
    with pytest.raises(RpcError) as full:
        parse(model, params)
    assert quick.value.message == full.value.message
    return quick.value.message

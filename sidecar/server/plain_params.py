"""The params of the session methods, read without pydantic when they are what editors send.

``initialize``, ``session/new|load|prompt``, ``set_mode`` and ``set_config_option`` params of the common
shape (string fields, no MCP servers, plain content blocks) are read by the small checks here; anything
else goes through ACP's own schema (or ``sidecar.server.params``), with its messages (tests/server/
test_session_params.py holds the two to the same answers). Neither pydantic (~0.1 s to import) nor ACP's
generated schema (~0.4 s of CPU, ~9 MB) is then on the path of a fresh sidecar's first answers, and an idle
sidecar does not hold the schema (docs/performance.md, issue 18). This module must not import pydantic at
its top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sidecar.errors import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from pydantic import BaseModel


class _AcpSchema:
    """ACP's own pydantic schema (``acp.schema``) for the session methods' unusual params, imported on first
    use: a generated module of hundreds of models (~0.4 s of CPU and ~9 MB to import on this machine) that
    ``initialize`` must not wait for (a small local model checks it: ``sidecar.server.params``) and that
    what editors send does not need (``parse_session_params``, ``parse_prompt_params`` and their kin).
    """

    def __getattr__(self, name: str) -> type[BaseModel]:
        from acp import schema

        model: type[BaseModel] = getattr(schema, name)
        return model


acp = _AcpSchema()


@dataclass(frozen=True)
class _SessionParams:
    cwd: str
    session_id: str | None = None


def parse_session_params(params: dict[str, Any], *, load: bool) -> Any:
    """``session/new`` or ``session/load`` params (``.cwd``, ``.session_id``). What editors send (strings,
    no MCP servers, string directories) is read here; anything else goes through ACP's schema, with its
    messages. The first session of a fresh process then never waits for that schema's import (~0.5 s, under
    way in the warm-up thread): a window reload reopens its session at once."""
    dirs = params.get("additionalDirectories")
    if (_plain(params, ("cwd", "sessionId") if load else ("cwd",)) and params.get("mcpServers") == []
            and (dirs is None or (isinstance(dirs, list) and all(isinstance(d, str) for d in dirs)))):
        return _SessionParams(cwd=params["cwd"], session_id=params["sessionId"] if load else None)
    return parse(acp.LoadSessionRequest if load else acp.NewSessionRequest, params)


# The schema's own field names, which it takes too (populate_by_name): such params go through the schema.
_SCHEMA_FIELD_NAMES = frozenset({"session_id", "mcp_servers", "additional_directories", "field_meta", "mode_id",
                                 "config_id"})


@dataclass(frozen=True)
class _PlainParams:
    session_id: str
    mode_id: str = ""
    config_id: str = ""
    value: str = ""


def _plain(params: dict[str, Any], strings: tuple[str, ...]) -> bool:
    """Params the schema would take as they are: these fields are strings, ``_meta`` is absent or an
    object, and none of the schema's own (snake_case) field names is used."""
    meta = params.get("_meta")
    return (all(isinstance(params.get(name), str) for name in strings) and (meta is None or isinstance(meta, dict))
            and not _SCHEMA_FIELD_NAMES.intersection(params))


# The content blocks read without the schema: the fields each may have (all strings) and those it must.
_PLAIN_BLOCKS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "text": (frozenset({"type", "text"}), frozenset({"text"})),
    "resource_link": (frozenset({"type", "uri", "name", "title", "description", "mimeType"}),
                      frozenset({"uri", "name"})),
    "image": (frozenset({"type", "data", "mimeType", "uri"}), frozenset({"data", "mimeType"})),
}
_PLAIN_TEXT_RESOURCE = (frozenset({"uri", "text", "mimeType"}), frozenset({"uri", "text"}))


def _plain_fields(value: Any, allowed: frozenset[str], required: frozenset[str]) -> bool:
    return (isinstance(value, dict) and value.keys() <= allowed and required <= value.keys()
            and all(isinstance(v, str) for v in value.values()))


def _plain_block(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") == "resource":  # an embedded text resource (the editor's file contents)
        return block.keys() <= {"type", "resource"} and _plain_fields(block.get("resource"), *_PLAIN_TEXT_RESOURCE)
    shape = _PLAIN_BLOCKS.get(block.get("type"))  # type: ignore[arg-type]
    return shape is not None and _plain_fields(block, *shape)


@dataclass(frozen=True)
class _PlainInitialize:
    protocol_version: int
    client_capabilities: dict[str, Any] | None


def parse_initialize_params(params: dict[str, Any]) -> Any:
    """``initialize`` params (``.protocol_version``, ``.client_capabilities``): an integer version in range
    and capabilities that are an object of string keys (or absent) are read here; anything else goes
    through the local model (``sidecar.server.params``: its coercions and messages). pydantic (~0.1 s to
    import) is then not on the path of the ACP transport's answer either."""
    version, caps = params.get("protocolVersion"), params.get("clientCapabilities")
    if (type(version) is int and 0 <= version <= 65535
            and (caps is None or (isinstance(caps, dict) and all(isinstance(k, str) for k in caps)))
            and not {"protocol_version", "client_capabilities"}.intersection(params)):
        return _PlainInitialize(protocol_version=version, client_capabilities=caps)
    from sidecar.server.params import InitializeRequest

    return parse(InitializeRequest, params)


def parse_prompt_params(params: dict[str, Any]) -> Any:
    """``session/prompt`` params (``.session_id``): text, resource link, embedded text resource and image
    blocks of string fields are read here, anything else goes through ACP's schema, with its messages. The
    schema (~0.4 s of CPU and ~9 MB to import) is then not needed by what editors send, and an idle sidecar
    does not hold it (docs/performance.md)."""
    prompt = params.get("prompt")
    if _plain(params, ("sessionId",)) and isinstance(prompt, list) and all(_plain_block(b) for b in prompt):
        return _PlainParams(session_id=params["sessionId"])
    return parse(acp.PromptRequest, params)


def parse_mode_params(params: dict[str, Any]) -> Any:
    """``session/set_mode`` params (``.session_id``, ``.mode_id``), as ``parse_prompt_params`` reads them."""
    if _plain(params, ("sessionId", "modeId")):
        return _PlainParams(session_id=params["sessionId"], mode_id=params["modeId"])
    return parse(acp.SetSessionModeRequest, params)


def parse_config_option_params(params: dict[str, Any]) -> Any:
    """``session/set_config_option`` params of a select (``.session_id``, ``.config_id``, ``.value``)."""
    if _plain(params, ("sessionId", "configId", "value")):
        return _PlainParams(session_id=params["sessionId"], config_id=params["configId"], value=params["value"])
    return parse(acp.SetSessionConfigOptionSelectRequest, params)


def parse_model_params(params: dict[str, Any]) -> Any:
    """ACP's unstable ``session/set_model`` params (``.session_id``, ``.value`` = ``modelId``). The
    schema this sidecar pins no longer has the method (the model is a config option there), so its
    check is here: two strings."""
    if _plain(params, ("sessionId", "modelId")):
        return _PlainParams(session_id=params["sessionId"], config_id="model", value=params["modelId"])
    wrong = [name for name in ("sessionId", "modelId") if not isinstance(params.get(name), str)]
    raise RpcError(INVALID_PARAMS, "Invalid params: " + "; ".join(
        f"{name}: {'Field required' if name not in params else 'Input should be a valid string'}"
        for name in wrong or ["sessionId"]))


def parse(model: type[BaseModel], params: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise RpcError(INVALID_PARAMS, f"Invalid params: {problems}") from None

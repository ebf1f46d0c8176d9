"""JSON-RPC 2.0 message checks shared by both transports: what no input line may do to the server.

- ``loads``: standard JSON only, bounded. ``NaN``/``Infinity`` literals, numbers that overflow a double
  (``1e400``), integers longer than ``MAX_INT_DIGITS`` digits and nesting deeper than ``MAX_DEPTH``
  are a parse error (-32700), as is anything that is not UTF-8.
- ``classify``: a decoded message is a request, a notification or a response, or it is refused with
  -32600 (not an object, ``jsonrpc`` not "2.0", ``method`` not a string, ``id`` not a string, an integer
  or null). The refusal echoes the id only when the id itself is valid.
- ``dumps``: standard JSON out: a non-finite float (which ``json`` would write as ``NaN``) goes out as
  ``null``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from sidecar.errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, RpcError

MAX_DEPTH = 128
MAX_INT_DIGITS = 64

Kind = Literal["request", "notification", "response"]


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS} are accepted)")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _parse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads(data: bytes | str) -> Any:
    """Decode one message; raise ``RpcError(PARSE_ERROR)`` for anything but bounded standard JSON."""
    try:
        value = json.loads(data, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except RecursionError:
        raise RpcError(PARSE_ERROR, f"Parse error: nesting deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError as exc:
        raise RpcError(PARSE_ERROR, f"Parse error: not UTF-8 ({exc.reason})") from None
    except ValueError as exc:  # JSONDecodeError included
        raise RpcError(PARSE_ERROR, f"Parse error: {exc}") from None
    if _depth_exceeds(value, MAX_DEPTH):
        raise RpcError(PARSE_ERROR, f"Parse error: nesting deeper than {MAX_DEPTH} levels")
    return value


def valid_id(value: Any) -> bool:
    """ACP's RequestId: a string, an integer or null (a bool is not a number here)."""
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


@dataclass(frozen=True)
class Message:
    kind: Kind
    body: dict[str, Any]

    @property
    def id(self) -> Any:
        return self.body.get("id")


def classify(message: Any) -> Message:
    """What the decoded ``message`` is; raise ``RpcError(INVALID_REQUEST)`` (``data`` holds the id to
    echo, None when it cannot be echoed) for a message that is none of them."""
    if not isinstance(message, dict):
        raise RpcError(INVALID_REQUEST, "Invalid request: expected a JSON-RPC 2.0 object")
    has_id = "id" in message
    msg_id = message.get("id")
    echo = msg_id if valid_id(msg_id) else None
    if message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', echo)
    if has_id and not valid_id(msg_id):
        raise RpcError(INVALID_REQUEST, "Invalid request: id must be a string, an integer or null")
    if "method" in message:
        if not isinstance(message["method"], str):
            raise RpcError(INVALID_REQUEST, "Invalid request: method must be a string", echo)
        return Message("request" if has_id else "notification", message)
    if not has_id or ("result" not in message and "error" not in message):
        raise RpcError(INVALID_REQUEST, "Invalid request: neither a request nor a response", echo)
    return Message("response", message)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def dumps(message: Any, *, ensure_ascii: bool = True, separators: tuple[str, str] | None = None) -> str:
    """Standard JSON: never ``NaN``/``Infinity`` (a non-finite float goes out as null). The encoder is
    made once per option set (``json.dumps`` with options makes one per call: every message sent)."""
    encoder = _ENCODERS.get((ensure_ascii, separators))
    if encoder is None:
        encoder = _ENCODERS[(ensure_ascii, separators)] = json.JSONEncoder(
            ensure_ascii=ensure_ascii, separators=separators, allow_nan=False)
    try:
        return encoder.encode(message)
    except ValueError:
        return encoder.encode(_finite(message))


_ENCODERS: dict[tuple[bool, tuple[str, str] | None], json.JSONEncoder] = {}


def error_response(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id if valid_id(msg_id) else None, "error": error}


def remote_error(error: Any) -> RpcError:
    """An ``error`` member received from the peer as an ``RpcError`` (whatever shape it came in)."""
    if not isinstance(error, dict):
        return RpcError(INTERNAL_ERROR, f"malformed error from the client: {str(error)[:200]}")
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        code = INTERNAL_ERROR
    return RpcError(code, str(error.get("message", ""))[:2000], error.get("data"))

"""The errors every layer may raise, at the bottom of the import order.

    Exception
     ├── ToolError   a tool call failed in a way the model can recover from; the message is addressed to
     │               the model and says what to do next (sent back as a tool_result with is_error)
     ├── RpcError    a JSON-RPC error: sent back to the client, or received from it
     │    └── ClientGone   the client's connection closed before it answered
     └── ClientRequestError   a request to the client got no usable answer (raised by every request
                     method of ``sidecar.session.ClientPort``; a caller catches this one type)

JSON-RPC codes are ACP's (docs/protocol.md): a lower layer that raises ``RpcError`` names the code from
this module, never a bare number.
"""

from __future__ import annotations

from typing import Any, Literal

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# ACP: -32000 means "authentication required" and nothing else.
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002


class ToolError(Exception):
    """A failure the model can recover from. ``message`` is addressed to the model and says what to do next."""

    def __init__(self, message: str, *, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = metadata or {}


class RpcError(Exception):
    """A JSON-RPC error to send back (or received from the peer)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ClientGone(RpcError):
    """A request to the client failed because its connection closed before it answered."""

    def __init__(self, message: str = "client disconnected") -> None:
        super().__init__(INTERNAL_ERROR, message)


ClientFailure = Literal["error", "timeout", "gone", "invalid"]


class ClientRequestError(Exception):
    """A request to the client (the editor) did not get a usable answer.

    ``kind``: ``"error"`` (the client answered a JSON-RPC error: ``code``, ``detail`` its message),
    ``"timeout"`` (no answer within the limit; the client was told ``$/cancel_request``), ``"gone"``
    (the connection closed), ``"invalid"`` (an answer without the fields the method promises).
    Not an ``RpcError``: it describes the client's answer, it is never sent back to it.
    """

    def __init__(self, method: str, kind: ClientFailure, detail: str, code: int | None = None) -> None:
        super().__init__(f"{method}: {detail}")
        self.method = method
        self.kind: ClientFailure = kind
        self.detail = detail
        self.code = code

    def describe(self) -> str:
        """One clause for a message to the model: ``fs/read_text_file answered error -32603: boom``."""
        if self.kind == "error":
            return f"{self.method} answered error {self.code}: {self.detail}"
        return f"{self.method} failed: {self.detail}"


# ACP: the request was cancelled by the client ($/cancel_request).
REQUEST_CANCELLED = -32800
# Agent-specific failures (a prompt already running, the model unavailable, …): a code ACP assigns to
# nothing else, with ``data = {"kind", "retryable", "status"?}`` (docs/protocol.md lists the kinds).
AGENT_ERROR = -32050


def agent_error(kind: str, message: str, *, retryable: bool = False, status: int | None = None) -> RpcError:
    data: dict[str, Any] = {"kind": kind, "retryable": retryable}
    if status is not None:
        data["status"] = status
    return RpcError(AGENT_ERROR, message, data)

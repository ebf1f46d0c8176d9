"""The params models of the methods the core checks itself (``initialize``, the extras of ``session/new``
and ``session/load``, ``session/list``, ``_sidecar/sessions/rewind``); ACP's own schema checks the rest.

A module of its own, imported by the core's methods when they first run: pydantic (~0.1 s to import and
build these) is then not on the path of the LSP transport's ``initialize`` answer.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Params(BaseModel):
    """Params checked as ACP's schema checks them (see ``core._AcpSchema`` for why local)."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")


class InitializeRequest(Params):
    protocol_version: Annotated[int, Field(alias="protocolVersion", ge=0, le=65535)]
    client_capabilities: Annotated[dict[str, Any] | None, Field(alias="clientCapabilities")] = None

    @field_validator("protocol_version", mode="before")
    @classmethod
    def _coerce_version(cls, value: Any) -> Any:  # as ACP's schema does: junk means version 1
        if isinstance(value, int):
            return value
        try:
            return int(value)
        except (TypeError, ValueError):
            return 1

    @field_validator("client_capabilities", mode="before")
    @classmethod
    def _salvage_capabilities(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else None


class NewSessionExtras(Params):
    additional_directories: Annotated[list[str] | None, Field(alias="additionalDirectories")] = None


class ListSessions(Params):
    cwd: str | None = None


class RewindRequest(Params):
    """``_sidecar/sessions/rewind`` and ``_sidecar/sessions/compare`` (docs/contract.md §3.3)."""

    session_id: Annotated[str, Field(alias="sessionId")]
    # One of the two: a user message, or a writing tool call (its turn is found from it).
    to_message_id: Annotated[str | None, Field(alias="toMessageId")] = None
    tool_call_id: Annotated[str | None, Field(alias="toolCallId")] = None

    def model_post_init(self, _context: Any) -> None:
        if self.to_message_id is None and self.tool_call_id is None:
            raise ValueError("toMessageId is required (or toolCallId, for the state before that tool call)")
    files: bool = True
    conversation: bool = True


class UndoRewindRequest(Params):
    """``_sidecar/sessions/undo_rewind``: the ``undoId`` a files-only rewind answered."""

    session_id: Annotated[str, Field(alias="sessionId")]
    undo_id: Annotated[str, Field(alias="undoId")]

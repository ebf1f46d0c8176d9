"""The shapes of what the client port (``sidecar.session.ClientPort``) sends the client and gets back.

They mirror ``extension/src/protocol.ts`` (the ``_sidecar/*`` methods, ACP's permission request) and ACP's
``fs/*``, ``terminal/*`` and ``elicitation/create`` schemas, the parts the sidecar uses. Params are what a
caller passes (the port adds ``sessionId``); results are what the port hands back after reading the
client's answer: a field of the wrong type is dropped or defaulted there, never here, and an answer without
the fields a method promises raises ``ClientRequestError`` (``sidecar.errors``). Bottom layer: typing only.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

# A JSON object the port passes through as it is (a session update, a tool call's content, a schema).
JsonObject = dict[str, object]


# ---- session/request_permission (ACP) -------------------------------------------------------------
PermissionOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class PermissionOption(TypedDict):
    optionId: str
    name: str
    kind: PermissionOptionKind


class ToolCallLocation(TypedDict):
    path: str
    line: NotRequired[int | None]


class PermissionToolCall(TypedDict):
    """The tool call a permission request asks about (ACP ``ToolCallUpdate``)."""

    toolCallId: str
    title: str
    kind: str
    status: NotRequired[str]
    rawInput: NotRequired[object]
    content: NotRequired[list[JsonObject]]
    locations: NotRequired[list[ToolCallLocation]]
    _meta: NotRequired[JsonObject]


class SelectedOutcome(TypedDict):
    """The option the user picked; ``feedback`` is what they typed with it (``_meta.feedback``)."""

    optionId: str
    feedback: NotRequired[str]


# ---- _sidecar/review_edit -----------------------------------------------------------------------------
class Hunk(TypedDict):
    index: int
    oldStart: int
    oldLines: int
    newStart: int
    newLines: int


class ReviewEditParams(TypedDict):
    toolCallId: str
    path: str
    oldText: str | None
    newText: str
    unifiedDiff: str
    hunks: list[Hunk]


class ReviewEditResult(TypedDict):
    """An answer other than accepted/rejected (or none readable) is ``cancelled``."""

    outcome: Literal["accepted", "rejected", "cancelled"]
    acceptedHunks: NotRequired[list[int]]
    finalText: NotRequired[str]
    feedback: NotRequired[str]


# ---- _sidecar/ask_user --------------------------------------------------------------------------------
class AskUserOption(TypedDict):
    label: str
    description: str


class AskUserQuestion(TypedDict):
    question: str
    header: str
    multiSelect: bool
    options: list[AskUserOption]


class AskUserParams(TypedDict):
    toolCallId: str
    questions: list[AskUserQuestion]


class AskUserResult(TypedDict):
    """``answers``: per question text, the labels chosen (a single string answer becomes a list of one)."""

    outcome: Literal["answered", "cancelled"]
    answers: dict[str, list[str]]


# ---- elicitation/create (ACP, form mode) --------------------------------------------------------------
class ElicitationParams(TypedDict):
    toolCallId: str
    mode: Literal["form"]
    message: str
    requestedSchema: JsonObject


class ElicitationResult(TypedDict):
    """``content``: the form's values when ``action`` is ``accept`` (else empty)."""

    action: Literal["accept", "decline", "cancel"]
    content: JsonObject


# ---- workspace/applyEdit (LSP) ------------------------------------------------------------------------
class Position(TypedDict):
    line: int
    character: int


class Range(TypedDict):
    start: Position
    end: Position


class TextEdit(TypedDict):
    range: Range
    newText: str


class VersionedTextDocument(TypedDict):
    uri: str
    version: int


class TextDocumentEdit(TypedDict):
    textDocument: VersionedTextDocument
    edits: list[TextEdit]


class WorkspaceEdit(TypedDict):
    documentChanges: list[TextDocumentEdit]


class ApplyEditParams(TypedDict):
    label: str
    edit: WorkspaceEdit


class ApplyEditResult(TypedDict):
    applied: bool
    failureReason: NotRequired[str]


# ---- _sidecar/lsp_query, _sidecar/diagnostics -------------------------------------------------------------
LspOperation = Literal["goToDefinition", "findReferences", "hover", "documentSymbol", "workspaceSymbol",
                       "goToImplementation", "prepareCallHierarchy", "incomingCalls", "outgoingCalls"]


class LspQueryParams(TypedDict):
    operation: LspOperation
    uri: str
    position: NotRequired[Position]
    query: NotRequired[str]
    item: NotRequired[object]


class LspQueryResult(TypedDict):
    """``result``: the editor's language servers' answer as LSP has it (None: nothing found)."""

    result: object


class FileDiagnostics(TypedDict):
    uri: str
    diagnostics: list[JsonObject]


class DiagnosticsResult(TypedDict):
    items: list[FileDiagnostics]


# ---- terminal/* (ACP) ------------------------------------------------------------------------------------
class TerminalExitStatus(TypedDict):
    """How the command ended: its exit code, or the signal that stopped it (either may be None)."""

    exitCode: int | None
    signal: str | None


class TerminalOutput(TypedDict):
    output: str
    truncated: bool
    exitStatus: NotRequired[TerminalExitStatus]


# ---- notifications ----------------------------------------------------------------------------------------
class ModelRetryParams(TypedDict):
    """``_sidecar/model_retry`` (``extension/src/shared/modelRetry.ts``), without ``sessionId``."""

    attempt: int
    maxAttempts: int
    delayMs: int
    errorType: str
    message: str
    status: NotRequired[int]
    agent: NotRequired[str]

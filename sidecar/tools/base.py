"""The Tool interface: contract, governance, execution, presentation (docs/contract.md §5).

A tool is one module. Its pydantic ``Input`` model's docstring is the description the model reads
(say *when* to use the tool); field descriptions become parameter docs. The dispatcher
(``sidecar.tools.dispatch``) owns everything shared and calls the tool's steps in one order for every
tool: ``validate`` → ``prepare`` → ``check_permission`` (decide/ask) → ``run`` → presentation (bounded
output, result metadata). A tool only says what is particular to it.
"""

from __future__ import annotations

import copy
import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from sidecar.permissions.request import PermissionRequest

if TYPE_CHECKING:
    from sidecar.session import Session
    from sidecar.tools.context import ToolContext

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]


class ToolInput(BaseModel):
    """Base of every tool input model. Unknown fields are refused so typos reach the model as errors."""

    model_config = ConfigDict(extra="forbid")


InputT = TypeVar("InputT", bound=ToolInput)


@dataclass
class TextBlock:
    text: str

    def to_api(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass
class ImageBlock:
    media_type: str
    data_base64: str

    def to_api(self) -> dict[str, Any]:
        return {"type": "image", "source": {"type": "base64", "media_type": self.media_type, "data": self.data_base64}}


ResultBlock = TextBlock | ImageBlock


@dataclass
class ToolOutput:
    """What a tool returns: blocks for the model, ACP content for the editor, metadata for memory.

    ``editor_content`` items are ACP ToolCallContent dicts (``{"type": "content", ...}`` or
    ``{"type": "diff", "path", "oldText", "newText"}``); when empty the dispatcher shows the text.
    """

    blocks: list[ResultBlock]
    is_error: bool = False
    editor_content: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    # When False, the dispatcher will not cut the text (the tool bounded it itself).
    bound_output: bool = True

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> ToolOutput:
        return cls(blocks=[TextBlock(text)], **kwargs)

    def joined_text(self) -> str:
        return "\n".join(b.text for b in self.blocks if isinstance(b, TextBlock))


@dataclass
class Location:
    """A file the call touches, for the editor to follow (ACP ToolCallLocation). ``line`` is 1-based."""

    path: str
    line: int | None = None

    def to_acp(self) -> dict[str, Any]:
        return {"path": self.path, **({"line": self.line} if self.line is not None else {})}


ProgressSink = Callable[[str], Awaitable[None]]


_SCHEMAS: dict[type[ToolInput], dict[str, Any]] = {}


def _schema_of(model: type[ToolInput]) -> dict[str, Any]:
    """The JSON schema of an input model, built once per class (pydantic does not cache it, and each
    session's request building asked for all ~20 tools' schemas: ~7 ms each, ~140 ms of CPU per session).
    Callers get a copy (``Tool.input_schema``), so the cached one is never changed."""
    schema = _SCHEMAS.get(model)
    if schema is None:
        schema = model.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        _SCHEMAS[model] = schema
    return schema


_DOCS: dict[tuple[type[ToolInput], str], str] = {}


def _doc_of(model: type[ToolInput], name: str) -> str:
    """The Input class's docstring as the tool's description, cleaned once per class. cleandoc: the
    docstring's indentation is not sent (the model reads the text, not our layout)."""
    doc = _DOCS.get((model, name))
    if doc is None:
        doc = _DOCS[model, name] = inspect.cleandoc(model.__doc__ or name)
    return doc


class Tool(ABC, Generic[InputT]):
    """One model-facing tool. Subclasses set ``name``, ``kind``, ``Input`` and implement ``run``."""

    name: ClassVar[str]
    kind: ClassVar[ToolKind]
    Input: ClassVar[type[ToolInput]]
    # Tools that are never deferred behind ToolSearch and never need MCP-style gating.
    always_loaded: ClassVar[bool] = True

    # ---- contract -------------------------------------------------------------------------
    def description(self) -> str:
        return _doc_of(self.Input, self.name)

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(_schema_of(self.Input))

    def api_definition(self) -> dict[str, Any]:
        """The tool as the Messages API takes it. Unless ``input_schema`` is overridden, its schema is the
        one cached for the Input class, shared by every session's requests and never changed (the loop
        adds keys to a copy of the top level; the SDK copies what it sends): each new session deep-copied
        all ~20 schemas, ~0.5 ms apiece. ``input_schema()`` gives a copy of one's own."""
        shared = type(self).input_schema is Tool.input_schema
        schema = _schema_of(self.Input) if shared else self.input_schema()
        return {"name": self.name, "description": self.description(), "input_schema": schema}

    def title(self, raw_input: dict[str, Any]) -> str:
        """A card title that works on partial input (the model may still be streaming arguments)."""
        return self.name

    def locations(self, inp: InputT) -> list[Location]:
        return []

    def anticipate(self, session: Session) -> None:
        """The model has begun a call of this tool, its input still streaming: start, without blocking,
        what any call of it will need (Bash: its read-only sandbox). It runs nothing the call asks for,
        so it comes before governance; the call itself goes through it as every call does."""

    # ---- governance -----------------------------------------------------------------------
    def is_read_only(self, inp: InputT) -> bool:
        return False

    def is_concurrency_safe(self, inp: InputT, ctx: ToolContext) -> bool:
        """Whether the call may run beside its neighbours. Asked synchronously on the event loop, before
        ``validate``; what it works out may be kept in ``ctx.prepared`` for ``prepare``."""
        return self.is_read_only(inp)

    def may_write(self, inp: InputT, ctx: ToolContext) -> bool:
        """Whether this call, as permitted, can change files (asked after ``check_permission``): the
        checkpoints take no snapshot around a call that cannot."""
        return not self.is_read_only(inp)

    async def validate(self, inp: InputT, ctx: ToolContext) -> None:
        """Raise ToolError for input that is well-typed but wrong (relative path, bad range ...)."""

    async def prepare(self, inp: InputT, ctx: ToolContext) -> None:
        """Work out what the call will do, without side effects, into ``ctx.prepared``: what the question
        shows and ``run`` carries out (a file tool's proposed text and diff, a command's analysis). Raise
        ToolError when it cannot be done (old_string not found, the file changed since it was read)."""

    async def check_permission(self, inp: InputT, ctx: ToolContext) -> None:
        """Ask the gate (``ctx.permissions.require``) about what ``prepare`` worked out, before any side
        effect; raise ToolError when refused.

        The default treats a read-only call as needing no approval and asks for anything else.
        """
        await ctx.permissions.require(self.permission_request(inp), ctx)

    async def abandon(self, inp: InputT, ctx: ToolContext) -> None:
        """The call stops after ``prepare`` without reaching ``run`` (refused, cancelled, a failure on the
        way): release what ``prepare`` holds (a temporary file written early)."""

    def permission_request(self, inp: InputT) -> PermissionRequest:
        """What the default ``check_permission`` asks: read-only by the tool's own judgement."""
        read_only = self.is_read_only(inp)
        return PermissionRequest(
            tool_name=self.name,
            access="read" if read_only else "other",
            title=self.title(inp.model_dump()),
            raw_input=inp.model_dump(by_alias=True, exclude_none=True),
            read_only=read_only,
            suggested_rule=self.name,
        )

    # ---- execution + presentation ---------------------------------------------------------
    @abstractmethod
    async def run(self, inp: InputT, ctx: ToolContext) -> ToolOutput:
        """Carry out what was approved and present it. Progress for the editor goes through
        ``ctx.progress``."""


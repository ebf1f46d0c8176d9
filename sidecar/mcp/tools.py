"""MCP tools as sidecar tools: ``mcp__<server>__<tool>`` (ask by default; rules ``mcp__server``,
``mcp__server__tool``), plus ``ListMcpResources`` / ``ReadMcpResource``."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field

from sidecar.errors import ToolError
from sidecar.permissions.request import PermissionRequest
from sidecar.tools.base import ImageBlock, TextBlock, Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext


class McpInput(ToolInput):
    """Arguments for an MCP tool (validated by its server against the tool's input schema)."""

    model_config = ConfigDict(extra="allow")


def _dead_error(conn: Any) -> ToolError:
    return ToolError(f"The MCP server {conn.name!r} is not running ({conn.error or 'stopped'}), so its tools "
                     "cannot be used in this session. Continue without it, or tell the user it needs restarting.")


async def _call(conn: Any, coro: Any) -> Any:
    from mcp.shared.exceptions import MCPError

    if conn.dead or conn.client is None:
        raise _dead_error(conn)
    try:
        return await coro
    except MCPError as exc:
        if "closed" in str(exc).lower():
            conn.mark_dead(str(exc))
            raise _dead_error(conn) from None
        raise ToolError(f"The MCP server {conn.name!r} returned an error: {exc}. Check the arguments against "
                        "the tool's schema, or try another approach.") from None
    except (OSError, EOFError) as exc:
        conn.mark_dead(f"{type(exc).__name__}: {exc}")
        raise _dead_error(conn) from None


def _blocks(content: list[Any]) -> list[TextBlock | ImageBlock]:
    blocks: list[TextBlock | ImageBlock] = []
    for item in content:
        kind = getattr(item, "type", None)
        if kind == "text":
            blocks.append(TextBlock(item.text))
        elif kind == "image":
            blocks.append(ImageBlock(item.mime_type, item.data))
        elif kind == "resource":
            res = item.resource
            text = getattr(res, "text", None)
            blocks.append(TextBlock(text if text is not None else f"[binary resource {res.uri}]"))
        elif kind == "resource_link":
            blocks.append(TextBlock(f"[resource {item.uri}]"))
        else:
            blocks.append(TextBlock(str(item)))
    return blocks


class McpTool(Tool[McpInput]):
    kind: ClassVar[ToolKind] = "other"
    Input = McpInput
    always_loaded: ClassVar[bool] = False  # may be deferred behind ToolSearch

    def __init__(self, conn: Any, tool: Any, name: str) -> None:
        self.conn = conn
        self.tool = tool
        self.name = name  # type: ignore[misc]
        annotations = getattr(tool, "annotations", None)
        self.read_only_hint = bool(getattr(annotations, "read_only_hint", False))

    def description(self) -> str:
        return (self.tool.description or f"{self.tool.name} (from the MCP server {self.conn.name})").strip()

    def input_schema(self) -> dict[str, Any]:
        schema = dict(self.tool.input_schema or {"type": "object", "properties": {}})
        schema.pop("title", None)
        return schema

    def title(self, raw_input: dict[str, Any]) -> str:
        return f"{self.tool.name} ({self.conn.name} MCP)"

    def is_read_only(self, inp: McpInput) -> bool:
        return self.read_only_hint

    async def validate(self, inp: McpInput, ctx: ToolContext) -> None:
        if self.conn.dead or self.conn.client is None:
            raise _dead_error(self.conn)  # before asking the user about a call that cannot run

    async def check_permission(self, inp: McpInput, ctx: ToolContext) -> None:
        # Never free: the server decides what "read-only" means, so it asks unless a rule allows it.
        await ctx.permissions.require(PermissionRequest(
            tool_name=self.name, access="other", title=f"{self.tool.name} ({self.conn.name} MCP server)",
            raw_input=inp.model_dump(), read_only=False, suggested_rule=self.name), ctx)

    async def run(self, inp: McpInput, ctx: ToolContext) -> ToolOutput:
        result = await _call(self.conn, self.conn.client.call_tool(self.tool.name, inp.model_dump()))
        blocks = _blocks(list(result.content or []))
        if not blocks and getattr(result, "structured_content", None) is not None:
            import json

            blocks = [TextBlock(json.dumps(result.structured_content))]
        if result.is_error:
            text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock)) or "(no message)"
            raise ToolError(f"The MCP tool {self.name} failed: {text}")
        return ToolOutput(blocks=blocks, metadata={"subject": self.name, "server": self.conn.name})


class ListResourcesInput(ToolInput):
    """List the resources (documents, records, files) the connected MCP servers offer. Read one with
    ReadMcpResource."""

    server: str | None = Field(default=None, description="Only this server's resources.")


class ReadResourceInput(ToolInput):
    """Read one resource of an MCP server by its URI (from ListMcpResources)."""

    server: str = Field(description="The MCP server's name.")
    uri: str = Field(description="The resource URI.")


class ListMcpResources(Tool[ListResourcesInput]):
    name: ClassVar[str] = "ListMcpResources"
    kind: ClassVar[ToolKind] = "search"
    Input = ListResourcesInput

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    def is_read_only(self, inp: ListResourcesInput) -> bool:
        return True

    async def run(self, inp: ListResourcesInput, ctx: ToolContext) -> ToolOutput:
        conns = [c for c in self.manager.connections.values() if inp.server in (None, c.name)]
        if not conns:
            raise ToolError(f"No MCP server named {inp.server!r}. Servers: {', '.join(self.manager.connections)}.")
        lines: list[str] = []
        for conn in conns:
            try:
                listing = await _call(conn, conn.client.list_resources())
            except ToolError as exc:
                lines.append(f"{conn.name}: {exc.message}")
                continue
            for r in listing.resources:
                lines.append(f"{conn.name}: {r.uri} — {r.name}" + (f": {r.description}" if r.description else ""))
        return ToolOutput.text("\n".join(lines) or "No resources.")


class ReadMcpResource(Tool[ReadResourceInput]):
    name: ClassVar[str] = "ReadMcpResource"
    kind: ClassVar[ToolKind] = "read"
    Input = ReadResourceInput

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    def is_read_only(self, inp: ReadResourceInput) -> bool:
        return True

    async def check_permission(self, inp: ReadResourceInput, ctx: ToolContext) -> None:
        await ctx.permissions.require(PermissionRequest(
            tool_name=f"mcp__{inp.server}", access="read", title=f"Read {inp.uri} ({inp.server} MCP server)",
            raw_input=inp.model_dump(), read_only=False, suggested_rule=f"mcp__{inp.server}"), ctx)

    async def run(self, inp: ReadResourceInput, ctx: ToolContext) -> ToolOutput:
        conn = self.manager.connections.get(inp.server)
        if conn is None:
            raise ToolError(f"No MCP server named {inp.server!r}. Servers: {', '.join(self.manager.connections)}.")
        result = await _call(conn, conn.client.read_resource(inp.uri))
        parts = [getattr(c, "text", None) or f"[binary {getattr(c, 'mime_type', '')} content]" for c in result.contents]
        return ToolOutput.text("\n".join(parts), metadata={"subject": inp.uri, "server": inp.server})


def resource_tools(manager: Any) -> list[Tool[Any]]:
    return [ListMcpResources(manager), ReadMcpResource(manager)]

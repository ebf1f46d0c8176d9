"""WebSearch: search the web through the API's server-side ``web_search`` tool, with sources.

The search is not a local crawler: one Messages call offers ``web_search_20250305`` (``max_uses`` 5,
the domain lists) and the runtime reads the streamed ``server_tool_use`` (the queries the model ran)
and ``web_search_tool_result`` (pages found, or an error code) blocks, then the answer text with its
citations. Where the endpoint has no server search (it rejects the tool, ignores it, or the search is
unavailable), DuckDuckGo's HTML results page answers instead (``ddg``); ``SIDECAR_WEBSEARCH_FALLBACK=0``
turns that off. If neither works the tool says so plainly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.tools.base import Tool, ToolInput, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.web import ddg, llm
from sidecar.tools.web.services import web_services

# Error codes of web_search_tool_result_error, with what the model should do.
SEARCH_ERRORS = {
    "max_uses_exceeded": "the search hit its limit of searches for one call",
    "too_many_requests": "the search service is rate-limited right now",
    "unavailable": "the search service is unavailable",
    "invalid_input": "the query was not accepted",
    "query_too_long": "the query is too long",
}
QUERY_ERRORS = frozenset({"invalid_input", "query_too_long"})


class WebSearchInput(ToolInput):
    """Search the web and get result titles, URLs and a short answer with cited sources.

    Use this for information beyond your training data or that changes: current library versions,
    recent releases, error messages others have hit, documentation you do not have a URL for. Then read
    the most relevant results with WebFetch. Cite the sources you use as Markdown links in your answer.
    `allowed_domains` keeps only results from those sites; `blocked_domains` drops results from them
    (use one or the other).
    """

    query: str = Field(min_length=2, description="The search query")
    allowed_domains: list[str] | None = Field(default=None,
                                              description="Only include results from these domains")
    blocked_domains: list[str] | None = Field(default=None,
                                              description="Never include results from these domains")


@dataclass
class Source:
    title: str
    url: str
    page_age: str | None = None
    snippet: str = ""


@dataclass
class SearchOutcome:
    queries: list[str] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # error codes
    answer: str = ""


class ServerSearchFailed(Exception):
    pass


def read_reply(content: list[dict[str, Any]]) -> SearchOutcome:
    """Sources, queries, error codes and the cited answer from the reply's content blocks."""
    out = SearchOutcome()
    parts: list[str] = []
    for block in content:
        kind = block.get("type")
        if kind == "server_tool_use":
            query = (block.get("input") or {}).get("query")
            if isinstance(query, str):
                out.queries.append(query)
        elif kind == "web_search_tool_result":
            result = block.get("content")
            if isinstance(result, dict):  # web_search_tool_result_error
                out.errors.append(str(result.get("error_code", "unavailable")))
            elif isinstance(result, list):
                for item in result:
                    url = item.get("url")
                    if isinstance(url, str) and all(s.url != url for s in out.sources):
                        out.sources.append(Source(str(item.get("title") or url), url, item.get("page_age")))
        elif kind == "text":
            text = str(block.get("text", ""))
            marks = []
            for citation in block.get("citations") or []:
                url = citation.get("url")
                if not isinstance(url, str):
                    continue
                number = next((i for i, s in enumerate(out.sources, 1) if s.url == url), None)
                if number is None:
                    out.sources.append(Source(str(citation.get("title") or url), url))
                    number = len(out.sources)
                if f"[{number}]" not in marks:
                    marks.append(f"[{number}]")
            parts.append(text + (" " + "".join(marks) if marks else ""))
    out.answer = "".join(parts).strip()
    return out


def render(query: str, outcome: SearchOutcome, provider: str, note: str | None = None) -> str:
    lines = [f'Web search results for "{query}" ({provider}):', ""]
    if note:
        lines += [note, ""]
    if outcome.sources:
        lines.append("Sources:")
        for i, s in enumerate(outcome.sources, 1):
            age = f" ({s.page_age})" if s.page_age else ""
            lines.append(f"{i}. [{s.title}]({s.url}){age}")
            if s.snippet:
                lines.append(f"   {s.snippet}")
    else:
        lines.append("No results.")
    if outcome.answer:
        lines += ["", "Answer:", outcome.answer]
    lines += ["", "When you use these results, cite the pages as Markdown links [title](url)."]
    return "\n".join(lines)


class WebSearch(Tool[WebSearchInput]):
    name = "WebSearch"
    kind = "search"
    Input = WebSearchInput

    def title(self, raw_input: dict[str, Any]) -> str:
        query = raw_input.get("query")
        return f"Search the web: {query}" if isinstance(query, str) and query else "Search the web"

    def is_read_only(self, inp: WebSearchInput) -> bool:
        return True

    def is_concurrency_safe(self, inp: WebSearchInput, ctx: ToolContext) -> bool:
        return True

    async def validate(self, inp: WebSearchInput, ctx: ToolContext) -> None:
        if inp.allowed_domains and inp.blocked_domains:
            raise ToolError("Give either allowed_domains or blocked_domains, not both.")

    async def run(self, inp: WebSearchInput, ctx: ToolContext) -> ToolOutput:
        settings = web_services(ctx.session).settings
        await ctx.progress(f"Searching the web: {inp.query}")
        try:
            outcome = await self._server_search(inp, ctx)
        except ServerSearchFailed as exc:
            reason = str(exc)
        else:
            if outcome.sources or (outcome.queries and not outcome.errors):
                note = None
                if outcome.errors:
                    note = "(Note: " + "; ".join(SEARCH_ERRORS.get(e, e) for e in outcome.errors) + \
                           ". The results below are what was found before that.)"
                return ToolOutput.text(render(inp.query, outcome, "server web search", note),
                                       metadata={"provider": "server", "queries": outcome.queries,
                                                 "results": len(outcome.sources), "errors": outcome.errors})
            if any(e in QUERY_ERRORS for e in outcome.errors):
                raise ToolError(f"The web search refused the query: {SEARCH_ERRORS[outcome.errors[0]]}. "
                                "Rephrase it shorter and plainer, then search again.")
            if outcome.errors:
                reason = "; ".join(SEARCH_ERRORS.get(e, e) for e in outcome.errors)
            else:
                reason = "the model endpoint did not run a web search (it has no server-side search tool)"
        if not settings.search_fallback:
            raise ToolError(f"Web search is not available: {reason}. The DuckDuckGo fallback is turned off "
                            "(SIDECAR_WEBSEARCH_FALLBACK=0). Tell the user web search is unavailable, or use "
                            "WebFetch on a URL you know.")
        return await self._fallback(inp, ctx, reason)

    async def _server_search(self, inp: WebSearchInput, ctx: ToolContext) -> SearchOutcome:
        async def on_block(block: dict[str, Any]) -> None:
            if block.get("type") == "server_tool_use":
                query = (block.get("input") or {}).get("query")
                if query:
                    await ctx.progress(f"Searching the web: {query}")
            elif block.get("type") == "web_search_tool_result":
                content = block.get("content")
                count = len(content) if isinstance(content, list) else 0
                await ctx.progress(f"Found {count} results")

        try:
            reply = await llm.server_search(ctx.session, inp.query, inp.allowed_domains, inp.blocked_domains,
                                            on_block)
        except Exception as exc:  # ModelError and anything below it: the endpoint refused or is unreachable
            raise ServerSearchFailed(_describe_failure(exc)) from None
        return read_reply(reply.content)

    async def _fallback(self, inp: WebSearchInput, ctx: ToolContext, reason: str) -> ToolOutput:
        services = web_services(ctx.session)
        settings = services.settings
        await ctx.progress(f"Searching DuckDuckGo: {inp.query}")
        try:
            hits = await ddg.search(inp.query, endpoint=settings.ddg_endpoint, limit=settings.ddg_results,
                                    allowed_domains=inp.allowed_domains, blocked_domains=inp.blocked_domains,
                                    transport=services.transport, user_agent=settings.user_agent)
        except ddg.SearchUnavailable as exc:
            raise ToolError(f"Web search is not available: the server-side search failed ({reason}) and "
                            f"the DuckDuckGo fallback failed too ({exc}). Tell the user web search is not "
                            "working right now, or use WebFetch on a URL you know.") from None
        outcome = SearchOutcome(sources=[Source(h.title, h.url, snippet=h.snippet) for h in hits])
        note = f"(Server-side search unavailable: {reason}. These results are from DuckDuckGo.)"
        return ToolOutput.text(render(inp.query, outcome, "DuckDuckGo", note),
                               metadata={"provider": "duckduckgo", "results": len(hits),
                                         "fallback_reason": reason})


def _describe_failure(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    context = exc.__context__
    status = getattr(context, "status_code", None)
    if status is not None:
        return f"the model endpoint answered HTTP {status} ({text[:300]})"
    return text[:300]

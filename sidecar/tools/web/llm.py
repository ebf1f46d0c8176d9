"""The two model calls the web tools make, through the project's model client (``sidecar.model.client``).

- ``extract``: the small fast model answers WebFetch's ``prompt`` from the page's Markdown.
- ``server_search``: one Messages call offering the API's server-side ``web_search`` tool; the stream's
  ``server_tool_use`` and ``web_search_tool_result`` blocks are reported as progress as they complete.

The client is the session's (``MODEL``) when there is one, else one
built from the environment (``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``, ``SIDECAR_SMALL_MODEL``)
with few retries.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from sidecar.model.client import MODEL, ModelClient, ModelReply, StreamCallbacks
from sidecar.model.pricing import charge
from sidecar.model.settings import ModelSettings

WEB_SEARCH_TOOL_TYPE = "web_search_20250305"
MAX_SEARCH_USES = 5


@contextlib.asynccontextmanager
async def model_client(session: Any) -> AsyncIterator[ModelClient]:
    """The shared client when there is one; else a short-lived one, closed after the call."""
    shared = session.find_service(MODEL)
    if shared is not None:
        yield shared
        return
    settings = dataclasses.replace(ModelSettings.from_env(), max_retries=2, max_backoff_s=5.0)
    client = ModelClient(settings)
    try:
        yield client
    finally:
        await client.client.close()


def extraction_prompt(url: str, markdown: str, prompt: str) -> str:
    return (
        f"Web page content from {url}:\n---\n{markdown}\n---\n\n{prompt}\n\n"
        "Answer from the content above only. Be concise. Quote at most a few short passages exactly "
        "(under 125 characters each) and put quotation marks around them. If the content does not answer "
        "the request, say so plainly."
    )


async def extract(session: Any, url: str, markdown: str, prompt: str) -> str:
    """The small model's answer to ``prompt`` about the page."""
    async with model_client(session) as client:
        reply = await client.complete({
            "model": client.settings.small_model,
            "max_tokens": 2048,
            "messages": [{"role": "user", "content": [{"type": "text",
                                                       "text": extraction_prompt(url, markdown, prompt)}]}],
        })
        charge(session, client.settings.small_model, reply.usage, client.settings.prices)
    text = "\n".join(b.get("text", "") for b in reply.content if b.get("type") == "text").strip()
    return text


BlockSink = Callable[[dict[str, Any]], Awaitable[None]]


async def server_search(session: Any, query: str, allowed_domains: list[str] | None,
                        blocked_domains: list[str] | None, on_block: BlockSink | None = None) -> ModelReply:
    tool: dict[str, Any] = {"type": WEB_SEARCH_TOOL_TYPE, "name": "web_search", "max_uses": MAX_SEARCH_USES}
    if allowed_domains:
        tool["allowed_domains"] = allowed_domains
    if blocked_domains:
        tool["blocked_domains"] = blocked_domains
    async with model_client(session) as client:
        reply = await client.stream({
            "model": client.settings.model,
            "max_tokens": 4096,
            "system": "You are an assistant for performing a web search tool use. Search the web for the "
                      "user's query, then answer briefly, citing the pages you used.",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": f"Perform a web search for the query: {query}"}]}],
            "tools": [tool],
        }, StreamCallbacks(on_block=on_block))
        # the tokens; the per-search fee of the server tool is not priced
        charge(session, client.settings.model, reply.usage, client.settings.prices)
        return reply

"""WebFetch: read one web page, governed by the domain it is on (docs/contract.md §5.1, mechanism four).

Contract: ``url`` + ``prompt``. Governance: read-only and concurrency-safe; permission per domain
(``WebFetch(domain:host)`` rules, a built-in list of documentation hosts, or the user's answer);
only http(s); http upgraded to https; private, loopback, link-local and metadata addresses refused unless
a rule names the host explicitly. Execution: ``client.fetch`` (same-host redirects only, deadline, 10 MB
cap) → ``convert`` → 15-minute cache. Presentation: short pages whole, long pages answered by the small
model; a cross-host redirect is reported with the new URL for the model to fetch (and authorise) itself.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.permissions.request import PermissionRequest
from sidecar.tools.base import Tool, ToolInput, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.web import llm
from sidecar.tools.web.cache import CachedPage
from sidecar.tools.web.client import Fetched, Redirected, fetch
from sidecar.tools.web.convert import convert, human_size, neutralise_tags
from sidecar.tools.web.services import web_services
from sidecar.tools.web.url_safety import (
    Target,
    check_literal,
    classify,
    is_local_name,
    parse_url,
    with_scheme,
)

# Documentation hosts fetched without asking (read-only GETs of public docs), as Claude Code does.
PREAPPROVED_HOSTS = frozenset({
    "docs.python.org", "peps.python.org", "packaging.python.org", "pypi.org", "developer.mozilla.org",
    "docs.anthropic.com", "docs.claude.com", "platform.claude.com", "modelcontextprotocol.io",
    "agentclientprotocol.com", "en.cppreference.com", "docs.oracle.com", "learn.microsoft.com",
    "code.visualstudio.com", "go.dev", "pkg.go.dev", "doc.rust-lang.org", "docs.rs", "www.typescriptlang.org",
    "nodejs.org", "react.dev", "vuejs.org", "nextjs.org", "docs.djangoproject.com",
    "flask.palletsprojects.com", "fastapi.tiangolo.com", "docs.pydantic.dev", "www.python-httpx.org",
    "pandas.pydata.org", "numpy.org", "docs.scipy.org", "pytorch.org", "scikit-learn.org", "matplotlib.org",
    "kotlinlang.org", "docs.swift.org", "www.php.net", "ruby-doc.org", "git-scm.com", "kubernetes.io",
    "docs.docker.com", "www.postgresql.org", "www.sqlite.org", "redis.io", "nginx.org", "docs.github.com",
    "docs.aws.amazon.com", "cloud.google.com", "tailwindcss.com", "www.gnu.org", "man7.org",
})

SMALL_MODEL_UNAVAILABLE = ("[The small model that answers the prompt could not be reached ({reason}); "
                           "the page's Markdown follows{cut}.]\n\n")


class WebFetchInput(ToolInput):
    """Fetch a web page and answer a question about it.

    Use this when you need the content of a specific URL: documentation, an issue, an API reference, a
    changelog. The page is converted to Markdown (PDFs to text); short pages come back whole, long ones
    are answered by a small model following your `prompt`, so say exactly what you need from the page.
    Only http(s) URLs; http is upgraded to https. Results are cached for 15 minutes. If the page
    redirects to another host, the result names the new URL: fetch that URL with a new call. Local and
    private network addresses are refused unless the user allowed the host with a rule. To read local
    files use Read; to find pages use WebSearch.
    """

    url: str = Field(description="The full URL to fetch (http:// or https://)")
    prompt: str = Field(description="What to extract or answer from the page's content")


def preapproved(host: str) -> bool:
    return host in PREAPPROVED_HOSTS


def rule_allows_host(ctx: ToolContext, host: str) -> bool:
    """Whether a permission rule names ``host`` explicitly (``WebFetch(domain:<host>)``, no wildcard).

    Needed to reach loopback/private addresses: approving a fetch once, or a wildcard rule, is not enough.
    Uses ``PermissionGate.explicitly_allows`` when the gate offers it, else its ``rules()``.
    """
    gate: Any = ctx.permissions
    subject = f"domain:{host}"
    method = getattr(gate, "explicitly_allows", None)
    if callable(method):
        return bool(method("WebFetch", subject))
    rules = gate.rules() if callable(getattr(gate, "rules", None)) else []
    for rule in rules:
        spec = str(getattr(rule, "specifier", "") or "").strip().lower().rstrip(".")
        if getattr(rule, "tool", None) == "WebFetch" and getattr(rule, "behavior", None) == "allow" \
                and spec == subject:
            return True
    return f"WebFetch({subject})" in list(getattr(gate, "session_allow", []))


def resolve_target(raw_url: str, ctx: ToolContext) -> Target:
    """Parse, upgrade http→https (except a local host a rule allows explicitly), refuse private literals."""
    target = parse_url(raw_url)
    allowed = rule_allows_host(ctx, target.host)
    literal = target.ip_literal
    local = is_local_name(target.host) or (literal is not None and classify(literal) is not None)
    if target.scheme == "http" and not (allowed and local):
        target = with_scheme(target, "https")
    check_literal(target, allowed)
    return target


def tool_output_dir(ctx: ToolContext) -> Path:
    store = getattr(ctx.session, "store", None)
    getter = getattr(store, "tool_output_dir", None)
    if callable(getter):
        return Path(getter(ctx.session.id))
    return Path(tempfile.gettempdir()) / "sidecar-tool-output" / str(ctx.session.id)


class WebFetch(Tool[WebFetchInput]):
    name = "WebFetch"
    kind = "fetch"
    Input = WebFetchInput

    def title(self, raw_input: dict[str, Any]) -> str:
        url = raw_input.get("url")
        return f"Fetch {url}" if isinstance(url, str) and url else "Fetch"

    def is_read_only(self, inp: WebFetchInput) -> bool:
        return True

    def is_concurrency_safe(self, inp: WebFetchInput, ctx: ToolContext) -> bool:
        return True

    async def validate(self, inp: WebFetchInput, ctx: ToolContext) -> None:
        ctx.prepared = resolve_target(inp.url, ctx)
        if not inp.prompt.strip():
            raise ToolError("`prompt` is empty. Say what you want to learn from the page.")

    async def check_permission(self, inp: WebFetchInput, ctx: ToolContext) -> None:
        cached = ctx.prepared
        target = cached if isinstance(cached, Target) else resolve_target(inp.url, ctx)
        host = target.host
        request = PermissionRequest(
            tool_name=self.name,
            access="fetch",
            title=f"Fetch {target.url}",
            raw_input=inp.model_dump(),
            rule_subject=f"domain:{host}",
            read_only=preapproved(host),
            suggested_rule=f"WebFetch(domain:{host})",
        )
        await ctx.permissions.require(request, ctx)

    async def run(self, inp: WebFetchInput, ctx: ToolContext) -> ToolOutput:
        target = resolve_target(inp.url, ctx)
        services = web_services(ctx.session)
        page = services.cache.get(target.url)
        cached = page is not None
        if page is None:
            await ctx.progress(f"Fetching {target.url}")
            result = await fetch(target, services, lambda host: rule_allows_host(ctx, host))
            if isinstance(result, Redirected):
                return redirect_output(inp, result)
            page = self._page_of(target, result, ctx)
            services.cache.put(page)
        return await self._present(inp, page, cached, ctx)

    def _page_of(self, target: Target, result: Fetched, ctx: ToolContext) -> CachedPage:
        if result.status >= 400:
            converted = convert(result.body[:200_000], result.content_type, result.charset, result.url, False,
                                tool_output_dir(ctx))
            excerpt = converted.text[:1000].strip() if converted.kind != "binary" else ""
            raise ToolError(
                f"{result.url} answered HTTP {result.status} {result.reason}."
                + (f" The page said:\n{excerpt}\n" if excerpt else " ")
                + ("Check the URL; do not guess URLs. Use WebSearch to find the right page."
                   if result.status in (404, 410) else "Try again later or use another source."),
                metadata={"status": result.status, "url": result.url})
        converted = convert(result.body, result.content_type, result.charset, result.url, result.truncated,
                            tool_output_dir(ctx))
        return CachedPage(url=target.url, final_url=result.url, status=result.status,
                          content_type=result.content_type or "unknown", kind=converted.kind,
                          text=converted.text, title=converted.title, size=len(result.body),
                          truncated=result.truncated, saved_path=converted.saved_path, fetched_at=time.time())

    async def _present(self, inp: WebFetchInput, page: CachedPage, cached: bool,
                       ctx: ToolContext) -> ToolOutput:
        settings = web_services(ctx.session).settings
        metadata: dict[str, Any] = {
            "url": page.url, "final_url": page.final_url, "status": page.status,
            "content_type": page.content_type, "bytes": page.size, "truncated": page.truncated,
            "cached": cached, "kind": page.kind,
        }
        header = f"{page.final_url} ({page.status}, {page.content_type}, {human_size(page.size)}"
        header += ", from cache)" if cached else ")"
        notes: list[str] = []
        if page.final_url != page.url:
            notes.append(f"(Redirected from {page.url}.)")
        if page.truncated:
            notes.append(f"(The download was cut at {human_size(settings.max_bytes)}; the rest of the page "
                         "was not read.)")
        if page.saved_path is not None:
            metadata["saved_path"] = str(page.saved_path)
            return ToolOutput.text("\n".join([header, *notes, page.text]), metadata=metadata)
        body = page.text
        if len(body) < settings.short_markdown_chars:
            metadata["answered_by"] = "page"
        else:
            model_input = body[:settings.max_markdown_chars]
            if len(body) > len(model_input):
                notes.append(f"(Only the first {settings.max_markdown_chars} characters of the page were "
                             "considered.)")
            try:
                await ctx.progress(f"Reading {page.final_url} for: {inp.prompt[:80]}")
                answer = await llm.extract(ctx.session, page.final_url, model_input, inp.prompt)
                if not answer:
                    raise RuntimeError("the small model returned no text")
                body = neutralise_tags(answer)  # the small model may have copied the page's tags
                metadata["answered_by"] = "small_model"
            except Exception as exc:  # the model client's errors, connection failures ...
                limit = settings.fallback_markdown_chars
                cut = f", cut at {limit} characters" if len(body) > limit else ""
                body = SMALL_MODEL_UNAVAILABLE.format(reason=str(exc)[:300], cut=cut) + body[:limit]
                metadata["answered_by"] = "page_fallback"
        return ToolOutput.text("\n".join([header, *notes, "", body]), metadata=metadata, bound_output=False)


def redirect_output(inp: WebFetchInput, result: Redirected) -> ToolOutput:
    text = (f"REDIRECT DETECTED: {result.url} redirects (HTTP {result.status}) to a different host:\n"
            f"{result.location}\n\nThe redirect was not followed, because permission to fetch is given per "
            f"host. To read the page, call WebFetch again with url \"{result.location}\" and the same "
            "prompt.")
    return ToolOutput.text(text, metadata={"url": result.url, "redirect": result.location,
                                           "status": result.status})

"""Turn a downloaded body into something the model can read.

HTML → Markdown (selectolax strips scripts, styles, navigation, headers and footers; markdownify
converts the rest, links made absolute); text, JSON, XML and other textual types as they are; PDF →
text by page (pypdf); any other binary is saved under the session's tool-output folder and the model is
told the path, type and size.
"""

from __future__ import annotations

import hashlib
import io
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urljoin, urlsplit

# Page chrome and non-content: removed before conversion.
STRIP_SELECTORS = (
    "script", "style", "noscript", "template", "nav", "header", "footer", "iframe", "svg", "canvas",
    "object", "embed", "form", "dialog", "[role=navigation]", "[role=banner]", "[role=contentinfo]",
    "[aria-hidden=true]", "link", "meta",
)
TEXT_TYPES = frozenset({
    "application/json", "application/ld+json", "application/xml", "application/javascript",
    "application/x-javascript", "application/ecmascript", "application/x-yaml", "application/yaml",
    "application/toml", "application/x-sh", "application/sql", "application/graphql", "application/x-ndjson",
    "application/rss+xml", "application/atom+xml",
})
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-]+)""", re.IGNORECASE)
_BLANK_RUNS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


@dataclass
class Converted:
    kind: str  # "markdown" | "text" | "pdf" | "binary"
    text: str
    title: str | None = None
    saved_path: Path | None = None


def is_textual(media: str) -> bool:
    return (media.startswith("text/") or media in TEXT_TYPES or media.endswith("+json")
            or media.endswith("+xml"))


def sniff(body: bytes) -> str:
    head = body[:1024].lstrip().lower()
    if head.startswith(b"%pdf"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "text/html"
    if b"\x00" in body[:4096]:
        return "application/octet-stream"
    try:
        body[:4096].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 4090:  # not just a character cut at the sample's end
            return "application/octet-stream"
    return "text/plain"


def decode(body: bytes, charset: str | None, html: bool) -> str:
    candidates = [charset] if charset else []
    if html and (m := _META_CHARSET.search(body[:4096])):
        candidates.append(m.group(1).decode("ascii"))
    candidates.append("utf-8")
    for name in candidates:
        try:
            return body.decode(name)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("utf-8", errors="replace")


def html_to_markdown(html: str, base_url: str) -> tuple[str, str | None]:
    """Markdown of the page's content (chrome removed) and its title."""
    # Imported here: the HTML parser's library is 1.8 MB of memory a session that fetches no page never needs.
    from selectolax.lexbor import LexborHTMLParser as HTMLParser

    tree = HTMLParser(html)
    title_node = tree.css_first("title")
    title = title_node.text(strip=True) or None if title_node is not None else None
    for selector in STRIP_SELECTORS:
        for node in tree.css(selector):
            node.decompose()
    for node in tree.css("a[href]"):
        href = node.attributes.get("href") or ""
        if href.startswith("javascript:"):
            node.unwrap()
        elif not href.startswith("#"):
            node.attrs["href"] = urljoin(base_url, href)
    for node in tree.css("img"):
        src = node.attributes.get("src") or ""
        if src.startswith("data:") or not src:
            node.decompose()
        else:
            node.attrs["src"] = urljoin(base_url, src)
    root = tree.body or tree.root
    from markdownify import markdownify  # lazy: it imports bs4 and soupsieve (half a second)

    markdown = markdownify(root.html or "", heading_style="ATX", bullets="-", strip=["title"]) if root else ""
    markdown = _BLANK_RUNS.sub("\n\n", markdown).strip()
    return markdown, title


def pdf_pages(body: bytes) -> list[str]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(body))
    return [(page.extract_text() or "").strip() for page in reader.pages]


def extension_for(media: str, url: str) -> str:
    suffix = PurePosixPath(urlsplit(url).path).suffix
    if suffix and len(suffix) <= 8 and suffix[1:].isalnum():
        return suffix.lower()
    return mimetypes.guess_extension(media) or ".bin"


def save_binary(body: bytes, media: str, url: str, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    path = out_dir / f"webfetch-{digest}{extension_for(media, url)}"
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_bytes(body)
    tmp.replace(path)
    return path


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"


# Tags the model reads as the harness's or the conversation's own (Claude Code's reminders, turn markers,
# tool-call markup, our system prompt's sections). In fetched content they are only text: their angle
# brackets are escaped (``&lt;system-reminder&gt;``), so the words stay readable and nothing is lost.
INSTRUCTION_TAGS = re.compile(
    r"<(/?)\s*((?:antml:)?(?:system-reminder|system|instructions?|user|human|assistant|user_query|"
    r"function_calls|function_results|invoke|parameter|tool_use|tool_result|thinking|env|memory|imported|"
    r"command-name|command-message|command-args|local-command-stdout)\b[^<>]*)>",
    re.IGNORECASE)


def neutralise_tags(text: str) -> str:
    """Fetched text with instruction-like tags escaped (``INSTRUCTION_TAGS``)."""
    return INSTRUCTION_TAGS.sub(lambda m: f"&lt;{m.group(1)}{m.group(2)}&gt;", text)


def convert(body: bytes, media: str, charset: str | None, url: str, truncated: bool,
            out_dir: Path) -> Converted:
    converted = _convert(body, media, charset, url, truncated, out_dir)
    if converted.kind != "binary":
        converted.text = neutralise_tags(converted.text)
        converted.title = neutralise_tags(converted.title) if converted.title else converted.title
    return converted


def _convert(body: bytes, media: str, charset: str | None, url: str, truncated: bool,
             out_dir: Path) -> Converted:
    media = media or sniff(body)
    if media in HTML_TYPES:
        markdown, title = html_to_markdown(decode(body, charset, html=True), url)
        return Converted("markdown", markdown, title)
    if is_textual(media):
        return Converted("text", decode(body, charset, html=False))
    if media == "application/pdf" or body[:5] == b"%PDF-":
        try:
            pages = pdf_pages(body)
        except Exception as exc:  # pypdf raises many types on damaged or cut files
            pages = []
            reason = f"its text could not be extracted ({type(exc).__name__}: {exc})"
        else:
            reason = "it has no text layer (a scanned document?)"
        if any(pages):
            text = "\n\n".join(f"--- page {n} ---\n{t}" for n, t in enumerate(pages, start=1))
            return Converted("pdf", text)
        path = save_binary(body, "application/pdf", url, out_dir)
        return Converted("binary", f"{url} is a PDF of {human_size(len(body))}, but {reason}. "
                                   f"It was saved to {path}.", saved_path=path)
    path = save_binary(body, media, url, out_dir)
    cut = f" (cut at {human_size(len(body))}: only the first part was downloaded)" if truncated else ""
    image = media.startswith("image/")
    hint = " It is an image: use the Read tool on that path to look at it." if image else ""
    text = (f"{url} is binary content ({media}, {human_size(len(body))}){cut}, which cannot be shown as "
            f"text. It was saved to {path}.{hint}")
    return Converted("binary", text, saved_path=path)

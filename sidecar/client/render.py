"""How the terminal client shows a session: Markdown answers, tool lines, diffs, the working line.

On a terminal the answer is rendered with ``rich`` (bold, tables, code blocks) a block at a time: a block is
printed once it is complete (a blank line outside a code fence), and the block being written shows below
the transcript with the working line (spinner, elapsed time, tokens) in a ``rich.live.Live`` area that is
cleared when the turn ends. Piped output (not a terminal) gets the model's text as it streams, unrendered,
so scripts see the Markdown source. Paths under the session's folder are shown relative to it; the model
still gets absolute paths (only what is printed changes).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Heading, Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text
from rich.theme import Theme

COLLAPSED_LINES = 6  # tool output lines shown under a tool line; /expand shows the rest
THOUGHT_LINES = 3  # lines of the model's thinking shown; /expand shows the rest
PREVIEW_LINES = 12  # lines of the block being written shown above the working line
CHARS_PER_TOKEN = 4  # the working line's token count is an estimate from the streamed characters


# ---- paths ------------------------------------------------------------------------------------------
class PathDisplay:
    """Paths as the user wants to read them: ``calc.py`` for ``<folder>/calc.py``, ``.`` for the folder,
    ``~/…`` under the home directory."""

    def __init__(self, cwd: Path, home: str | None = None) -> None:
        folder = re.escape(str(cwd).rstrip("/"))
        # Not inside a longer path (…/a/tmp/x), not a longer name (/tmp/xy for /tmp/x).
        self._inside = re.compile(rf"(?<![\w./-]){folder}/(?=[^\s/])")
        self._exact = re.compile(rf"(?<![\w./-]){folder}(?![\w./-])")
        home = home if home is not None else str(Path.home())
        self._home = re.compile(rf"(?<![\w./-]){re.escape(home.rstrip('/'))}(?=/|(?![\w.-]))") \
            if home.rstrip("/") else None

    def __call__(self, text: str) -> str:
        return self.home(self._exact.sub(".", self._inside.sub("", text)))

    def home(self, text: str) -> str:
        """Only the home directory shortened (``~/…``)."""
        return self._home.sub("~", text) if self._home else text


# ---- permission offers ------------------------------------------------------------------------------
_OFFER = re.compile(r"^Always (allow|reject) (.+?) (for this session|in this project)$")
_RULE = re.compile(r"^([A-Za-z]\w*)\((.*)\)$")
_EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")


def readable_rule(rule: str, paths: PathDisplay | None = None) -> str:
    """A permission rule as a phrase: ``Edit(/**)`` → "edits in this folder", ``Bash(git status *)`` →
    ``"git status" commands``, ``WebFetch(domain:x.org)`` → "fetches from x.org"; unknown shapes unchanged."""
    show = paths or (lambda text: text)
    if rule.startswith("mcp__"):
        server, _, tool = rule[5:].partition("__")
        return f"the tool '{tool}' of the MCP server '{server}'" if tool else \
            f"every tool of the MCP server '{server}'"
    match = _RULE.match(rule)
    if match is None:
        return "every command" if rule == "Bash" else rule
    tool, spec = match.groups()
    if tool in _EDIT_TOOLS and spec.endswith("/**"):
        folder = spec[:-3]
        if not folder:
            return "edits in this folder"
        # "//abs/dir" is an absolute folder, "/sub" one under the project's folder.
        return f"edits in {show(folder[1:]) if folder.startswith('//') else folder.lstrip('/')}/"
    if tool == "Bash":
        for tail in (" *", ":*"):
            if spec.endswith(tail):
                return f'"{spec[:-len(tail)]}" commands'
        return f'the command "{spec}"'
    if tool == "WebFetch" and spec.startswith("domain:"):
        return f"fetches from {spec[len('domain:'):]}"
    if tool == "Read":
        return f"reading {show(spec)}"
    return rule


def readable_option(name: str, paths: PathDisplay | None = None) -> str:
    """A permission option's name with its rule as a phrase: "Always allow Edit(/**) for this session" →
    "Always allow edits in this folder for this session"."""
    match = _OFFER.match(name)
    if match is None:
        return name
    verb, rule, scope = match.groups()
    return f"Always {verb} {readable_rule(rule, paths)} {scope}"


# ---- diffs ------------------------------------------------------------------------------------------
def diff_text(path: str, old: str | None, new: str) -> Text:
    lines = difflib.unified_diff((old or "").splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=path, tofile=path, n=2)
    out = Text()
    for line in lines:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else \
            "cyan" if line.startswith("@@") else "dim"
        out.append(line if line.endswith("\n") else line + "\n", style=style)
    if out.plain.endswith("\n"):
        out.right_crop(1)  # console.print ends the line (blank context lines stay)
    return out


# ---- Markdown -----------------------------------------------------------------------------------------
class _LeftHeading(Heading):
    """Headings on the left (rich centres ``#``), as a chat transcript reads."""

    LEVEL_ALIGN: ClassVar[dict[str, Any]] = dict.fromkeys(("h1", "h2", "h3", "h4", "h5", "h6"), "left")


class ChatMarkdown(Markdown):
    elements: ClassVar[dict[str, Any]] = {**Markdown.elements, "heading_open": _LeftHeading}


def markdown(text: str) -> Markdown:
    return ChatMarkdown(text, code_theme="ansi_dark", hyperlinks=False)


# rich's Markdown styles, toned for a transcript read on dark and light terminals alike: no black
# background behind inline code, headings bold rather than coloured.
CHAT_THEME = Theme({"markdown.code": "bold cyan", "markdown.h1": "bold underline", "markdown.h2": "bold",
                    "markdown.h3": "bold", "markdown.h4": "bold italic", "markdown.table.header": "bold"})


def chat_console(**options: Any) -> Console:
    return Console(theme=CHAT_THEME, **options)


class MarkdownBlocks:
    """Streamed Markdown cut into blocks that can be rendered on their own: ``feed`` answers the blocks
    completed so far (each ends at a blank line outside a code fence, or at a closing fence) and keeps the
    rest. The scan is incremental: each character is looked at once."""

    def __init__(self) -> None:
        self.pending = ""
        self._scanned = 0  # complete lines of ``pending`` already looked at
        self._fence = ""  # the open fence's marker (```` ``` ```` or ``~~~``), "" outside one
        self._start = 0  # where the block being scanned starts

    def feed(self, chunk: str) -> list[str]:
        self.pending += chunk
        blocks: list[str] = []
        while (end := self.pending.find("\n", self._scanned)) >= 0:
            line_start, line = self._scanned, self.pending[self._scanned:end].strip()
            self._scanned = end + 1
            if self._fence:
                if line.startswith(self._fence) and not line.strip(self._fence[0]):
                    self._fence = ""
                    blocks.append(self.pending[self._start:self._scanned])
                    self._start = self._scanned
            elif line.startswith(("```", "~~~")):
                blocks.append(self.pending[self._start:line_start])  # the text before the fence, if any
                self._start = line_start
                self._fence = line[:3]
            elif not line:
                block = self.pending[self._start:self._scanned]
                if block.strip():
                    blocks.append(block)
                self._start = self._scanned
        if self._start:
            self.pending = self.pending[self._start:]
            self._scanned -= self._start
            self._start = 0
        return [b for b in blocks if b.strip()]

    def rest(self) -> str:
        rest, self.pending, self._scanned, self._fence, self._start = self.pending, "", 0, "", 0
        return rest


class _Trimmed:
    """A renderable without its leading and trailing blank lines (the chat puts one between items)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rendered = console.render_lines(self.renderable, options, pad=False)
        blank = ["".join(s.text for s in line).strip() == "" for line in rendered]
        first = blank.index(False) if False in blank else len(rendered)
        last = len(rendered) - blank[::-1].index(False) if False in blank else 0
        for line in rendered[first:last]:
            yield from line
            yield Segment.line()


class _Tail:
    """The last ``lines`` lines of a renderable (the block being written, above the working line)."""

    def __init__(self, renderable: RenderableType, lines: int) -> None:
        self.renderable, self.lines = renderable, lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rendered = console.render_lines(self.renderable, options, pad=False)
        while rendered and not "".join(s.text for s in rendered[-1]).strip():
            rendered.pop()
        for line in rendered[-self.lines:]:
            yield from line
            yield Segment.line()


@dataclass
class Collapsed:
    """The last tool output shown cut short, for /expand."""

    title: str
    text: str
    failed: bool


def _count(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def money(amount: float) -> str:
    """Dollars as a turn's cost reads: cents, or four places below a cent (``$0.0042``)."""
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


def _amount(record: Any) -> float | None:
    cost = record.get("cost") if isinstance(record, dict) else None
    amount = cost.get("amount") if isinstance(cost, dict) else None
    return float(amount) if isinstance(amount, (int, float)) else None


def spend_line(spend: Any) -> str | None:
    """The turn's summary line: its tokens (input, output, cache read and written) and cost, then the
    session's cost (tokens only for a model without a price: docs/model.md, "Cost"). None without usage."""
    if not isinstance(spend, dict) or not isinstance(spend.get("usage"), dict):
        return None
    usage = spend["usage"]

    def n(key: str) -> int:
        value = usage.get(key)
        return int(value) if isinstance(value, (int, float)) else 0

    parts = [f"{_count(n('inputTokens'))} in", f"{_count(n('outputTokens'))} out"]
    if n("cachedReadTokens"):
        parts.append(f"{_count(n('cachedReadTokens'))} cache read")
    if n("cachedWriteTokens"):
        parts.append(f"{_count(n('cachedWriteTokens'))} cache write")
    turn_cost = _amount(spend)
    parts.append(money(turn_cost) if turn_cost is not None else "no price for this model")
    session = spend.get("session")
    session_cost = _amount(session)
    if session_cost is not None:
        total = f"session {money(session_cost)}"
    else:
        session_usage = session.get("usage") if isinstance(session, dict) else None
        tokens = session_usage.get("totalTokens") if isinstance(session_usage, dict) else None
        total = f"session {_count(int(tokens))} tokens" if isinstance(tokens, (int, float)) else ""
    return " · ".join(parts) + (f" — {total}" if total else "")


class UpdateRenderer:
    def __init__(self, console: Console, cwd: Path | None = None, *, rich_text: bool | None = None) -> None:
        self.console = console
        self.paths = PathDisplay(cwd or Path.cwd())
        # Rendered Markdown and the live working line on a terminal; the raw stream otherwise.
        self.rich_text = console.is_terminal if rich_text is None else rich_text
        self.titles: dict[str, str] = {}
        self.tools: dict[str, str] = {}  # tool call id → the model-facing tool name
        self.nested: set[str] = set()  # calls a sub-agent (Task) made: indented
        # Diffs already shown with a permission question are not repeated when the call completes.
        self.diffs_shown: set[str] = set()
        self.commands: list[dict[str, Any]] = []  # the sidecar's slash commands (available_commands_update)
        self.mode: str | None = None
        self.last_collapsed: Collapsed | None = None
        self._blocks = MarkdownBlocks()
        self._thought = ""
        self._streaming = False  # raw mode: text printed without its final newline yet
        self._last_tool_line: str | None = None  # the tool call whose line was printed last
        self._after_gap = True  # the last line printed is blank (or nothing yet): no gap needed
        # The turn's working line.
        self._live: Live | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._started = 0.0
        self._chars = 0
        self._activity = "Thinking"
        self._notice: Text | None = None  # a retry notice, shown until the model answers
        self._progress: str | None = None  # the running tool's latest output line
        self._interrupting = False

    # ---- the working line -------------------------------------------------------------------------
    def begin_turn(self) -> None:
        self._started = time.monotonic()
        self._chars = 0
        self._activity = "Thinking"
        self._notice = None
        self._progress = None
        self._interrupting = False
        self._after_gap = False  # below the typed prompt
        self._start_live()

    def end_turn(self) -> None:
        self.finish()
        self._stop_live()
        self._notice = None

    def interrupting(self) -> None:
        self._interrupting = True
        if self._live is None:
            self.console.print(Text("Interrupting…", style="yellow"))

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No live area while the user answers a question (the answer is typed below the transcript)."""
        self.finish()
        was_live = self._live is not None
        self._stop_live()
        try:
            yield
        finally:
            self._after_gap = False  # below the typed answer
            if was_live:
                self._start_live()

    def _start_live(self) -> None:
        if self.rich_text and self._live is None:
            # Refreshed from the event loop, never from rich's refresh thread: a refresh racing a print
            # from the loop moved the cursor by a stale height and erased transcript lines above.
            self._live = Live(_WorkingArea(self), console=self.console, auto_refresh=False, transient=True,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
            with contextlib.suppress(RuntimeError):  # no running loop (a unit test): no ticking
                self._ticker = asyncio.get_running_loop().create_task(self._tick(self._live))

    async def _tick(self, live: Live) -> None:
        while self._live is live:
            live.refresh()
            await asyncio.sleep(1 / 8)  # the spinner's frame rate

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def status_line(self) -> Text:
        if self._notice is not None:
            return self._notice
        elapsed = int(time.monotonic() - self._started)
        parts = [f"{elapsed}s"]
        if self._chars:
            parts.append(f"↓ {_count(self._chars // CHARS_PER_TOKEN)} tokens")
        parts.append("ctrl+c to interrupt" if not self._interrupting else "interrupting")
        return Text.assemble((f"{self._activity}… ", "bold magenta"), (f"({' · '.join(parts)})", "dim"))

    def preview(self) -> RenderableType | None:
        if self._thought:
            return _Tail(Text(self._thought, style="dim italic"), PREVIEW_LINES)
        if self._blocks.pending.strip():
            return _Tail(markdown(self._blocks.pending), PREVIEW_LINES)
        return None

    # ---- updates ----------------------------------------------------------------------------------
    def render(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind != "agent_thought_chunk" and kind not in ("usage_update", "available_commands_update"):
            self._end_thought()
        if kind in ("agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"):
            self._notice = None  # the model answered: the retry line goes
        if kind == "agent_message_chunk":
            turn_end = ((update.get("_meta") or {}).get("sidecar") or {}).get("turnEnd")
            text = str((update.get("content") or {}).get("text", ""))
            if turn_end is not None:  # a replayed turn's end: "_Stopped._", an error, or nothing
                self.finish()
                if text:
                    self._print(Text(text.strip("_"), style="dim"), gap=True)
                return
            self._activity = "Writing"
            self._chars += len(text)
            self._text(text)
        elif kind == "agent_thought_chunk":
            text = str((update.get("content") or {}).get("text", ""))
            self._activity = "Thinking"
            self._chars += len(text)
            if self.rich_text:
                self._thought += text
            else:
                self.console.print(Text(text, style="dim italic"), end="")
                self._streaming = True
        elif kind == "user_message_chunk":  # replayed by session/load
            self.finish()
            block = update.get("content") or {}
            shown = block.get("text") if block.get("type") == "text" else f"[{block.get('type', 'content')}]"
            self._print(Text(f"› {shown}", style="bold"), gap=True)
        elif kind == "tool_call":
            self.finish()
            meta = (update.get("_meta") or {}).get("sidecar") or {}
            tool = str(meta.get("tool") or "")
            self.tools[update["toolCallId"]] = tool
            if meta.get("parentToolCallId"):  # a sub-agent's call: under its Task line
                self.nested.add(str(update["toolCallId"]))
            self.titles[update["toolCallId"]] = self.title(str(update.get("title", "")), tool)
            self._activity = f"Running {tool or 'a tool'}"
            self._tool_line(update["toolCallId"])
        elif kind == "tool_call_update":
            if update.get("title"):
                self.titles[update["toolCallId"]] = self.title(str(update["title"]),
                                                               self.tools.get(update["toolCallId"], ""))
            if update.get("status") in ("completed", "failed"):
                self.finish()
                self._activity = "Thinking"
                self._progress = None
                self._tool_result(update)
            elif update.get("status") == "in_progress":
                texts = [str((c.get("content") or {}).get("text", "")) for c in update.get("content") or []
                         if c.get("type") == "content"]
                output = [line for line in "".join(texts).splitlines() if line.strip()]
                if output:  # the running call's latest output line, under the working line
                    self._progress = self.paths(output[-1].strip())
        elif kind == "plan":
            self.finish()
            lines = Text()
            for entry in update.get("entries", []):
                mark = {"completed": "☒", "in_progress": "◐"}.get(entry.get("status", ""), "☐")
                style = "dim strike" if entry.get("status") == "completed" else ""
                lines.append(f"  {mark} ", style="dim").append(str(entry.get("content", "")), style=style)
                lines.append("\n")
            lines.rstrip()
            self._print(lines if lines.plain else Text("  (empty plan)", style="dim"), gap=True)
        elif kind == "current_mode_update":
            if str(update.get("currentModeId")) != self.mode:  # not the client's own change, said already
                self.finish()
                self.mode = str(update.get("currentModeId"))
                self._print(Text(f"Mode: {self.mode}", style="magenta"), gap=True)
        elif kind == "available_commands_update":
            self.commands = list(update.get("availableCommands") or [])

    def title(self, title: str, tool: str = "") -> str:
        """A tool call's title for the terminal: paths relative, a bare command (`` `ls` ``, as the panel
        shows it in code style) as ``Bash(ls)``."""
        title = self.paths(title)
        if len(title) > 1 and title.startswith("`") and title.endswith("`") and "`" not in title[1:-1]:
            title = f"{tool}({title[1:-1]})" if tool else title[1:-1]
        return title

    def _text(self, text: str) -> None:
        if not self.rich_text:
            if text:
                self.console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
                self._streaming = not text.endswith("\n")
            return
        self._last_tool_line = None
        for block in self._blocks.feed(text):
            self._print(_Trimmed(markdown(block)), gap=True)

    def _end_thought(self) -> None:
        if self._thought:
            thought, self._thought = self._thought.strip(), ""
            lines = thought.splitlines()
            if len(lines) > THOUGHT_LINES:
                self.last_collapsed = Collapsed("Thinking", thought, False)
                thought = "\n".join(lines[:THOUGHT_LINES]) + \
                    f"\n… +{len(lines) - THOUGHT_LINES} lines (/expand to see all)"
            if thought:
                self._print(Text("∴ " + thought.replace("\n", "\n  "), style="dim italic"), gap=True)

    def _tool_line(self, call_id: str) -> None:
        indent = "    " if call_id in self.nested else ""
        self._print(Text.assemble(indent, ("● ", "bold blue"), (self.titles.get(call_id, "tool call"), "bold")),
                    gap=not indent)
        self._last_tool_line = call_id

    def _tool_result(self, update: dict[str, Any]) -> None:
        call_id = str(update["toolCallId"])
        failed = update["status"] == "failed"
        contents = update.get("content") or []
        if contents and self._last_tool_line != call_id and call_id in self.titles:
            self._tool_line(call_id)  # another call's lines came in between: say which call this is
        for item in contents:
            if item.get("type") == "diff":
                path = self.paths(str(item.get("path", "")))
                if call_id in self.diffs_shown:
                    self._print(Text(f"  ⎿ {path} updated", style="dim"))
                else:
                    self._print(diff_text(path, item.get("oldText"), item.get("newText", "")))
            elif item.get("type") == "content":
                text = self.paths(str((item.get("content") or {}).get("text", ""))).rstrip("\n")
                lines = text.splitlines() or [""]
                shown = "\n".join(lines[:COLLAPSED_LINES])
                if len(lines) > COLLAPSED_LINES:
                    self.last_collapsed = Collapsed(self.titles.get(call_id, "tool output"), text, failed)
                    shown += f"\n… +{len(lines) - COLLAPSED_LINES} lines (/expand to see all)"
                indent = "    " if call_id in self.nested else ""
                self._print(Text(indent + "  ⎿ " + shown.replace("\n", "\n    " + indent),
                                 style="red" if failed else "dim"))
        self._last_tool_line = None if contents else self._last_tool_line

    def expand(self) -> None:
        """/expand: the last collapsed tool output in full."""
        last = self.last_collapsed
        if last is None:
            self._print(Text("No collapsed output to expand yet.", style="dim"))
            return
        self._print(Text.assemble(("● ", "bold blue"), (last.title, "bold")), gap=True)
        self._print(Text("  ⎿ " + last.text.replace("\n", "\n    "), style="red" if last.failed else ""))

    def retry(self, params: dict[str, Any]) -> None:
        """``_sidecar/model_retry``: on a terminal the working line says it until the model answers; piped
        output keeps it as a line."""
        message = str(params.get("message") or "The model request failed; retrying")
        if self._live is not None:
            self._notice = Text(f"↻ {message}", style="yellow")
            return
        self.finish()
        self.console.print(Text(f"↻ {message}", style="yellow"), markup=False, highlight=False)

    def show(self, renderable: RenderableType, *, gap: bool = True) -> None:
        """Print something of the client's own (a list, a notice) as a transcript item."""
        self.finish()
        self._print(renderable, gap=gap)

    def gap(self) -> None:
        """One blank line unless the last line printed is blank (before the prompt)."""
        if self.rich_text and not self._after_gap:
            self.console.print()
            self._after_gap = True

    def note(self, text: str, style: str = "dim", *, gap: bool = True) -> None:
        self.finish()
        self._print(Text(text, style=style), gap=gap)

    def _print(self, renderable: RenderableType, *, gap: bool = False) -> None:
        """Print above the live area; ``gap``: one blank line before it (between items, as Claude Code
        spaces its transcript), never two."""
        if self._streaming:
            self.console.print()
            self._streaming = False
        if gap and self.rich_text and not self._after_gap:
            self.console.print()
        self.console.print(renderable)
        self._after_gap = False

    def finish(self) -> None:
        """Everything pending is printed: the thought, the block being written."""
        self._end_thought()
        rest = self._blocks.rest()
        if rest.strip():
            self._print(_Trimmed(markdown(rest)), gap=True)
        if self._streaming:
            self.console.print()
            self._streaming = False


class _WorkingArea:
    """What the live area shows: the block being written, then the working line."""

    def __init__(self, renderer: UpdateRenderer) -> None:
        self.renderer = renderer
        self.spinner = Spinner("dots", style="magenta")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.spinner.text = self.renderer.status_line()
        preview = self.renderer.preview()
        parts: list[RenderableType] = [] if self.renderer._after_gap else [Text("")]
        if preview is not None:
            parts += [preview, Text("")]
        parts.append(self.spinner)
        if self.renderer._progress:
            parts.append(Text(f"  ⎿ {self.renderer._progress}", style="dim", no_wrap=True, overflow="ellipsis"))
        yield Group(*parts)

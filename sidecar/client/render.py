"""How the terminal client shows session updates: streamed text, tool cards, coloured diffs."""

from __future__ import annotations

import difflib
from typing import Any

from rich.console import Console
from rich.text import Text


def diff_text(path: str, old: str | None, new: str) -> Text:
    lines = difflib.unified_diff((old or "").splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=path, tofile=path, n=2)
    out = Text()
    for line in lines:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else \
            "cyan" if line.startswith("@@") else "dim"
        out.append(line if line.endswith("\n") else line + "\n", style=style)
    return out


class UpdateRenderer:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.titles: dict[str, str] = {}
        # Diffs already shown with a permission question are not repeated when the call completes.
        self.diffs_shown: set[str] = set()
        self._streaming = False

    def _end_stream(self) -> None:
        if self._streaming:
            self.console.print()
            self._streaming = False

    def render(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self.console.print(update["content"].get("text", ""), end="", markup=False, highlight=False)
            self._streaming = True
        elif kind == "agent_thought_chunk":
            self.console.print(Text(update["content"].get("text", ""), style="dim italic"), end="")
            self._streaming = True
        elif kind == "tool_call":
            self._end_stream()
            self.titles[update["toolCallId"]] = update.get("title", "")
            self.console.print(Text(f"● {update.get('title', '')}", style="bold blue"))
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            self._end_stream()
            for item in update.get("content") or []:
                if item.get("type") == "diff":
                    if update["toolCallId"] in self.diffs_shown:
                        self.console.print(Text(f"  ⎿ {item['path']} updated", style="dim"))
                    else:
                        self.console.print(diff_text(item["path"], item.get("oldText"), item.get("newText", "")))
                elif item.get("type") == "content":
                    text = str(item["content"].get("text", ""))
                    lines = text.splitlines()
                    shown = "\n".join(lines[:6]) + (f"\n  … {len(lines) - 6} more lines" if len(lines) > 6 else "")
                    style = "red" if update["status"] == "failed" else "dim"
                    self.console.print(Text("  ⎿ " + shown.replace("\n", "\n    "), style=style))
        elif kind == "plan":
            self._end_stream()
            for entry in update.get("entries", []):
                mark = {"completed": "☒", "in_progress": "◐"}.get(entry.get("status", ""), "☐")
                self.console.print(f"  {mark} {entry.get('content', '')}")
        elif kind == "current_mode_update":
            self._end_stream()
            self.console.print(Text(f"[mode: {update.get('currentModeId')}]", style="magenta"))

    def retry(self, params: dict[str, Any]) -> None:
        """``_sidecar/model_retry``: the model request failed and is being retried."""
        self._end_stream()
        self.console.print(Text(f"↻ {params.get('message', 'The model request failed; retrying')}",
                                style="yellow"), markup=False, highlight=False)

    def finish(self) -> None:
        self._end_stream()

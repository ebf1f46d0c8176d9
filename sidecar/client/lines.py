"""Where the terminal client's typed lines come from: a line editor on a terminal, stdin otherwise.

On a terminal (``prompt_toolkit``): history, Alt-Enter (or a trailing ``\\``) for a new line, completion
of ``/`` commands, Shift-Tab for the next permission mode (``NextMode``); Ctrl-C clears a line with text
and raises ``Interrupted`` on an empty one; Ctrl-D on an empty line is the end (``None``). Between prompts
the terminal's echo is off (``quiet_terminal``), so keys pressed while the model works do not scribble
over the working line, and Ctrl-C still reaches the client as SIGINT. Piped stdin is read by a daemon
thread, so a client that exits never waits for a line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent


class Interrupted(Exception):
    """Ctrl-C at a prompt."""


class NextMode(Exception):
    """Shift-Tab at the chat's prompt: the next permission mode; ``text`` is what was typed so far."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class LineSource(Protocol):
    interactive: bool

    async def read(self, prompt: str, *, main: bool = False, default: str = "") -> str | None:
        """One line (``None``: the end of input). ``main``: the chat's own prompt (history, completion);
        ``default``: text already in the line."""
        ...


class PipedLines:
    """Lines from a stdin that is not a terminal (answers and prompts from a pipe or a file)."""

    interactive = False

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo = echo
        self._queue: asyncio.Queue[str | None] | None = None

    def _start(self) -> asyncio.Queue[str | None]:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def pump() -> None:
            try:
                for line in sys.stdin:
                    loop.call_soon_threadsafe(queue.put_nowait, line)
            except (OSError, ValueError, RuntimeError):
                pass
            with contextlib.suppress(RuntimeError):  # the loop may be closed already
                loop.call_soon_threadsafe(queue.put_nowait, None)

        threading.Thread(target=pump, name="stdin", daemon=True).start()
        return queue

    async def read(self, prompt: str, *, main: bool = False, default: str = "") -> str | None:
        if self._queue is None:
            self._queue = self._start()
        self.echo(prompt)
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)  # the end stays the end
            return None
        return line.rstrip("\n").strip()


class SlashCompleter(Completer):
    """``/`` commands: the client's own and the sidecar's (``available_commands_update``)."""

    def __init__(self, commands: Callable[[], Iterable[tuple[str, str]]]) -> None:
        self.commands = commands

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text:
            return
        for name, description in self.commands():
            if name.startswith(text[1:]):
                yield Completion("/" + name, start_position=-len(text), display_meta=description)


class TerminalLines:
    interactive = True

    def __init__(self, history_file: Path | None, commands: Callable[[], Iterable[tuple[str, str]]]) -> None:
        history: History = InMemoryHistory()
        if history_file is not None:
            with contextlib.suppress(OSError):
                history_file.parent.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(history_file))
        keys = KeyBindings()

        @keys.add("c-c", filter=Condition(lambda: bool(self._session.default_buffer.text)))
        def _clear(event: KeyPressEvent) -> None:
            event.current_buffer.reset()  # Ctrl-C with text clears the line, as in a shell

        @keys.add("s-tab", filter=Condition(lambda: self._session is self._main))
        def _next_mode(event: KeyPressEvent) -> None:
            event.app.erase_when_done = True  # the prompt comes back in the new mode, with the text
            event.app.exit(exception=NextMode(event.current_buffer.text))

        @keys.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("enter", filter=Condition(lambda: self._session.default_buffer.text.endswith("\\")))
        def _continued(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")

        self._main: PromptSession[str] = PromptSession(
            history=history, key_bindings=keys, completer=SlashCompleter(commands),
            complete_while_typing=Condition(lambda: self._session.default_buffer.text.startswith("/")),
            reserve_space_for_menu=6)
        self._answers: PromptSession[str] = PromptSession(history=InMemoryHistory())
        self._session = self._main

    async def read(self, prompt: str, *, main: bool = False, default: str = "") -> str | None:
        """Raises ``NextMode`` on Shift-Tab at the chat's prompt (``main``)."""
        self._session = self._main if main else self._answers
        self._session.app.erase_when_done = False
        message = FormattedText([("bold", prompt)])
        try:
            # SIGINT stays the client's (it interrupts turns): in the line editor Ctrl-C is a key anyway.
            text = await self._session.prompt_async(message, handle_sigint=False, default=default)
        except EOFError:
            return None
        except KeyboardInterrupt:
            raise Interrupted from None
        return text.strip()


@contextlib.contextmanager
def quiet_terminal() -> Iterator[None]:
    """Echo off on a terminal stdin while the model works (Ctrl-C still signals); restored after."""
    try:
        import termios  # POSIX only: elsewhere the echo stays as it is
    except ImportError:
        yield
        return
    try:
        fd = sys.stdin.fileno() if sys.stdin is not None else -1
        before = termios.tcgetattr(fd) if fd >= 0 and os.isatty(fd) else None
    except (termios.error, OSError, ValueError):
        before = None
    if before is None:
        yield
        return
    quiet = list(before)
    quiet[3] = quiet[3] & ~termios.ECHO
    with contextlib.suppress(termios.error, OSError):
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSANOW, before)

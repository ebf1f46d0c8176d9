"""A terminal for tests: a program in a pseudo-terminal (``pexpect``) whose output feeds a VT100 screen
(``pyte``), so a test reads what a person would see — rendered text, not escape codes — and waits on it.

The screen answers the program's cursor-position requests as a real terminal does (``prompt_toolkit``
asks). Waits read the program's output until the screen shows a pattern; none sleeps.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pexpect
import pyte

ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")


class _Screen(pyte.HistoryScreen):
    def __init__(self, cols: int, rows: int) -> None:
        super().__init__(cols, rows, history=5000, ratio=0.5)
        self.child: pexpect.spawn[str] | None = None

    def write_process_input(self, data: str) -> None:
        if self.child is not None:
            self.child.send(data)


class Terminal:
    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path, rows: int = 50, cols: int = 100) -> None:
        self.screen = _Screen(cols, rows)
        self.stream = pyte.Stream(self.screen)
        self.raw: list[str] = []  # everything the program wrote, escape codes included
        self.child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(cwd), dimensions=(rows, cols),
                                   encoding="utf-8", codec_errors="replace")
        self.screen.child = self.child

    # ---- reading ------------------------------------------------------------------------------------
    def _pump(self, timeout: float) -> bool:
        """Feed what the program wrote within ``timeout``; False at its end (EOF)."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw.append(data)
        self.stream.feed(data)
        return True

    def lines(self) -> list[str]:
        """Every line of the screen, scrolled-off ones first, without trailing blanks."""
        def text(line: Any) -> str:
            return "".join(line[x].data for x in range(self.screen.columns)).rstrip()

        return [text(line) for line in self.screen.history.top] + [text(self.screen.buffer[y])
                                                                    for y in range(self.screen.lines)]

    def text(self) -> str:
        return "\n".join(self.lines()).rstrip()

    def output(self) -> str:
        """Everything written, escape codes removed (what scrolled or was erased included)."""
        return ANSI.sub("", "".join(self.raw))

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        """Until the screen shows ``pattern`` (a regular expression, multi-line)."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern, re.MULTILINE)
        while True:
            match = regex.search(self.text())
            if match:
                return match
            left = deadline - time.monotonic()
            if left <= 0 or not self._pump(min(left, 5)):
                match = regex.search(self.text())
                if match:
                    return match
                raise AssertionError(f"the screen never showed {pattern!r}; it shows:\n{self.text()}")

    def bold(self, word: str) -> bool:
        """Whether ``word`` is on the visible screen in bold (its first occurrence as a whole word)."""
        for y in range(self.screen.lines):
            row = self.screen.buffer[y]
            line = "".join(row[x].data for x in range(self.screen.columns))
            match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", line)
            if match:
                return all(row[x].bold for x in range(match.start(), match.end()))
        return False

    def wait_exit(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while self._pump(max(0.1, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                raise AssertionError(f"the program did not exit; the screen shows:\n{self.text()}")
        self.child.wait()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0))

    # ---- typing -------------------------------------------------------------------------------------
    def type(self, text: str) -> None:
        """Type ``text`` and press Enter."""
        self.child.send(text + "\r")

    def key(self, name: str) -> None:
        self.child.send({"ctrl-c": "\x03", "ctrl-d": "\x04", "enter": "\r", "shift-tab": "\x1b[Z"}[name])

    def send(self, text: str) -> None:
        """Type ``text`` without pressing Enter."""
        self.child.send(text)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)

"""The offline demo's script: what the bundled scripted model "says", turn by turn.

Paths are absolute in the workspace the demo runs in. The last turn reads the real test output from
the request it answers, so what it says is true of what the tools did.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.testing.scripted_server import RecordedRequest

DEMO_PROMPT = "The add() function in calc.py is wrong. Fix it and run the tests."


def demo_turns(cwd: Path) -> list[Any]:
    calc = str(cwd / "calc.py")

    def summary(request: RecordedRequest) -> dict[str, Any]:
        results = request.tool_results()
        output = "".join(b.get("text", "") for r in results for b in r.get("content", []) if isinstance(b, dict))
        if "all tests passed" in output:
            text = "Fixed: `add()` subtracted instead of adding. The tests pass now (`python3 test_calc.py`)."
        else:
            text = f"I changed `add()`, but the test run did not confirm it:\n\n```\n{output[:500]}\n```"
        return {"content": [{"type": "text", "text": text}]}

    return [
        {"content": [{"type": "text", "text": "I'll look at the project first."},
                     {"type": "tool_use", "name": "Glob", "input": {"pattern": "**/*.py", "path": str(cwd)}}]},
        {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": calc}}]},
        {"content": [{"type": "text", "text": "`add()` returns `a - b`. Fixing it:"},
                     {"type": "tool_use", "name": "Edit",
                      "input": {"file_path": calc, "old_string": "return a - b", "new_string": "return a + b"}}]},
        {"content": [{"type": "tool_use", "name": "Bash",
                      "input": {"command": "python3 test_calc.py", "description": "Run the tests"}}]},
        summary,
    ]

"""The Bash family: Bash, BashOutput, KillShell, and ``sidecar check-command`` (docs/bash.md)."""

from __future__ import annotations

from typing import Any

from sidecar.tools.base import Tool


def bash_tools() -> list[Tool[Any]]:
    from sidecar.tools.bash.bash import Bash
    from sidecar.tools.bash.bash_output import BashOutput
    from sidecar.tools.bash.kill_shell import KillShell

    return [Bash(), BashOutput(), KillShell()]

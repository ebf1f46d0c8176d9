"""Trust granted by the editor before the first prompt (``features.resolve_trust``): the rebuilt system
prompt and the trusted settings' ``defaultMode`` apply together, also for a prompt sent while the system
prompt's ``git status`` is still running."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sidecar.features import resolve_trust
from sidecar.permissions.trust import trust_of
from tests.permissions.perm_support import make_session, write_settings
from tests.server.test_never_stalls import HELD_GIT, _commit_all


def held_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A repository (with a HEAD: the prompt's git status runs) whose trusted settings bring acceptEdits and
    whose CLAUDE.md imports a file outside it; ``git status`` waits for ``<held>/go`` (``<held>/started``
    once it waits). Returns (workspace, held)."""
    real_git = shutil.which("git")
    assert real_git is not None
    ws = tmp_path / "ws"
    ws.mkdir()
    write_settings(ws / ".claude" / "settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
    (tmp_path / "outside.md").write_text("OUTSIDE-MARKER\n")
    (ws / "CLAUDE.md").write_text(f"@{tmp_path / 'outside.md'}\n")
    _commit_all(ws, real_git)
    held = tmp_path / "held-git"
    (held / "bin").mkdir(parents=True)
    (held / "bin" / "git").write_text(HELD_GIT.format(git=real_git))
    (held / "bin" / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{held / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("HELD_GIT_DIR", str(held))
    return ws, held


async def test_a_prompt_sent_while_the_grant_builds_the_prompt_waits_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, held = held_workspace(tmp_path, monkeypatch)

    session = make_session(ws, trusted=False)  # the editor's Restricted Mode, then trust granted
    assert session.mode == "default"
    trust = trust_of(session)
    assert trust is not None
    trust.trusted, trust.granted_pending = True, True  # what ``_sidecar/workspace_trust`` sets
    first = asyncio.create_task(resolve_trust(session))
    while not (held / "started").exists():  # the rebuilt prompt's git status is held
        assert not first.done()
        await asyncio.sleep(0.01)

    async def second_prompt() -> tuple[str, str]:
        """What a prompt sent now runs with: the system prompt and the mode, then its turn starts."""
        await resolve_trust(session)
        seen = (session.system_prompt, session.mode)
        message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": "second"}]}
        session.append_message(message)
        return seen

    second = asyncio.create_task(second_prompt())
    for _ in range(200):  # no time passes: the second prompt runs as far as it can without the held git
        if second.done():
            break
        await asyncio.sleep(0)
    (held / "go").touch()
    await first
    system_prompt, mode = await second
    assert "OUTSIDE-MARKER" in system_prompt and mode == "acceptEdits"
    assert session.mode == "acceptEdits"


async def test_a_prompt_stopped_while_the_grant_builds_the_prompt_leaves_the_grant_for_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stop (session/cancel) while the grant's system prompt is built: nothing of the grant applied, and
    the next prompt applies all of it (the prompt with the memory import, the trusted defaultMode). Before,
    the pending grant was cleared first and lost with the stopped build."""
    ws, held = held_workspace(tmp_path, monkeypatch)

    session = make_session(ws, trusted=False)
    trust = trust_of(session)
    assert trust is not None
    trust.trusted, trust.granted_pending = True, True
    stopped = asyncio.create_task(resolve_trust(session))
    while not (held / "started").exists():
        assert not stopped.done()
        await asyncio.sleep(0.01)
    stopped.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopped
    assert session.mode == "default" and "OUTSIDE-MARKER" not in (session.system_prompt or "")
    (held / "go").touch()  # git answers at once from now on
    await resolve_trust(session)  # the next prompt
    assert "OUTSIDE-MARKER" in (session.system_prompt or "") and session.mode == "acceptEdits"

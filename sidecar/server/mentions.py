"""The composer's mentions the sidecar resolves itself, before a prompt reaches the model (issue 30).

The panel sends a mention as an ACP ``resource_link``; this turns the ones that name something the
sidecar must fetch or run into text blocks, each shown in the chat as a tool call card (what the model
got, or why it got nothing):

- ``https://…`` / ``http://…``: the page, through the WebFetch tool itself (``Dispatcher.run``: URL
  safety, loopback/private refusals, hooks, permission rules and the user's answer, size bounds,
  redaction), so a mention has no governance of its own (docs/web.md "@url").
- ``sidecar://git/diff``: ``git diff HEAD`` of the working tree; ``sidecar://git/commit/<sha>``: one
  commit. Run as the system prompt's ``git status`` is: the safe git environment (no fsmonitor, hooks,
  pager), no external diff or textconv, the repository's filter drivers blanked, and before trust
  nothing when git here points outside the workspace (docs/permissions.md, "doors").

Other blocks pass through unchanged, block for block (the core converted them once already and converts
only the resolved mentions' text: ``SessionCore._run_agent``).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.secrets import redact, scrubbed_env
from sidecar.shell.gitdir import left_out_outside
from sidecar.workspace.gitenv import filter_overrides, repo_programs, safe_git_env

if TYPE_CHECKING:
    from sidecar.session import Session

GIT_DIFF_URI = "sidecar://git/diff"
GIT_COMMIT_PREFIX = "sidecar://git/commit/"
# What the model gets of a diff at most (a tool result's bound); the stat above it names every file.
MAX_GIT_CHARS = 30_000
_MAX_GIT_BYTES = 4 * MAX_GIT_CHARS
_GIT_TIMEOUT = 10.0
_MAX_UNTRACKED = 50
_SHA = re.compile(r"[0-9a-fA-F]{4,40}")
# What WebFetch is asked about a page the user attached when the message has no text of its own.
URL_PROMPT = "The user attached this page to their message: give its content."


def is_url(uri: str) -> bool:
    return uri.lower().startswith(("http://", "https://"))


def is_git(uri: str) -> bool:
    return uri == GIT_DIFF_URI or uri.startswith(GIT_COMMIT_PREFIX)


async def expand_mentions(session: Session, blocks: list[Any]) -> list[Any]:
    """``blocks`` with each URL and git mention replaced by the text the model gets for it (a new text
    block in its place; every other block is the same object as before)."""
    if not any(_mention_uri(b) for b in blocks):
        return blocks
    typed = "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    out: list[Any] = []
    for block in blocks:
        uri = _mention_uri(block)
        if uri is None:
            out.append(block)
        elif is_url(uri):
            out.append({"type": "text", "text": await fetch_url(session, uri, typed.strip() or URL_PROMPT)})
        else:
            out.append({"type": "text", "text": await git_mention(session, uri)})
    return out


def _mention_uri(block: Any) -> str | None:
    if not isinstance(block, dict) or block.get("type") != "resource_link":
        return None
    uri = str(block.get("uri", ""))
    return uri if is_url(uri) or is_git(uri) else None


# ---------------------------------------------------------------------------------------------- @url

async def fetch_url(session: Session, url: str, prompt: str) -> str:
    """The page at ``url`` as WebFetch answers the model (a card in the chat shows the call), or why not."""
    from sidecar.tools.dispatch import Dispatcher, ToolCall
    from sidecar.tools.registry import REGISTRY

    dispatcher = Dispatcher(session, session.service(REGISTRY))
    call = ToolCall(id=f"mention_{uuid.uuid4().hex[:12]}", name="WebFetch", input={"url": url, "prompt": prompt})
    await dispatcher.announce(call)
    result = await dispatcher.run(call)
    text = result.output.joined_text()
    attr = _attr(url)
    if result.output.is_error:
        return (f'<fetched-url url="{attr}" error="true">\nThe user attached this URL, but it was not fetched: '
                f"{text}\n</fetched-url>")
    return f'<fetched-url url="{attr}">\n{text}\n</fetched-url>'


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


# ---------------------------------------------------------------------------------------------- @git

async def git_mention(session: Session, uri: str) -> str:
    """The diff or commit ``uri`` names, as the model gets it; a card in the chat shows the same text."""
    if uri.startswith(GIT_COMMIT_PREFIX):
        sha = uri[len(GIT_COMMIT_PREFIX):]
        title = f"git show {sha}"
    else:
        sha = None
        title = "git diff HEAD"
    call_id = f"mention_{uuid.uuid4().hex[:12]}"
    await session.send_update({"sessionUpdate": "tool_call", "toolCallId": call_id, "title": title,
                               "kind": "read", "status": "in_progress", "rawInput": {"mention": uri},
                               "_meta": {"sidecar": {"tool": "@git"}}})
    failed = False
    try:
        body = redact(await git_text(session, sha))
    except GitMentionError as exc:
        body, failed = str(exc), True
    tag = "git-commit" if sha else "git-diff"
    where = _attr(str(session.cwd))
    if failed:
        text = f'<{tag} cwd="{where}" error="true">\n{body}\n</{tag}>'
    else:
        text = f'<{tag} cwd="{where}" command="{_attr(title)}">\n{body}\n</{tag}>'
    await session.send_update({"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                               "status": "failed" if failed else "completed",
                               "content": [{"type": "content", "content": {"type": "text", "text": body}}]})
    return text


class GitMentionError(Exception):
    """Why a git mention has no content (said to the model and in the chat)."""


async def git_text(session: Session, sha: str | None) -> str:
    """``git diff HEAD`` (with its stat and the untracked files) or ``git show <sha>`` at the session's cwd,
    bounded to ``MAX_GIT_CHARS``. Raises ``GitMentionError`` with what to do when there is none."""
    cwd = Path(session.cwd)
    if sha is not None and not _SHA.fullmatch(sha):
        raise GitMentionError(f"{sha!r} is not a commit id: mention a commit as `@git <sha>` (4 to 40 hex digits).")
    from sidecar.memory.nested import IMPORT_POLICY

    left_out = left_out_outside(cwd, [Path(r) for r in session.roots], session.find_service(IMPORT_POLICY))
    if left_out is not None:
        raise GitMentionError(f"Left out: {left_out}.")
    # No program the repository names runs: the safe environment (fsmonitor, hooks, pager), no external
    # diff, no textconv, and its filter drivers blanked for this run.
    base = ["git", *filter_overrides(repo_programs(cwd)), "--no-optional-locks"]
    # Paths relative to the cwd, inside it only (the workspace's part of the repository).
    plain = ["--no-ext-diff", "--no-textconv", "--no-color", "--relative"]
    denied = _read_denied(session)
    if sha is not None:
        listed, err, code = await _git([*base, "show", *plain, "--name-only", "--format=", "-z", "--end-of-options",
                                        sha, "--"], cwd, whole=True)
        if code != 0:
            raise GitMentionError(f"git show {sha} failed: {err.strip() or 'no such commit'}. "
                                  "Check the commit id (`git log --oneline` lists them).")
        hidden = [n for n in listed.split("\0") if n and denied(cwd / n)]
        out, err, code = await _git([*base, "show", *plain, "--stat", "--patch", "--end-of-options", sha, "--", ".",
                                     *_excluded(hidden)], cwd)
        if code != 0:
            raise GitMentionError(f"git show {sha} failed: {err.strip()}")
        return _bounded(_with_hidden(out.rstrip(), hidden), f"git show {sha} -- <path>")
    _, err, code = await _git([*base, "rev-parse", "--verify", "HEAD"], cwd)
    if code != 0:
        if "not a git repository" in err:
            raise GitMentionError(f"{cwd} is not in a git repository: there are no changes to show.")
        raise GitMentionError(f"The repository has no commit yet (git: {err.strip()}); nothing to diff against.")
    changed, _, _ = await _git([*base, "diff", *plain, "--name-only", "-z", "HEAD", "--", "."], cwd, whole=True)
    # Only names, shown a few at a time (none is in the diff): a cut list costs no content.
    untracked, _, _ = await _git([*base, "ls-files", "--others", "--exclude-standard", "-z", "--", "."], cwd)
    hidden = [n for n in changed.split("\0") if n and denied(cwd / n)]
    names = [n for n in untracked.split("\0") if n]
    hidden += [n for n in names if denied(cwd / n)]
    names = [n for n in names if not denied(cwd / n)]
    spec = ["--", ".", *_excluded(hidden)]
    stat, _, _ = await _git([*base, "diff", *plain, "--stat", "HEAD", *spec], cwd)
    diff, err, code = await _git([*base, "diff", *plain, "HEAD", *spec], cwd)
    if code != 0:
        raise GitMentionError(f"git diff HEAD failed: {err.strip()}")
    parts = [stat.rstrip() if stat.strip() else "No changes to tracked files since HEAD."]
    if names:
        shown = ", ".join(names[:_MAX_UNTRACKED]) + (f" … {len(names) - _MAX_UNTRACKED} more"
                                                     if len(names) > _MAX_UNTRACKED else "")
        parts.append(f"Untracked files (not in the diff): {shown}")
    if diff.strip():
        parts.append(diff.rstrip())
    return _bounded(_with_hidden("\n\n".join(parts), hidden), "git diff HEAD -- <path>")


def _read_denied(session: Session) -> Callable[[Path], bool]:
    """The Read deny rules' test (a file they name is left out of the diff, as Grep leaves it out)."""
    gate = session.permissions
    test = gate.read_denied() if gate is not None and callable(getattr(gate, "read_denied", None)) else None
    return test if callable(test) else (lambda _path: False)


def _excluded(paths: list[str]) -> list[str]:
    return [f":(exclude,literal){p}" for p in paths]


def _with_hidden(text: str, hidden: list[str]) -> str:
    if not hidden:
        return text
    return text + f"\n\nLeft out (a Read deny rule names them): {', '.join(sorted(set(hidden)))}"


def _bounded(text: str, rest: str) -> str:
    if len(text) <= MAX_GIT_CHARS:
        return text
    return (text[:MAX_GIT_CHARS] + f"\n[… cut at {MAX_GIT_CHARS} of {len(text)} characters; "
            f"run `{rest}` for the files cut off]")


async def _read_bounded(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Up to ``limit`` bytes, until EOF (``StreamReader.read(n)`` returns what is buffered, not n bytes)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await stream.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


async def _git(argv: list[str], cwd: Path, *, whole: bool = False) -> tuple[str, str, int]:
    """git's output, its errors and exit code. A huge output is cut at a bound; ``whole``: a cut output
    (a name list the Read deny rules are checked against) is refused instead."""
    env = safe_git_env(scrubbed_env())
    try:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        raise GitMentionError(f"git could not be started ({exc}); is git installed?") from None
    assert proc.stdout is not None and proc.stderr is not None
    try:
        # Read at most a bound's worth (a huge diff is cut, not held in memory), stderr meanwhile (a full
        # pipe would block git).
        async def read_out(stream: asyncio.StreamReader) -> bytes:
            data = await _read_bounded(stream, _MAX_GIT_BYTES)
            if len(data) >= _MAX_GIT_BYTES:
                proc.kill()  # at the bound: git would wait on the full pipe, and its stderr never end
            return data

        async with asyncio.timeout(_GIT_TIMEOUT):
            out, err = await asyncio.gather(read_out(proc.stdout), _read_bounded(proc.stderr, 65536))
            cut = len(out) >= _MAX_GIT_BYTES
            code = await proc.wait()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise GitMentionError(f"git took longer than {_GIT_TIMEOUT:.0f} s and was stopped.") from None
    if cut:
        if whole:
            raise GitMentionError("Too many changed files to check against the Read deny rules; mention "
                                  "the files themselves instead.")
        code = 0  # cut on purpose
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), code

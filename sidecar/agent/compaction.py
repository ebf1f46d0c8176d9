"""Long sessions: token accounting and compaction of the conversation near the context window.

Before each model request of the main agent, the request's size is estimated (the larger of the last
reply's reported usage and the request's JSON characters / 4); when the estimate crosses the line,
the API's ``count_tokens`` confirms it (the estimate stands if the endpoint has none). Over
``AUTO_COMPACT_AT`` of the context window (setting ``contextWindow`` / env ``SIDECAR_CONTEXT_WINDOW``),
older messages are summarised by the model and replaced with the summary; the most recent messages
(up to ``KEEP_RECENT`` of the window) are kept as they are. The cut is always before an assistant
message, so no tool result loses its call.

The read ledger stays honest: a file whose reads and edits were all summarised away counts as not
read, so Edit/Write refuse it until it is read again. ``/compact [instructions]`` compacts on demand
and ``/clear`` starts the conversation afresh (both slash commands are published with
``available_commands_update``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.model.pricing import charge
from sidecar.workspace.checkpoints import CHECKPOINTS
from sidecar.workspace.ledger import LEDGER

if TYPE_CHECKING:
    from sidecar.agent.loop import AgentLoop
    from sidecar.session import Session

log = logging.getLogger(__name__)

AUTO_COMPACT_AT = 0.8
KEEP_RECENT = 0.3
SUMMARY_MAX_TOKENS = 8_000
FILE_TOOLS = {"Read": "file_path", "Edit": "file_path", "Write": "file_path", "NotebookEdit": "notebook_path"}

SUMMARY_INSTRUCTIONS = """Your task is to summarise the conversation so far so that the work can continue \
without it. This summary replaces the earlier messages. Write it in these sections:
1. The user's requests and intent, in order, with their exact wording where it matters.
2. Key technical facts, decisions and constraints.
3. Files and code: each file read or changed, why, and the important snippets.
4. Errors met and how they were fixed; the user's feedback.
5. Pending tasks and the current work, precisely where it stopped, and the next step.
Reply with the summary only; do not call tools."""

SUMMARY_PREFIX = ("This session continues a conversation that ran out of context. The earlier messages were "
                  "replaced by this summary:\n\n")


def estimate_tokens(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False)) // 4


def request_tokens(agent: AgentLoop) -> int:
    used = int((agent.session.last_usage or {}).get("used") or 0)
    return max(agent.request_chars() // 4, used if agent.session.usage_valid else 0)


async def before_model_request(agent: AgentLoop) -> None:
    """The loop hook: compact the main agent's conversation when it nears the window."""
    if agent.label is not None:
        return
    window = agent.model.settings.context_window
    tokens = request_tokens(agent)
    agent.session.usage_valid = True
    if tokens < window * AUTO_COMPACT_AT:
        return
    try:  # the estimate says compact: confirm with the API's own count before summarising
        request = agent.build_request()
        request.pop("extra_headers", None)
        tokens = await agent.model.count_tokens(request)
    except Exception as exc:  # an endpoint without count_tokens: trust the estimate
        log.debug("count_tokens failed (%s); using the estimate", exc)
    if tokens < window * AUTO_COMPACT_AT:
        return
    log.info("context at %d of %d tokens: compacting", tokens, window)
    await compact(agent, keep_tokens=int(window * KEEP_RECENT))


def _cut_index(messages: list[dict[str, Any]], keep_tokens: int) -> int:
    """Index of the assistant message from which to keep (0 when nothing can be summarised)."""
    candidates = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and i >= 2]
    if not candidates:
        return 0
    for i in candidates:  # earliest first: keep as much as fits
        if estimate_tokens(messages[i:]) <= keep_tokens:
            return i
    return candidates[-1]


def _touched_paths(messages: list[dict[str, Any]]) -> set[Path]:
    paths: set[Path] = set()
    for m in messages:
        for block in m.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") in FILE_TOOLS:
                raw = (block.get("input") or {}).get(FILE_TOOLS[block["name"]])
                if isinstance(raw, str) and raw:
                    try:
                        paths.add(Path(raw).resolve())
                    except OSError:
                        paths.add(Path(raw))
    return paths


async def summarise(agent: AgentLoop, messages: list[dict[str, Any]], instructions: str = "") -> str:
    """Ask the model for a summary of ``messages``, with the same prefix (tools, system) as the agent."""
    request = agent.build_request()
    ask = SUMMARY_INSTRUCTIONS + (f"\n\nAdditional instructions from the user: {instructions}" if instructions else "")
    ask_message = {"role": "user", "content": [{"type": "text", "text": ask}]}
    request["messages"] = [*json.loads(json.dumps(messages)), ask_message]
    request["max_tokens"] = min(SUMMARY_MAX_TOKENS, int(request.get("max_tokens") or SUMMARY_MAX_TOKENS))
    if (request.get("thinking") or {}).get("type") == "enabled":
        # A token budget would not fit the summary's smaller max_tokens; earlier thinking blocks stay
        # in the history unmodified (the API accepts them with thinking off). Adaptive thinking stays.
        del request["thinking"]
    request["tool_choice"] = {"type": "none"}
    reply = await agent.model.complete(request)
    charge(agent.session, str(request["model"]), reply.usage, agent.model.settings.prices)
    text = "".join(b.get("text", "") for b in reply.content if b.get("type") == "text").strip()
    return text or "(the model returned an empty summary)"


async def compact(agent: AgentLoop, keep_tokens: int = 0, instructions: str = "") -> bool:
    """Summarise the older part of the conversation in place. False when there was nothing to compact."""
    session = agent.session
    messages = agent.conversation.messages
    cut = _cut_index(messages, keep_tokens) if keep_tokens > 0 else len(messages)
    if cut <= 0 or not messages:
        return False
    older, kept = messages[:cut], messages[cut:]
    summary = await summarise(agent, older, instructions)
    summary_message = {"role": "user", "content": [{"type": "text", "text": SUMMARY_PREFIX + summary}]}
    replace_history(session, [summary_message, *kept])
    # Files seen only in the summarised part count as not read: Edit/Write need a fresh Read.
    ledger = session.find_service(LEDGER)
    forgotten = sorted(_touched_paths(older) - _touched_paths(kept))
    if ledger is not None:
        for path in forgotten:
            ledger.forget(path)
    checkpoints = session.find_service(CHECKPOINTS)
    if checkpoints is not None:
        checkpoints.compacted()
    session.usage_valid = False
    session.audit("compacted", summarised=len(older), kept=len(kept), forgotten=[str(p) for p in forgotten])
    await session.send_update({"sessionUpdate": "agent_thought_chunk", "content": {
        "type": "text", "text": f"(Context compacted: {len(older)} earlier messages summarised.)\n"}})
    await session.send_update({"sessionUpdate": "usage_update", "used": request_tokens(agent),
                               "size": agent.model.settings.context_window})
    return True


def replace_history(session: Session, messages: list[dict[str, Any]]) -> None:
    """Replace the conversation in memory and in the store (a truncate event, then the new messages)."""
    session.history[:] = messages
    session.log.truncate(0)
    for m in messages:
        session.log.message(m)

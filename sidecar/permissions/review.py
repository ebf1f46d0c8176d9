"""The review of a proposed edit: approve exactly what was shown, never lose the user's work.

The file tools (Edit, Write, NotebookEdit) call ``review_edit`` from their ``check_permission`` step with
the file's current text and the proposed text, before writing anything. It goes through the gate's one
asking path (``PermissionGate.require``: decide with rules, hooks and mode, audit) with its own question
for when the user must decide:

- clients that advertise ``reviewEdit`` get ``_sidecar/review_edit`` (docs/contract.md §3.3): the user accepts
  the whole proposal, some hunks, their own changed version (``finalText``), or rejects it with feedback;
- other clients get ``session/request_permission`` with ACP diff content (whole proposal or nothing).

It returns what should land and what to tell the model. What lands is computed on the ORIGINAL text
(accepted hunks are applied to ``old_text``). If the file changed on disk between the proposal and the
answer, the proposal is void: nothing lands and the model is told to re-read.

Every refusal raises ToolError, once, in ``PermissionGate.require``: by rule, hook or plan mode with the
gate's words, the user's answers (reject, cancel) and a void proposal with the review's (the outcome's
``summary_for_model``, handed to ``require`` as the answer's message). A rejected edit is never reported
as success.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sidecar.client_messages import Hunk, ReviewEditParams, ReviewEditResult
from sidecar.errors import ClientRequestError
from sidecar.permissions.gate import CallContext, UserAnswer, rejection_message
from sidecar.permissions.request import PermissionRequest
from sidecar.workspace.diffs import apply_hunks, make_diff

log = logging.getLogger(__name__)

Landed = Literal["as_proposed", "some_hunks", "user_changed", "rejected", "cancelled", "void"]


@dataclass
class ReviewOutcome:
    """What the review decided.

    ``approved``: write ``final_text`` (staleness re-checked by the caller at write time); ``review_edit``
    returns only approved outcomes (a refused one is its ToolError).
    ``summary_for_model``: when approved, "" if the proposal landed exactly as proposed, else what differs
    (hunks dropped, the user's own changes as a diff) — append it to the tool result. When not approved,
    the whole error message for the model (rejection and feedback, cancellation, or a void proposal).
    ``editor_content``: ACP diff content of what lands, for the tool's final ``tool_call_update``.
    """

    approved: bool
    final_text: str | None
    summary_for_model: str
    feedback: str | None = None
    landed: Landed = "as_proposed"
    accepted_hunks: list[int] | None = None
    editor_content: list[dict[str, Any]] = field(default_factory=list)


def diff_content(path: Path, old_text: str | None, new_text: str) -> dict[str, Any]:
    return {"type": "diff", "path": str(path), "oldText": old_text, "newText": new_text}


def suggested_edit_rule(path: Path, cwd: Path) -> str:
    """The "always allow" rule for an edit, kept for the session: the file's folder."""
    folder = path.parent
    if folder == cwd:
        return "Edit(/**)"
    if folder.is_relative_to(cwd):
        return f"Edit(/{folder.relative_to(cwd).as_posix()}/**)"
    return f"Edit(/{folder.as_posix()}/**)"  # "//abs/**" once the leading "/" is added


def disk_fingerprint(path: Path) -> str | None:
    """What is on disk now (None: no file). Bytes, so an encoding or line-ending change also counts."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"error:{exc.errno}"


async def review_edit(ctx: CallContext, path: Path, old_text: str | None, new_text: str, *,
                      tool_name: str = "Edit", title: str | None = None,
                      raw_input: dict[str, Any] | None = None) -> ReviewOutcome:
    """What of an edit to ``path`` lands (an approved outcome); ToolError when nothing may be written.
    ``old_text`` None: a new file."""
    session = ctx.session
    gate = session.permissions
    shown = path.as_posix()
    content = [diff_content(path, old_text, new_text)]
    request = PermissionRequest(
        tool_name=tool_name, access="write",
        title=title or f"{'Create' if old_text is None else 'Edit'} {shown}",
        raw_input=raw_input if raw_input is not None else {"file_path": str(path)},
        paths=[path], suggested_rule=suggested_edit_rule(path, session.cwd), content=content,
    )
    answered: list[ReviewOutcome] = []

    async def ask(request: PermissionRequest, ctx: CallContext) -> UserAnswer:
        """The review question: the diff with hunks (``reviewEdit``) or a permission question with it."""
        before = disk_fingerprint(path)  # only a question waits on the user, so only then can disk move
        always = False
        if session.has_client_capability("reviewEdit"):
            diff = make_diff(old_text, new_text, shown)  # only the review question shows hunks
            outcome = await _ask_review(ctx, path, old_text, new_text, diff.unified, diff.hunk_dicts(), request)
        else:
            answer = await gate.ask_user(request, ctx)
            always = answer.always  # "Always allow" was remembered by the question itself
            outcome = _answered(path, old_text, new_text, answer)
        if outcome.approved and disk_fingerprint(path) != before:
            outcome = ReviewOutcome(False, None, (
                f"{shown} was changed on disk (by the user or another program) while your edit was being "
                "reviewed, so nothing was written: the approval was for a version of the file that no longer "
                "exists. Read the file again and propose the change against its current content."),
                landed="void")
        session.audit("edit_review", tool=tool_name, toolCallId=ctx.tool_call_id, path=str(path),
                      landed=outcome.landed, approved=outcome.approved, acceptedHunks=outcome.accepted_hunks,
                      feedback=outcome.feedback)
        answered.append(outcome)
        return UserAnswer(allowed=outcome.approved, always=always, feedback=outcome.feedback,
                          cancelled=outcome.landed == "cancelled", option_id=outcome.landed,
                          message=None if outcome.approved else outcome.summary_for_model,
                          reason=f"review: {outcome.landed}")

    # Raises on any refusal: a rule's, a hook's or the mode's, and the user's or a void proposal's (the
    # answer's message is the outcome's summary), so what is left here was approved.
    await gate.require(request, ctx, ask=ask)
    if answered:
        return answered[0]
    # Applied without asking (acceptEdits, bypass, a rule or a hook), and still shown.
    await session.send_update({"sessionUpdate": "tool_call_update", "toolCallId": ctx.tool_call_id,
                               "status": "in_progress", "content": content})
    return ReviewOutcome(True, new_text, "", editor_content=content)


def _answered(path: Path, old_text: str | None, new_text: str, answer: UserAnswer) -> ReviewOutcome:
    """The outcome of a plain permission question about the whole proposal."""
    if answer.allowed:
        return ReviewOutcome(True, new_text, "", editor_content=[diff_content(path, old_text, new_text)])
    return _refused(path, answer.cancelled, answer.feedback)


async def _ask_review(ctx: CallContext, path: Path, old_text: str | None, new_text: str, unified: str,
                      hunks: list[Hunk], request: PermissionRequest) -> ReviewOutcome:
    session = ctx.session
    params: ReviewEditParams = {"toolCallId": ctx.tool_call_id, "path": str(path),
              "oldText": old_text, "newText": new_text, "unifiedDiff": unified, "hunks": hunks}
    try:
        result = await session.client.review_edit(params)
    except ClientRequestError as exc:
        log.warning("_sidecar/review_edit failed (%s); asking with a permission request", exc.detail)
        return _answered(path, old_text, new_text, await session.permissions.ask_user(request, ctx))
    return interpret_review_result(path, old_text, new_text, result, hunk_count=len(hunks))


def interpret_review_result(path: Path, old_text: str | None, new_text: str, result: ReviewEditResult,
                            hunk_count: int) -> ReviewOutcome:
    """Turn a ``_sidecar/review_edit`` result into what lands and what the model is told."""
    shown = path.as_posix()
    feedback = (result.get("feedback") or "").strip() or None
    kind = result["outcome"]
    if kind != "accepted":
        return _refused(path, cancelled=kind != "rejected", feedback=feedback)

    final_text = result.get("finalText")
    if final_text is not None and final_text != new_text:
        changes = make_diff(new_text, final_text, shown).unified
        summary = (f"The user changed your proposal before accepting it, so {shown} now differs from what "
                   "you proposed. This diff turns your proposal into what was written:\n```diff\n"
                   f"{changes}```\nBuild on the user's version; do not undo their changes.")
        if feedback:
            summary += f" The user said: {feedback}"
        return ReviewOutcome(True, final_text, summary, feedback=feedback, landed="user_changed",
                             editor_content=[diff_content(path, old_text, final_text)])

    raw = result.get("acceptedHunks")
    everything = list(range(hunk_count))
    accepted = everything if raw is None else sorted({i for i in raw if 0 <= i < hunk_count})
    if accepted == everything:
        summary = f"The user said: {feedback}" if feedback else ""
        return ReviewOutcome(True, new_text, summary, feedback=feedback, accepted_hunks=None,
                             editor_content=[diff_content(path, old_text, new_text)])
    if not accepted:
        msg = (f"The user accepted none of the {hunk_count} hunks of your edit to {shown}; nothing was "
               "written.")
        if feedback:
            msg += f" The user said: {feedback}"
        msg += " Do not retry the same edit; adjust it to what the user wants."
        return ReviewOutcome(False, None, msg, feedback=feedback, landed="rejected", accepted_hunks=[])
    final = apply_hunks(old_text, new_text, accepted)
    dropped = [i for i in everything if i not in accepted]
    dropped_diff = make_diff(final, new_text, shown).unified
    summary = (f"The user accepted only some hunks of your edit to {shown}: hunks "
               f"{', '.join(str(i + 1) for i in accepted)} of {hunk_count} were written; hunks "
               f"{', '.join(str(i + 1) for i in dropped)} were dropped. The dropped changes "
               f"(NOT in the file) are:\n```diff\n{dropped_diff}```\n"
               "Do not re-apply them unless the user asks.")
    if feedback:
        summary += f" The user said: {feedback}"
    return ReviewOutcome(True, final, summary, feedback=feedback, landed="some_hunks",
                         accepted_hunks=accepted, editor_content=[diff_content(path, old_text, final)])


def _refused(path: Path, cancelled: bool, feedback: str | None) -> ReviewOutcome:
    if cancelled:
        return ReviewOutcome(False, None, rejection_message(UserAnswer(allowed=False, cancelled=True)),
                             landed="cancelled")
    msg = f"The user rejected your edit to {path.as_posix()}; nothing was written."
    if feedback:
        msg += f" The user said: {feedback}"
    msg += " Do not retry the same edit; adjust your approach to what the user wants."
    return ReviewOutcome(False, None, msg, feedback=feedback, landed="rejected")

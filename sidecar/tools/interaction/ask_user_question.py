"""AskUserQuestion: structured questions that block the turn until the user answers (docs/contract.md §5.1,
point 9: a question is rendered, so it is a tool).

Three ways to ask, best first:

1. ``_sidecar/ask_user`` when the client advertised ``askUser`` (the VS Code extension: native pickers).
2. ACP ``elicitation/create`` (form mode) when the client advertised ``elicitation.form``.
3. Otherwise ``session/request_permission``, one request per question, the options as the choices
   (single choice only, no free text): the last resort any ACP client can show.

An implicit "Other" answer takes free text (ways 1 and 2). When the user dismisses the question the
tool result says so and the turn ends (``metadata["end_turn"]``): the model does not guess an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from sidecar import client_messages
from sidecar.client_messages import JsonObject, PermissionOption
from sidecar.errors import ClientRequestError, ToolError
from sidecar.permissions.request import PermissionRequest
from sidecar.session import ServiceKey
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext

log = logging.getLogger(__name__)

OTHER = "Other"


# Tells the user the agent waits for them (the editor's notification when its panel is hidden),
# provided at session start.
NOTIFY_WAITING = ServiceKey[Callable[[str], Awaitable[None]]]("notify_waiting")


class Option(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="The choice as shown (1-5 words).")
    description: str = Field(description="What this choice means or implies.")


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The complete question, ending with a question mark.")
    header: str = Field(description="A very short label for the question (at most 12 characters), e.g. \"Auth\".")
    options: list[Option] = Field(description="2-4 distinct choices. Do not add an 'Other' choice: the user "
                                              "can always answer in their own words.")
    multiSelect: bool = Field(default=False, description="true to allow several choices at once.")

    def asked(self) -> client_messages.AskUserQuestion:
        """The question as ``_sidecar/ask_user`` sends it."""
        return {"question": self.question, "header": self.header, "multiSelect": self.multiSelect,
                "options": [{"label": o.label, "description": o.description} for o in self.options]}


class AskUserQuestionInput(ToolInput):
    """Ask the user one to four multiple-choice questions and wait for the answers; they come back as this
    tool's result.

    When to use it:
    - The request is ambiguous in a way that changes what you build, and the code does not settle it.
    - There are approaches with real trade-offs the user should choose between (a library, a data
      format, a breaking change versus a compatible one).
    - You need a preference you cannot infer (naming, scope, which of several failing things first).

    When not to use it:
    - For what you can find out yourself by reading the code, the docs or running a command: look first.
    - When the request is clear: do the work instead of confirming it.
    - For permission to run a tool: tool calls ask the user on their own when needed.
    - In plan mode, to ask whether the plan is ready: call ExitPlanMode with the plan.

    How: each question has a short header (a few words, shown as a chip), 2-4 options with a label and
    a one-line description of what choosing it means, and multiSelect when several options can apply.
    The user can always answer in their own words instead ("Other"), so do not add an "Other" option.
    If you recommend an option, put it first and add "(Recommended)" to its label. Ask everything you
    need in one call rather than one question after another.
    """

    questions: list[Question] = Field(description="1-4 questions to ask the user.")


class AskUserQuestion(Tool[AskUserQuestionInput]):
    name: ClassVar[str] = "AskUserQuestion"
    kind: ClassVar[ToolKind] = "other"
    Input = AskUserQuestionInput

    def title(self, raw_input: dict[str, Any]) -> str:
        qs = raw_input.get("questions")
        if isinstance(qs, list) and qs and isinstance(qs[0], dict) and qs[0].get("question"):
            return f"Question: {qs[0]['question']}" + (f" (+{len(qs) - 1})" if len(qs) > 1 else "")
        return "Question"

    def is_read_only(self, inp: AskUserQuestionInput) -> bool:
        return True

    def is_concurrency_safe(self, inp: AskUserQuestionInput, ctx: ToolContext) -> bool:
        return False  # one question card at a time

    async def validate(self, inp: AskUserQuestionInput, ctx: ToolContext) -> None:
        if not 1 <= len(inp.questions) <= 4:
            raise ToolError(f"Ask 1-4 questions per call (got {len(inp.questions)}). Split or merge them.")
        seen: set[str] = set()
        for q in inp.questions:
            if not q.question.strip():
                raise ToolError("A question is empty. Write the complete question.")
            if q.question in seen:
                raise ToolError(f"The question {q.question!r} is asked twice. Each question must be unique.")
            seen.add(q.question)
            if not 2 <= len(q.options) <= 4:
                raise ToolError(f"The question {q.question!r} has {len(q.options)} options; give 2-4. The user "
                                "can always answer in their own words, so no 'Other' option is needed.")
            labels = [o.label.strip() for o in q.options]
            if len(set(labels)) != len(labels) or not all(labels):
                raise ToolError(f"The options of {q.question!r} must have distinct, non-empty labels.")
        if ctx.agent_label:
            raise ToolError("Sub-agents cannot ask the user. Finish with what you know and put the open "
                            "question in your final report.")

    async def run(self, inp: AskUserQuestionInput, ctx: ToolContext) -> ToolOutput:
        questions = [q.asked() for q in inp.questions]
        notify = ctx.session.find_service(NOTIFY_WAITING)
        if notify is not None:
            await notify("The agent has a question for you")
        if ctx.session.has_client_capability("askUser"):
            answers = await ask_via_extension(ctx, questions)
        elif _has_form_elicitation(ctx):
            answers = await ask_via_elicitation(ctx, questions)
        else:
            answers = await ask_via_permission(ctx, questions)
        if answers is None:
            ctx.session.audit("question", toolCallId=ctx.tool_call_id, outcome="cancelled")
            return ToolOutput.text(
                "The user dismissed the question without answering. The turn ends here: do not guess an "
                "answer; wait for the user's next message.", is_error=True, metadata={"end_turn": True})
        ctx.session.audit("question", toolCallId=ctx.tool_call_id, outcome="answered", answers=answers)
        lines = [f'"{q["question"]}"="{", ".join(answers.get(q["question"]) or ["(no answer)"])}"'
                 for q in questions]
        text = ("User has answered your questions: " + ", ".join(lines)
                + ". You can now continue with the user's answers in mind.")
        shown = "\n".join(f"{q['header']}: {', '.join(answers.get(q['question']) or ['(no answer)'])}"
                          for q in questions)
        return ToolOutput.text(text, editor_content=[{"type": "content", "content": {"type": "text", "text": shown}}],
                               metadata={"subject": "question", "answers": answers})


# ---- the three ways to ask --------------------------------------------------------------------------------
Answers = dict[str, list[str]]


Questions = list[client_messages.AskUserQuestion]


async def ask_via_extension(ctx: ToolContext, questions: Questions) -> Answers | None:
    try:
        result = await ctx.session.client.ask_user({"toolCallId": ctx.tool_call_id, "questions": questions})
    except ClientRequestError as exc:
        raise ToolError(f"The editor could not show the question ({exc.detail}). Ask the user in plain text "
                        "in your reply instead, and end your turn.") from None
    if result["outcome"] != "answered":
        return None
    return {q["question"]: result["answers"].get(q["question"], []) for q in questions}


def _has_form_elicitation(ctx: ToolContext) -> bool:
    caps = ctx.session.channel.client_capabilities.get("elicitation")
    return isinstance(caps, dict) and "form" in caps


async def ask_via_elicitation(ctx: ToolContext, questions: Questions) -> Answers | None:
    """ACP ``elicitation/create``, form mode: per question a choice property and an optional free-text one."""
    properties: JsonObject = {}
    required: list[str] = []
    for i, q in enumerate(questions):
        labels = [o["label"] for o in q["options"]]
        described = "; ".join(f"{o['label']}: {o['description']}" for o in q["options"])
        if q["multiSelect"]:
            properties[f"q{i}"] = {"type": "array", "title": q["question"], "description": described,
                                   "items": {"type": "string", "enum": labels}}
        else:
            properties[f"q{i}"] = {"type": "string", "title": q["question"], "description": described,
                                   "enum": [*labels, OTHER]}
            required.append(f"q{i}")
        properties[f"q{i}_other"] = {"type": "string", "title": f"{q['header']}: your own answer (optional)"}
    try:
        result = await ctx.session.client.elicit({
            "toolCallId": ctx.tool_call_id, "mode": "form", "message": "\n".join(q["question"] for q in questions),
            "requestedSchema": {"type": "object", "properties": properties, "required": required}})
    except ClientRequestError as exc:
        log.warning("elicitation/create failed (%s); falling back to permission options", exc.detail)
        return await ask_via_permission(ctx, questions)
    if result["action"] != "accept":
        return None
    content = result["content"]
    answers: Answers = {}
    for i, q in enumerate(questions):
        value = content.get(f"q{i}")
        chosen = [str(v) for v in value] if isinstance(value, list) else ([str(value)] if value else [])
        other = str(content.get(f"q{i}_other") or "").strip()
        chosen = [c for c in chosen if c != OTHER] + ([other] if other else [])
        answers[q["question"]] = chosen
    return answers


async def ask_via_permission(ctx: ToolContext, questions: Questions) -> Answers | None:
    """Last resort: a permission request per question whose options are the answers (one choice each)."""
    answers: Answers = {}
    for q in questions:
        options = [PermissionOption(optionId=f"answer_{j}", name=o["label"], kind="allow_once")
                   for j, o in enumerate(q["options"])]
        options.append(PermissionOption(optionId="dismiss", name="Dismiss", kind="reject_once"))
        body = q["question"] + "\n\n" + "\n".join(f"- {o['label']}: {o['description']}" for o in q["options"])
        request = PermissionRequest(
            tool_name="AskUserQuestion", access="other", title=q["question"], raw_input={"questions": questions},
            read_only=True, content=[{"type": "content", "content": {"type": "text", "text": body}}])
        answer = await ctx.permissions.ask_user(request, ctx, options=options)
        if not answer.allowed or not (answer.option_id or "").startswith("answer_"):
            return None
        index = int((answer.option_id or "").removeprefix("answer_"))
        answers[q["question"]] = [q["options"][index]["label"]]
    return answers

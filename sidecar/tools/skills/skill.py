"""Skill: instructions packaged as ``SKILL.md`` files, listed by description and loaded on use.

Skills live in ``<cwd>/.claude/skills/<name>/SKILL.md`` (project) and ``~/.claude/skills/<name>/SKILL.md``
(user; a project skill of the same name wins). The frontmatter gives ``name`` and ``description``; the
Skill tool's description lists every skill by its description, and the body is loaded only when the
model (``Skill {skill, args}``) or the user (``/<name> args``) invokes it.

On loading, ``$ARGUMENTS`` is replaced by the arguments, and each embedded command (``!`cmd``` inline,
or a fenced block opened with ```` ```! ````) is run through the Bash tool *by the dispatcher*, so it is
classified, permission-checked, sandboxed and bounded like any Bash call the model makes, and shown in
the editor as its own tool call. Its output replaces the embedding; a refused command is replaced by
the refusal.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from sidecar.errors import ToolError
from sidecar.session import ServiceKey
from sidecar.tools.agents.frontmatter import split_frontmatter
from sidecar.tools.base import Tool, ToolInput, ToolKind, ToolOutput
from sidecar.tools.context import ToolContext
from sidecar.tools.registry import REGISTRY

log = logging.getLogger(__name__)

INLINE = re.compile(r"!`([^`\n]+)`")
BLOCK = re.compile(r"^```!\s*\n(.*?)\n```\s*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class SkillDef:
    name: str
    description: str
    path: Path
    source: str

    @property
    def directory(self) -> Path:
        return self.path.parent


def discover_skills(cwd: Path, home: Path | None = None) -> dict[str, SkillDef]:
    found: dict[str, SkillDef] = {}
    user_root = (home or Path.home()) / ".claude" / "skills"
    for root, source in ((user_root, "user"), (cwd / ".claude" / "skills", "project")):
        if not root.is_dir():
            continue
        for skill_md in sorted(root.glob("*/SKILL.md")):
            try:
                meta, _ = split_frontmatter(skill_md.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            name = str(meta.get("name") or skill_md.parent.name).strip()
            description = str(meta.get("description") or "").strip()
            if not description:
                log.warning("skill %s has no description; skipped", skill_md)
                continue
            found[name] = SkillDef(name, description, skill_md, source)
    return found


# The skills found at session start, by name (``/<skill>`` and the Skill tool).
SKILLS = ServiceKey[dict[str, SkillDef]]("skills")


class SkillInput(ToolInput):
    """Load a skill: packaged instructions (and context gathered by its commands) for a specific kind of
    task. When a task matches a skill's description below, invoke the skill first and follow what it
    loads. Skills are loaded on use: their content is not in your context until you call this tool.
    """

    skill: str = Field(description="The skill's name, as listed.")
    args: str | None = Field(default=None, description="Arguments for the skill ($ARGUMENTS in its text).")


class Skill(Tool[SkillInput]):
    name: ClassVar[str] = "Skill"
    kind: ClassVar[ToolKind] = "read"
    Input = SkillInput

    def __init__(self) -> None:
        self.skills: dict[str, SkillDef] = {}

    def description(self) -> str:
        listed = "\n".join(f"- {s.name}: {s.description}" for s in self.skills.values()) or "(no skills installed)"
        return super().description() + "\n\nAvailable skills:\n" + listed

    def title(self, raw_input: dict[str, Any]) -> str:
        return f"Skill {raw_input.get('skill') or ''}".strip()

    def is_read_only(self, inp: SkillInput) -> bool:
        return True  # loading is free; its embedded commands are governed one by one

    def is_concurrency_safe(self, inp: SkillInput, ctx: ToolContext) -> bool:
        return False

    async def validate(self, inp: SkillInput, ctx: ToolContext) -> None:
        if inp.skill.lstrip("/") not in self.skills:
            names = ", ".join(self.skills) or "none are installed"
            raise ToolError(f"Unknown skill {inp.skill!r}. Available skills: {names}.")

    async def run(self, inp: SkillInput, ctx: ToolContext) -> ToolOutput:
        skill = self.skills[inp.skill.lstrip("/")]
        text = await load_skill(ctx.session, skill, inp.args or "", ctx.tool_call_id, ctx.agent_label)
        ctx.session.audit("skill_loaded", skill=skill.name, path=str(skill.path))
        return ToolOutput.text(text, metadata={"subject": str(skill.path), "skill": skill.name})


async def load_skill(session: Any, skill: SkillDef, args: str, call_id: str, agent_label: str | None = None) -> str:
    """The skill's body with ``$ARGUMENTS`` filled in and its embedded commands run (via the dispatcher)."""
    from sidecar.tools.dispatch import Dispatcher, ToolCall

    try:
        _, body = split_frontmatter(skill.path.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise ToolError(f"The skill file {skill.path} could not be read ({exc}).") from None
    body = body.replace("$ARGUMENTS", args)
    registry = session.service(REGISTRY)
    dispatcher = Dispatcher(session, registry, agent_label=agent_label)
    counter = 0

    async def run_command(command: str) -> str:
        nonlocal counter
        counter += 1
        if registry.get("Bash") is None:
            return f"[command not run: no Bash tool in this session: {command}]"
        call = ToolCall(f"{call_id}_cmd{counter}", "Bash",
                        {"command": command, "description": f"Skill {skill.name}: embedded command"})
        await dispatcher.announce(call)
        result = await dispatcher.run(call)
        out = result.output.joined_text().rstrip("\n")
        return f"[command failed or refused: {out}]" if result.output.is_error else out

    async def substitute(pattern: re.Pattern[str], text: str) -> str:
        parts: list[str] = []
        last = 0
        for match in pattern.finditer(text):
            parts.append(text[last:match.start()])
            parts.append(await run_command(match.group(1).strip()))
            last = match.end()
        parts.append(text[last:])
        return "".join(parts)

    body = await substitute(BLOCK, body)
    body = await substitute(INLINE, body)
    return f"Base directory for this skill: {skill.directory}\n\n{body.strip()}"


def configure_skills(session: Any) -> None:
    skills = discover_skills(session.cwd)
    session.provide(SKILLS, skills)
    tool = session.service(REGISTRY).get("Skill")
    if isinstance(tool, Skill):
        tool.skills = skills


async def skill_prompt(session: Any, skill: SkillDef, args: str) -> list[dict[str, Any]]:
    """A user's ``/<skill> args``: the prompt the model gets, with the skill loaded."""
    text = await load_skill(session, skill, args, f"slash_{skill.name}")
    return [{"type": "text", "text": f"<command-name>/{skill.name}</command-name>\n"
                                     f"<command-args>{args}</command-args>\n{text}"}]

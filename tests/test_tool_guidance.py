"""What the model is told: per tool, the topics its description must cover (issue 20), asserted.

Each tool's guidance lives in one place, its Input docstring (versioned with the tool). A topic is a
regular expression (case-insensitive) that must match the description the model receives; a topic
missing after an edit fails here, by name. The system prompt's sections are checked the same way.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

from sidecar.agent.prompt import IDENTITY, build_system_prompt
from sidecar.tools.base import Tool
from sidecar.tools.builtin import builtin_tools

TOPICS: dict[str, dict[str, str]] = {
    "Bash": {
        "quote paths with spaces": r"quote every path that contains spaces.*double quotes",
        "Read instead of cat": r"Read, not cat",
        "Grep instead of grep/rg": r"Grep, not grep/rg",
        "Glob instead of find": r"Glob, not find",
        "Edit/Write instead of sed/echo": r"Edit or Write, not sed",
        "independent commands in parallel": r"independent commands.*separate Bash calls in the same message",
        "dependent steps with &&": r"joined with `&&`",
        "cwd persists, env does not": r"working directory persists.*variables.*do not",
        "background shells": r"run_in_background.*BashOutput.*KillShell",
        "no interactive commands": r"no interactive programs",
        "interactive git flags": r"git rebase -i",
        "non-interactive flags": r"--yes",
        "timeout default and max": r"120000.*600000",
        "output cap and saved file": r"30,000 characters.*saved to a file",
        "the sandbox and what it blocks": r"sandbox.*read-only except the workspace roots.*network is off",
        "what to do when the sandbox blocks": r"Read-only file system.*dangerouslyDisableSandbox",
        "commit only when asked": r"commit only when the user asked",
        "never force-push": r"never force-push",
        "never skip hooks": r"never skip or bypass hooks.*--no-verify",
        "failed commit: new commit, not amend": r"commit fails.*new commit.*--amend",
        "stage files by name, no secrets": r"stage the files.*by name.*secrets",
        "pull requests with gh": r"gh pr create",
        "description field": r"description.*5-10 words",
    },
    "Read": {
        "absolute path": r"absolute path",
        "offset and limit": r"offset.*limit",
        "line-number prefix not part of the file": r"number.*not part of the file",
        "never in old_string": r"never put the number prefix into Edit's old_string",
        "read before edit": r"Edit and\s+Write refuse a file you have not Read",
        "images and PDFs": r"images.*PDF",
        "parallel reads": r"several Read calls in one message",
        "directories": r"Directories cannot be read",
        "output bound": r"at most 100,000 characters.*offset to read on",
    },
    "Edit": {
        "read before edit": r"you must have Read the file",
        "exact match with indentation": r"match the file exactly.*indentation",
        "line-number prefix never part of the match": r"without the line-number prefix.*never part of old_string",
        "unique old_string": r"must occur exactly once",
        "replace_all": r"replace_all",
        "prefer Edit over Write": r"prefer Edit over Write",
        "new_string differs": r"new_string must differ",
    },
    "Write": {
        "prefer Edit for existing files": r"existing file use Edit instead",
        "read before overwrite": r"must have Read it in this session",
        "absolute path": r"must be absolute",
        "no unrequested docs": r"never create documentation",
    },
    "Grep": {
        "never grep/rg through Bash": r"never run `grep` or `rg` through Bash",
        "regex syntax and escaping": r"ripgrep.*regex.*escape",
        "multiline": r"multiline: true",
        "glob and type filters": r"glob \(.*type \(",
        "output modes": r"files_with_matches.*\"content\".*\"count\"",
        "context lines -A/-B/-C/context": r"-A \(after\).*-B \(before\).*-C / context",
        "context needs content mode": r"only apply in \"content\" mode",
        "head_limit and offset paging": r"head_limit.*offset",
        "parallel searches": r"several Grep calls in one message",
        "Task for open-ended searches": r"open-ended search.*Task",
    },
    "Glob": {
        "glob patterns": r"\*\*.*\{a,b\}",
        "newest first and capped": r"newest first.*at most 100",
        "gitignore": r"\.gitignore",
        "Grep for contents": r"search inside files use Grep",
        "parallel searches": r"separate calls in one message",
        "Task for open-ended searches": r"open-ended.*Task",
    },
    "Task": {
        "when to use: open-ended search": r"when to use it.*open-ended searches",
        "parallel agents": r"several Task calls in one message",
        "when not to use": r"when not to use it.*Read.*Grep or Glob",
        "self-contained prompt": r"knows nothing of this conversation",
        "what to report back": r"what to report back",
        "result not shown to the user": r"not shown to the user",
        "background agents": r"run_in_background.*TaskOutput",
    },
    "TodoWrite": {
        "when to use: three or more steps": r"when to use it.*three or more",
        "when not to use": r"when not to use it.*one simple step",
        "whole list each call": r"replaces the whole list",
        "one task in progress": r"exactly one in_progress",
        "complete at once, not batched": r"do not batch",
        "activeForm": r"activeForm",
    },
    "AskUserQuestion": {
        "when to use": r"when to use it.*ambiguous",
        "when not to use: look first": r"when not to use it.*find out yourself",
        "not for tool permission": r"permission to run a tool",
        "plan mode uses ExitPlanMode": r"ExitPlanMode",
        "recommended option first": r"\(Recommended\)",
        "no Other option": r"do not add an \"Other\" option",
    },
    "BashOutput": {
        "background shells": r"run_in_background",
        "instead of sleep": r"instead of waiting with `sleep`",
        "filter consumes": r"filter.*consumed",
    },
    "KillShell": {
        "when to stop a shell": r"no longer needed",
    },
}

SYSTEM_PROMPT_TOPICS: dict[str, str] = {
    "read before changing": r"read the relevant code",
    "dedicated tools over shell": r"Prefer the dedicated tools to shell commands",
    "parallel independent calls": r"do not depend on each other go in one message",
    "Task for exploration": r"Task sub-agents for open-ended exploration",
    "TodoWrite for multi-step work": r"TodoWrite to plan and track",
    "AskUserQuestion sparingly": r"AskUserQuestion only when",
    "errors say what to do": r"read its message",
    "denied calls not retried": r"denied is not to be retried",
    "commit only when asked": r"Never commit, push or publish unless the user asked",
    "verify with tests": r"run the tests",
    "system reminders": r"<system-reminder>",
}


def _tools() -> dict[str, Tool[object]]:
    return {t.name: t for t in builtin_tools()}  # type: ignore[misc]


@pytest.mark.parametrize("tool", sorted(TOPICS))
def test_each_tool_description_covers_its_topics(tool: str) -> None:
    description = " ".join(_tools()[tool].description().split())  # line breaks do not matter
    missing = [topic for topic, pattern in TOPICS[tool].items()
               if not re.search(pattern, description, re.IGNORECASE | re.DOTALL)]
    assert not missing, f"{tool}'s description does not cover: {missing}"


def test_every_builtin_tool_has_a_description_saying_when_to_use_it() -> None:
    for name, tool in _tools().items():
        description = tool.description()
        assert len(description) >= 80, f"{name}: description too short ({len(description)} chars)"
        assert inspect.cleandoc(description) == description, f"{name}: docstring indentation leaked into it"
        schema = tool.input_schema()
        for field, spec in schema.get("properties", {}).items():
            assert spec.get("description") or "$ref" in spec or "allOf" in spec, f"{name}.{field} has no description"


def test_grep_offers_claude_codes_fields() -> None:
    properties = _tools()["Grep"].input_schema()["properties"]
    assert set(properties) == {"pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-A", "-B", "-C",
                               "context", "multiline", "head_limit", "offset"}


def test_system_prompt_tool_use_section(tmp_path: Path) -> None:
    prompt = build_system_prompt(tmp_path, [tmp_path])
    assert prompt.startswith(IDENTITY)
    flat = " ".join(prompt.split())
    missing = [t for t, p in SYSTEM_PROMPT_TOPICS.items() if not re.search(p, flat, re.IGNORECASE | re.DOTALL)]
    assert not missing, f"the system prompt does not cover: {missing}"


def test_descriptions_are_stable_bytes() -> None:
    """Two builds of the tools array are byte-identical (the cached prefix depends on it)."""
    first = json.dumps([t.api_definition() for t in builtin_tools()], sort_keys=False)
    second = json.dumps([t.api_definition() for t in builtin_tools()], sort_keys=False)
    assert first == second

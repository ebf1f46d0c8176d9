"""Markdown files with a YAML frontmatter block (agents, skills): ``---\\nkey: value\\n---\\nbody``."""

from __future__ import annotations

from typing import Any

# yaml is imported where a frontmatter block is parsed: most sessions have none (a third of a second).


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """The frontmatter mapping and the body. No (or broken) frontmatter → ``({}, text)``."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        return {}, text
    import yaml  # lazy: see the note at the top

    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            try:
                data = yaml.safe_load("".join(lines[1:i]))
            except yaml.YAMLError:
                return {}, text
            return (data if isinstance(data, dict) else {}), "".join(lines[i + 1:])
    return {}, text


def as_list(value: Any) -> list[str] | None:
    """A ``tools:`` field: ``"Read, Grep"`` or ``[Read, Grep]`` → ``["Read", "Grep"]``; absent → None."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return None

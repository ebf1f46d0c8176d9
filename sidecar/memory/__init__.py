"""Memory files: nested CLAUDE.md / AGENTS.md found on first read below them, and ``@path`` imports."""

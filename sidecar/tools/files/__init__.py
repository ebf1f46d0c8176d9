"""File tools: Read, Write, Edit, Glob, Grep, NotebookEdit (docs/files.md)."""

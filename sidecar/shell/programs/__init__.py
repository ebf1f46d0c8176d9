"""The classifier's per-program rules, one module per program family (issue 28: adding a program is
copying one file). Each module exports a ``*_ro(args, lit) -> str | None`` reader: None when the command
is read-only by its allow-lists, else why not."""

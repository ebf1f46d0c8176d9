"""Tools that talk to the user or the editor: AskUserQuestion, TodoWrite, Config, Brief."""

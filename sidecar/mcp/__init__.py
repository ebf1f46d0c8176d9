"""MCP servers bridged into a session: tools as ``mcp__<server>__<tool>``, resources listed and read."""

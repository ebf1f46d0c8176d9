"""Plan mode tools."""

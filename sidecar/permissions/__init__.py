"""Permission rules, settings sources and the gate every tool call passes."""

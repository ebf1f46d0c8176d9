"""Sub-agents: the Task tool and the agent types it can start."""

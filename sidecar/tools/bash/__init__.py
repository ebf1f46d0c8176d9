"""The Bash family: Bash, BashOutput, KillShell, and ``sidecar check-command`` (docs/bash.md)."""

"""Shell analysis: parse a command (bashlex), classify each part, derive permission rules.

Used by the Bash tool and by the permission rules alike; imports nothing above ``sidecar.errors``.
"""

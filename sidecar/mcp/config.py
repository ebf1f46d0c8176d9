"""Where MCP servers come from: ACP ``session/new.mcpServers`` and the project's ``.mcp.json``.

ACP shapes: stdio ``{name, command, args, env: [{name, value}]}``; ``{type: "http" | "sse", name, url,
headers: [{name, value}]}``. ``.mcp.json`` (Claude Code's): ``{"mcpServers": {name: {command, args,
env: {…}} | {type: "http" | "sse", url, headers: {…}}}}``; ``${VAR}`` and ``${VAR:-default}`` are
expanded from the environment. A server the client sent wins over a ``.mcp.json`` one of the same name.

A ``.mcp.json`` server comes from the repository: it starts only once the user allowed it
(``sidecar.permissions.trust``), and one that names a secret (``${ANTHROPIC_API_KEY}``, a name in
``secretEnvVars``) anywhere is refused: secrets are never expanded into a project-provided command.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class ServerConfig:
    name: str
    transport: Literal["stdio", "http", "sse"]
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    source: str = "client"
    # The configuration as written (before ``${VAR}`` expansion): what the user is asked about.
    raw: dict[str, Any] = field(default_factory=dict)
    # Why this server may not start at all (it names a secret), or None.
    refused: str | None = None


def _expand(value: str) -> str:
    return VAR.sub(lambda m: os.environ.get(m.group(1), m.group(2) or ""), value)


def _pairs(value: Any) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): _expand(str(v)) for k, v in value.items()}
    if isinstance(value, list):
        return {str(p["name"]): _expand(str(p.get("value", ""))) for p in value if isinstance(p, dict) and "name" in p}
    return {}


def secret_references(raw: Any, secret_names: tuple[str, ...]) -> list[str]:
    """The secret variables ``${…}`` in a configuration names, anywhere in it."""
    text = json.dumps(raw, default=str)
    return sorted({m.group(1) for m in VAR.finditer(text) if m.group(1) in secret_names})


def parse_server(name: str, raw: dict[str, Any], source: str) -> ServerConfig | None:
    kind = str(raw.get("type") or ("stdio" if raw.get("command") else "http")).lower()
    if kind == "streamable-http":
        kind = "http"
    if kind == "stdio":
        if not raw.get("command"):
            return None
        return ServerConfig(name=name, transport="stdio", command=_expand(str(raw["command"])),
                            args=[_expand(str(a)) for a in raw.get("args") or []], env=_pairs(raw.get("env")),
                            source=source)
    if kind in ("http", "sse") and raw.get("url"):
        return ServerConfig(name=name, transport=kind, url=_expand(str(raw["url"])),  # type: ignore[arg-type]
                            headers=_pairs(raw.get("headers")), source=source)
    log.warning("MCP server %s: unsupported configuration %s", name, raw)
    return None


def server_configs(cwd: Path, from_client: list[dict[str, Any]],
                   secret_names: tuple[str, ...] = ()) -> list[ServerConfig]:
    found: dict[str, ServerConfig] = {}
    path = cwd / ".mcp.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for name, raw in (data.get("mcpServers") or {}).items():
                if isinstance(raw, dict):
                    secrets = secret_references(raw, secret_names)
                    config = parse_server(str(name), {} if secrets else raw, ".mcp.json") if not secrets else \
                        ServerConfig(name=str(name), transport="stdio", source=".mcp.json")
                    if config is not None:
                        config.raw = raw
                        if secrets:
                            config.refused = (f"it passes the secret {', '.join(secrets)} to a command the "
                                              "repository chose; secrets are never expanded into a "
                                              "project-provided command")
                        found[config.name] = config
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("could not read %s: %s", path, exc)
    for raw in from_client:
        name = str(raw.get("name") or "")
        config = parse_server(name, raw, "client") if name else None
        if config is not None:
            found[config.name] = config
    return list(found.values())

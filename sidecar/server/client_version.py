"""Whether the editor extension that started the agent fits it (issue 26; the rule is in docs/packaging.md).

The extension sends ``initializationOptions.client = {name, version, expectedAgentVersion}``. The two work
together when their ``major.minor`` agree: the protocol between them (method names, ``_meta.sidecar``
fields, panel messages) changes only with a minor release, a patch release never changes it. A version that
does not start with ``N.N`` (``0+unknown``: a checkout without its metadata) is not compared.

What to do depends on who installed the agent. ``expectedAgentVersion`` set: the extension started its own
environment, which it fills with the agent its package carries, so the user installs nothing by hand: a
stale environment is set up again with Retry Setup, and an agent of the very version the package carries
means the package itself pairs the two wrongly (a newer or reinstalled extension is the fix). Null: the
user chose the interpreter (``sidecar.pythonPath``, a workspace interpreter they allowed), so the agent in
it is theirs to update.
"""

from __future__ import annotations

import re
from typing import Any

_MAJOR_MINOR = re.compile(r"^v?(\d+)\.(\d+)(?:\D|$)")

# Our own extension, by the name it sends; its user can act on these settings.
VSCODE_EXTENSION = "sidecar-vscode"


def major_minor(version: str) -> tuple[int, int] | None:
    match = _MAJOR_MINOR.match(version.strip())
    return (int(match[1]), int(match[2])) if match else None


def client_mismatch(client: Any, agent_version: str) -> str | None:
    """What to tell the user when the client's version does not fit this agent's, else None.

    ``client`` is ``initializationOptions.client`` as received (anything: it is checked here)."""
    if not isinstance(client, dict):
        return None
    name, theirs = client.get("name"), client.get("version")
    if not isinstance(name, str) or not isinstance(theirs, str):
        return None
    ours_mm, theirs_mm = major_minor(agent_version), major_minor(theirs)
    if ours_mm is None or theirs_mm is None or ours_mm == theirs_mm:
        return None
    want = ".".join(map(str, theirs_mm))
    have = ".".join(map(str, ours_mm))
    carried = client.get("expectedAgentVersion")
    if name == VSCODE_EXTENSION and isinstance(carried, str):  # the extension's own environment
        if major_minor(carried) == ours_mm:
            fix = (f"This agent is the one the extension's package carries ({carried}), so the package pairs "
                   "them wrongly: update the Sidecar extension, or reinstall it.")
        else:
            fix = (f"The extension's own environment holds agent {agent_version}, not the {carried} the "
                   'extension carries: run "Sidecar: Retry Setup" to set it up again.')
    elif name == VSCODE_EXTENSION:
        fix = (f'Update the agent to {want}.x, or clear "sidecar.pythonPath" to use the agent the extension '
               f"carries." if ours_mm < theirs_mm else f"Update the Sidecar extension to {have}.x, or point "
               f'"sidecar.pythonPath" at an agent {want}.x.')
    else:
        fix = f"Use an agent {want}.x with this {name}, or a {name} {have}.x with this agent."
    return (f"Sidecar: the agent is {agent_version} and the extension ({name}) is {theirs}; they work together "
            f"only when major.minor match ({have} vs {want}), so some features may fail. {fix}")

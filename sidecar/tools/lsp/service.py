"""The session's headless language servers as a service: its key, read without importing pygls.

``LANGUAGE_SERVERS`` lives here, not in ``servers.py``, so a tool can ask whether a session has started
its servers (``find_service``) without importing pygls and watchfiles; the first ``service`` call starts
them (``LanguageServers``, imported then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sidecar.session import ServiceKey, Session

if TYPE_CHECKING:
    from sidecar.tools.lsp.servers import LanguageServers


def _start(session: Session) -> LanguageServers:
    from sidecar.tools.lsp.servers import LanguageServers  # lazy: pygls, watchfiles

    return LanguageServers(session)


LANGUAGE_SERVERS: ServiceKey[LanguageServers] = ServiceKey("lsp", _start)


def language_servers(session: Session) -> LanguageServers:
    """The session's service (created on first use)."""
    return session.service(LANGUAGE_SERVERS)

"""What a tool asks the gate: one value describing the action, so every tool is governed the same way."""

from __future__ import annotations

from sidecar.permission_types import Access as Access
from sidecar.permission_types import PermissionRequest as PermissionRequest

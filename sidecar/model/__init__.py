"""The model client: the anthropic SDK, streaming, retries, and the model settings.

Used by the agent loop and by WebFetch's small-model extraction. Every import of the SDK goes through this
package, so it installs, first, the finder that imports the SDK's re-export packages name by name and
leaves the Foundry client to its first use (``sdk_packages``: half the CPU, 1,499 modules instead of 3,505, for
``import anthropic``).
"""

from sidecar.model.sdk_packages import defer_sdk_packages

defer_sdk_packages()

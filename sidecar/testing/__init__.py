"""Test support shipped with the project: `sidecar.testing.scripted_server` (a scripted Messages API)."""

"""Sidecar: an editor coding agent."""

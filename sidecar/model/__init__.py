"""The model client: the anthropic SDK, streaming, retries, and the model settings.

Used by the agent loop and by WebFetch's small-model extraction.
"""

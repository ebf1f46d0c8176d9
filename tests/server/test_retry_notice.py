"""The retry notice says the wait as it is (issue 29): a sub-second wait is never "retrying in 0 s"."""

from __future__ import annotations

import pytest

from sidecar.model.client import RetryInfo


@pytest.mark.parametrize(("delay", "said"), [
    (0.0, "retrying now"), (0.4, "retrying in 0.4 s"), (0.96, "retrying in 1 s"), (1.0, "retrying in 1 s"),
    (2.5, "retrying in 2.5 s"), (30.0, "retrying in 30 s"), (119.6, "retrying in 120 s")])
def test_the_wait_is_said_as_it_is(delay: float, said: str) -> None:
    info = RetryInfo(attempt=1, max_attempts=7, delay_s=delay, status=529, error_type="overloaded_error",
                     detail="Overloaded")
    assert info.message() == f"The model API failed (HTTP 529 overloaded_error: Overloaded); {said} (attempt 2 of 7)"

"""How the terminal client reads a typed answer to a permission question."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.client.chat import pick_option

OPTIONS: list[dict[str, Any]] = [
    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "always", "name": "Always allow `git status`", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


@pytest.mark.parametrize(("answer", "option_id"), [
    ("1", "allow"), ("3", "reject"), ("y", "allow"), ("YES", "allow"), ("n", "reject"), ("no", "reject"),
    ("a", "always"), ("always", "always"), ("rej", "reject"), (" 2 ", "always"),
])
def test_a_typed_answer_names_its_option(answer: str, option_id: str) -> None:
    chosen = pick_option(OPTIONS, answer)
    assert chosen is not None and chosen["optionId"] == option_id


@pytest.mark.parametrize("answer", ["0", "4", "maybe", "never", "", "-1"])
def test_an_answer_naming_no_option_picks_nothing(answer: str) -> None:
    # "never" asks for reject_always, which this question does not offer: nothing is guessed.
    assert pick_option(OPTIONS, answer) is None

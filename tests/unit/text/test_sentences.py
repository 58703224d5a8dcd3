"""Sentences of a passage (strongroom.text.sentences)."""

from __future__ import annotations

import pytest

from strongroom.text.sentences import sentence_spans


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text)]


@pytest.mark.parametrize(
    "text",
    [
        "Each anchorage shall support 5,000 lb. (22.2 kN) per employee attached.",
        "Guardrails shall be 42 in. (107 cm) plus or minus 3 in. (8 cm) above the floor.",
        "The ladder extends 3 ft. (0.9 m) above the landing.",
        "Use rope of No. 4 size or larger.",
    ],
)
def test_a_sentence_is_never_split_after_a_units_abbreviation(text) -> None:
    """Issue 40: a split at `400 lb.` dropped the fact that followed it."""
    assert sentences(text) == [text]


def test_a_sentence_ending_in_a_unit_still_ends_before_a_new_sentence() -> None:
    assert sentences("Ladders shall sustain 250 lb. Each step is checked.") == [
        "Ladders shall sustain 250 lb.",
        "Each step is checked.",
    ]

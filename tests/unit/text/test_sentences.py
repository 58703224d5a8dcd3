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


# Issue 53, item 2: sentences as a reader sees them.


def test_a_bracketed_option_ends_its_sentence_where_its_bracket_closes() -> None:
    """A specification's options (`within[ 60] minutes ... limits.]`): a sentence ending
    inside a bracket ends where the bracket closes, and the next option starts its own."""
    text = (
        "Discharge concrete within[ 60][ 90] minutes after water is added.[ Reduce the time "
        "in hot weather to stay within the temperature limits.][ Retempering is not "
        "permitted.] Place concrete in layers not over 12 inches deep."
    )
    assert sentences(text) == [
        "Discharge concrete within[ 60][ 90] minutes after water is added.",
        "[ Reduce the time in hot weather to stay within the temperature limits.]",
        "[ Retempering is not permitted.]",
        "Place concrete in layers not over 12 inches deep.",
    ]


def test_a_bracketed_note_that_is_not_a_sentence_end_stays_in_its_sentence() -> None:
    text = "The Contractor shall furnish _____ [*insert number*] sets of prints."
    assert sentences(text) == [text]


@pytest.mark.parametrize("label", ["c.", "d)", "iv."])
def test_a_list_label_starts_the_item_it_labels_not_the_sentence_before(label) -> None:
    """`... shall be removed. c.`: the next item's label is cut from the sentence before."""
    text = f"Forms shall be removed after 24 hours. {label} Cure surfaces for 7 days."
    assert sentences(text) == [
        "Forms shall be removed after 24 hours.",
        f"{label} Cure surfaces for 7 days.",
    ]


def test_a_sentence_still_goes_on_with_a_lower_case_word() -> None:
    text = "The slab is 6 in. thick where shown."
    assert sentences(text) == [text]


def test_a_table_title_line_is_kept_apart_from_its_header_line() -> None:
    text = "Table 2 Minimum curing periods\nCement type | Days\nType I | 7\nType III | 3"
    assert sentences(text) == [
        "Table 2 Minimum curing periods",
        "Cement type | Days",
        "Type I | 7",
        "Type III | 3",
    ]


def test_a_reference_list_is_read_as_rows() -> None:
    """A specification's references, one a line without sentence ends, wrapped or not: one
    sentence each, not a few huge ones."""
    text = (
        "ACI 117 (2010; R 2015) Specification for Tolerances for Concrete Construction\n"
        "ACI 301 (2016) Specifications for Structural Concrete\n"
        "ASTM C94/C94M (2021) Standard Specification for Ready-Mixed\n"
        "Concrete\n"
        "AASHTO M 182 (2005) Burlap Cloth Made from Jute or Kenaf"
    )
    assert sentences(text) == [
        "ACI 117 (2010; R 2015) Specification for Tolerances for Concrete Construction",
        "ACI 301 (2016) Specifications for Structural Concrete",
        "ASTM C94/C94M (2021) Standard Specification for Ready-Mixed\nConcrete",
        "AASHTO M 182 (2005) Burlap Cloth Made from Jute or Kenaf",
    ]


def test_a_wrapped_line_naming_a_standard_goes_on_its_sentence() -> None:
    text = "Test the slump in accordance with\nASTM C143 before each placement."
    assert sentences(text) == [text]


@pytest.mark.parametrize("month", ["Feb.", "Nov.", "Sept."])
def test_a_months_abbreviation_before_a_day_goes_on(month) -> None:
    text = f"[56 FR 37004, Aug. 1, 1991, as amended at 61 FR 5510, {month} 13, 1996]"
    assert sentences(text) == [text]

"""Clause-level comparison: added, removed, changed and moved clauses, with evidence."""

from __future__ import annotations

import json
import random
import uuid

import pytest

from strongroom.workflows.analysis_compare import ClauseRef, Comparison, compare_documents
from strongroom.workflows.analysis_types import Source, squash
from tests.unit.workflows.contracts import (
    CLAUSES_V1,
    assert_cites,
    contract_text,
    contract_v1_sources,
    contract_v2_sources,
    sources,
)


def _compare(left_text: str, right_text: str, **options) -> Comparison:
    left = sources("left.txt", [left_text], **options)
    right = sources("right.txt", [right_text], **options)
    comparison = compare_documents(left, right)
    _assert_all_cited(comparison, left, right)
    return comparison


def _assert_cites_clause(clause: ClauseRef, passages: list[Source]) -> None:
    assert clause.evidence
    for evidence in clause.evidence:
        assert_cites(evidence, passages)
    # The clause's text is the text of its evidence, less its number.
    assert clause.text in squash(" ".join(evidence.excerpt for evidence in clause.evidence))


def _assert_all_cited(comparison: Comparison, left: list[Source], right: list[Source]) -> None:
    for clause in comparison.removed:
        _assert_cites_clause(clause, left)
    for clause in comparison.added:
        _assert_cites_clause(clause, right)
    for pair in (*comparison.changed, *comparison.moved):
        _assert_cites_clause(pair.left, left)
        _assert_cites_clause(pair.right, right)


def _labels(clauses) -> list[tuple[str | None, str | None]]:
    return [(clause.number, clause.heading) for clause in clauses]


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "pdf-wrapped"])
def test_a_revised_contract_shows_the_added_removed_changed_and_moved_clauses(
    wrapped: bool,
) -> None:
    left, right = contract_v1_sources(wrapped=wrapped), contract_v2_sources(wrapped=wrapped)
    comparison = compare_documents(left, right)
    _assert_all_cited(comparison, left, right)
    assert _labels(comparison.added) == [("6", "COLLATERAL WARRANTIES"), ("6.1", None)]
    assert comparison.added[1].text.startswith("The Contractor shall procure collateral")
    assert _labels(comparison.removed) == [("3.3", None)]
    assert comparison.removed[0].text.startswith("The Retention Percentage is 3 per cent")
    [change] = comparison.changed
    assert (change.left.number, change.right.number, change.moved) == ("4.1", "4.1", False)
    assert [(edit.op, edit.left, edit.right) for edit in change.edits] == [
        ("replace", "\u00a312,500", "\u00a315,000")
    ]
    assert 0.9 < change.similarity < 1
    assert [(m.left.number, m.right.number) for m in comparison.moved] == [
        ("5", "8"),
        ("5.1", "8.1"),
    ]
    assert (comparison.left_clauses, comparison.right_clauses) == (23, 24)
    assert comparison.unchanged == 21  # every clause but 3.3 and 4.1, moved ones included


def test_a_moved_clause_is_neither_added_nor_removed() -> None:
    blocks = list(CLAUSES_V1)
    moved = [*blocks[:2], blocks[5], *blocks[2:5], *blocks[6:]]  # defects up to third
    comparison = _compare(contract_text(blocks), contract_text(moved))
    assert comparison.added == () and comparison.removed == () and comparison.changed == ()
    assert [m.left.heading for m in comparison.moved] == ["DEFECTS", None]
    assert [m.left.number for m in comparison.moved] == ["6", "6.1"]


def test_a_moved_and_amended_clause_is_changed_and_marked_moved() -> None:
    left = (
        "1. Payment is monthly.\n2. Noise is limited.\n3. Deliveries use the north gate.\n"
        "4. The site opens at 8am on weekdays."
    )
    right = (
        "1. The site opens at 7am on weekdays.\n2. Payment is monthly.\n3. Noise is limited.\n"
        "4. Deliveries use the north gate."
    )
    comparison = _compare(left, right)
    [change] = comparison.changed
    assert (change.left.number, change.right.number, change.moved) == ("4", "1", True)
    assert comparison.added == comparison.removed == comparison.moved == ()
    assert comparison.unchanged == 3


def test_renumbering_alone_is_no_change() -> None:
    renumbered = [("0. PRELIMINARIES", "0.1 The Contractor shall attend site meetings.")]
    blocks = [_renumber(block, n) for n, block in enumerate(renumbered + CLAUSES_V1, start=1)]
    comparison = _compare(contract_text(CLAUSES_V1), contract_text(blocks))
    assert _labels(comparison.added) == [("1", "PRELIMINARIES"), ("1.1", None)]
    assert comparison.removed == () and comparison.changed == () and comparison.moved == ()
    assert comparison.unchanged == comparison.left_clauses == 23


def _renumber(block: tuple[str, ...], number: int) -> tuple[str, ...]:
    lines = []
    for line in block:
        head, rest = line.split(" ", 1)
        tail = head.split(".", 1)[1]
        lines.append(f"{number}.{tail} {rest}")
    return tuple(lines)


def test_identical_documents_differ_in_nothing() -> None:
    left, right = contract_v1_sources(), contract_v1_sources(wrapped=True)
    comparison = compare_documents(left, right)
    assert (comparison.added, comparison.removed, comparison.changed, comparison.moved) == (
        (),
        (),
        (),
        (),
    )
    assert comparison.unchanged == comparison.left_clauses == comparison.right_clauses == 23


def test_a_rewritten_clause_under_the_same_heading_is_changed() -> None:
    left = "INSURANCE\nThe Contractor shall insure the Works.\n\nPAYMENT\nMonthly."
    right = (
        "INSURANCE\nCover for all risks is placed by the Employer in joint names.\n\n"
        "PAYMENT\nMonthly."
    )
    comparison = _compare(left, right)
    [change] = comparison.changed
    assert change.left.heading == change.right.heading == "INSURANCE"
    assert change.similarity < 0.4
    assert comparison.added == comparison.removed == ()


def test_a_run_in_heading_aligns_a_rewritten_clause() -> None:
    left = "2. Contract Sum. The Employer shall pay \u00a34,250,000 in monthly instalments."
    right = "9. Contract Sum. Payment of four and a half million pounds falls due on completion."
    [change] = _compare(left, right).changed
    assert change.left.heading == change.right.heading == "Contract Sum"
    assert change.right.text.startswith("Contract Sum. Payment")


def test_a_clause_reworded_under_the_same_number_is_changed() -> None:
    left = "7.2 The Employer shall pay each invoice within 30 days of its receipt."
    right = "7.2 The Employer must pay every valid invoice within 14 days of receiving it."
    [change] = _compare(left, right).changed
    assert (change.left.number, change.right.number) == ("7.2", "7.2")
    assert 0.4 <= change.similarity < 0.6


def test_an_amended_clause_renumbered_by_an_insertion_goes_with_its_old_self() -> None:
    left = (
        "4.1 The Employer shall pay each interim certificate within 14 days of its due date.\n"
        "5.1 Noise is limited to 75 dB at the boundary."
    )
    right = (
        "4.1 The Employer shall pay each invoice for design fees within 30 days of receipt.\n"
        "5.1 The Employer shall pay each interim certificate within 21 days of its due date.\n"
        "6.1 Noise is limited to 75 dB at the boundary."
    )
    comparison = _compare(left, right)
    [change] = comparison.changed
    assert (change.left.number, change.right.number) == ("4.1", "5.1")
    assert [(e.left, e.right) for e in change.edits] == [("14", "21")]
    assert [clause.text for clause in comparison.added] == [
        "The Employer shall pay each invoice for design fees within 30 days of receipt."
    ]
    assert comparison.removed == () and comparison.unchanged == 1


def test_unrelated_clauses_under_the_same_number_are_removed_and_added() -> None:
    left = "4.1 The Employer shall pay each interim certificate within 14 days."
    right = "4.1 Noisy works are not permitted on Sundays or bank holidays at the site."
    comparison = _compare(left, right)
    assert comparison.changed == ()
    assert _labels(comparison.removed) == _labels(comparison.added) == [("4.1", None)]


def test_similar_unnumbered_paragraphs_are_aligned_by_text() -> None:
    left = (
        "The Contractor shall keep the site tidy at all times.\n\n"
        "The Employer may inspect the works on reasonable notice."
    )
    right = (
        "The Employer may inspect the works on reasonable written notice.\n\n"
        "Deliveries are made between 8am and 4pm only.\n\n"
        "The Contractor shall keep the site tidy at all times."
    )
    comparison = _compare(left, right)
    assert [c.right.text for c in comparison.changed] == [
        "The Employer may inspect the works on reasonable written notice."
    ]
    assert [c.text for c in comparison.added] == ["Deliveries are made between 8am and 4pm only."]
    assert comparison.removed == ()
    assert (comparison.left_clauses, comparison.right_clauses) == (2, 3)


@pytest.mark.parametrize(
    ("line", "number"),
    [
        ("1. The Works are described in the Specification.", "1"),
        ("1.2 The Works are described in the Specification.", "1.2"),
        ("12.3.4 The Works are described in the Specification.", "12.3.4"),
        ("1.2. The Works are described in the Specification.", "1.2"),
        ("Clause 5 The Works are described in the Specification.", "5"),
        ("CLAUSE 5 - PAYMENT", "5"),
        ("Section 3: Insurance of the Works", "3"),
        ("Article 7. The Works are described in the Specification.", "7"),
        ('3. "Works" means the works described in the Specification.', "3"),
    ],
)
def test_clause_numbers_in_their_common_forms_start_clauses(line: str, number: str) -> None:
    comparison = _compare("", f"{line}\nIt continues here.")
    assert [clause.number for clause in comparison.added] == [number]


def test_a_number_and_a_tab_start_a_clause_in_text_that_keeps_its_tabs() -> None:
    # Ingestion's chunks turn tabs into spaces; other sources may keep them.
    tabbed = Source(uuid.uuid4(), "left.txt", uuid.uuid4(), 1, "1\tPayment.\n2\tNoise.")
    comparison = compare_documents([tabbed], [])
    assert [clause.number for clause in comparison.removed] == ["1", "2"]
    assert [clause.text for clause in comparison.removed] == ["Payment.", "Noise."]


def test_wrapped_lines_starting_with_numbers_do_not_start_clauses() -> None:
    text = (
        "4.1 The Contractor shall pay the sum within\n14 days of the notice and shall build\n"
        "2.5 metres of wall each day, adding\n3.1 tonnes of steel."
    )
    comparison = _compare("", text)
    assert _labels(comparison.added) == [("4.1", None)]


def test_a_document_without_clauses_is_compared_by_paragraph() -> None:
    paragraphs = [
        "The parties met on site to agree the programme.",
        "The Contractor will start groundworks in the spring.",
        "The Employer will fund the works in three stages.",
    ]
    comparison = _compare("\n\n".join(paragraphs), "\n\n".join(paragraphs[:2]))
    assert [clause.text for clause in comparison.removed] == [paragraphs[2]]
    assert (comparison.left_clauses, comparison.unchanged) == (3, 2)


def test_a_clause_over_two_passages_cites_both() -> None:
    clause = (
        "5.1 The Contractor shall insure the Works:\n\n"
        "(a) against all risks for their full reinstatement value; and\n\n"
        "(b) against third party liability for not less than ten million pounds."
    )
    left = sources("left.txt", [clause + "\n\n5.2 Insurance starts on possession."], target=80)
    right = sources("right.txt", ["5.2 Insurance starts on possession."], target=80)
    comparison = compare_documents(left, right)
    _assert_all_cited(comparison, left, right)
    [removed] = comparison.removed
    assert removed.number == "5.1" and len(removed.evidence) == 3
    assert removed.text.endswith("not less than ten million pounds.")


def test_a_change_has_a_word_level_diff_with_context() -> None:
    left = (
        "2.2 The Contractor shall complete the Works by 30 September 2026 and shall hand "
        "over the keys, manuals and drawings to the Employer on that day."
    )
    right = (
        "2.2 The Contractor shall complete the Works by 31 October 2026 and shall hand "
        "over the keys, manuals and drawings to the Employer on that day and not before."
    )
    [change] = _compare(left, right).changed
    assert [(e.op, e.left, e.right) for e in change.edits] == [
        ("replace", "30 September", "31 October"),
        ("replace", "day.", "day and not before."),
    ]
    assert change.diff_text == (
        "... complete the Works by [-30 September-] {+31 October+} 2026 and shall hand "
        "... the Employer on that [-day.-] {+day and not before.+}"
    )


def test_documents_are_named_and_empty_sides_give_all_added_or_removed() -> None:
    left = contract_v1_sources()
    comparison = compare_documents(left, [])
    assert comparison.left_document.document_name == "contract-v1.pdf"
    assert comparison.right_document is None
    assert len(comparison.removed) == comparison.left_clauses == 23
    assert compare_documents([], []).to_json()["unchanged"] == 0


def test_the_comparison_is_json_with_uuids_as_strings() -> None:
    left, right = contract_v1_sources(), contract_v2_sources()
    payload = compare_documents(left, right).to_json()
    decoded = json.loads(json.dumps(payload))
    assert decoded == payload
    assert decoded["left_document"]["document_id"] == str(left[0].document_id)
    change = decoded["changed"][0]
    assert set(change) == {"left", "right", "similarity", "edits", "diff_text", "moved"}
    assert change["right"]["evidence"][0]["chunk_id"] in {str(s.chunk_id) for s in right}


def test_the_comparison_is_deterministic() -> None:
    left, right = contract_v1_sources(wrapped=True), contract_v2_sources()
    first = compare_documents(left, right)
    assert compare_documents(list(left), list(right)) == first
    assert compare_documents(left, right).to_json() == first.to_json()


def test_long_documents_with_scattered_edits_are_compared() -> None:
    rng = random.Random(5)
    words = "contractor employer works site payment notice period insurance design".split()

    def clause(number: int) -> str:
        body = " ".join(rng.choice(words) for _ in range(rng.randint(15, 40)))
        return f"{number // 10}.{number % 10 + 1} The {body}."

    left_clauses = [clause(n) for n in range(400)]
    right_clauses = list(left_clauses)
    for index in range(0, 400, 20):  # amend one word in every twentieth clause
        number, text = right_clauses[index].split(" ", 1)
        right_clauses[index] = f"{number} {text.replace('The ', 'The amended ', 1)}"
    comparison = _compare("\n".join(left_clauses), "\n".join(right_clauses))
    assert len(comparison.changed) == 20
    assert comparison.unchanged == 380
    assert comparison.added == comparison.removed == ()


@pytest.mark.parametrize("target", [1200, 90], ids=["one-passage", "number-at-a-passage-end"])
def test_a_number_on_its_own_line_takes_the_heading_on_the_next(target: int) -> None:
    """Issue 27: `8.` alone on its line, `DEFECTS LIABILITY` on the next (and, before the
    chunking fix, the number ending the passage before): the clause is 8, headed, and its
    evidence starts at its number with the text it numbers."""
    text = (
        "7. Liquidated damages are a genuine pre-estimate of loss and not a penalty.\n\n"
        "8.\nDEFECTS LIABILITY\nThe Contractor shall make good defects within 28 days."
    )
    comparison = _compare("", text, target=target)
    assert _labels(comparison.added) == [("7", None), ("8", "DEFECTS LIABILITY")]
    eight = comparison.added[1]
    assert eight.evidence[0].excerpt.startswith("8.\nDEFECTS LIABILITY")

"""A table row read with its header (strongroom.answers.reading): each value keeps the name of
its column, even where a spreadsheet's row-label column has no header."""

from __future__ import annotations

from strongroom.answers.reading import sentences_of
from tests.unit.answers.test_extractive import passages


def test_a_row_label_column_without_a_header_keeps_every_value_under_its_own_column() -> None:
    """An XLSX sheet whose first column labels the rows and has no header: its header line's
    empty first cell is trimmed with the line's white space (`| Overhead (percent) | ...`),
    and was read as no cell at all, naming each value after the column left of it."""
    (passage,) = passages(
        "Sheet: Ceilings\n"
        "| Overhead (percent) | Profit (percent) | Commission\n"
        "To Contractor on work performed by other than its own forces | — | — | 10\n"
        "To Contractor on work performed with its own forces | 10 | 10 | —"
    )
    rows = [sentence.text for sentence in sentences_of(passage) if sentence.header]
    assert rows == [
        "To Contractor on work performed by other than its own forces; Overhead (percent): —; "
        "Profit (percent): —; Commission: 10",
        "To Contractor on work performed with its own forces; Overhead (percent): 10; "
        "Profit (percent): 10; Commission: —",
    ]

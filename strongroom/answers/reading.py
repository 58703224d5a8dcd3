"""A passage read into the sentences an answer can quote, as a reader sees them (issue 53).

Sentences and words are the ones search uses (strongroom.text.sentences,
strongroom.text.analysis: the same stems and construction concepts as search). A table row is
read with its table's header; an item of a list (`(1) Completion and acceptance of all work;`)
holds the words of the list's lead-in (`The Government shall pay ... after-`), as a sentence
holds its title's (issue 15). Headings are kept with their body, never a sentence alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strongroom.answers.base import Passage
from strongroom.text import analysis
from strongroom.text.sentences import is_table_row, is_title, sentence_spans

MIN_TERMS = 3  # a sentence with fewer terms (a heading, a label) is not an answer


@dataclass(frozen=True)
class Sentence:
    """A sentence of a passage, or a row of a table with `header`, its table's first row."""

    passage: Passage
    start: int
    end: int
    terms: frozenset[str]
    header: str | None = None
    lead: tuple[int, int] | None = None  # (start, end) of the lead-in of the list it is in
    sequence: tuple[str, ...] = ()  # its own terms, in order (for phrases: `near_pairs`)

    @property
    def raw(self) -> str:
        return self.passage.content[self.start : self.end]

    @property
    def text(self) -> str:
        """The sentence on one line; a table row as `column: value; ...`."""
        if self.header is None:
            return " ".join(self.raw.split())
        return "; ".join(
            f"{name}: {value}" if name else value
            for name, value in zip(_cells(self.header), _cells(self.raw), strict=False)
            if value
        )

    @property
    def excerpt(self) -> str:
        """What the citation quotes: the sentence, or a table's header row and this row."""
        return self.raw if self.header is None else f"{self.header}\n{self.raw}"


def _cells(row: str) -> list[str]:
    """A table row's cells. An empty first or last cell (a spreadsheet's row-label column
    has no header: `| Overhead (percent) | Profit (percent)`) stays a cell, though the
    line's white space was trimmed with it, so that each value keeps its column's name."""
    if "\t" in row:
        return [cell.strip() for cell in row.split("\t")]
    cells = row.split(" | ")
    if cells[0].startswith("|"):
        cells = ["", cells[0][1:], *cells[1:]]
    if len(cells) > 1 and cells[-1].endswith("|"):
        cells = [*cells[:-1], cells[-1][:-1], ""]
    return [cell.strip() for cell in cells]


def sentences_of(passage: Passage) -> list[Sentence]:
    """The sentences of `passage` that can answer something, each with the terms of the title
    it is under (`3. Retention.` lends `retention` to `The Employer may retain 5%.`; so does a
    run-in paragraph heading, `(h) *Final payment*.`) and, for an item of a list, the terms of
    the list's lead-in (`The Contractor shall-` lends `contractor` to `(1) Provide
    barricades;`); titles themselves, fragments and lead-ins to nothing the passage holds
    (`... insert the following clause:`) are left out. As a reader sees them (issue 53): a
    labelled run-in heading without emphasis (`(f) Retention. If ...`) is a title too, kept
    with its body, never a sentence alone; a table's title line (the line above its header)
    is its rows' title, and a row's header is the first row of its block under that title."""
    content = passage.content
    found = []
    title: list[str] = []
    lists = _Lists()
    for start, end in sentence_spans(content):
        text = content[start:end]
        header = None
        lead, lead_terms = lists.follow(start, end, text)
        if is_table_row(text):
            first = _header_of(content, start)
            if first == start:  # the header row itself names columns, answers nothing
                continue
            line_end = content.find("\n", first)
            header = content[first : line_end if line_end >= 0 else len(content)]
        elif (
            is_title(text)
            or _RUN_IN_HEADING.fullmatch(text.strip())
            or (lead is None and _runs_in(content, end) and is_labelled_heading(text))
            or _table_follows(content, start, end)
        ):
            title = [term for term in analysis.terms(text) if not term.isdigit()]
            continue
        words = analysis.terms(text if header is None else f"{header} {text}")
        if header is None and len(words) < MIN_TERMS:
            continue
        terms = frozenset(words + title + lead_terms)
        found.append(Sentence(passage, start, end, terms, header, lead, tuple(words)))
    leading = {sentence.lead for sentence in found}
    return [
        s
        for s in found
        if (not is_lead_in(s) or (s.start, s.end) in leading) and not _PRESCRIPTION.match(s.raw)
    ]


def _header_of(content: str, start: int) -> int:
    """Where the header of the table whose row starts at `start` starts: the first table
    row of its block (a title line above the header is no row of it)."""
    block = content.rfind("\n\n", 0, start)
    line_start = 0 if block < 0 else block + 2
    while line_start < start:
        line_end = content.find("\n", line_start)
        if is_table_row(content[line_start:line_end]):
            return line_start
        line_start = line_end + 1
    return start


def _table_follows(content: str, start: int, end: int) -> bool:
    """Whether the line `start:end` is followed by a table's row: the table's title (`Table 2
    Minimum curing periods`), a title for its rows, never an answer alone."""
    if content[end : end + 1] != "\n" or (start > 0 and content[start - 1] != "\n"):
        return False
    line_end = content.find("\n", end + 1)
    return is_table_row(content[end + 1 : line_end if line_end >= 0 else len(content)])


def _runs_in(content: str, end: int) -> bool:
    """Whether the sentence ending at `end` runs into the next on its line (`(f) Retention.
    If the ...`), as a run-in heading does, and an item of a list, one a line (`(i) Name and
    address of the Contractor.`), does not."""
    return content[end : end + 1] == " " and content[end + 1 : end + 2] not in ("", "\n")


# A clause's run-in heading without emphasis: a label, a few words naming what follows, a
# full stop (`(f) Retention.`, `(c) Performance and payment bonds.`, `1.4 Submittals.`).
_LABELLED_HEADING = re.compile(
    r"\s*(?:\([a-zA-Z0-9]{1,4}\)|[a-zA-Z][.)]|\d{1,3}(?:\.\d{1,3})*[.)]?)\s+"
    r"([A-Z][^.;:!?\n]*)\.\s*"
)
HEADING_WORDS = 6  # at most this many words name a paragraph; more say something
# Words a sentence says and a heading's name does not.
_SAYING = frozenset(
    "shall must may will is are be been was were has have had should can cannot does do "
    "not no".split()
)


def is_labelled_heading(text: str) -> bool:
    """A labelled paragraph's name alone (`(f) Retention.`): at most HEADING_WORDS words,
    none of them saying anything (`shall`, `is`, `may`, `not`). An item of a list is no
    heading (`(3) Presentation of a release of all claims.` ends a lead-in's list: the caller
    asks only of sentences outside lists)."""
    found = _LABELLED_HEADING.fullmatch(text)
    if found is None:
        return False
    words = found.group(1).split()
    return len(words) <= HEADING_WORDS and not any(w.lower() in _SAYING for w in words)


# Where a clause is to be used, not what it says: `As prescribed in 1843.205-70, insert the
# following clause.` (the FAR and every agency supplement print one above each clause).
_PRESCRIPTION = re.compile(r"\s*As prescribed (?:in|at|by)\b.{0,80}?\b(?:insert|use)\b", re.I)


# A paragraph's label and its emphasised name, alone: `(h) *Final payment*.` (FAR clauses).
_RUN_IN_HEADING = re.compile(r"\([a-z0-9]{1,4}\)\s+(\*{1,2}|_)[^*_\n]+\1\.?")
# How a lead-in ends: `... after-` (the FAR's em dash, as the corpus has it), `...:`.
LEAD_ENDS = ("-", "\u2014", ":")
_ITEM_LABEL = re.compile(r"\s*\(([a-z]+|\d+)\)\s")


def is_lead_in(sentence: Sentence) -> bool:
    """A sentence that introduces a list (`The Government shall pay ... after-`): what it
    says is completed by the list's items."""
    return sentence.header is None and sentence.raw.rstrip().endswith(LEAD_ENDS)


SEQUEL_GAP = 3  # characters of white space at most between a sentence and the next


def next_in_paragraph(before: Sentence, after: Sentence) -> bool:
    """Whether `after` is the very next sentence of `before`'s paragraph: the same passage,
    at most SEQUEL_GAP characters of white space between them, no blank line (a sentence and
    its sequel, a rule and its condition)."""
    if after.passage is not before.passage or after.start < before.end:
        return False
    gap = before.passage.content[before.end : after.start]
    return len(gap) <= SEQUEL_GAP and not gap.strip() and "\n\n" not in gap


def _label_kind(text: str) -> str | None:
    """The kind of list label `text` starts with: `(1)` digits, `(ii)` roman, `(b)` letters."""
    found = _ITEM_LABEL.match(text)
    if found is None:
        return None
    label = found.group(1)
    if label.isdigit():
        return "digits"
    return "roman" if set(label) <= set("ivx") else "letters"


class _Lists:
    """Which list, if any, each sentence of a passage (in order) is an item of: a list starts
    after a lead-in and goes on while sentences start with a label of the kind its first item
    has (`(1)`, `(2)`, ...: a paragraph `(c)` after them ends it)."""

    def __init__(self) -> None:
        self.lead: tuple[int, int] | None = None
        self.terms: list[str] = []
        self.kind: str | None = None

    def follow(self, start: int, end: int, text: str) -> tuple[tuple[int, int] | None, list[str]]:
        """The lead-in (its span and terms) of the list the sentence at `start:end` is an
        item of, or (None, [])."""
        kind = _label_kind(text)
        found: tuple[tuple[int, int] | None, list[str]] = (None, [])
        if self.lead is not None and kind is not None and self.kind in (None, kind):
            self.kind = kind
            found = (self.lead, self.terms)
        else:
            self.lead, self.terms, self.kind = None, [], None
        if text.rstrip().endswith(LEAD_ENDS):
            self.lead, self.terms, self.kind = (start, end), analysis.terms(text), None
        return found


def candidates_of(passages: list[Passage]) -> list[Sentence]:
    return [sentence for passage in passages for sentence in sentences_of(passage)]


# A list item's label before its text: `(i) `, `(b)(1) `, `c. `.
_LABEL = re.compile(r"\s*(?:(?:\([a-zA-Z0-9]{1,4}\)\s*)+|[a-z][.)]\s+)")


def unlabelled(sentence: str) -> str:
    """`sentence` without the label of its list item (`(b)(1) All laborers ...`)."""
    found = _LABEL.match(sentence)
    return sentence[found.end() :] if found else sentence

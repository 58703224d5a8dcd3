"""A clause-level comparison of two documents, offline.

Each document (its passages in reading order) is split into clauses: a clause starts at a
line that opens with a clause number (`1.`, `1.2`, `12.3.4`, `Clause 5`, `Section 3:`,
`Article 7`) followed by a capital letter, a bracket or a quote, or at a heading line (a
short line in capitals, or a Markdown `#` heading); the lines up to the next start belong to
it, across passages and pages. A numbered clause's heading is the rest of its line when
that is title-like (`5. PAYMENT`, `5. Payment`), or a run-in title (`2. Contract Sum. The
Employer shall ...`). Text before the first clause, and the whole of a document in
which no clause starts, is split into paragraphs instead. A clause's text is compared
without its number, so renumbering alone is no change.

Clauses are aligned one to one, in four passes over the ones not yet aligned, each taking
the most similar pairs first (difflib's ratio over words):
1. the same text (white space aside), in order: unchanged, wherever they are;
2. the same number and heading;
3. the same heading;
4. similar text: at least `TEXT_SIMILARITY` alike, or `NUMBER_SIMILARITY` with the same
   number, which also adds `NUMBER_BONUS` to the pair's score. The number is not enough on
   its own: after an insertion, clause 5 of the left is clause 6 of the right, and the
   new clause 5 is another clause.
A clause left over on the left was removed, one on the right added. Aligned clauses whose
text differs are `changed`, with the ratio and a word-level diff. Aligned clauses out of
order (not in the longest run kept in order on both sides) have `moved`; unchanged ones
that moved are listed in `moved`, and counted in `unchanged`.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from difflib import SequenceMatcher

from strongroom.text.sentences import is_heading
from strongroom.workflows.analysis_types import Evidence, JsonResult, Source, by_document, squash

TEXT_SIMILARITY = 0.6
NUMBER_SIMILARITY = 0.4
NUMBER_BONUS = 0.2
CANDIDATES = 5  # left clauses whose full ratio is computed, per right clause
DIFF_CONTEXT = 4  # words of unchanged text kept around each edit in `diff_text`

_NUMBER = r"\d{1,3}(?:\.\d{1,3}){0,4}"
_CLAUSE_START = re.compile(
    rf"(?:(?:Clause|CLAUSE|Section|SECTION|Article|ARTICLE)[ \t]+(?P<named>{_NUMBER})\.?"
    r"(?:[ \t]*[:.\u2013\u2014-][ \t]*|[ \t]+|$)"
    rf"|(?P<dotted>\d{{1,3}}(?:\.\d{{1,3}}){{1,4}})\.?(?:[ \t]+|$)"  # 1.2, 12.3.4, 1.2.
    rf"|(?P<number>\d{{1,3}})(?:\.(?:[ \t]+|$)|\t[ \t]*))"  # 1. or 1<tab>
    r"(?=$|[A-Z(\"\u201c'\u2018\u2019])"
)
_PARAGRAPHS = re.compile(r"\n[ \t]*\n\s*")
# A run-in heading: `2. Contract Sum. The Employer shall pay ...`
_RUN_IN_HEADING = re.compile(
    r"(?P<heading>[A-Z][\w'\u2019-]*(?:[ \t]+(?:[A-Z][\w'\u2019-]*|of|and|the|to|for|in|&)){0,5})"
    r"\.[ \t]+(?=[A-Z(\"\u201c])"
)


@dataclass(frozen=True)
class DocumentRef:
    document_id: uuid.UUID
    document_name: str


@dataclass(frozen=True)
class ClauseRef:
    number: str | None  # "5.2", or None for a heading or paragraph
    heading: str | None  # "PAYMENT", when the clause has one
    text: str  # the clause without its number, on one line
    evidence: tuple[Evidence, ...]  # one per passage the clause is in


@dataclass(frozen=True)
class WordEdit:
    op: str  # "insert", "delete" or "replace"
    left: str  # the words taken out ("" for an insert)
    right: str  # the words put in ("" for a delete)


@dataclass(frozen=True)
class ClauseChange:
    left: ClauseRef
    right: ClauseRef
    similarity: float  # difflib's ratio over the words, 0-1
    edits: tuple[WordEdit, ...]
    diff_text: str  # the right text with `[-taken out-]{+put in+}`, long same runs as `...`
    moved: bool


@dataclass(frozen=True)
class MovedClause:
    left: ClauseRef
    right: ClauseRef


@dataclass(frozen=True)
class Comparison(JsonResult):
    left_document: DocumentRef | None
    right_document: DocumentRef | None
    left_clauses: int
    right_clauses: int
    unchanged: int  # aligned clauses with the same text, moved or not
    added: tuple[ClauseRef, ...]  # in the right document's order
    removed: tuple[ClauseRef, ...]  # in the left document's order
    changed: tuple[ClauseChange, ...]  # in the right document's order
    moved: tuple[MovedClause, ...]  # unchanged but out of order, in the right's order


# Clauses -------------------------------------------------------------------------------


@dataclass
class _Clause:
    number: str | None
    heading: str | None
    pieces: list[tuple[Source, int, int]]  # spans of passages, the first from the start
    label_end: int  # where the text after the number starts, in the first piece's source
    text: str = ""
    words: tuple[str, ...] = ()

    def finish(self) -> None:
        first, _, end = self.pieces[0]
        parts = [first.content[self.label_end : end]]
        parts += [source.content[begin:end] for source, begin, end in self.pieces[1:]]
        self.text = squash(" ".join(parts))
        self.words = tuple(self.text.split())

    def ref(self) -> ClauseRef:
        return ClauseRef(
            number=self.number,
            heading=self.heading,
            text=self.text,
            evidence=tuple(Evidence.of(source, start, end) for source, start, end in self.pieces),
        )


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), end - (len(piece) - len(piece.rstrip()))


def _lines(source: Source) -> list[tuple[int, int]]:
    """(start, end) of each line of the passage with text on it."""
    found, start = [], 0
    text = source.content
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        begin, finish = _trimmed(text, start, end)
        if finish > begin:
            found.append((begin, finish))
        start = end + 1
    return found


def _start(line: str, following: str) -> tuple[str | None, str | None, int] | None:
    """(number, heading, length of the number label) when a clause starts at `line`, the
    next line being `following`."""
    match = _CLAUSE_START.match(line)
    if match:
        number = match["named"] or match["dotted"] or match["number"]
        rest = line[match.end() :].strip()
        heading = rest if rest and is_heading(line) else None
        if heading is None and (run_in := _RUN_IN_HEADING.match(rest)):
            heading = run_in["heading"]
        if not rest and is_heading(following):  # `8.` on a line of its own, its heading next
            heading = following.lstrip("#").strip()
        return number, heading, match.end()
    if not following[:1].islower() and is_heading(line):  # not a wrapped line in capitals
        return None, line.lstrip("#").strip(), 0
    return None


def _clauses(document: list[Source]) -> list[_Clause]:
    """The document's clauses; its paragraphs when no clause starts in it."""
    lines = [(source, begin, end) for source in document for begin, end in _lines(source)]
    clauses: list[_Clause] = []
    preamble: list[tuple[Source, int, int]] = []
    current: _Clause | None = None
    heading_taken = False  # this line is the heading of the number on the line before
    for index, (source, begin, end) in enumerate(lines):
        following = ""
        if index + 1 < len(lines):
            after, after_begin, after_end = lines[index + 1]
            following = after.content[after_begin:after_end]
        started = None if heading_taken else _start(source.content[begin:end], following)
        heading_taken = False
        if started is not None:
            number, heading, label = started
            current = _Clause(number, heading, [(source, begin, end)], begin + label)
            clauses.append(current)
            heading_taken = heading is not None and not source.content[begin + label : end].strip()
        elif current is None:
            preamble.append((source, begin, end))
        elif current.pieces[-1][0] is source:
            current.pieces[-1] = (source, current.pieces[-1][1], end)
        else:
            current.pieces.append((source, begin, end))
    if not any(clause.number is not None for clause in clauses) and len(clauses) < 2:
        clauses, preamble = [], [piece for source in document for piece in _whole(source)]
    paragraphs = [
        _Clause(None, None, [(source, start, end)], start)
        for source, begin, end in _merge_lines(preamble)
        for start, end in _paragraphs(source.content, begin, end)
    ]
    for clause in (found := paragraphs + clauses):
        clause.finish()
    return [clause for clause in found if clause.words]


def _whole(source: Source) -> list[tuple[Source, int, int]]:
    begin, end = _trimmed(source.content, 0, len(source.content))
    return [(source, begin, end)] if end > begin else []


def _merge_lines(pieces: list[tuple[Source, int, int]]) -> list[tuple[Source, int, int]]:
    """Consecutive lines of one passage as one span."""
    merged: list[tuple[Source, int, int]] = []
    for source, begin, end in pieces:
        if merged and merged[-1][0] is source:
            merged[-1] = (source, merged[-1][1], end)
        else:
            merged.append((source, begin, end))
    return merged


def _paragraphs(text: str, begin: int, end: int) -> list[tuple[int, int]]:
    found, start = [], begin
    for match in _PARAGRAPHS.finditer(text, begin, end):
        found.append(_trimmed(text, start, match.start()))
        start = match.end()
    found.append(_trimmed(text, start, end))
    return [(start, end) for start, end in found if end > start]


# Alignment -----------------------------------------------------------------------------


def _ratio(left: _Clause, right: _Clause, at_least: float) -> float:
    """difflib's ratio over the clauses' words, or 0 when it is surely under `at_least`."""
    matcher = SequenceMatcher(None, left.words, right.words, autojunk=False)
    if matcher.real_quick_ratio() < at_least or matcher.quick_ratio() < at_least:
        return 0.0
    return matcher.ratio()


def _align(left: list[_Clause], right: list[_Clause]) -> list[tuple[int, int]]:
    pairs: dict[int, int] = {}
    taken: set[int] = set()

    def free_right() -> list[int]:
        return [index for index in range(len(right)) if index not in taken]

    # 1. The same text, in order.
    by_text: dict[str, list[int]] = {}
    for index in free_right():
        by_text.setdefault(right[index].text, []).append(index)
    for index, clause in enumerate(left):
        candidates = by_text.get(clause.text)
        if candidates:
            pairs[index] = candidates.pop(0)
            taken.add(pairs[index])

    # 2 and 3. Headings: the best candidate pairs first.
    def heading_pass(accept) -> None:
        scored = []
        for i, clause in enumerate(left):
            if i in pairs:
                continue
            for j in free_right():
                if accept(clause, right[j]):
                    scored.append((-_ratio(clause, right[j], 0.0), i, j))
        claim(scored)

    def claim(scored: list[tuple[float, int, int]]) -> None:
        for _, i, j in sorted(scored):
            if i not in pairs and j not in taken:
                pairs[i] = j
                taken.add(j)

    heading_pass(lambda a, b: a.number is not None and a.number == b.number and _same_heading(a, b))
    heading_pass(_same_heading)

    # 4. Similar text, the same number counting for `NUMBER_BONUS`: a clause renumbered
    # after an insertion goes with its old self, not with the new clause that took its
    # number. For each right clause, the full ratio of the clauses with its number and of
    # the `CANDIDATES` left clauses with the best upper bound (quick_ratio), so unrelated
    # documents stay cheap. The matcher keeps what it learnt of the right clause.
    scored = []
    matcher = SequenceMatcher(None, autojunk=False)
    for j in free_right():
        matcher.set_seq2(right[j].words)
        bounds, numbered = [], []
        for i, clause in enumerate(left):
            if i in pairs:
                continue
            matcher.set_seq1(clause.words)
            same_number = clause.number is not None and clause.number == right[j].number
            floor = NUMBER_SIMILARITY if same_number else TEXT_SIMILARITY
            if matcher.real_quick_ratio() >= floor and (bound := matcher.quick_ratio()) >= floor:
                (numbered if same_number else bounds).append((-bound, i))
        for _, i in numbered + sorted(bounds)[:CANDIDATES]:
            matcher.set_seq1(left[i].words)
            ratio = matcher.ratio()
            if left[i].number is not None and left[i].number == right[j].number:
                if ratio >= NUMBER_SIMILARITY:
                    scored.append((-(ratio + NUMBER_BONUS), i, j))
            elif ratio >= TEXT_SIMILARITY:
                scored.append((-ratio, i, j))
    claim(scored)
    return sorted(pairs.items())


def _same_heading(a: _Clause, b: _Clause) -> bool:
    return (
        a.heading is not None
        and b.heading is not None
        and (a.heading.casefold() == b.heading.casefold())
    )


def _in_order(pairs: list[tuple[int, int]]) -> set[int]:
    """Indexes (into `pairs`, sorted by left) of a longest run increasing on the right."""
    tails: list[int] = []  # tails[k]: index of the pair ending a run of length k + 1
    previous: list[int] = [-1] * len(pairs)
    for index, (_, right) in enumerate(pairs):
        low, high = 0, len(tails)
        while low < high:
            middle = (low + high) // 2
            if pairs[tails[middle]][1] < right:
                low = middle + 1
            else:
                high = middle
        previous[index] = tails[low - 1] if low else -1
        if low == len(tails):
            tails.append(index)
        else:
            tails[low] = index
    kept: set[int] = set()
    index = tails[-1] if tails else -1
    while index >= 0:
        kept.add(index)
        index = previous[index]
    return kept


# Diff ----------------------------------------------------------------------------------


def _diff(left: tuple[str, ...], right: tuple[str, ...]) -> tuple[float, list[WordEdit], str]:
    matcher = SequenceMatcher(None, left, right, autojunk=False)
    edits: list[WordEdit] = []
    parts: list[str] = []
    opcodes = matcher.get_opcodes()
    for number, (op, i1, i2, j1, j2) in enumerate(opcodes):
        if op == "equal":
            words = list(right[j1:j2])
            head = 0 if number == 0 else DIFF_CONTEXT  # words after the edit before
            tail = 0 if number == len(opcodes) - 1 else DIFF_CONTEXT  # before the next
            if len(words) > head + tail:
                words = [*words[:head], "...", *words[len(words) - tail :]]
            parts.extend(words)
            continue
        taken_out, put_in = " ".join(left[i1:i2]), " ".join(right[j1:j2])
        edits.append(WordEdit(op, taken_out, put_in))
        if taken_out:
            parts.append(f"[-{taken_out}-]")
        if put_in:
            parts.append(f"{{+{put_in}+}}")
    return round(matcher.ratio(), 4), edits, " ".join(parts)


def _document(sources: list[Source]) -> DocumentRef | None:
    if not sources:
        return None
    return DocumentRef(sources[0].document_id, sources[0].document_name)


def compare_documents(left: list[Source], right: list[Source]) -> Comparison:
    """What changed, clause by clause, from the `left` document to the `right` one."""
    left_ordered = [source for document in by_document(left) for source in document]
    right_ordered = [source for document in by_document(right) for source in document]
    left_clauses, right_clauses = _clauses(left_ordered), _clauses(right_ordered)
    pairs = _align(left_clauses, right_clauses)
    in_order = _in_order(pairs)
    changed: list[tuple[int, ClauseChange]] = []
    moved: list[tuple[int, MovedClause]] = []
    unchanged = 0
    for index, (i, j) in enumerate(pairs):
        a, b = left_clauses[i], right_clauses[j]
        out_of_order = index not in in_order
        if a.text == b.text:
            unchanged += 1
            if out_of_order:
                moved.append((j, MovedClause(a.ref(), b.ref())))
            continue
        similarity, edits, diff_text = _diff(a.words, b.words)
        changed.append(
            (j, ClauseChange(a.ref(), b.ref(), similarity, tuple(edits), diff_text, out_of_order))
        )
    aligned_left = {i for i, _ in pairs}
    aligned_right = {j for _, j in pairs}
    return Comparison(
        left_document=_document(left_ordered),
        right_document=_document(right_ordered),
        left_clauses=len(left_clauses),
        right_clauses=len(right_clauses),
        unchanged=unchanged,
        added=tuple(
            clause.ref() for j, clause in enumerate(right_clauses) if j not in aligned_right
        ),
        removed=tuple(
            clause.ref() for i, clause in enumerate(left_clauses) if i not in aligned_left
        ),
        changed=tuple(change for _, change in sorted(changed, key=lambda item: item[0])),
        moved=tuple(item for _, item in sorted(moved, key=lambda item: item[0])),
    )

"""The offline answer engine (D44), the default: no model, no network.

It answers with the sentences of the retrieved passages that answer the question, quoted as
the documents have them, best first, each followed by the number of the passage it comes
from (`[2]`), and cites each passage once with the sentences it used. Sentences and words
are the ones search uses (strongroom.text.sentences, strongroom.text.analysis: the same stems
and construction concepts as search), and a table row is read with its table's header.

How a sentence is chosen: the question's terms are weighted by how rare they are among the
retrieved passages (a term none of them holds weighs most); a sentence scores the share of
that weight it holds, plus a part of the share its passage holds (the context it sits in)
and a little for its passage's place in the retrieval ranking, so the ranking is followed
when sentences are close. An item of a list (`(1) Completion and acceptance of all work;`)
holds the words of the list's lead-in (`The Government shall pay ... after-`), as a sentence
holds its title's; a lead-in chosen is quoted with its items, as one sentence (issue 15).
When no sentence holds enough of the question (ABSTAIN_BELOW, calibrated on the quality
benchmark, bench/quality), the answer says plainly that the documents do not answer it
(`NotFound`) and cites the CLOSEST passages as such, so that a person can read them. A
question that wants a value (strongroom.text.values.value_wanted: a date, a percentage, a
number of days, a sum, a count of something) is answered only by a sentence
holding a value of that kind (`within 28 days` does not answer `What is the contract sum?`),
and only by one that shares enough of its words, whatever its closeness in meaning: most
questions the documents cannot answer ask for a value their clauses do not state.

With an embeddings provider configured (issue 16), sentences are also compared with the
question by meaning (strongroom.answers.meaning): a sentence's score mixes its score by words
with its cosine with the question, so a question worded otherwise than the contract finds
its sentence; it abstains only when no sentence shares enough words AND none is close
enough in meaning (the model's `answer_floor`).

Sentences that follow one another in a paragraph (a rule and its exception, a sentence and
its sequel) are quoted as one, with one marker (issue 53: the first quoted sentence holds the
fact, not half of it). With meaning, a best sentence under the floor answers when it stands
far above every other candidate sentence (`stands_out`, calibrated on the tuning halves).

`brief` (template fill) answers with the value alone where the question asks for one (an
amount, a duration, a date, a percentage, a jurisdiction, a party: strongroom.text.values)
and the best sentence otherwise, cut to its clause.
"""

from __future__ import annotations

import itertools
import math
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from strongroom.answers.base import (
    CLOSEST,
    NO_PASSAGES,
    NOT_FOUND_PHRASE,
    AnswerEvent,
    Cite,
    Delta,
    NotFound,
    Passage,
    Usage,
)
from strongroom.answers.meaning import Meaning
from strongroom.text import analysis
from strongroom.text.question import Question
from strongroom.text.sentences import is_table_row, is_title, sentence_spans
from strongroom.text.values import (
    bound_asked,
    bound_terms,
    bounds_in,
    concise_value,
    defined_term,
    value_cue_terms,
)

MAX_SENTENCES = 3
MAX_ANSWER_CHARS = 1500
WORDS_PER_DELTA = 4
MIN_TERMS = 3  # a sentence with fewer terms (a heading, a label) is not an answer
PASSAGE_SHARE = 0.35  # how much of a score the sentence's passage contributes
RANK_BONUS = 0.1  # for the first passage; the n-th gets RANK_BONUS / n
ABSTAIN_BELOW = 0.65  # the best sentence's score under which there is no answer
MORE_AT = 0.7  # further sentences must score this share of the best one
# With a Meaning (strongroom.answers.meaning), calibrated on bench/quality/questions.yaml
# with MiniLM: a sentence's score is WORDS_PART of its score by words and MEANING_PART of its
# cosine with the question; further sentences must score MORE_AT_WITH_MEANING of the best.
WORDS_PART = 0.6
MEANING_PART = 0.4
MORE_AT_WITH_MEANING = 0.7
# Issue 53, a standout is an answer: with meaning, a best sentence under the floor answers
# when it reaches STANDOUT_FLOOR and every other candidate sentence scores STANDOUT_MARGIN
# or more below it (`stands_out`), calibrated on the tuning halves (tune.py --margins).
STANDOUT_FLOOR = 0.5
STANDOUT_MARGIN = 0.25
MEANING_PASSAGES = 5  # the best passages whose sentences are compared by meaning
BRIEF_SENTENCES = 5  # how many of the best sentences a value is looked for in
# A sentence saying the question's words as its phrases (neighbouring question terms within
# PHRASE_WINDOW terms of each other) gains up to PHRASE_PART in the ordering of sentences;
# whether anything answers (ABSTAIN_BELOW) is still decided by the words alone.
PHRASE_PART = 0.15
PHRASE_WINDOW = 3
# A question asking for one bound (`maximum`, `at least`) takes BOUND_PART from a sentence
# that states only the other (issue 40: the minimum quoted for the maximum asked).
BOUND_PART = 0.1
# A sentence stating the value of the term asked (`The Contract Sum is ...` for `What is the
# Contract Sum?`) gains DEFINES_PART over one that merely mentions it (issue 40).
DEFINES_PART = 0.1

NOT_FOUND = (
    f"{NOT_FOUND_PHRASE}: no sentence of the passages found answers this question. "
    "The closest passages are cited, for you to read."
)


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
    return [cell.strip() for cell in (row.split("\t") if "\t" in row else row.split(" | "))]


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


@dataclass(frozen=True)
class Scored:
    """A candidate sentence and how well it answers: `score` orders them; `words` is its
    score by shared words (with its passage's context and rank), `closeness` its cosine with
    the question when a Meaning is configured (else None)."""

    score: float
    words: float
    closeness: float | None
    sentence: Sentence


@dataclass(frozen=True)
class Choice:
    sentences: list[Sentence]  # best first
    score: float  # the best sentence's
    # When no sentence answers: the passages nearest to answering, each with the span of its
    # sentence that came closest (None: a passage none of whose sentences was scored).
    closest: list[tuple[Passage, tuple[int, int] | None]]


def closest_passages(
    scored: list[Scored], passages: list[Passage]
) -> list[tuple[Passage, tuple[int, int] | None]]:
    """The CLOSEST passages whose sentences come nearest the question (whatever value they
    hold), then the best-ranked of the others: what a person reads when nothing answers;
    each with the span of its best-scored sentence, for a client to highlight."""
    found: list[tuple[Passage, tuple[int, int] | None]] = []
    spans = [(item.sentence.passage, (item.sentence.start, item.sentence.end)) for item in scored]
    for passage, span in spans + [(passage, None) for passage in passages]:
        if len(found) == CLOSEST:
            break
        if all(passage is not other for other, _ in found):
            found.append((passage, span))
    return found


def sentence_texts(content: str) -> list[str]:
    """The texts of a passage's candidate sentences as the engine compares them by meaning
    (`Sentence.text`): what ingestion embeds beside the passage (issue 40,
    strongroom.retrieval.sentence_vectors)."""
    passage = Passage(0, _NO_ID, _NO_ID, "", 0, content, 0.0)
    return list(dict.fromkeys(sentence.text for sentence in sentences_of(passage)))


_NO_ID = uuid.UUID(int=0)


def candidate_sentences(contents: list[str], most: int) -> list[list[str]]:
    """Each passage's first `most` sentence_texts: what a piece of a document's vectors
    embeds beside its passages (issue 50). Run in the job's bounded child (about 5 ms a
    passage of CPU that once ran on the event loop)."""
    return [sentence_texts(content)[:most] for content in contents]


def candidates_of(passages: list[Passage]) -> list[Sentence]:
    return [sentence for passage in passages for sentence in sentences_of(passage)]


def ranked(
    wanted: tuple[str, ...],
    passages: list[Passage],
    *,
    candidates: list[Sentence] | None = None,
    closeness: list[float] | None = None,
    credited: frozenset[str] = frozenset(),
    bound: str | None = None,
    bound_words: frozenset[str] = frozenset(),
    defines: re.Pattern[str] | None = None,
) -> list[Scored]:
    """The sentences of `passages` (`candidates`, in candidates_of's order) that may answer a
    question of terms `wanted`, best first (ties: the better-ranked passage, then the
    earlier sentence). By words alone, a sentence must share a term with the question; with
    `closeness` (each candidate's cosine with the question), every sentence takes part and
    scores WORDS_PART of its score by words plus MEANING_PART of its closeness. `credited`:
    question terms every sentence counts as holding (the words naming the kind of value
    asked, `percentage`, when only sentences holding such a value compete: `5%` says it).
    `bound`: the one bound the question asks for (`upper`, `lower`: strongroom.text.values
    bound_asked); a sentence stating only the other loses BOUND_PART, one stating it counts
    as saying `bound_words` (the question's `maximum` is said by `not more than`). `defines`:
    a sentence matching it states the value of the term asked and gains DEFINES_PART."""
    if candidates is None:
        candidates = candidates_of(passages)
    if not wanted or not candidates:
        return []
    passage_terms = {passage.number: set(analysis.terms(passage.content)) for passage in passages}
    count = len(passages)
    weight = {
        term: math.log(
            1 + (count + 1) / (sum(term in seen for seen in passage_terms.values()) + 0.5)
        )
        for term in wanted
    }
    total = sum(weight.values())

    def share(terms) -> float:
        return sum(weight[term] for term in wanted if term in terms) / total

    asked = frozenset(wanted)

    def by_words(sentence: Sentence, said: frozenset[str]) -> float:
        """`said`: question terms the sentence counts as holding besides its own."""
        if not asked & sentence.terms:
            return 0.0
        own = share(sentence.terms | said)
        context = share(passage_terms[sentence.passage.number] | sentence.terms | said)
        return (
            (1 - PASSAGE_SHARE) * own
            + PASSAGE_SHARE * context
            + RANK_BONUS / sentence.passage.number
        )

    pairs = question_pairs(wanted)
    scored = []
    for index, sentence in enumerate(candidates):
        stated = bounds_in(sentence.text) if bound is not None else frozenset()
        words = by_words(sentence, credited | bound_words if bound in stated else credited)
        phrase = PHRASE_PART * near_pairs(pairs, sentence.sequence) if words > 0 else 0.0
        if stated and bound not in stated:  # only the other bound
            phrase -= BOUND_PART
        if defines is not None and words > 0 and defines.search(sentence.text):
            phrase += DEFINES_PART
        if closeness is None:
            if words > 0:
                scored.append(Scored(words + phrase, words, None, sentence))
            continue
        close = closeness[index]
        score = WORDS_PART * words + MEANING_PART * close + RANK_BONUS / sentence.passage.number
        scored.append(Scored(score + phrase, words, close, sentence))
    return sorted(
        scored, key=lambda item: (-item.score, item.sentence.passage.number, item.sentence.start)
    )


def question_pairs(terms: tuple[str, ...]) -> list[tuple[str, str]]:
    """The question's neighbouring terms, in pairs: `personal fall arrest system` gives
    (person, fall), (fall, arrest), (arrest, system)."""
    return [(a, b) for a, b in itertools.pairwise(terms) if a != b]


def near_pairs(pairs: list[tuple[str, str]], sequence: tuple[str, ...]) -> float:
    """The share of `pairs` whose two terms stand within PHRASE_WINDOW terms of each other
    in `sequence`: the question's phrases, as the sentence says them. Of two sentences that
    share the question's words, the one that says `personal fall arrest` beats the one that
    says `fall` here and `personal` there (issue 27: the 3,000-pound positioning sentence
    answered a question about personal fall arrest anchorages)."""
    if not pairs or not sequence:
        return 0.0
    places: dict[str, list[int]] = {}
    for place, term in enumerate(sequence):
        places.setdefault(term, []).append(place)
    near = 0
    for a, b in pairs:
        if any(abs(i - j) <= PHRASE_WINDOW for i in places.get(a, ()) for j in places.get(b, ())):
            near += 1
    return near / len(pairs)


def answers(scored: list[Scored], floor: float | None, rest: list[Scored] | None = None) -> bool:
    """Whether the best of `scored` answers at all. By words alone (`floor` None), the best
    scores at least ABSTAIN_BELOW by words. With meaning, one calibrated signal decides: the
    best sentence's own score (its words, its closeness in meaning, its phrases and its
    passage's rank, as `ranked` orders them) reaches the model's `floor`
    (`EmbeddingProvider.answer_floor`, chosen on the tuning halves of bench/quality so that
    at most 10% of asserted answers are wrong and 90% of unanswerable questions get "not
    found": bench/quality/tune.py, issue 40), or the best stands far above `rest` (every
    candidate scored; default `scored`): `stands_out`, issue 53."""
    if not scored:
        return False
    if floor is None:
        return max(item.words for item in scored) >= ABSTAIN_BELOW
    return scored[0].score >= floor or stands_out(scored[0], scored if rest is None else rest)


def stands_out(best: Scored, rest: list[Scored]) -> bool:
    """Whether `best` (with meaning) stands far above `rest`, every candidate sentence scored
    (issue 53, item 4): it reaches STANDOUT_FLOOR and no sentence of another text scores
    within STANDOUT_MARGIN of it. A passage saying the one thing the question asks, and
    nothing near it, answers it though the question is worded otherwise; a tempting sentence
    among several alike does not. Calibrated on the tuning halves (bench/quality/tune.py
    --margins: of the tuning questions whose best sentence fell under the floor, 4 stood out
    so, 3 of them right, none unanswerable)."""
    if best.score < STANDOUT_FLOOR:
        return False
    following = next((s for s in rest if s.sentence.text != best.sentence.text), None)
    return following is None or best.score - following.score >= STANDOUT_MARGIN


def scored_for(
    question: Question,
    passages: list[Passage],
    candidates: list[Sentence],
    closeness: list[float] | None,
) -> tuple[list[Scored], list[Scored]]:
    """Every candidate sentence scored for `question` (`ranked`), and those of them that may
    answer it (holding a value of the kind asked, if it asks for one), best first."""
    wanted_value = question.wanted
    credited = value_cue_terms(question.text) if wanted_value is not None else frozenset()
    everything = ranked(
        question.terms,
        passages,
        candidates=candidates,
        closeness=closeness,
        credited=credited,
        bound=bound_asked(question.text),
        bound_words=bound_terms(question.text),
        defines=defined_term(question.text),
    )
    scored = everything
    if wanted_value is not None:  # a sentence without such a value does not answer it
        scored = [
            item
            for item in scored
            if wanted_value.held_by(item.sentence.text, besides=question.text)
        ]
    return everything, scored


def choose(
    question: Question,
    passages: list[Passage],
    *,
    most: int = MAX_SENTENCES,
    candidates: list[Sentence] | None = None,
    closeness: list[float] | None = None,
    floor: float | None = None,
) -> Choice:
    """The (at most `most`) sentences that answer `question`, best first, or none when the
    best does not answer (`answers`). `closeness` and `floor`: see ranked and answers."""
    wanted = set(question.terms)
    if candidates is None:
        candidates = candidates_of(passages)
    everything, scored = scored_for(question, passages, candidates, closeness)
    if not answers(scored, floor, everything):
        closest = closest_passages(everything, passages)
        return Choice([], scored[0].score if scored else 0.0, closest)
    best = scored[0].score
    more_at = MORE_AT if closeness is None else MORE_AT_WITH_MEANING
    chosen: list[Sentence] = []
    covered: set[str] = set()
    size = 0
    for item in scored:
        sentence = item.sentence
        if len(chosen) == most or item.score < best * more_at:
            break
        if chosen and any(sentence.text == other.text for other in chosen):
            continue
        adds = (wanted & sentence.terms) - covered
        if chosen and closeness is None and not adds:
            continue
        if chosen and size + len(sentence.text) > MAX_ANSWER_CHARS:
            continue
        chosen.append(sentence)
        covered |= sentence.terms
        size += len(sentence.text)
    ordered = with_rule(with_sequel(chosen, candidates), candidates)
    return Choice(with_items(ordered, candidates), best, [])


# How a sentence says it goes on with the one before it: `The balance ...`, `However, ...`.
_SEQUEL = re.compile(
    r"(?:The (?:balance|remainder|rest|remaining|second|other|same)\b|Thereafter\b|"
    r"After (?:that|which|this)\b|However\b|Otherwise\b|Except\b|Unless\b|But\b|This\b|"
    r"These\b|Such\b|It\b|They\b|Its\b|Their\b|In (?:that|such|this|either) case\b|"
    r"If (?:so|not)\b|Provided\b|Any (?:such|remaining|balance)\b)"
)
SEQUEL_GAP = 3  # characters of white space at most between a sentence and its sequel


def with_sequel(chosen: list[Sentence], candidates: list[Sentence]) -> list[Sentence]:
    """`chosen`, its first sentence followed by the sentence after it in its passage when
    that one goes on with it (`The balance of the retention is released after the defects
    liability period.` after `Half the retention is released at Practical Completion.`):
    the answer to `When is the retention released?` needs both, though the second shares
    few of the question's words (issue 27 point 1)."""
    if not chosen:
        return chosen
    first = chosen[0]
    content = first.passage.content
    for sentence in candidates:
        if sentence.passage is not first.passage or sentence.start < first.end:
            continue
        gap = content[first.end : sentence.start]
        if len(gap) > SEQUEL_GAP or gap.strip() or "\n\n" in gap:
            return chosen
        size = sum(len(other.text) for other in chosen) + len(sentence.text)
        if sentence in chosen or size > MAX_ANSWER_CHARS or not _SEQUEL.match(sentence.raw):
            return chosen
        return [first, sentence, *chosen[1:]]
    return chosen


# How a sentence says it is the exception to the one before it.
_EXCEPTION = re.compile(
    r"(?:\([a-z0-9]{1,4}\)\s+)?(?:However|Except|Unless|Notwithstanding|Provided,? however|"
    r"But|Nevertheless|In no case|This (?:paragraph|requirement) does not apply)\b",
    re.IGNORECASE,
)


def with_rule(chosen: list[Sentence], candidates: list[Sentence]) -> list[Sentence]:
    """`chosen`, its first sentence preceded by the one before it in its paragraph when the
    first is an exception to it (`However, if satisfactory progress has not been made, ...`
    after the rule it qualifies): the rule first, then its exception (issue 40: answers
    quoted the exception instead of the rule)."""
    if not chosen or not _EXCEPTION.match(chosen[0].raw):
        return chosen
    first = chosen[0]
    content = first.passage.content
    before = [s for s in candidates if s.passage is first.passage and s.end <= first.start]
    if not before:
        return chosen
    rule = before[-1]
    gap = content[rule.end : first.start]
    if gap.strip() or "\n\n" in gap or rule in chosen or rule.header is not None:
        return chosen
    if sum(len(s.text) for s in chosen) + len(rule.text) > MAX_ANSWER_CHARS:
        return chosen
    return [rule, *chosen]


def with_items(chosen: list[Sentence], candidates: list[Sentence]) -> list[Sentence]:
    """`chosen`, each lead-in followed by its list's items, in order, while the answer stays
    within MAX_ANSWER_CHARS: `The Government shall pay ... after-` answers nothing alone."""
    out: list[Sentence] = []
    size = sum(len(sentence.text) for sentence in chosen)
    for sentence in chosen:
        if sentence in out:
            continue
        out.append(sentence)
        if not is_lead_in(sentence):
            continue
        span = (sentence.start, sentence.end)
        for item in candidates:
            if item.passage is not sentence.passage or item.lead != span or item in out:
                continue
            if item in chosen:  # chosen on its own merits: it moves up to its lead-in
                size -= len(item.text)
            elif size + len(item.text) > MAX_ANSWER_CHARS:
                break
            out.append(item)
            size += len(item.text)
    return out


def brief_value(
    question: Question,
    passages: list[Passage],
    *,
    candidates: list[Sentence] | None = None,
    closeness: list[float] | None = None,
) -> tuple[str, Sentence] | list[tuple[Passage, tuple[int, int] | None]]:
    """The value `question` asks for and the sentence it comes from: the first of the
    BRIEF_SENTENCES best sentences (scoring at least MORE_AT of the best) that holds a value
    of the kind asked (`$150,000` may be a sentence after the one naming the bonds); None
    when no sentence shares enough of the question's words or none holds such a value (then
    the closest passages). Closeness in meaning orders the sentences but never alone lets a
    value in: a wrong value written into a contract costs more than a placeholder left for a
    person."""
    scored = ranked(question.terms, passages, candidates=candidates, closeness=closeness)
    if not answers(scored, None):
        return closest_passages(scored, passages)
    floor_score = scored[0].score * MORE_AT
    for item in scored[:BRIEF_SENTENCES]:
        if item.score < floor_score:
            break
        found = concise_value(question.asked, question.terms, item.sentence.text)
        if found is not None:
            return found, item.sentence
    return closest_passages(scored, passages)


class ExtractiveEngine:
    """`meaning`: when an embeddings provider is configured, sentences are chosen by their
    closeness in meaning to the question as well as by shared words."""

    name = "extractive"

    def __init__(self, meaning: Meaning | None = None) -> None:
        self.meaning = meaning

    async def answer(
        self, question: Question, passages: list[Passage], *, brief: bool = False
    ) -> AsyncIterator[AnswerEvent]:
        """`brief`: the value the question asks for, from the best sentence."""
        input_tokens = len(question.text.split()) + sum(len(p.content.split()) for p in passages)
        candidates = candidates_of(passages)
        closeness = floor = None
        if self.meaning is not None and candidates:
            closeness = await self._closeness(question.text, candidates)
            floor = self.meaning.floor if closeness is not None else None
        if brief:
            found = brief_value(question, passages, candidates=candidates, closeness=closeness)
            if isinstance(found, list):
                for event in _no_answer(passages, found, input_tokens):
                    yield event
                return
            value, sentence = found
            yield Cite(sentence.passage, sentence.excerpt, (sentence.start, sentence.end))
            yield Delta(value)
            yield Usage(input_tokens, len(value.split()))
            return
        choice = choose(question, passages, candidates=candidates, closeness=closeness, floor=floor)
        chosen = choice.sentences
        if not chosen:
            for event in _no_answer(passages, choice.closest, input_tokens):
                yield event
            return
        cited: dict[int, list[Sentence]] = {}
        for sentence in chosen:
            cited.setdefault(sentence.passage.number, []).append(sentence)
        # A marker names its citation by its place among the citations returned (issue 40:
        # `[2]` with one citation named nothing a client could find).
        marks = {number: place for place, number in enumerate(cited, start=1)}
        output_words = 0
        for index, sentence in enumerate(chosen):
            group = cited[sentence.passage.number]
            if sentence is group[0]:
                yield Cite(sentence.passage, _excerpt(group), _span(group))
            following = chosen[index + 1] if index + 1 < len(chosen) else None
            mark = marks[sentence.passage.number]
            marker = "" if _continues(sentence, following) else f" [{mark}]"
            words = (sentence.text + marker).split()
            output_words += len(words)
            for start in range(0, len(words), WORDS_PER_DELTA):
                piece = " ".join(words[start : start + WORDS_PER_DELTA])
                yield Delta(piece if index == 0 and start == 0 else " " + piece)
        yield Usage(input_tokens, output_words)

    async def _closeness(self, question: str, candidates: list[Sentence]) -> list[float] | None:
        """Each candidate's closeness in meaning to `question`. Sentences whose vectors were
        made at ingestion (issue 40) are compared whatever their passage's place; the others
        are embedded now for the MEANING_PASSAGES best passages only (embedding costs
        milliseconds a sentence), and score 0 elsewhere (they compete by words)."""
        assert self.meaning is not None
        compared = [
            s
            for s in candidates
            if s.passage.number <= MEANING_PASSAGES or s.text in s.passage.sentence_vectors
        ]
        found = await self.meaning.closeness(
            question,
            [s.text for s in compared],
            [s.passage.sentence_vectors for s in compared],
        )
        if found is None:
            return None
        by_sentence = {id(s): value for s, value in zip(compared, found, strict=True)}
        return [by_sentence.get(id(s), 0.0) for s in candidates]

    async def close(self) -> None:
        return None


def _no_answer(
    passages: list[Passage],
    closest: list[tuple[Passage, tuple[int, int] | None]],
    input_tokens: int,
) -> list[AnswerEvent]:
    """The plain "not found" answer, citing the `closest` passages as such, each with the
    span of its closest sentence."""
    text = NOT_FOUND if passages else NO_PASSAGES
    return [
        NotFound(),
        *(Cite(passage, passage.content, span) for passage, span in closest),
        Delta(text),
        Usage(input_tokens, len(text.split())),
    ]


def _continues(sentence: Sentence, following: Sentence | None) -> bool:
    """Whether `following` goes on the sentence `sentence` began (an item of the list that
    `sentence` leads in, or the next item of its own list), or is the very next sentence of
    its paragraph (a rule and its exception, a sentence and its sequel: `with_rule`,
    `with_sequel`): quoted as one, with one marker (issue 53: the first quoted sentence holds
    the fact asked, not half of it)."""
    if following is None or following.passage is not sentence.passage:
        return False
    own = (sentence.start, sentence.end)
    if following.lead is not None and following.lead in (own, sentence.lead):
        return True
    gap = sentence.passage.content[sentence.end : following.start]
    return (
        following.start >= sentence.end
        and sentence.header is None
        and following.header is None
        and len(gap) <= SEQUEL_GAP
        and not gap.strip()
        and "\n\n" not in gap
    )


def _span(group: list[Sentence]) -> tuple[int, int]:
    """From the first to the last sentence used, in the passage's text."""
    return min(s.start for s in group), max(s.end for s in group)


def _excerpt(group: list[Sentence]) -> str:
    """The stretch of the passage from the first to the last sentence used (in text order),
    or the table rows with their header."""
    ordered = sorted(group, key=lambda sentence: sentence.start)
    if any(sentence.header is not None for sentence in ordered):
        header = next(s.header for s in ordered if s.header is not None)
        rows = [s.raw for s in ordered if s.header is not None]
        prose = [s.raw for s in ordered if s.header is None]
        return "\n".join([*prose, header, *rows])
    content = ordered[0].passage.content
    return content[ordered[0].start : ordered[-1].end]

"""Which sentences an answer quotes, in what order: the best that answer, each rule before
its exception, a sentence before its sequel, a lead-in with its list's items (issue 53: the
first quoted sentence holds the fact, not half of it). What a template field keeps of the
answer is strongroom.answers.briefing's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from strongroom.answers.base import Passage
from strongroom.answers.ranking import answers, closest_passages, scored_for
from strongroom.answers.reading import (
    Sentence,
    candidates_of,
    is_lead_in,
    next_in_paragraph,
    unlabelled,
)
from strongroom.text import analysis
from strongroom.text.question import Question
from strongroom.text.values import bounds_in
from strongroom.text.wanted import parts_asked

MAX_SENTENCES = 3
MAX_ANSWER_CHARS = 1500
MORE_AT = 0.7  # further sentences must score this share of the best one
MORE_AT_WITH_MEANING = 0.7  # the same, with a Meaning (calibrated with MiniLM)
# With a Meaning, a further sentence under this share of the best one is quoted only when it
# adds a word of the question, a value of the kind asked, or is the very next sentence of a
# chosen one's paragraph (issue 53 item 5: said alone; tune.py's tuning halves, 0.8 costs no
# right answer, 0.85 and 0.9 cost one and three).
MORE_UNLESS_NEW = 0.8


@dataclass(frozen=True)
class Choice:
    # What the answer quotes, in order: the best first, but for a rule before its exception.
    sentences: list[Sentence]
    score: float  # the best sentence's
    # When no sentence answers: the passages nearest to answering, each with the span of its
    # sentence that came closest (None: a passage none of whose sentences was scored).
    closest: list[tuple[Passage, tuple[int, int] | None]]
    picked: list[Sentence] = field(default_factory=list)  # those chosen on their score, best first


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
        if chosen and not adds and any(_restates(sentence, other) for other in chosen):
            continue  # the same provision, printed again (another document, an edition)
        if chosen and not adds and _same_table(chosen, sentence):
            if not _keyed_as_asked(question, sentence):
                continue  # a further row of a table already quoted, adding no word asked
        if chosen and not adds and item.score < best * MORE_UNLESS_NEW and closeness is not None:
            if not (_right_after(chosen, sentence) or _new_value(question, sentence, chosen)):
                continue  # it says nothing more of what was asked (issue 53 item 5)
        if chosen and size + len(sentence.text) > MAX_ANSWER_CHARS:
            continue
        chosen.append(sentence)
        covered |= sentence.terms
        size += len(sentence.text)
    ordered = said_alone(question, said_first(question, chosen), chosen[0])
    ordered = with_rule(with_sequel(ordered, candidates), candidates)
    return Choice(with_items(ordered, candidates), best, [], chosen)


def said_first(question: Question, chosen: list[Sentence]) -> list[Sentence]:
    """`chosen` (best first), reordered so that the first sentence answers what the question
    asks first (issue 53 item 5: the fact in the first sentence), for three shapes:
    a condition (`If the Government takes possession ...`) after its rule; a list's sibling
    item negating a word asked (`(b) For concrete not exposed to weather`) after the one
    that does not; and, for a question asking two things (`To whom ..., and in how many
    copies?`), a sentence answering only its second part after those answering its first."""
    if len(chosen) < 2:
        return chosen
    chosen = _rule_first(question, chosen)
    chosen = _unnegated_first(question, chosen)
    return _first_part_first(question, chosen)


# A question asking under a condition (`... when the temperature is above seventy ...`)
# wants the condition's sentence: the rule is then not moved before it.
_CONDITIONAL = re.compile(r"\b(?:if|where|when|whenever|unless|in the event)\b", re.IGNORECASE)


def _rule_first(question: Question, chosen: list[Sentence]) -> list[Sentence]:
    """A first sentence stating a condition (`If ...`, `When ...`, labelled or not) goes
    after a sentence of its passage that states no condition and holds every word asked the
    first holds: the rule, which a question asking no condition wants
    (`How long does the warranty continue after final acceptance?`)."""
    if _CONDITIONAL.search(question.text) or not _CONDITION.match(unlabelled(chosen[0].text)):
        return chosen
    return _sibling_first(question, chosen, lambda s: not _CONDITION.match(unlabelled(s.text)))


# `not exposed`, `non-potable`: a word negated.
_NEGATED = re.compile(r"\b(?:not\s+|non-)(\w+)", re.IGNORECASE)


def _negated(question: Question, text: str) -> bool:
    """Whether `text` negates a word of the question (`not exposed` for `exposed`)."""
    asked = set(question.terms)
    return any(set(Question.read(m.group(1)).terms) & asked for m in _NEGATED.finditer(text))


def _unnegated_first(question: Question, chosen: list[Sentence]) -> list[Sentence]:
    """A list's neighbouring items that differ by a `not` (`(a) For concrete exposed to
    weather: ...`, `(b) For concrete not exposed to weather: ...`) score alike: when the
    question negates nothing, the item negating a word asked goes after a sentence of its
    passage holding the same words asked and negating none."""
    if _NEGATED.search(question.text) or not _negated(question, chosen[0].text):
        return chosen
    return _sibling_first(question, chosen, lambda s: not _negated(question, s.text))


def _sibling_first(
    question: Question, chosen: list[Sentence], instead: Callable[[Sentence], bool]
) -> list[Sentence]:
    """`chosen` with the first later sentence of the first one's passage that holds every
    word asked the first holds and is what `instead` wants moved before the first."""
    head = chosen[0]
    asked = set(question.terms) & head.terms
    for index, sentence in enumerate(chosen[1:], start=1):
        if sentence.passage is head.passage and asked <= sentence.terms and instead(sentence):
            return [sentence, *chosen[:index], *chosen[index + 1 :]]
    return chosen


def _first_part_first(question: Question, chosen: list[Sentence]) -> list[Sentence]:
    """For a question asking two things (split as strongroom.text.wanted splits it, or at a
    parallel phrase: `_parts`), a sentence answers a part when it holds the value that part
    names (a count for `in how many copies`), then by how many of the part's own words it
    holds. A first sentence
    answering the second part more than the first goes after those answering the first
    part at least as well as it does, in their order."""
    parts = [Question.read(part) for part in _parts(question.text)]
    if len(parts) != 2:
        return chosen
    first, second = parts
    own = [set(first.terms) - set(second.terms), set(second.terms) - set(first.terms)]

    def reading(sentence: Sentence, index: int) -> tuple[bool, int]:
        part = parts[index]
        value = part.wanted.first_in(unlabelled(sentence.text)) if part.wanted else None
        return value is not None, len(own[index] & sentence.terms)

    head = chosen[0]
    if not reading(head, 1) > reading(head, 0):
        return chosen  # the first sentence answers the first part (or neither)
    first_part = [
        sentence
        for sentence in chosen[1:]
        if reading(sentence, 0) > reading(sentence, 1) and reading(sentence, 0) >= reading(head, 0)
    ]
    if first_part:
        return [*first_part, *(sentence for sentence in chosen if sentence not in first_part)]
    return chosen


def said_alone(question: Question, chosen: list[Sentence], best: Sentence) -> list[Sentence]:
    """`chosen` (said first first), without its further sentences when the question asks
    one value and the first sentence states it (issue 53 item 5: said alone): the question
    wants a value of a kind (`question.wanted`: a distance, a count, a duration), does not
    join two things asked with `and` (`_joined`), and the first sentence, not an item of a lead-in's
    list (whose siblings are the alternatives), holds a value of that kind (`held_by`, as
    the candidates are filtered: any figure for `How much line ...?`, which names no
    kind). Still said:
    `best`, the best-scored sentence (said after the first when `said_first` moved it); a
    sentence holding a word asked the first lacks (`checked`: the first may state its value
    of something else, `assess ... periodically` for `How often must the kit be checked?`);
    the very next sentence of a said one's paragraph (the condition or the sentence going
    on with it: `_right_after`); and the other bound of a value the first bounds one way
    only (`not less than 10 feet`, then `not more than 15 feet`). Shape: a regulation's or
    a clause's neighbouring provisions (`(iii) ... not more than 19 inches apart`, then
    `(iv) ... openings ... more than 19 inches wide`), each stating a value of the kind
    asked, quoted after the one that answers."""
    reading = question.wanted
    if len(chosen) < 2 or reading is None or _joined(question):
        return chosen
    first = chosen[0]
    if first.lead is not None or not reading.held_by(first.text, besides=question.text):
        return chosen
    said = [first]
    asked = set(question.terms)
    for sentence in chosen[1:]:
        if (
            sentence is best
            or (asked & sentence.terms) - first.terms
            or _right_after(said, sentence)
            or _other_bound(question, first, sentence, said)
        ):
            said.append(sentence)
    return said


def _joined(question: Question) -> bool:
    """Whether `question` asks two things (`_JOINED`, or strongroom.text.wanted's split)."""
    return _JOINED.search(question.text) is not None or len(parts_asked(question.text)) > 1


def _other_bound(
    question: Question, first: Sentence, sentence: Sentence, said: list[Sentence]
) -> bool:
    """Whether `sentence` states a new value of the kind asked with the bound `first`
    lacks, `first` stating one bound only (a minimum, then the maximum)."""
    bounds = bounds_in(first.text)
    return (
        len(bounds) == 1
        and bool(bounds_in(sentence.text) - bounds)
        and _new_value(question, sentence, said)
    )


# Two things asked, joined: `How far apart ..., and how many ...?`, `How wide and how thick
# ...?`, `and in how many copies`, `and is the Contractor entitled ...`, `a fixed ladder and
# each of its steps`, `of sand and of stone`, `..., and on all other scaffolds`, `the
# minimum and maximum distances`.
_JOINED = re.compile(
    r"\band\s+(?:(?:in|at|for|to|from|by|on|with|under|up\s+to)\s+)?"
    r"(?:how|what|when|where|which|who|whom|whose|why|whether)\b|"
    r"\band\s+(?:is|are|does|do|did|must|may|can|shall|will|each|of|on|for|in|between|to|"
    r"under|at|from|by|with)\b|"
    r"\b(?:minimum|maximum|lower|upper|least|most|min|max|first|second)\s+and\b|"
    r"\band\s+(?:minimum|maximum|lower|upper|least|most|min|max)\b",
    re.IGNORECASE,
)


RESTATES = 0.8  # a sentence sharing this share of its words with another restates it


def _restates(sentence: Sentence, other: Sentence) -> bool:
    """Whether `sentence` says again what `other` says: at least RESTATES of their words in
    common (`Minor addenda need not receive prior approval but may be identified ...` and
    `... but should be identified ...`), the same words negated, and no figure `other`
    lacks (`(b) ... not to exceed 5%` beside `(a) ... 5% plus or minus 1.5%`, or `Each
    portable ladder that is not self-supporting` beside `Each self-supporting portable
    ladder`, says something else)."""
    own, others = set(sentence.sequence), set(other.sequence)
    if not own or len(own & others) < RESTATES * len(own | others):
        return False
    if {m.lower() for m in _NEGATED.findall(sentence.text)} != {
        m.lower() for m in _NEGATED.findall(other.text)
    }:
        return False  # a sibling that negates (`Each portable ladder that is not self-...`)
    return set(_FIGURES.findall(sentence.text)) <= set(_FIGURES.findall(other.text))


_FIGURES = re.compile(r"\d+(?:[.,/]\d+)*")


def _same_table(chosen: list[Sentence], sentence: Sentence) -> bool:
    """Whether `sentence` is a row of a table (the same passage, the same header) a chosen
    row is of."""
    return sentence.header is not None and any(
        other.header == sentence.header and other.passage is sentence.passage for other in chosen
    )


# A number written in digits, whole (`2`, not the `2` of `1/2` or `20`).
_NUMBER = re.compile(r"(?<![\d/.,])\d+(?:[.,/]\d+)*(?![\d/.,]*\d)")


def _keyed_as_asked(question: Question, row: Sentence) -> bool:
    """Whether a table `row` holds, as a cell of its own, a number the question writes: the
    row's key asked (`What sound levels are permitted for 2 hours per day ...?`: the row
    `2 | 100`), said though its words are those of the rows already quoted."""
    asked = set(_NUMBER.findall(question.text))
    return bool(asked) and any(
        set(_NUMBER.findall(cell)) & asked and len(cell.split()) == 1
        for cell in row.raw.replace("\t", " | ").split(" | ")
    )


# A second thing asked in a phrase parallel to the first, with no question word: `a fixed
# ladder and each of its steps`, `between A and B, and between A and C`, `..., and on all
# other scaffolds`.
_PARALLEL = re.compile(
    r"(?:,\s*)?\band\s+(?=(?:each|of|on|for|in|between|under|from|with)\b)", re.IGNORECASE
)


def _parts(text: str) -> list[str]:
    """The things `text` asks: strongroom.text.wanted's split (`..., and how many ...`),
    else the question cut at a parallel phrase (`_PARALLEL`), the first part keeping the
    question's words before its subject."""
    parts = parts_asked(text)
    if len(parts) > 1:
        return parts
    found = _PARALLEL.search(text)
    if found is None:
        return parts
    return [text[: found.start()], text[found.end() :]]


def _right_after(chosen: list[Sentence], sentence: Sentence) -> bool:
    """Whether `sentence` is the very next sentence of a chosen one's paragraph (at most
    white space between, no blank line: `next_in_paragraph`): the rule's condition or
    the sentence going on with it (`If such controls fail, ...`, `The Contractor shall
    submit the proposal promptly, but no later than 1 year ...`), which shares the chosen
    one's words and so adds none of the question's. A labelled one (`(14) Cross-bracing
    ...` after `(13) The top step ...`) is a provision of its own, not one going on, but for
    the rule of an exception the one before ends with (`(i) ... not more than 25 feet ...,
    except when erecting precast concrete members.`, then `(ii) When erecting precast
    concrete members, ... not more than 60 feet ...`)."""
    labelled = unlabelled(sentence.text) != sentence.text
    return any(
        next_in_paragraph(other, sentence)
        and (not labelled or _rules_its_exception(other, sentence))
        for other in chosen
    )


# An exception a rule ends with: `..., except when erecting precast concrete members.`
_ENDS_EXCEPTING = re.compile(r"\bexcept(?:\s+(?:when|where|for|in|during|if))?\s+([^,;]+)[.;]?$")


def _rules_its_exception(rule: Sentence, sentence: Sentence) -> bool:
    """Whether `sentence` holds every word of the exception `rule` ends with."""
    found = _ENDS_EXCEPTING.search(rule.text)
    excepted = set(analysis.terms(found.group(1))) if found else set()
    return bool(excepted) and excepted <= sentence.terms


def _new_value(question: Question, sentence: Sentence, chosen: list[Sentence]) -> bool:
    """Whether `sentence` states a value of the kind `question` asks for (the kind its words
    name, else the kind its cues suggest) that no chosen sentence states: the second
    figure a question asking two (`the minimum and maximum distances`) needs."""
    reading = question.wanted or question.asked
    if reading is None:
        return False
    value = reading.first_in(sentence.text)
    return value is not None and all(value not in other.text for other in chosen)


# How a sentence says it goes on with the one before it: `The balance ...`, `However, ...`.
_SEQUEL = re.compile(
    r"(?:The (?:balance|remainder|rest|remaining|second|other|same)\b|Thereafter\b|"
    r"After (?:that|which|this)\b|However\b|Otherwise\b|Except\b|Unless\b|But\b|This\b|"
    r"These\b|Such\b|It\b|They\b|Its\b|Their\b|In (?:that|such|this|either) case\b|"
    r"If (?:so|not)\b|Provided\b|Any (?:such|remaining|balance)\b)"
)


def with_sequel(chosen: list[Sentence], candidates: list[Sentence]) -> list[Sentence]:
    """`chosen`, its first sentence followed by the sentence after it in its passage when
    that one goes on with it (`The balance of the retention is released after the defects
    liability period.` after `Half the retention is released at Practical Completion.`):
    the answer to `When is the retention released?` needs both, though the second shares
    few of the question's words (issue 27 point 1)."""
    if not chosen:
        return chosen
    first = chosen[0]
    for sentence in candidates:
        if sentence.passage is not first.passage or sentence.start < first.end:
            continue
        if not next_in_paragraph(first, sentence):
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
# How a sentence says it is a condition on the rule before it (`If such controls fail, ...`,
# `Where the work is ...`, `When ...`: issue 53 item 4). Unlabelled only: a labelled one
# (`(b) If the Government ...`) is a provision of its own, not a sequel to the one before.
_CONDITION = re.compile(r"(?:If|Where|When|In the event)\b")


def with_rule(chosen: list[Sentence], candidates: list[Sentence]) -> list[Sentence]:
    """`chosen`, its first sentence preceded by the one before it in its paragraph when the
    first is an exception to it (`However, if satisfactory progress has not been made, ...`
    after the rule it qualifies) or a condition on it (`If such controls fail, ...`): the
    rule first, then its exception (issue 40, issue 53: answers quoted the exception or
    the condition instead of the rule)."""
    if not chosen or not (_EXCEPTION.match(chosen[0].raw) or _CONDITION.match(chosen[0].raw)):
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

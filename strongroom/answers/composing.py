"""Which sentences an answer quotes, in what order: the best that answer, each rule before
its exception, a sentence before its sequel, a lead-in with its list's items (issue 53: the
first quoted sentence holds the fact, not half of it). `brief_value` (template fill): the
value alone where the question asks for one (an amount, a duration, a date, a percentage, a
jurisdiction, a party: strongroom.text.values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strongroom.answers.base import Passage
from strongroom.answers.ranking import answers, closest_passages, ranked, scored_for
from strongroom.answers.reading import Sentence, candidates_of, is_lead_in
from strongroom.text.question import Question
from strongroom.text.values import concise_value

MAX_SENTENCES = 3
MAX_ANSWER_CHARS = 1500
MORE_AT = 0.7  # further sentences must score this share of the best one
MORE_AT_WITH_MEANING = 0.7  # the same, with a Meaning (calibrated with MiniLM)
BRIEF_SENTENCES = 5  # how many of the best sentences a value is looked for in


@dataclass(frozen=True)
class Choice:
    sentences: list[Sentence]  # best first
    score: float  # the best sentence's
    # When no sentence answers: the passages nearest to answering, each with the span of its
    # sentence that came closest (None: a passage none of whose sentences was scored).
    closest: list[tuple[Passage, tuple[int, int] | None]]


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

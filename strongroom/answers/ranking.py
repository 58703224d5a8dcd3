"""How well each candidate sentence answers a question, and whether the best answers at all.

The question's terms are weighted by how rare they are among the retrieved passages (a term
none of them holds weighs most); a sentence scores the share of that weight it holds, plus a
part of the share its passage holds (the context it sits in) and a little for its passage's
place in the retrieval ranking, so the ranking is followed when sentences are close. When no
sentence holds enough of the question (ABSTAIN_BELOW, calibrated on the quality benchmark,
bench/quality), nothing answers. A question that wants a value
(strongroom.text.wanted.value_named: a date, a percentage, a number of days, a sum, a count
of something) is answered only by a sentence holding a value of that kind (`within 28 days`
does not answer `What is the contract sum?`), and only by one that shares enough of its
words, whatever its closeness in meaning: most questions the documents cannot answer ask
for a value their clauses do not state.

With an embeddings provider configured (issue 16), sentences are also compared with the
question by meaning (strongroom.answers.meaning): a sentence's score mixes its score by words
with its cosine with the question, so a question worded otherwise than the contract finds
its sentence; it abstains only when no sentence shares enough words AND none is close
enough in meaning (the model's `answer_floor`). With meaning, a best sentence under the floor
answers when it stands far above every other candidate sentence (`stands_out`, calibrated on
the tuning halves).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from strongroom.answers.base import CLOSEST, Passage
from strongroom.answers.reading import Sentence, candidates_of
from strongroom.text import analysis
from strongroom.text.question import Question
from strongroom.text.values import (
    bound_asked,
    bound_terms,
    bounds_in,
    defined_term,
    value_cue_terms,
)

PASSAGE_SHARE = 0.35  # how much of a score the sentence's passage contributes
RANK_BONUS = 0.1  # for the first passage; the n-th gets RANK_BONUS / n
ABSTAIN_BELOW = 0.65  # the best sentence's score under which there is no answer
# With a Meaning (strongroom.answers.meaning), calibrated on bench/quality/questions.yaml
# with MiniLM: a sentence's score is WORDS_PART of its score by words and MEANING_PART of its
# cosine with the question.
WORDS_PART = 0.6
MEANING_PART = 0.4
# Issue 53, a standout is an answer: with meaning, a best sentence under the floor answers
# when it reaches STANDOUT_FLOOR and every other candidate sentence scores STANDOUT_MARGIN
# or more below it (`stands_out`), calibrated on the tuning halves (tune.py --margins).
STANDOUT_FLOOR = 0.5
STANDOUT_MARGIN = 0.25
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


@dataclass(frozen=True)
class Scored:
    """A candidate sentence and how well it answers: `score` orders them; `words` is its
    score by shared words (with its passage's context and rank), `closeness` its cosine with
    the question when a Meaning is configured (else None)."""

    score: float
    words: float
    closeness: float | None
    sentence: Sentence


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

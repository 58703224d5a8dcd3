"""A template field's value narrowed from what chat's answer quotes (issue 53 item 6: a field
is answered as chat answers its question): the value alone where the question asks for one
(an amount, a duration, a date, a percentage, a jurisdiction, a party:
strongroom.text.values), else the clause that answers.
"""

from __future__ import annotations

import re

from strongroom.answers.composing import Choice
from strongroom.answers.reading import unlabelled
from strongroom.text import analysis
from strongroom.text.question import Question
from strongroom.text.values import MAX_CLAUSE_CHARS, Wanted


def brief_value(question: Question, choice: Choice) -> str:
    """The value `question` asks for, narrowed from what chat's answer to it quotes (issue 53
    item 6: a template field is answered as chat answers its question). The first value of
    the kind the question names (`question.wanted`, the reading chat chose its sentences
    by), else of the kind its cues suggest (`question.asked`), with the bound it is stated
    with (`at least weekly`, `not more than 19 inches`), in the sentences quoted, in the
    order chat says them (the fact first: `composing.said_first`; `$150,000` may be in the
    sentence after the one naming the bonds), those holding the most words asked first (a
    sentence lacking one may state its value of something else: `assess ... periodically`
    before `checked at least weekly` for `How often must the kit be checked?`); failing
    both, a clause (`answering_clause`). `choice`: one that answers."""
    texts = [unlabelled(sentence.text) for sentence in choice.sentences]
    asked = set(question.terms)
    held = {text: len(asked & s.terms) for text, s in zip(texts, choice.sentences, strict=True)}
    by_words = sorted(texts, key=lambda text: -held[text])
    for reading in (question.wanted, question.asked):
        if reading is None or not reading.kinds:
            continue
        for text in by_words:
            found = reading.first_in(text, bounded=True)
            if found is not None:
                return found
    return answering_clause(question, texts)


BRIEF_CHARS = 80  # a field's value longer than this is a sentence, not a value
# Where a sentence parts into clauses: a comma, semicolon or colon, and the space after it.
_CLAUSE_END = re.compile(r"[;,:]\s")
# The kinds a number asked for without naming its kind (`How much ...?`) is read as, in
# order, in the clause that states it: what a template field then holds.
_A_NUMBER = Wanted(kinds=("measure", "percent", "amount", "duration", "proportion", "date"))


# A question asking for a moment (`When must ...?`, `What is the latest point at which ...?`,
# `How soon ...?`), and a clause stating one by an event (`before starting work`, `not later
# than the day of ...`): the last such clause binds (`... within the time specified ..., but
# in any event, before starting work.`).
_ASKS_WHEN = re.compile(
    r"^\s*when\b|\bhow soon\b|\bby when\b|\bat what (?:point|time|stage)\b"
    r"|\b(?:latest|earliest) (?:point|time|date|moment)\b",
    re.IGNORECASE,
)
_MOMENT = re.compile(
    r"(?:(?:but|and|or) )?(?:before|after|until|prior to|upon|(?:no|not) later than)\b",
    re.IGNORECASE,
)


def answering_clause(question: Question, texts: list[str]) -> str:
    """What answers `question` in the sentences quoted (`texts`, best first) when no value
    of a kind it names was found: the best sentence, if it is at most BRIEF_CHARS long; else,
    when the question asks for a number (`How much ...?`: `question.wanted` without kinds),
    the first clause (between commas, semicolons or colons) stating one the question does
    not (`but in no case shall that number exceed 14`) that is short or holds a measure,
    percentage, sum, duration, share or date (then that value); else, when the question asks
    when, the best sentence's last clause stating a moment by an event (`_MOMENT`); else the
    best sentence's clause holding most of the question's words, the later of two alike (a
    condition comes first, what it leads to after: `Where the temperature ... is above
    seventy degrees, the maximum allowable time from loading to pour shall be one hour.`),
    cut to what it adds to the question (`_unsaid`) when still longer than BRIEF_CHARS."""
    best = texts[0]
    if len(best) <= BRIEF_CHARS:
        return best
    if question.wanted is not None:
        stating = [
            part
            for text in texts
            for part in _clauses(text)
            if question.wanted.held_by(part, besides=question.text)
        ]
        for part in stating:
            value = part if len(part) <= BRIEF_CHARS else _A_NUMBER.first_in(part)
            if value is not None:
                return value
        if stating:
            return stating[0][:MAX_CLAUSE_CHARS].rstrip()
    if _ASKS_WHEN.search(question.text):
        moments = [part for part in _clauses(best) if _MOMENT.match(part)]
        if moments and len(moments[-1]) <= BRIEF_CHARS:
            return moments[-1].rstrip(".;")
    asked = set(question.terms)
    parts = _clauses(best)
    held = [len(asked & set(analysis.terms(part))) for part in parts]
    part = parts[len(held) - 1 - held[::-1].index(max(held))]
    if len(part) > BRIEF_CHARS:
        return _unsaid(asked, part) or part[:MAX_CLAUSE_CHARS].rstrip()
    return part


def _unsaid(asked: set[str], clause: str) -> str | None:
    """The longest stretch of `clause` (by terms) saying none of the question's terms
    (`asked`), without the term-less words at its ends: what a sentence restating the
    question around its answer adds to it (`... apply to proposed contract changes costing
    over $500,000.` for `To which proposed contract changes do paragraphs ... apply?`)."""
    runs: list[list[tuple[str, int]]] = [[]]
    for word in clause.split():
        terms = analysis.terms(word)
        if asked & set(terms):
            runs.append([])
        else:
            runs[-1].append((word, len(terms)))
    for run in runs:
        while run and run[0][1] == 0:
            run.pop(0)
        while run and run[-1][1] == 0:
            run.pop()
    best = max(runs, key=lambda run: sum(count for _, count in run))
    return " ".join(word for word, _ in best).rstrip(".,;:") or None


def _clauses(sentence: str) -> list[str]:
    return [part.strip() for part in _CLAUSE_END.split(sentence) if part.strip()] or [sentence]

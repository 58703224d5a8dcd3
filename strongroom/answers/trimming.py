"""A long quoted sentence said down to the part that answers (issue 53 item 5: the median
right answer at most 40 words), word for word, with `…` where words are left out.

Two shapes, each left whole when in doubt:
- a parenthetical aside (`(including acquiring materials, plant, and equipment)`) of at
  least ASIDE_WORDS words holding no word of the question, no value of the kind asked, no
  bound and no word that bounds, excepts or conditions (`_HOLDS`: `nor`, `unless`,
  `except`, `but`, `provided`, `if`, `before`, `within` ...);
- a trailing clause after a comma or semicolon (`..., and the dates on which the
  Contractor contemplates ...`, `..., as approved by the Contracting Officer`) after
  everything the sentence says of the question: the part before it holds every word asked
  the sentence holds and says something (its own verb, `shall`, not one left interrupted:
  `The Contractor shall, within five days ...`, nor only a condition's verb), and holds no
  condition after that verb the clause could go on (`void unless it is in writing, signed
  ..., and executed after ...`); the comma is not one between items of a series (`rubbish,
  tools, scaffolding, equipment, and materials`) nor the one after a series' last item or
  an alternative (`..., or otherwise taken any action, in restraint of ...`: what follows
  qualifies every item); the clause is no alternative (`, or ...`) and holds no value of
  the kind asked, no figure, no bound and none of `_HOLDS`.
A second thing asked is kept by the same tests (its words, its value, its figures). Table
rows and sentences under TRIM_FROM words are never trimmed. The citation still quotes and
highlights the whole sentence.
"""

from __future__ import annotations

import re

from strongroom.answers.reading import Sentence
from strongroom.text import analysis
from strongroom.text.question import Question
from strongroom.text.values import bounds_in

ELLIPSIS = "\u2026"
TRIM_FROM = 25  # words: a sentence shorter than this is said whole
ASIDE_WORDS = 3  # an aside shorter than this (`(25 cm)`, `(a)(1)`) is left in
TAIL_WORDS = 6  # a trailing clause shorter than this is left in

# Words that bound, except or condition what goes before them: a clause holding one is
# part of the answer (`nor more than 14 inches`, `unless extended ...`, `except that ...`).
_HOLDS = re.compile(
    r"\b(?:nor|unless|except|excepting|excluding|but|provided|whichever|however|"
    r"notwithstanding|until|if|when|where|whenever|only|subject|before|after|prior|within|"
    r"during)\b",
    re.IGNORECASE,
)
# A condition or exception: what follows it may be one more of its terms (`void unless it is
# in writing, signed ..., and executed after ...`).
_CONDITIONS = re.compile(
    r"\b(?:unless|except|excepting|provided|if|when|where|whenever|until|subject)\b",
    re.IGNORECASE,
)
# What says something: a sentence's part without one is a fragment (`(a) The Contractor
# shall, within five days ...` cut before its verb reads as nothing).
_SAYS = re.compile(
    r"\b(?:shall|must|may|will|should|can|cannot|does|do|is|are|was|were|has|have|"
    r"includes?|means|requires?|applies|apply)\b",
    re.IGNORECASE,
)
_MODAL = re.compile(r"\b(?:shall|must|may|will)\b", re.IGNORECASE)


def _says(kept: str, whole: str) -> bool:
    """Whether `kept` says something: it holds a verb (`_SAYS`), and the last one is not
    left interrupted (`The Contractor shall, within five days ...` cut before the comma
    that closes the interruption and the verb after it)."""
    found = list(_SAYS.finditer(kept))
    if not found or (_MODAL.search(whole) and not _MODAL.search(kept)):
        return False  # no verb, or not the sentence's own (`shall`): a condition before it
    after = kept[found[-1].end() :]
    if not after.lstrip().startswith(","):
        return True
    return re.search(r",\s*\w", after.lstrip()[1:]) is not None


# An aside in parentheses, not nested (`(formerly known as the Miller Act)`).
_ASIDE = re.compile(r"\s\(([^()]+)\)")
# Where a trailing clause starts: a comma or semicolon (`, and `, `, including `, `, with `).
_TAIL = re.compile(r"[,;]\s+(?:and\s+)?")


def said_of(question: Question, sentence: Sentence) -> str:
    """`sentence.text` as the answer says it: whole, or without the asides and the trailing
    clause that answer nothing asked, each left-out stretch marked `…`."""
    text = sentence.text
    if sentence.header is not None or len(text.split()) < TRIM_FROM:
        return text
    asked = frozenset(question.terms)
    reading = question.wanted or question.asked
    text = _without_asides(text, asked, reading)
    return _without_tail(text, asked, reading)


def _answers_something(part: str, asked: frozenset[str], reading, *, figures: bool = True) -> bool:
    """Whether `part` holds a word asked, a value of the kind asked, a bound, or a word
    that bounds, excepts or conditions: what an answer never leaves out; with `figures`,
    any figure (`6 inches` restated for another measure than the one asked)."""
    if asked & set(analysis.terms(part)) or _HOLDS.search(part) or bounds_in(part):
        return True
    if figures and re.search(r"\d", part):
        return True
    return reading is not None and reading.first_in(part) is not None


def _without_asides(text: str, asked: frozenset[str], reading) -> str:
    """`text` with each aside in parentheses answering nothing asked left out (`…`)."""
    out = []
    last = 0
    for found in _ASIDE.finditer(text):
        inside = found.group(1)
        if found.start() == 0 or len(inside.split()) < ASIDE_WORDS:
            continue
        if _answers_something(inside, asked, reading, figures=False):
            continue
        out.append(text[last : found.start()])
        out.append(f" {ELLIPSIS}")
        last = found.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _without_tail(text: str, asked: frozenset[str], reading) -> str:
    """`text` cut before its first trailing clause (from a comma or semicolon to the end)
    that holds nothing answering (`_answers_something`), the part before it saying
    something (`_says`), holding every word asked the sentence holds and no condition."""
    held = asked & set(analysis.terms(text))
    for found in _TAIL.finditer(text):
        if _depth(text, found.start()) != 0:
            continue  # inside parentheses
        kept, rest = text[: found.start()], text[found.end() :]
        if _in_series(kept, rest, "and" in found.group()) or _ALTERNATIVE.match(rest):
            continue  # one list (`rubbish, tools, scaffolding, ...`), or an alternative
        if len(rest.split()) < TAIL_WORDS or not _says(kept, text) or _conditioned(kept):
            continue  # too short to matter, a fragment, or the rest may go on a condition
        if held - set(analysis.terms(kept)):
            continue  # a word asked is said only after
        if _answers_something(rest, frozenset(), reading):  # its words asked: kept holds them
            continue
        return f"{kept} {ELLIPSIS}"
    return text


# A clause offering an alternative to what goes before it (`..., or otherwise taken any
# action, in restraint of ...`): part of what is said, never cut.
_ALTERNATIVE = re.compile(r"(?:or|nor|either)\b", re.IGNORECASE)
SERIES_WORDS = 3  # a stretch between commas this short is an item of a series


def _in_series(kept: str, rest: str, coordinated: bool) -> bool:
    """Whether the comma between `kept` and `rest` separates items of a series, or ends one:
    the stretch before it or after it (to the next comma or semicolon) is at most
    SERIES_WORDS long; the comma is bare (not `, and`: `coordinated`) and an `, and` or `,
    or` comes later (`entered into any agreement, participated in any collusion, or ...`);
    or the stretch before it is the series' last item (`..., or otherwise taken any action,
    in restraint of free competitive bidding`: what follows qualifies every item)."""
    before = re.split(r"[,;:]", kept)[-1]
    after = re.split(r"[,;]", rest)[0]
    if _ALTERNATIVE.match(before.strip()) or re.match(r"and\b", before.strip()):
        return True  # the series' last item: what follows may qualify every item of it
    if not coordinated and re.search(r"[,;]\s+(?:and|or|nor)\b", rest):
        return True  # a bare comma with `, and`/`, or` to come: between items of a series
    return len(before.split()) <= SERIES_WORDS or len(after.split()) <= SERIES_WORDS


def _conditioned(kept: str) -> bool:
    """Whether `kept` ends in a condition or exception the clause after it could go on:
    one after its last modal verb (`is void unless it is in writing, signed ...`; a
    leading `If ..., the Contractor shall comply ...` is closed by its main clause)."""
    modals = list(_MODAL.finditer(kept))
    return _CONDITIONS.search(kept, modals[-1].end() if modals else 0) is not None


def _depth(text: str, at: int) -> int:
    """How many parentheses are open at `at`."""
    return text.count("(", 0, at) - text.count(")", 0, at)

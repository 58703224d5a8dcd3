"""Whether an answer's values stand in the passages it cites (issue 27 point 7).

A model that answers from passages may still write a number the passages do not hold: a
"5,000 pounds" where the clause says 3,000, a date it was never given. Every value an answer
asserts (a number, an amount, a date, a duration, a percentage, a measure) must stand in a
passage it cites; `unsupported_values` names those that do not, so the response can flag them
and a metric can count them. The extractive engine quotes its sentences, so its answers
always pass; the check matters for the `openai` engine, and runs for every engine alike.

Values are compared by what they say, not how they are written: numbers as numbers (`1,500`
and `1500`, `five` and `5`, `10 percent` and `10%` agree) and a date as the day it names (`1
June 2026` and `June 1, 2026`). A value rewritten in other units (`$1.5 million` for
`$1,500,000`) is flagged: better a flag a person checks than a wrong value let through.
Citation markers (`[2]`), paragraph labels (`(b)`) and clause numbers (`52.236-2`) are no
values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from strongroom.text.dates import date_matches
from strongroom.text.values import matches

_MARKERS = re.compile(r"\[\s*\d+(?:\s*,\s*\d+)*\s*\]")
_LABELS = re.compile(r"\(\w{1,4}\)|(?<![$£€\d])\b\d+(?:\.\d+){1,}-\d+\b|\b\d+(?:\.\d+){2,}\b")
_DIGITS = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\d])")
_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_WORD_NUMBER = re.compile(
    rf"\b(?:(?:{'|'.join(_TENS)})(?:[- ](?:{'|'.join(_UNITS)}))?|{'|'.join(_UNITS)})\b"
    r"(?:\s+hundred\b)?",
    re.IGNORECASE,
)
# Kinds of value an answer is checked for, as strongroom.text.values reads them.
_VALUE_KINDS = ("amount", "percent", "duration", "measure", "date")


def _plain(text: str) -> str:
    return _LABELS.sub(" ", _MARKERS.sub(" ", text))


def _number(digits: str) -> Decimal | None:
    try:
        return Decimal(digits.replace(",", "")).normalize()
    except InvalidOperation:
        return None


def _word_number(words: str) -> Decimal:
    parts = re.split(r"[- ]+", words.lower())
    value = 0
    for part in parts:
        if part in _TENS:
            value += _TENS[part]
        elif part in _UNITS:
            value += _UNITS[part]
        elif part == "hundred":
            value = (value or 1) * 100
    return Decimal(value)


def numbers_in(text: str) -> set[Decimal]:
    """Every number `text` writes, in digits or in words, as a number."""
    plain = _plain(text)
    found = {n for n in (_number(m.group()) for m in _DIGITS.finditer(plain)) if n is not None}
    found |= {_word_number(match.group()) for match in _WORD_NUMBER.finditer(plain)}
    return found


def dates_in(text: str) -> set[str]:
    """The days `text` names in full, as ISO dates (strongroom.text.dates)."""
    return {iso for _, _, iso in date_matches(text) if iso is not None}


def asserted_values(text: str) -> list[str]:
    """The values `text` asserts, as it writes them, in order, each once: the typed values
    (an amount, a percentage, a duration, a measure, a date) and every other number."""
    plain = _plain(text)
    spans: list[tuple[int, int]] = []
    for kind in _VALUE_KINDS:
        for match in matches(kind, plain):
            if not any(start < match.end() and match.start() < end for start, end in spans):
                spans.append((match.start(), match.end()))
    for pattern in (_DIGITS, _WORD_NUMBER):
        for match in pattern.finditer(plain):
            if not any(start < match.end() and match.start() < end for start, end in spans):
                spans.append((match.start(), match.end()))
    values: list[str] = []
    for start, end in sorted(spans):
        value = plain[start:end].strip().rstrip(".,;")
        if value and value not in values:
            values.append(value)
    return values


def unsupported_values(answer: str, cited: Iterable[str]) -> list[str]:
    """The values `answer` asserts that none of the `cited` passages holds: a date must name
    a day a cited passage names; any other value, numbers all of which a cited passage
    writes (in digits or words)."""
    sources = list(cited)
    known_numbers: set[Decimal] = set()
    known_dates: set[str] = set()
    for source in sources:
        known_numbers |= numbers_in(source)
        known_dates |= dates_in(source)
    missing = []
    for value in asserted_values(answer):
        days = dates_in(value)
        if days:
            supported = days <= known_dates
        else:
            supported = numbers_in(value) <= known_numbers
        if not supported:
            missing.append(value)
    return missing

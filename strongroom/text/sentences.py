"""Sentences of a passage, the same for every engine of the vault (chat answers, template
fill, summaries, key terms).

A passage's blocks (headings, paragraphs, list items, table rows) are separated by blank
lines (strongroom.ingest.chunking). Sentences end at `.`, `!` or `?` before white space and at
blank lines; a single line break ends one only after a table row (cells separated by ` | `
or a tab) or a heading, or before a list item: elsewhere it is a wrapped line (PDFs). Splits
after abbreviations (`Ltd.`, `cl.`, `e.g.`, a month's before its day) and bare clause numbers
(`1.`) are undone, and headings (`5. PAYMENT`) are split from the sentence on the next line.

As a reader sees them (issue 53): a sentence ending inside a specification's bracketed
option (`[ Reduce the time in hot weather.]`) ends where the bracket closes, and the next
option starts its own; the next item's label (`... shall be removed. c. Cure ...`) starts the
item it labels, never ends the sentence before; a table's title line is apart from its header
line; a references list (`ACI 117 (2010) Specification for ...`, one a line) is one sentence a
reference.
"""

from __future__ import annotations

import re

# A sentence end: `.`, `!` or `?` (and a specification's option bracket closing on it) before
# white space or before a bracket opening the next option (`... is added.[ Reduce ...]`).
_BOUNDARY = re.compile(r"[.!?]+\]*(?=\s|\[)|\n[ \t]*\n\s*|\n")
_ITEM = re.compile(r"\s*(?:[-*\u2022]|\d+[.)]|\([a-z0-9]{1,4}\))\s")
_LAST_WORD = re.compile(r"(\w+(?:\.\w+)*)\.$")
_BARE_LABEL = re.compile(
    r"(?:\(?\d{1,3}(?:\.\d{1,3})*[.)]|\(?(?:[A-Za-z]|[ivx]{1,4}|[IVX]{1,4})[.)]|\([a-z0-9]{1,4}\))"
)
# A list item's label in lower case starting a sentence (`c. Cure ...`, `d) Cure ...`, `iv.`):
# the start of the item, not a lower-case word going on with the sentence before.
_LOWER_LABEL = re.compile(r"(?:[a-z]|[ivx]{1,4})[.)](?:\s|$)")
# A month's abbreviation, going on when a day follows (`Feb. 13, 1996`).
_MONTHS = frozenset("jan feb mar apr jun jul aug sep sept oct nov dec".split())
# A line starting with a standard's designation, as a references list has one a line: `ACI
# 117 (2010) ...`, `ASTM C94/C94M ...`, `AASHTO M 182 ...`, `ANSI/ASSP A10.32 ...`.
_REFERENCE = re.compile(r"[ \t]*[A-Z]{2,8}(?:[/-][A-Z]{1,8})?[ \t]?(?:[A-Z]{1,3}[ -]?)?\d")
# Always followed by more of the same sentence.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st no nos cl cll para paras e.g i.e approx vs v art arts sch ref fig pp p"
    " viz cf sec secs u.s inc ltd co corp".split()
)
_LABEL = re.compile(
    r"(?:(?:clause|section|article|schedule|part)\s+)?\d{1,3}(?:\.\d{1,3})*\.?\s+", re.IGNORECASE
)
# A unit's abbreviation after a number: `400 lb. (181 kg)`, `6 ft. 6 in.` go on (issue 40).
_UNIT_ABBREVIATION = re.compile(
    r"\d[\d,./]*\s*(?:lbs?|ft|in|oz|yd|yds|sq|cu|kg|mm|cm|psi|psf|gal|hrs?|mins?|sec|deg)\.$",
    re.IGNORECASE,
)
_EMPHASISED = re.compile(r"(\*\*|__)[^*_\n]+\1")  # a Markdown line in bold: a heading
_SMALL_WORDS = frozenset("a an and as at by for in of on or the to with &".split())


def is_table_row(line: str) -> bool:
    """A line of a table: cells separated by ` | ` (or a tab, as older passages have them)."""
    return " | " in line or "\t" in line


def _line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`. Sentences end at `.`, `!` or `?` before white
    space, and at blank lines; a single line break ends one only after a table row (a line
    with a tab) or a heading, or before a list item: elsewhere it is a wrapped line (PDFs)."""
    spans, start = [], 0
    for match in _BOUNDARY.finditer(text):
        if match.group() == "\n":
            line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
            next_break = text.find("\n", match.end())
            following = text[match.end() : None if next_break < 0 else next_break]
            breaks = (
                is_table_row(line)
                or line.lstrip().startswith("#")
                or _ITEM.match(following)
                or is_table_row(following)  # a table's title line, then its header
                or (_REFERENCE.match(following) and _REFERENCE.match(text, start))
            )
            if not breaks:
                continue
        end = match.end() if match.group()[0] in ".!?" else match.start()
        spans.append((start, end))
        start = match.end()
    spans.append((start, len(text)))
    trimmed = []
    for begin, end in spans:
        piece = text[begin:end]
        begin += len(piece) - len(piece.lstrip())
        end -= len(piece) - len(piece.rstrip())
        if end > begin:
            trimmed.append((begin, end))
    return trimmed


def is_heading(line: str) -> bool:
    """A line that is a heading, not the start of a wrapped sentence: `# Title`, a short line
    in capitals, or a clause number followed by a short title-cased line (`5. Payment`)."""
    line = line.strip()
    if line.startswith("#") or _EMPHASISED.fullmatch(line):
        return True
    label = _LABEL.match(line)
    rest = line[label.end() :] if label else line
    words = rest.split()
    if not words or len(words) > 10 or rest[-1] in ".,;:!?":
        return False
    letters = [char for char in rest if char.isalpha()]
    if len(letters) < 3:
        return False
    if not any(char.islower() for char in letters):
        return True
    return label is not None and all(
        word[0].isupper() or word.lower() in _SMALL_WORDS for word in words if word[0].isalpha()
    )


_NUMBERED_TITLE = re.compile(
    r"(?:(?:clause|section|article|part)\s+|§\s*)?\(?\d{1,4}(?:\.\d{1,4})*(?:-\d{1,4})?[.)]?\s+"
    r"[A-Z][\w'&/-]*(?:\s+[\w'&/-]+){0,5}[.:]?",
    re.IGNORECASE,
)
# A clause's title with its date, as the FAR and agency supplements print them: `Warranty of
# Construction (Mar 1994)`, `Equitable Adjustments (APR 1998)`.
_DATED_TITLE = re.compile(
    r"[A-Z][A-Za-z'&/,-]*(?:\s+[A-Za-z'&/,-]+){0,8}\s+\((?:[A-Z][A-Za-z]{2,8}\.?\s+)?\d{4}\)\.?"
)


def is_title(sentence: str) -> bool:
    """A sentence that only names what follows: a heading, a numbered title (`2. Contract
    Sum.`, `Clause 5 Governing law:`, `52.246-21 Warranty of Construction.`, `§ 1926.52
    Occupational noise exposure.`), or a clause's dated title (`Warranty of Construction
    (Mar 1994)`)."""
    sentence = sentence.strip()
    return (
        is_heading(sentence)
        or _NUMBERED_TITLE.fullmatch(sentence) is not None
        or _DATED_TITLE.fullmatch(sentence) is not None
    )


def _continues(previous: str, following: str) -> bool:
    """Whether the split between `previous` and `following` is not a sentence end."""
    if _BARE_LABEL.fullmatch(previous):
        return True
    if _LOWER_LABEL.match(following):
        return False
    if following[:1].islower():
        return True
    if _UNIT_ABBREVIATION.search(previous) and following[:1] in "(0123456789[":
        return True
    last = _LAST_WORD.search(previous)
    if last is None:
        return False
    word = last.group(1)
    if word.lower() in _MONTHS and following[:1].isdigit():
        return True
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, trimmed of white space."""
    merged: list[tuple[int, int]] = []
    for start, end in _line_spans(text):
        if merged and _continues(text[merged[-1][0] : merged[-1][1]], text[start:end]):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    spans: list[tuple[int, int]] = []
    for start, end in merged:
        piece_start = line_start = start
        while (newline := text.find("\n", line_start, end)) >= 0:
            line = text[line_start:newline]
            following = text[newline + 1 : end].lstrip()[:1]
            if line.strip() and not following.islower() and is_heading(line):
                _add(spans, text, piece_start, line_start)
                _add(spans, text, line_start, newline)
                piece_start = newline + 1
            line_start = newline + 1
        _add(spans, text, piece_start, end)
    return spans


def _add(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    start += len(piece) - len(piece.lstrip())
    end -= len(piece) - len(piece.rstrip())
    if end > start:
        spans.append((start, end))

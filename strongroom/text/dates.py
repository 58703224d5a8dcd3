"""Dates as documents write them: `1 March 2024`, `1st day of March, 2024`, `March 1, 2024`,
`2024-03-01` and numeric `01/03/2024` with a four-digit year, each read as the day it names.
The key-terms workflow lists them (strongroom.workflows.analysis_terms); an answer's dates are
checked against its citations by the day they name (strongroom.answers.grounding)."""

from __future__ import annotations

import datetime
import re

SP = r"(?:[ \t]+(?:\n[ \t]*)?|\n[ \t]*)"  # white space with at most one line break
_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "(?i:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(
    rf"(?<![\w.,])(?P<day>\d{{1,2}}){_ORDINAL}(?:{SP}day)?(?:{SP}of)?{SP}(?P<month>{_MONTH}),?"
    rf"{SP}(?P<year>\d{{4}})(?![\w.,]\d|\w)"
)
_MONTH_DAY_YEAR = re.compile(
    rf"(?<![\w])(?P<month>{_MONTH}){SP}(?P<day>\d{{1,2}}){_ORDINAL},?{SP}(?P<year>\d{{4}})"
    r"(?![\w.,]\d|\w)"
)
_ISO_DATE = re.compile(r"(?<![\w./-])(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})(?![\d/-])")
_NUMERIC_DATE = re.compile(
    r"(?<![\w./-])(?P<first>\d{1,2})(?P<sep>[/.-])(?P<second>\d{1,2})(?P=sep)(?P<year>\d{4})"
    r"(?![\w/-]|\.\d)"
)


def iso_date(year: int, month: int, day: int) -> str | None:
    """`YYYY-MM-DD`, or None for no real day."""
    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError:
        return None


def date_matches(text: str) -> list[tuple[int, int, str | None]]:
    """(start, end, ISO date) of each date `text` writes; the ISO date is None when the text
    is ambiguous (`01/03/2024`: 1 March or 3 January) or no real day (`31 February 2024`)."""
    matches: list[tuple[int, int, str | None]] = []
    for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR):
        for match in pattern.finditer(text):
            month = _MONTHS[match["month"].rstrip(".").lower()]
            year, day = int(match["year"]), int(match["day"])
            if 1800 <= year <= 2199 and 1 <= day <= 31:
                matches.append((match.start(), match.end(), iso_date(year, month, day)))
    for match in _ISO_DATE.finditer(text):
        iso = iso_date(int(match["year"]), int(match["month"]), int(match["day"]))
        if iso is not None:
            matches.append((match.start(), match.end(), iso))
    for match in _NUMERIC_DATE.finditer(text):
        first, second, year = int(match["first"]), int(match["second"]), int(match["year"])
        if not 1800 <= year <= 2199:
            continue
        if first == second or second > 12:  # 5/5/2024; 3/25/2024 can only be month first
            day, month = (first, second) if first == second else (second, first)
        elif first > 12:  # 25/3/2024: day first
            day, month = first, second
        else:
            matches.append((match.start(), match.end(), None))
            continue
        iso = iso_date(year, month, day)
        if iso is not None:
            matches.append((match.start(), match.end(), iso))
    return matches

"""What value a question asks for, read two ways for its two uses (strongroom.text.question.
Question reads each once per question):

- `value_named` (a chat answer): a value only where the question's words name its kind
  (`What is the ... date?`, `How many days ...?`, `What percentage ...?`); `When must the
  contractor ...?` may be answered by a condition, so it wants none. A sentence without a
  value of the kind named does not answer the question, however many of its words it shares.
- `value_cued` (a template field): a field always wants a value, so any cue counts (`When` a
  date, `Who` a party, `within` a duration), most specific kind first; the first kind the
  answering sentence holds is the field's value.

Both answer with a strongroom.text.values.Wanted, which says whether a sentence holds such a
value and which value it is.
"""

from __future__ import annotations

import re

from strongroom.text import analysis
from strongroom.text.values import DURATION_UNIT, ROLE_NAMES, ROLE_WORDS, Wanted, day_basis

_ROLE_IN_QUESTION = re.compile(rf"\b(?:{ROLE_WORDS})\b", re.IGNORECASE)
# A question that wants a number (`How many days ...?`, `What percentage ...?`): an answer
# that holds none does not answer it, however many of its words it shares.
_ASKS_FOR_NUMBER = re.compile(
    r"\b(?:how (?:many|much|long|often)|within how|number of|percentage|percent|"
    r"what (?:\w+ )?(?:amount|sum)|amount of|sum|rate|dollars)\b",
    re.IGNORECASE,
)


def asks_for_number(question: str) -> bool:
    """Whether `question` wants a number: an amount, a share, a duration, a count."""
    return _ASKS_FOR_NUMBER.search(question) is not None


# How a chat question names the value it wants, tried in order by `value_named` (the first
# that matches says).
_WANTS_DATE = re.compile(
    r"\b(?:what|which)\s+(?:is\s+the\s+)?(?:[\w-]+\s+){0,3}?date\b|\bdate of\b"
    r"|\bwhen is the (?:[\w-]+\s+){0,3}date\b",
    re.IGNORECASE,
)
_WANTS_PERCENT = re.compile(r"\b(?:percentage|percent|per cent)\b|%", re.IGNORECASE)
_WANTS_UNIT = re.compile(
    rf"\bhow many\s+(?:[\w-]+\s+)?{DURATION_UNIT}\b|\b{DURATION_UNIT}['\u2019]?\s+notice\b",
    re.IGNORECASE,
)
_WANTS_MEASURE = re.compile(
    r"\bhow (?:high|tall|deep|wide|thick|far|heavy|strong|steep|close|near)\b"
    r"|\b(?:what|which)\s+(?:is\s+the\s+)?(?:[\w-]+\s+){0,3}?"
    r"(?:strength|slope|height|depth|width|thickness|distance|weight|load|clearance)\b",
    re.IGNORECASE,
)
_WANTS_TIME = re.compile(r"\b(?:what time|between what hours|what hours)\b", re.IGNORECASE)
# A time allowed, not a time of day: `What is the maximum time from loading to pour ...?`, `What
# is the time limit for ...?` (a specification's placing limits, a contract's deadlines) is
# answered by a duration (`one hour`), not by the temperature its condition names.
_WANTS_TIME_ALLOWED = re.compile(
    r"\b(?:what|which)\s+(?:is\s+the\s+)?(?:[\w-]+\s+){1,3}?time\b(?!\s+of\s+day)"
    r"|\btime limit\b",
    re.IGNORECASE,
)
# `How many times the maximum intended load must it support?` asks a multiple (a safety
# manual's capacities: `four times`), not a count of what follows.
_WANTS_MULTIPLE = re.compile(r"\bhow many times\s+(?:the|its|their|his|her)\b", re.IGNORECASE)
# `How often ...?` is answered by a frequency (`before each shift`, `monthly`, `at least once
# every 7 days`): a safety manual's inspections and training, a specification's tests.
# Not `At what intervals ...?`: a safety manual's rest platforms and a specification's joints
# are spaced at intervals of feet.
_WANTS_FREQUENCY = re.compile(
    r"\bhow (?:often|frequently|regularly)\b"
    r"|\bhow many times (?:a|an|per|each|every|in|during)\b"  # not `how many times the load`
    r"|\b(?:at what|what|which)\s+(?:is\s+the\s+)?(?:[\w-]+\s+){0,2}?frequency\b",
    re.IGNORECASE,
)
# `How long must the records be kept?` is answered by a duration, `How long are the tie
# bars?` by a length: neither by a sum or a statute's number (`40 U.S.C.`).
_WANTS_LENGTH_OF_TIME_OR_SPACE = re.compile(r"\bhow long\b", re.IGNORECASE)
# `At what age must the concrete reach ...?` (a specification's strength at an age) is
# answered by a duration (`at 28 days`).
_WANTS_AGE = re.compile(r"\b(?:what|which)\s+age\b|\bhow old\b", re.IGNORECASE)
# `How soon can we strip the forms?`, `How fast must we pay our subs?`: a paraphrase of a
# deadline or a waiting time (a specification's form removal, a contract's payment terms),
# answered by a duration (`12 hours`, `within 7 days`).
_WANTS_HOW_SOON = re.compile(r"\bhow (?:soon|fast|quickly|promptly)\b", re.IGNORECASE)
# A temperature, or a change of one, asked as such (a specification's or a safety manual's
# cold- and hot-weather rules): `What is the maximum temperature difference ...?`, `How much
# may the concrete temperature fall ...?`, `How cold ...?`. Not a temperature that only sets
# a condition (`What is the maximum time ... when the temperature is above ...?`).
_WANTS_TEMPERATURE = re.compile(
    r"\bhow (?:hot|cold|warm)\b"
    r"|\b(?:what|which)\s+(?:is\s+the\s+)?(?:[\w-]+\s+){0,3}?temperatures?\b"
    r"|\bhow much (?:may|can|must|should|shall|does|will|is) (?:the )?(?:[\w-]+ ){0,3}?"
    r"temperatures?\b",
    re.IGNORECASE,
)
# A strength asked (`How strong ...?`, `What strength ...?`) is answered by a stress or a
# force (values' `strength`: `4,000 psi`, `5,000 pounds`), a multiple of a load (`four times
# the intended load`) or a percentage of the strength specified: a concrete specification's
# form-removal and opening-to-traffic rules (`70 percent of the specified compressive
# strength`; issue 53); never a length (`within two feet of any utility line`).
_WANTS_STRENGTH = re.compile(
    r"\bhow strong\b|\b(?:what|which)\s+(?:is\s+the\s+)?(?:[\w-]+\s+){0,3}?strength\b",
    re.IGNORECASE,
)
_NAMES_A_UNIT = re.compile(r"\bin (?:psi|mpa|pounds|kilograms|kn|kpa|feet|inches|meters|metres)\b")
# A ratio or proportion asked (`What cement-sand-stone proportion ...?`, `What is the maximum
# water-cement ratio?`) is answered by any number: a mix design's `1:2:3` and `0.45`, a
# contract's retained share (not only by a sum of money: `What ... proportion ... and what is
# the water limit ...?` read `limit` as a sum).
_WANTS_RATIO = re.compile(
    r"\b(?:what|which)\s+(?:is\s+the\s+)?(?:[\w-]+\s+){0,3}?(?:ratio|proportions?)\b",
    re.IGNORECASE,
)
# Dollars asked, by the word or a `$` with no sum after it: a `$35,000` the question writes is
# a threshold it states (`For contracts greater than $35,000, how many ...?`), not what it
# asks.
_WANTS_DOLLARS = re.compile(r"\bdollars?\b|\$(?!\s?\d)", re.IGNORECASE)
_WANTS_AMOUNT = re.compile(
    r"\b(?:what|which)\s+(?:is\s+the\s+)?(?:[\w-]+\s+){0,3}?(?:sum|price|amount|cost|fee|limits?|ceiling)\b",
    re.IGNORECASE,
)
# A rate is any number: a price per unit in a schedule's cell (`385`, the column saying
# AUD), interest `6 percent per annum`, `1 1/2 times the basic rate` (issue 40).
_WANTS_RATE = re.compile(r"\brates?\b", re.IGNORECASE)
# `How many copies ...?`: what is counted. `How many does the Contracting Officer keep?`
# says it earlier (`Of the shop drawing sets submitted, ...`): any number then.
_WANTS_COUNT = re.compile(r"\bhow many\s+((?:[\w-]+\s+){0,2}[\w-]+)", re.IGNORECASE)
_AUXILIARY = re.compile(
    r"(?:does|do|did|is|are|was|were|must|shall|should|can|will|would|may)\b", re.IGNORECASE
)


# A question asking two things (`To whom are change proposals submitted, and in how many
# copies?`, `Who has to check our ladders, and how often?`): a multi-fact question of any
# corpus. Its second part starts at an `and` before a question word (after a preposition or
# not); the first part must ask something too (`above and below which percentages` is one).
_QUESTION_WORD = r"(?:how|what|which|when|who|whom|whose|where|why)\b"
_SECOND_PART = re.compile(
    r",?\s+and\s+(?=(?:(?:in|for|at|to|by|within|from|on|of|under|above|below|after|before|"
    rf"until|with)\s+)?{_QUESTION_WORD})",
    re.IGNORECASE,
)
_ASKS = re.compile(rf"\b{_QUESTION_WORD}", re.IGNORECASE)


def parts_asked(question: str) -> list[str]:
    """A question asking two things as its parts, split at an `and` before a question word
    (`_SECOND_PART`); a question asking one thing as itself."""
    return _SECOND_PART.split(question)


def value_named(question: str) -> Wanted | None:
    """The value a chat `question`'s words name (see Wanted; `Wanted()` for any number:
    `How much ...?`), or None when it names none. A question asking two things is read part
    by part: a part that names no value (`To whom ...`) may be answered by a sentence without
    one, so the whole then wants none; else a sentence holding either part's value answers
    (`How far apart ..., and how many skiffs ...?`)."""
    question = _without_relative_what(question)
    parts = parts_asked(question)
    if len(parts) > 1 and all(_ASKS.search(part) for part in parts):
        return either([_value_named(part) for part in parts])
    return _value_named(question)


# A `what` or `which` inside a clause, before the clause's subject, asks nothing: `... pays us
# back for what our bonds cost us` is no cost asked, `the period within which the Contractor
# must ...` no period (a paraphrase's and a contract's relative clauses). One that opens the
# question or a clause, alone or after one preposition (`At what height ...`, `..., which
# governs?`), or is followed by the noun it asks (`above and below which percentages`),
# asks.
_WH_BEFORE_SUBJECT = re.compile(
    r"\b(?:what|which)\b(?=\s+(?:our|their|its|his|her|my|your|the|a|an|it|they|we|you|he|"
    r"she|this|that|these|those|someone|anyone)\b)",
    re.IGNORECASE,
)
_CLAUSE_OPENING = re.compile(r"[,;:?]|\b(?:and|or|but)\b", re.IGNORECASE)


def _without_relative_what(question: str) -> str:
    """`question` with each relative `what`/`which` (one at least two words into its clause,
    before a subject) written `whatever`/`whichever`, which no reading takes as asking."""

    def relative(match: re.Match[str]) -> str:
        clause = _CLAUSE_OPENING.split(question[: match.start()])[-1]
        if len(clause.split()) < 2:
            return match.group()
        return match.group() + "ever"

    return _WH_BEFORE_SUBJECT.sub(relative, question)


def either(readings: list[Wanted | None]) -> Wanted | None:
    """One reading for a question asking several things (`readings`, one per part, in
    order): None when any part wants no value; any number when one wants any number; else
    the kinds of every part, in order, a duration in one part's unit (any unit when the
    parts differ), a count of what any part counts."""
    if any(reading is None for reading in readings):
        return None
    wanted = [reading for reading in readings if reading is not None]
    if any(not reading.kinds for reading in wanted):
        return Wanted()
    kinds = tuple(dict.fromkeys(kind for reading in wanted for kind in reading.kinds))
    units = {reading.unit for reading in wanted if "duration" in reading.kinds}
    bases = {reading.basis for reading in wanted if "duration" in reading.kinds}
    return Wanted(
        kinds,
        unit=units.pop() if len(units) == 1 else None,
        basis=bases.pop() if len(bases) == 1 else None,
        counted=frozenset().union(*(reading.counted for reading in wanted)),
        roles=frozenset().union(*(reading.roles for reading in wanted)),
    )


def _value_named(question: str) -> Wanted | None:
    """The value one question's words name. A `How many days ...?` or `How long ...?`
    question asks a duration though it names a date (`... from the effective date of
    termination`): the date is where the duration runs from."""
    unit = _WANTS_UNIT.search(question)
    if unit:
        named = next(group for group in unit.groups() if group)
        # `How many Days`: the unit `day`; `How many working days`: counted in working days.
        return Wanted(("duration",), unit=named.lower(), basis=day_basis(unit.group()))
    if _WANTS_AGE.search(question) or _WANTS_HOW_SOON.search(question):
        return Wanted(("duration",))
    if _WANTS_LENGTH_OF_TIME_OR_SPACE.search(question):
        return Wanted(("duration", "measure"))
    if _WANTS_DATE.search(question):
        return Wanted(("date",))
    if _WANTS_PERCENT.search(question):
        return Wanted(("percent",))
    if _WANTS_FREQUENCY.search(question):
        return Wanted(("frequency",))
    if _WANTS_TIME.search(question):
        return Wanted(("time",))
    if _WANTS_TIME_ALLOWED.search(question):
        return Wanted(("duration",))
    if _WANTS_TEMPERATURE.search(question):
        return Wanted(("temperature",))
    if _WANTS_STRENGTH.search(question) and not _NAMES_A_UNIT.search(question.lower()):
        return Wanted(("strength", "percent"))
    if _WANTS_MEASURE.search(question):
        return Wanted(("measure",))
    if _WANTS_RATIO.search(question):
        return Wanted()
    if _WANTS_DOLLARS.search(question) and asks_for_number(question):
        return Wanted(("amount",))
    if _WANTS_RATE.search(question):
        return Wanted()
    if _WANTS_AMOUNT.search(question):
        return Wanted(("amount", "percent"))
    if _WANTS_MULTIPLE.search(question):
        return Wanted(("proportion",))
    counted = counted_asked(question)
    if counted:
        return Wanted(("count",), counted=counted)
    return Wanted() if asks_for_number(question) else None


def counted_asked(question: str) -> frozenset[str]:
    """The terms of what a `How many ...?` question counts (`How many copies ...?`: copi),
    none when it says it earlier (`how many does the Engineer keep`) or asks no count."""
    count = _WANTS_COUNT.search(question)
    if count is None or _AUXILIARY.match(count.group(1)):
        return frozenset()
    return frozenset(analysis.terms(count.group(1)))


# What in a template field's question points to which kind, most specific first (the first
# kind the answering sentence holds is the field's value).
_CUES: list[tuple[str, str]] = [
    ("frequency", _WANTS_FREQUENCY.pattern),
    ("temperature", _WANTS_TEMPERATURE.pattern),
    ("percent", r"\b(?:percent|percentage|per cent|rate|proportion)\b|%"),
    ("amount", r"\b(?:amount|sum|price|cost|fee|how much|value|dollars?|rate)\b|\$"),
    ("duration", r"\b(?:how long|days?|weeks?|months?|years?|period|within|time limit)\b"),
    ("date", r"\b(?:date|when|dated)\b"),
    ("jurisdiction", r"\b(?:governing law|law|laws|jurisdiction|governed)\b"),
    ("party", rf"\b(?:who|name of|party|parties|company|{ROLE_WORDS})\b"),
    ("count", r"\bhow many\b"),
]
_CUE_PATTERNS = [(kind, re.compile(cue, re.IGNORECASE)) for kind, cue in _CUES]


def value_cued(question: str) -> Wanted | None:
    """The kinds of value any cue of a template field's `question` points to, most specific
    first (a duration question is not also a count), with the roles a party must play; None
    when no cue points to any."""
    kinds = [kind for kind, cue in _CUE_PATTERNS if cue.search(question)]
    if "frequency" in kinds and "duration" in kinds:  # `How many times a day ...?`
        kinds.remove("duration")
    if ("duration" in kinds or "frequency" in kinds) and "count" in kinds:
        kinds.remove("count")
    if not kinds:
        return None
    return Wanted(
        tuple(kinds),
        counted=counted_asked(question) if "count" in kinds else frozenset(),
        roles=roles_asked(question) if "party" in kinds else frozenset(),
    )


def roles_asked(question: str) -> frozenset[str]:
    """The names of the role a question asks about (`Who is the employer?`: employer,
    principal, owner, client), or none."""
    found = _ROLE_IN_QUESTION.search(question)
    if found is None:
        return frozenset()
    word = found.group().lower()
    return next(group for group in ROLE_NAMES if word in group)

"""Typed values out of a sentence, for answers that want a value and not a paragraph (a
template field: `{{ contract_sum }}`, `{{ notice | How many days' notice? }}`; a chat question:
`How many days' notice must be given?`).

This module reads values in text: an amount, a percentage, a duration, a date, a
jurisdiction, a party, a count, a measure, a proportion, a time of day (`PATTERNS`), and the
bounds a text states (`maximum`, `not less than`), and whether a sentence holds the value a
question wants (`Wanted`; what kind of value a question wants is read by
strongroom.text.wanted). The first value of that kind in the answering sentence is the
answer. A question that asks for a kind the sentence does not hold gets none (better a field
left as a placeholder than a wrong value); a question that names no kind gets the sentence's
clause that holds most of its words, short.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from strongroom.text import analysis, money

MAX_CLAUSE_CHARS = 160

_SMALL = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    "fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
    "eighty|ninety|hundred"
)
_NUMBER = rf"(?:\d[\d,]*(?:\.\d+)?|(?:{_SMALL})(?:[- ](?:{_SMALL}))*)"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_PROPER = r"[A-Z][A-Za-z&'-]*(?: (?:(?:of|and|&|the|for) )?[A-Z][A-Za-z&'-]*)*"
# A party's defined role, quoted or not: `(the "Employer")`, `(the Principal)`,
# `(hereinafter called "the Contractor")`.
_DEFINED_ROLE = (
    r"\((?:hereinafter\s+(?:referred\s+to\s+as|called|known\s+as)\s+)?(?:the\s+)?[\"“']?"
    r"(?:the\s+)?([A-Z][A-Za-z-]+(?: [A-Z][A-Za-z-]+)?)[\"”']?\)"
)
# Roles a party plays, each with the other names contracts give it (AS 4000's Principal,
# FIDIC's Employer, AIA's Owner are the one who pays; a Builder is the Contractor).
ROLE_NAMES: tuple[frozenset[str], ...] = (
    frozenset({"employer", "principal", "owner", "client"}),
    frozenset({"contractor", "builder", "main contractor", "head contractor"}),
    frozenset({"subcontractor", "sub-contractor"}),
    frozenset({"superintendent"}),
    frozenset({"contract administrator"}),
    frozenset({"architect"}),
    frozenset({"engineer"}),
    frozenset({"project manager"}),
    frozenset({"quantity surveyor"}),
    frozenset({"consultant"}),
    frozenset({"supplier", "vendor", "seller"}),
    frozenset({"purchaser", "buyer", "customer"}),
    frozenset({"landlord", "lessor"}),
    frozenset({"tenant", "lessee"}),
    frozenset({"guarantor"}),
    frozenset({"lender"}),
    frozenset({"borrower"}),
)
# Every role's names as one alternation, longest first (`main contractor` before `contractor`).
ROLE_WORDS = "|".join(
    sorted((re.escape(name) for group in ROLE_NAMES for name in group), key=len, reverse=True)
)
# `The Contractor is Meridian Build Group Ltd`, `Principal: Harbourside Developments Pty Ltd`.
_LABELLED_PARTY = re.compile(
    rf"\b(?P<role>(?i:{ROLE_WORDS}))\s*(?:\bis\b|\bshall be\b|\bmeans\b|:)\s+"
    rf"(?:the\s+)?(?P<name>{_PROPER})"
)
# Words that start a clause, not a name: `If the Contractor ...` is no party.
_NOT_NAMES = frozenset(
    """if when where whereas while unless until after before as the this that these those such
    any each every all no a an it its in on at by to for of which who whom whose subject
    provided notwithstanding""".split()
)

PATTERNS: dict[str, re.Pattern[str]] = {
    "percent": re.compile(rf"\b{_NUMBER}\s?(?:%|percent\b|per cent\b)", re.IGNORECASE),
    # A sum of money (strongroom.text.money: which codes, symbols and words; `matches`
    # keeps only real currency codes, and `pounds` only where they pay rather than weigh).
    "amount": re.compile(
        rf"(?:(?P<symbol>{money.SYMBOL_PATTERN})|\b(?P<code>{money.CODE_PATTERN})[ \t]?)"
        r"[ \t]?\d[\d,]*(?:\.\d+)?(?:[ \t]?(?i:million|thousand|billion|m|k)\b)?"
        r"|\b\d[\d,]*(?:\.\d+)?[ \t]?(?i:million[ \t]|thousand[ \t])?"
        r"(?:(?P<word>(?i:dollars|euros|pounds(?:[ \t]+sterling)?))\b"
        rf"|(?P<code_after>{money.CODE_PATTERN})\b)"
    ),
    # A number may close a specification's bracketed option before its unit (`within[ 60][
    # 90] minutes`: the options are 60 or 90 minutes; issue 53).
    "duration": re.compile(
        rf"\b{_NUMBER}\]?(?:\s*\(\d+\))?[\s-]+(?:calendar\s+|working\s+|business\s+|consecutive\s+)?"
        r"(?:days?|weeks?|months?|years?|hours?|minutes?)\b",
        re.IGNORECASE,
    ),
    "date": re.compile(
        rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
        r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4})\b"
    ),
    # `governed by the laws of New South Wales`, or `United States law will apply`.
    "jurisdiction": re.compile(
        rf"(?i:governing law|governed by|laws? of|jurisdiction of|courts? of)[:\s]+(?:the\s+)?"
        rf"(?:(?:State|Commonwealth|Province|Territory|District) of\s+)?({_PROPER})"
        rf"|({_PROPER}) (?i:(?:federal |state )?laws?) (?i:will|shall|applies|apply|governs?)\b"
    ),
    # `Harbour Holdings Ltd (the "Employer")`, or `The employer is Harbour Holdings Ltd.`
    # (`parties_in` reads which party plays which role).
    "party": re.compile(
        rf"({_PROPER})\s*,?\s*{_DEFINED_ROLE}"
        rf"|(?i:\bis|\bshall be|\bmeans|:)\s+(?:the\s+)?({_PROPER})"
    ),
    "count": re.compile(rf"\b{_NUMBER}\b", re.IGNORECASE),
    # A length, height, strength, weight or slope: `42 inches`, `3,000 psi`, `1:1`, `34 degrees`.
    "measure": re.compile(
        rf"\b{_NUMBER}(?:\s*\(\d+\))?[\s-]*(?:feet|foot|ft|inch(?:es)?|in\.|mm|cm|met(?:er|re)s?|m"
        r"|psi|mpa|pounds?|lbs?|kg|kilograms?|tons?|tonnes?|degrees?|°)(?!\w)"
        r"|\b\d+(?:\.\d+)?\s?(?:H\s?)?:\s?\d+(?:\.\d+)?(?:\s?V)?\b",
        re.IGNORECASE,
    ),
    # A strength: a stress (concrete's `4,000 psi`, `4,000 P.S.I.`, `3,900 pounds per square
    # inch`, `28 MPa`) or a force (a safety manual's hooks and guardrails: `5,000 pounds (22.2
    # kN)`, `200 pounds`), never a length or a temperature.
    "strength": re.compile(
        rf"\b{_NUMBER}(?:\s*\(\d+\))?[\s-]*(?:psi|p\.s\.i\.?|ksi|mpa|kpa|n/mm2|n/mm²"
        r"|(?:pounds?|lbs?\.?)(?: per square inch)?|kn|kips?|newtons?|tons?)(?!\w)",
        re.IGNORECASE,
    ),
    # A share or a multiple of something else: `one-half the diameter`, `1/2 of the depth`,
    # `four times the intended load`, `twice`, `a third` (issue 40: a measure, a count or an
    # amount may be stated so).
    "proportion": re.compile(
        rf"\b(?:{_NUMBER}|a|one)[- ](?:half|halves|thirds?|quarters?|fourths?|fifths?|tenths?)\b"
        r"|\bhalf (?:of |the |an? )|\b\d+\s?/\s?\d+(?!\s?/)(?=\s+(?:of\b|the\b|times\b))"
        rf"|\b{_NUMBER}\s+times\b|\b(?:twice|double|triple|thrice)\b",
        re.IGNORECASE,
    ),
    # A time of day: `7 a.m.`, `07:00`, `noon`.
    "time": re.compile(
        r"\b\d{1,2}(?::\d{2})?\s?(?:a\.?m\b\.?|p\.?m\b\.?)|\b\d{1,2}:\d{2}\b|\b(?:noon|midnight)\b",
        re.IGNORECASE,
    ),
    # A temperature or a change of one, as a concrete specification or a safety manual's
    # cold-weather rule writes it: `10 °C`, `50°F`, `28 degrees C`, `2.8 deg. C`, `40 F`
    # (issue 53: a temperature change answers `How much may the temperature fall ...?`).
    "temperature": re.compile(
        rf"\b{_NUMBER}\s?(?:°|º|degrees?|deg\.?)(?:\s?(?:[FC]\b|Fahrenheit|Celsius|centigrade))?"
        r"|\b\d+(?:\.\d+)?\s?[FC]\b(?![./-]\w)",
        re.IGNORECASE,
    ),
    # How often, as a safety manual's inspection and training rules and a specification's
    # testing rules write it (issue 53): `daily`, `monthly`, `before each shift`, `prior to
    # each use`, `at least once every 7 days`, `twice a year`, `every two years`, `at
    # intervals not exceeding 12 months` (not `at intervals not to exceed 150 feet`, a
    # spacing), `on a weekly basis`, `periodically`, `one test for each 100 cubic yards`.
    "frequency": re.compile(
        r"\b(?:hourly|daily|nightly|weekly|bi-?weekly|fortnightly|monthly|bi-?monthly|"
        r"quarterly|semi-?annually|annually|yearly|periodically)\b"
        r"|\b(?:before|after|prior to|following|at the (?:start|beginning|end) of|during)\s+"
        r"(?:each|every)\b"
        r"|\b(?:once|twice|thrice|[\w-]+ times)\s+(?:a|an|per|each|every|in any)\s+\w+"
        r"|\b(?:every|each)\s+(?:other\s+|working\s+|calendar\s+)?"
        rf"(?:{_NUMBER}\s+)?(?:shifts?|days?|weeks?|months?|years?|hours?|minutes?|"
        r"work\s?days?|use|visit|lift|pour|placement)\b"
        r"|\bat\s+regular\s+intervals\b"
        r"|\bat\s+intervals\s+(?:of\s+|not\s+(?:to\s+)?exceed(?:ing)?\s+|of\s+not\s+more\s+than\s+)?"
        rf"{_NUMBER}\s+(?:shifts?|days?|weeks?|months?|years?|hours?|minutes?)\b"
        r"|\bon\s+an?\s+(?:daily|weekly|monthly|quarterly|yearly|annual|regular|periodic)\s+basis\b"
        rf"|\b(?:per|for\s+each|for\s+every)\s+{_NUMBER}\s+(?:[\w-]+\s+){{0,2}}?"
        r"(?:cubic|square|linear|lineal|tons?|tonnes?|feet|ft|yards?|meters?|metres?|m3|cy|sy)\b",
        re.IGNORECASE,
    ),
}

# Kinds whose value is a part of the match (a name), not all of it.
_NAMED_KINDS = ("jurisdiction", "party")


def matches(kind: str, text: str) -> Iterator[re.Match[str]]:
    """The values of `kind` in `text`, in order. An amount is one only in a real currency
    (`AUD 5`, not `FAR 52`), and `N pounds` only where they pay rather than weigh
    (strongroom.text.money)."""
    for match in PATTERNS[kind].finditer(text):
        if kind != "amount" or _is_money(match, text):
            yield match


def _is_money(match: re.Match[str], text: str) -> bool:
    code = match["code"] or match["code_after"]
    if code is not None:
        return money.currency_code(code) is not None
    word = match["word"]
    if word is not None and word.lower().startswith("pound") and "sterling" not in word.lower():
        return money.pounds_are_money(text, text[match.end() : match.end() + 40])
    return True


def first(kind: str, text: str) -> re.Match[str] | None:
    return next(matches(kind, text), None)


def first_value(kind: str, text: str, *, bounded: bool = False) -> str | None:
    """The first value of `kind` in `text` as it writes it (a jurisdiction's or a party's
    name without the words around it; a month of a year for a date, a table's `03/24`, when
    it names no day), or None when it holds none; `bounded`, with the bound it is stated
    with (`with_bound`)."""
    match = first(kind, text)
    if kind == "date" and match is None:
        match = _MONTH_YEAR.search(text)
    if match is None:
        return None
    if kind in _NAMED_KINDS:
        value = next((group for group in match.groups() if group), match.group())
    elif bounded:
        value = with_bound(text, match.start(), match.end())
    else:
        value = match.group()
    return value.strip().rstrip(".,;")


# The bound a value is stated with, before it (`at least weekly`, `not more than four
# percentages`, `a maximum of 10 percent`) or after it (`four or more risers`): a template
# field holds the value as its rule states it, a minimum told from an exact count (a safety
# manual's inspections and stair rules, a contract's caps).
_BOUND_BEFORE = re.compile(
    r"\b(?:at least|at most|not (?:less|more|fewer) than|no (?:less|more|fewer) than|"
    r"not to exceed|not exceeding|up to|(?:a )?(?:maximum|minimum) of)\s+$",
    re.IGNORECASE,
)
_BOUND_AFTER = re.compile(r"^\s+or (?:more|less|fewer|greater|longer)\b", re.IGNORECASE)


def with_bound(text: str, start: int, end: int) -> str:
    """`text[start:end]`, a value, with the bound words stated just before or after it."""
    before = _BOUND_BEFORE.search(text, max(0, start - 24), start)
    after = _BOUND_AFTER.match(text[end : end + 16])
    return text[before.start() if before else start : end + (after.end() if after else 0)]


def parties_in(sentence: str) -> list[tuple[str, str | None]]:
    """(name, role) of each party `sentence` names with its role (`X (the "Employer")`,
    `The Contractor is X`), in order; a name after `is`/`means`/`:` without a role has the
    role None. Clause openings (`If the Contractor ...`) are no names."""
    found: list[tuple[int, str, str | None]] = []
    for match in PATTERNS["party"].finditer(sentence):
        if match.group(1):
            found.append((match.start(), match.group(1), match.group(2).lower()))
        elif match.group(3):
            found.append((match.start(3), match.group(3), None))
    for match in _LABELLED_PARTY.finditer(sentence):
        found = [item for item in found if item[0] != match.start("name")]
        found.append((match.start("name"), match["name"], match["role"].lower()))
    return [
        (name, role) for _, name, role in sorted(found) if name.split()[0].lower() not in _NOT_NAMES
    ]


def concise_value(asked: Wanted | None, terms: tuple[str, ...], sentence: str) -> str | None:
    """The value a question asks for (`asked`, read loosely; its `terms` choose a clause when
    it asks for no kind), as `sentence` has it, with the bound it is stated with; None when it
    asks for a kind of value the sentence does not hold."""
    if asked is None:
        return clause(terms, sentence)
    return asked.first_in(sentence, bounded=True)


def clause(terms: tuple[str, ...], sentence: str) -> str:
    """The part of `sentence` between commas or semicolons holding most of the question's
    `terms`, if the sentence is too long to be a value."""
    if len(sentence) <= MAX_CLAUSE_CHARS:
        return sentence
    wanted = set(terms)
    parts = [part.strip() for part in re.split(r"[;,:]\s", sentence) if part.strip()]
    best = max(parts, key=lambda part: len(wanted & set(analysis.terms(part))))
    return best[:MAX_CLAUSE_CHARS].rstrip()


# Also values: an ordinal day (`the 31st day`) and a frequency (`monthly`).
_ORDINAL_OR_FREQUENCY = re.compile(
    r"\b\d+(?:st|nd|rd|th)\b|\b(?:daily|weekly|fortnightly|monthly|quarterly|annually|"
    r"yearly|every (?:day|week|month|year))\b",
    re.IGNORECASE,
)
# Paragraph labels (`(1)`, `(iii)`) and clause numbers (`52.236-2`, `36.515`) are no values;
# `$1.5 million` is one, and so is a decimal a unit follows (`3.5 feet`, `2.8 °C`, `1.5
# percent`) or under one (a water-cement ratio's `0.45`): a safety manual's and a
# specification's measures are written so, a clause number never is (issue 53).
_UNIT_AFTER = (
    r"[\s-]?(?:%|°|º|percent\b|per cent\b|feet\b|foot\b|ft\b|inch|in\.|mm\b|cm\b|m\b|"
    r"met(?:er|re)s?\b|psi\b|mpa\b|pounds?\b|lbs?\b|kg\b|kilo|tons?\b|tonnes?\b|degrees?\b|"
    r"deg\b|[FC]\b|gallons?\b|lit(?:er|re)s?\b|cubic\b|square\b|times\b|hours?\b|days?\b|"
    r"weeks?\b|months?\b|years?\b|minutes?\b|seconds?\b|kn\b|kpa\b)"
)
_LABELS = re.compile(
    rf"\(\w{{1,4}}\)|(?<![$\u00a3\u20ac])\b(?!0\.)\d+(?:\.\d+)+(?:-\d+)?\b(?!{_UNIT_AFTER})",
    re.IGNORECASE,
)
_NUMERIC_KINDS = ("amount", "percent", "duration", "date", "count", "proportion")


def without_labels(text: str) -> str:
    """`text` with its paragraph labels and clause numbers blanked out."""
    return _LABELS.sub(" ", text)


def holds_number(text: str) -> bool:
    """Whether `text` holds a value a number question can be answered with (its paragraph
    labels and clause numbers aside)."""
    plain = without_labels(text)
    if _ORDINAL_OR_FREQUENCY.search(plain):
        return True
    return any(first(kind, plain) for kind in _NUMERIC_KINDS)


# A month of a year: `Mar 1994`, `03/2024`, and `03/24` standing alone as a table's cell
# (`Revised: 03/24; Sheet: C-101` as a row reads): a drawing register's, a submittal log's
# or an inspection table's dates are written so (issue 53). Only a whole cell: in running
# text `11/16` is an inch's fraction.
_MONTH_YEAR = re.compile(
    rf"\b{_MONTH}\s+\d{{4}}\b"
    r"|(?<![\w/.])(?:0?[1-9]|1[0-2])/(?:19|20)\d{2}(?![\w/])"
    r"|(?:^|(?<=[:;|]\s)|(?<=[:;|]))(?:0[1-9]|1[0-2])/\d{2}(?=\s*(?:[;|]|$))"
)


def holds_date(text: str) -> bool:
    """Whether `text` names a day (`PATTERNS["date"]`) or a month of a year (`Mar 1994`,
    `03/2024`, a table's `03/24`)."""
    return bool(first("date", text) or _MONTH_YEAR.search(text))


_COUNTED_WITHIN = 60  # characters after a number in which a count names what it counts
_COUNTED_WORDS = re.compile(r"(?:\s+\(\d+\))?(?:\s+[\w-]+){1,3}")  # a count's noun, in a field
# Kinds a proportion may stand for: `one-half the diameter` is a distance, `four times the
# load` a weight or a count.
_PROPORTIONED = frozenset({"measure", "strength", "count", "amount"})


@dataclass(frozen=True)
class Wanted:
    """The value a question asks for, as strictly as its words say: `kinds` of value that
    answer it (any number when empty: `How much ...?`), the time `unit` a duration must be
    counted in (`How many days ...?`), the `counted` terms a count must count (`How many
    copies ...?`). A sentence holding only some other number (`10 days` for a question about
    a sum of money, `(2)` a paragraph label) does not answer it."""

    kinds: tuple[str, ...] = ()
    unit: str | None = None
    counted: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()  # a party must play one of these (`employer`, ...)
    # The days a duration must be counted in when the question says (`working`, `calendar`):
    # `How many working days ...?` is not answered by `7 calendar days` (a contract counts
    # either, and says which).
    basis: str | None = None

    def held_by(self, text: str, *, besides: str = "") -> bool:
        """Whether `text` holds a value of the kind asked for, other than the numbers the
        question itself states (`besides`): `changes costing over $500,000` is not answered
        by a sentence whose only sum is that $500,000 (issue 27)."""
        text = _without_numbers_of(besides, text)
        if not self.kinds:
            return holds_number(text)
        plain = without_labels(text)
        if _PROPORTIONED & set(self.kinds) and first("proportion", plain):
            return True
        return any(self._holds(kind, plain) for kind in self.kinds)

    def first_in(self, sentence: str, *, bounded: bool = False) -> str | None:
        """The first value of the first of `kinds` that `sentence` holds, as it has it;
        `bounded`, with the bound it is stated with (a template field's value: `at least
        weekly`, `not more than four percentages`)."""
        for kind in self.kinds:
            if kind == "party":
                value = self._party(sentence)
            elif kind == "count" and self.counted:
                value = self._count(sentence, bounded=bounded)
            else:
                value = first_value(kind, sentence, bounded=bounded)
            if value is not None:
                return value
        return None

    def _count(self, sentence: str, *, bounded: bool) -> str | None:
        """The first count of `sentence` with what it counts, as the question names it
        (`How many copies ...?`: `three copies`, `four percentages`), `bounded` with the bound
        it is stated with; else its first number."""
        for match in matches("count", sentence):
            words = _COUNTED_WORDS.match(sentence, match.end())
            if words is None:
                continue
            for word in re.finditer(r"[\w-]+", words.group()):
                if self.counted & set(analysis.terms(word.group())):
                    end = match.end() + word.end()
                    if bounded:
                        return with_bound(sentence, match.start(), end).strip()
                    return sentence[match.start() : end].strip()
        return first_value("count", sentence, bounded=bounded)

    def _party(self, sentence: str) -> str | None:
        """The first party of `sentence` playing a role asked for (any party, when the
        question names no role): `Who is the employer?` is not answered with the
        Contractor's name from the same sentence."""
        return next(
            (name for name, role in parties_in(sentence) if not self.roles or role in self.roles),
            None,
        )

    def _holds(self, kind: str, plain: str) -> bool:
        if kind == "party":
            return self._party(plain) is not None
        if kind == "date":
            return holds_date(plain)
        if kind == "duration":
            return any(
                (self.unit is None or _unit_of(match.group()) in _NEAR_UNITS[self.unit])
                and day_basis(match.group()) in (None, self.basis)
                for match in matches("duration", plain)
            )
        if kind == "count":
            after = (plain[m.end() : m.end() + _COUNTED_WITHIN] for m in matches("count", plain))
            return any(self.counted & set(analysis.terms(text)) for text in after)
        return first(kind, plain) is not None


# The units a duration asked for in one unit may be stated in: `How many days ...?` is
# answered by `within 24 hours`, `How many hours ...?` by `for not less than 7 days` (a
# safety manual's reporting limits, a specification's curing periods; issue 53); `How many
# days' notice?` is not answered by a warranty's `1 year`.
_NEAR_UNITS = {
    "minute": {"minute", "hour"},
    "hour": {"minute", "hour", "day"},
    "day": {"hour", "day", "week"},
    "week": {"day", "week", "month"},
    "month": {"week", "month", "year"},
    "year": {"month", "year"},
}
# A duration's unit, the group its singular name (what a question asks in, `_NEAR_UNITS`' keys).
DURATION_UNIT = r"(minute|hour|day|week|month|year)s?"
_DURATION_UNIT = re.compile(rf"{DURATION_UNIT}\b", re.IGNORECASE)


def _unit_of(duration: str) -> str | None:
    found = _DURATION_UNIT.search(duration)
    return found.group(1).lower() if found else None


# Which days a duration counts, when it says: working days (`business days` are the same),
# or calendar days.
_DAY_BASIS = re.compile(r"\b(working|business|calendar)\s+days?\b", re.IGNORECASE)


def day_basis(text: str) -> str | None:
    """`working` or `calendar`, when `text` counts days one way (`10 business days`)."""
    found = _DAY_BASIS.search(text)
    if found is None:
        return None
    return "calendar" if found.group(1).lower() == "calendar" else "working"


_NUMBER_WRITTEN = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _without_numbers_of(question: str, text: str) -> str:
    """`text` with the numbers `question` writes (in digits) blanked out."""
    for number in set(_NUMBER_WRITTEN.findall(question)):
        text = re.sub(rf"(?<![\d,.]){re.escape(number.rstrip(',.'))}(?![\d,]*\d)", " ", text)
    return text


# Words that name the kind of value asked rather than what it is about: a sentence holding
# such a value says them with the value (`5%` is the `percentage`; issue 40: `What percentage
# of retention is held?` scored the sentence with `retain 5%` as sharing a third of it). So
# does the word after `how` (`How high ...?` is said by `42 inches`, `How soon ...?` by `12
# hours`: every corpus's paraphrases ask so, its rules state the value without the word).
# Not `How often`: a safety manual states a frequency in many rules (a first aid kit checked
# weekly), so one says little of which rule is asked (on the tuning halves, crediting it
# asserted an answer to an unanswerable training question).
_VALUE_CUES = re.compile(
    r"\b(?:percentage|percent|per cent|proportion)\b"
    r"|(?<=\bhow )(?:high|tall|deep|wide|thick|far|heavy|strong|steep|close|near|long|soon|"
    r"fast|quickly|promptly)\b",
    re.IGNORECASE,
)


# How a text says it speaks of an upper or a lower bound (issue 40: maximum and minimum told
# apart where the question says which).
_UPPER = re.compile(
    r"\b(?:maximum|max\.?|at most|no more than|not more than|not (?:to )?exceed\w*|up to|"
    r"upper|highest|longest|greatest|limit(?:ed)? to|or less|or fewer|ceiling|cap(?:ped)?)\b",
    re.IGNORECASE,
)
_LOWER = re.compile(
    r"\b(?:minimum|min\.?|at least|no less than|not less than|no fewer than|lower|lowest|"
    r"shortest|least|or more|or greater|floor)\b",
    re.IGNORECASE,
)


def bounds_in(text: str) -> frozenset[str]:
    """Which bounds `text` states: `upper` (maximum, not to exceed, ...), `lower` (minimum,
    at least, ...), both or neither."""
    found = set()
    if _UPPER.search(text):
        found.add("upper")
    if _LOWER.search(text):
        found.add("lower")
    return frozenset(found)


# `What is the Contract Sum?`, `How long is the defects liability period?`: the term asked
# for, up to a preposition or the end.
_ASKED_TERM = re.compile(
    r"^\s*(?:what|how \w+)\s+(?:is|are|was|were)\s+(?:the\s+)?(?P<term>[\w' -]{3,60}?)"
    r"(?:\s+(?:for|of|in|on|under|to|that|which|if|when|per)\b.*)?\s*\?\s*$",
    re.IGNORECASE,
)


def defined_term(question: str) -> re.Pattern[str] | None:
    """A pattern matching a sentence that states the value of the term the question asks for
    (`The Contract Sum is ...`, `Retention: 5%`, `The Defects Liability Period (DLP) shall
    be ...`), not one that merely mentions it (issue 40); None when the question asks for no
    term so."""
    asked = _ASKED_TERM.match(question)
    if asked is None:
        return None
    words = asked["term"].split()
    if not words:
        return None
    term = r"\s+".join(re.escape(word) for word in words)
    return re.compile(
        rf"\b{term}\b\s*(?:\([^)]{{1,40}}\)\s*)?(?:is|are|shall be|will be|means|:|=)\s",
        re.IGNORECASE,
    )


def bound_terms(question: str) -> frozenset[str]:
    """The terms of the words with which `question` names a bound (`maximum`): a sentence
    stating that bound otherwise (`not more than`) counts as saying them."""
    return _terms_matched(question, _UPPER, _LOWER)


def bound_asked(question: str) -> str | None:
    """`upper` or `lower` when the question asks for that one bound, else None."""
    asked = bounds_in(question)
    return next(iter(asked)) if len(asked) == 1 else None


def value_cue_terms(question: str) -> frozenset[str]:
    """The terms (strongroom.text.analysis) of the words of `question` that name the kind of
    value it asks for: a sentence holding a value of that kind counts as saying them."""
    return _terms_matched(question, _VALUE_CUES)


def _terms_matched(text: str, *patterns: re.Pattern[str]) -> frozenset[str]:
    """The analysis terms of what `patterns` match in `text`."""
    return frozenset(
        term
        for pattern in patterns
        for match in pattern.finditer(text)
        for term in analysis.terms(match.group())
    )

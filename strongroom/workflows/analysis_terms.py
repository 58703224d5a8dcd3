"""Key terms of contracts, offline: parties, dates, amounts and governing law, each with the
text it was read from and `Evidence` (the sentence it is in).

Conservative: a term is reported only when the text says it in a recognised form, so a
missed term is likelier than a wrong one.

- Parties: company names ending in Ltd, Limited, LLP, plc, Inc, LLC or GmbH (up to eight
  capitalised words before the suffix, `&`, `and`, `of` between them; leading words such as
  `Between`, `The`, `Employer` dropped); names of two to six capitalised words immediately
  followed by a definition (`John Smith (the "Employer")`) after `between`, `and`, a comma
  or a `(1)` at the start of a line; and role labels (`the Employer: Harbour Holdings Ltd`,
  `The Contractor is ... plc`, a whole line `Quantity Surveyor: Jane Doe`). A defined term
  in brackets (`(the "Contractor")`, `(hereinafter called "the Employer")`) gives the role of
  the party named just before it when only an apposition (text starting with a comma or a
  bracket, up to `MAX_APPOSITION` characters) lies between, and the term is not one of the
  usual non-party terms (`Works`, `Site`, `Contract Sum`, ...).
- Dates: `1 March 2024`, `1st day of March, 2024`, `March 1, 2024`, `2024-03-01` and numeric
  `01/03/2024` with a four-digit year. `iso` is the ISO 8601 date, or None when the text is
  ambiguous (`01/03/2024`: 1 March or 3 January) or not a real date (`31 February 2024`).
- Amounts: every ISO 4217 code (`AUD`, `CAD`, `GBP`, ...) before or after a number, the
  symbols of strongroom.text.money (`A$`, `C$`, `NZ$`, `US$`, `£`, `€`, `¥`, `$` read as USD,
  ...), and numbers followed by `dollars`, `euros`, `sterling` or `pounds` (pounds only in a
  sentence about money that says nothing of weight: `5,000 pounds` of load is no amount);
  `million`, `m`, `bn`, `k` scale them. `value` is a decimal string (two decimal places
  unless the text has more).
- Governing law: `governed by [and construed in accordance with] the laws of X`, `... X
  law`, `construed in accordance with ...`, NEC's `The law of the contract is the law of X`
  and `Governing law: X` at the start of a line or of a sentence. `<adjective> law` counts
  for known adjectives (`English` is England and Wales, `Scots` Scotland, `New York` New
  York, ...) and, as written, for words shaped like one (`Maltese`), not for others
  (`Contract law`).

Terms are deduplicated (a party by its name, whatever the suffix's spelling; a date by its
ISO form; an amount by currency and value; a law by jurisdiction) and listed in order of
first mention; each keeps its first mentions' evidence (up to `MAX_EVIDENCE`) and the
number of mentions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from strongroom.text import money
from strongroom.text.dates import SP as _SP
from strongroom.text.dates import date_matches
from strongroom.text.sentences import sentence_spans
from strongroom.workflows.analysis_types import Evidence, JsonResult, Source, by_document, squash

MAX_EVIDENCE = 5
MAX_APPOSITION = 300  # characters between a name and the definition that gives its role
MAX_EXCERPT = 400  # a longer sentence is cut to a window around the term
_WINDOW = 160


@dataclass(frozen=True)
class Party:
    name: str
    roles: tuple[str, ...]  # defined terms and labels naming it: ("Employer",)
    raw: str  # the text of its first mention, white space squashed (as in every term)
    mentions: int
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class DateTerm:
    iso: str | None  # YYYY-MM-DD, None when ambiguous or not a real date
    raw: str
    mentions: int
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Amount:
    value: str  # a decimal string: "4250000.00"
    currency: str  # ISO 4217: GBP, USD, EUR, AUD, ...
    raw: str
    mentions: int
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class GoverningLaw:
    jurisdiction: str  # "England and Wales"
    raw: str
    mentions: int
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class KeyTerms(JsonResult):
    parties: tuple[Party, ...]
    dates: tuple[DateTerm, ...]
    amounts: tuple[Amount, ...]
    governing_law: tuple[GoverningLaw, ...]


# Patterns ----------------------------------------------------------------------------

_SUFFIX = r"(?:Ltd|LTD|Limited|LIMITED|LLP|L\.L\.P\.|plc|PLC|Plc|Inc|INC|LLC|L\.L\.C\.|GmbH)"
_NAME_WORD = r"(?:[A-Z][\w'\u2019&.-]*|\([A-Z]{1,5}\))"
_NAME_NEXT = rf"(?:{_NAME_WORD}|\d[\w-]*)"
_COMPANY = re.compile(
    rf"(?<![\w&])(?P<name>{_NAME_WORD}(?:{_SP}(?:(?:&|and|of|de|du|der|für){_SP})?{_NAME_NEXT}){{0,7}}?)"
    rf",?{_SP}(?P<suffix>{_SUFFIX})(?![\w-])"
)
_PERSON_WORD = r"(?:[A-Z][a-z'\u2019-]*\.?|[A-Z]{2,})"
_PERSON_RUN = rf"{_PERSON_WORD}(?:[ \t]+{_PERSON_WORD}){{1,5}}"
_QUOTE_OPEN = "[\"\u201c\u201d'\u2018\u2019]"
_QUOTE_CLOSE = "[\"\u201c\u201d'\u2018\u2019]"

_ROLES = (
    r"(?:Employer|Contractor|Sub-?[Cc]ontractor|Client|Consultant|Contract Administrator|"
    r"Architect|Engineer|Quantity Surveyor|Project Manager|Supervisor|Employer's Agent|"
    r"Developer|Purchaser|Supplier|Vendor|Seller|Buyer|Customer|Landlord|Tenant|Guarantor|"
    r"Lender|Borrower|Licensor|Licensee|Principal Designer|Principal Contractor|Owner|"
    r"Principal|Superintendent|Builder|Head Contractor|Main Contractor)"
)
# A defined term in brackets: quoted, any capitalised term (`(the "Employer")`); unquoted,
# only a known role (`(the Principal)`: `(the Works)` defines no party).
_DEFINITION = re.compile(
    r"\(\s*(?:hereinafter\s+(?:referred\s+to\s+as|called|known\s+as)\s+)?(?:the\s+)?"
    rf"(?:{_QUOTE_OPEN}(?:the\s+)?(?P<role>[A-Z][A-Za-z'\u2019 -]{{0,40}}?){_QUOTE_CLOSE}"
    rf"|(?P<bare>{_ROLES}))\s*\)"
)
_DEFINED_PERSON = re.compile(
    rf"(?:(?:\bbetween|\band|[,;:]|^[ \t]*\(\d{{1,2}}\)){_SP}|^[ \t]*)"
    rf"(?P<name>{_PERSON_RUN})(?:{_SP})?(?={_DEFINITION.pattern})",
    re.MULTILINE,
)
_ROLE_LABEL = re.compile(
    rf"(?:\b[Tt]he[ \t]+|^[ \t]*)(?P<role>{_ROLES})(?:[ \t]*:|[ \t]+is)[ \t]+(?=[A-Z])",
    re.MULTILINE,
)
_ROLE_LINE = re.compile(
    rf"^[ \t]*(?P<role>{_ROLES})[ \t]*:[ \t]*(?P<name>{_PERSON_RUN})[ \t]*$", re.MULTILINE
)
# Words a capitalised run picks up before a company's name that are not part of it.
_NOT_NAME = frozenset(
    """the this that these between and by with of for to from dated made agreement contract
    deed parties party signed executed behalf on in whereas employer contractor client
    consultant supplier customer purchaser vendor seller buyer landlord tenant guarantor
    lender borrower licensor licensee developer owner architect engineer subcontractor
    sub-contractor name company witness director schedule appendix annex clause section
    part article""".split()
)
# Defined terms that are not parties.
_NOT_ROLES = frozenset(
    """works site agreement contract sum date price period project property premises
    services goods deed programme specification drawings act regulations conditions
    particulars scheme building land contract documents completion date""".split()
)

_NUMBER = r"(?:\d{1,3}(?:,\d{3}){1,5}|\d{1,15})(?:\.\d{1,6})?"


def _number(n: int) -> str:
    """A number (group `number<n>`) and its scale (`word_scale<n>` or `short_scale<n>`)."""
    return (
        rf"(?P<number{n}>{_NUMBER})(?:[ \t]*(?P<word_scale{n}>(?i:million|billion|thousand))\b"
        rf"|(?P<short_scale{n}>m|bn|k)\b)?"
    )


_AMOUNT = re.compile(
    rf"(?:(?P<symbol>{money.SYMBOL_PATTERN})(?:{_SP})?{_number(1)}"
    rf"|\b(?P<code>{money.CODE_PATTERN})(?:{_SP})?{_number(2)}"
    rf"|(?<![\w.,£€$¥₹₩]){_number(3)}(?:{_SP})?(?P<code_after>{money.CODE_PATTERN})\b"
    rf"|(?<![\w.,£€$¥₹₩]){_number(4)}{_SP}"
    r"(?P<word>pounds?(?:[ \t]+sterling)?|sterling|dollars?|euros?)\b)"
    r"(?![\d,]*\d)"
)
_SCALES = {
    "million": 10**6,
    "m": 10**6,
    "billion": 10**9,
    "bn": 10**9,
    "thousand": 10**3,
    "k": 10**3,
}

_PLACE = rf"[A-Z][a-z]+(?:{_SP}(?:(?:and|of|the){_SP})?[A-Z][a-z]+){{0,4}}"
_PLACE_ON_LINE = r"[A-Z][a-z]+(?:[ \t]+(?:(?:and|of|the)[ \t]+)?[A-Z][a-z]+){0,4}"
_LAW_OF = (
    rf"(?:(?P<adjective>[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)?){_SP}law"
    rf"|laws?{_SP}of{_SP}(?:the{_SP})?(?P<place>{_PLACE}))"
)
_GOVERNED = re.compile(
    rf"(?i:governed{_SP}by|(?:construed|interpreted){_SP}in{_SP}accordance{_SP}with)"
    rf"(?:{_SP}(?i:and{_SP}(?:shall{_SP}be{_SP})?(?:construed|interpreted){_SP}in{_SP}accordance{_SP}with))?"
    rf"{_SP}(?:the{_SP})?{_LAW_OF}"
)
_NEC_LAW = re.compile(
    rf"(?i:the{_SP}law{_SP}of{_SP}the{_SP}contract{_SP}is{_SP}the{_SP}law{_SP}of){_SP}"
    rf"(?:the{_SP})?(?P<place>{_PLACE})"
)
_LAW_LINE = re.compile(
    # At the start of a line, or of a sentence inside a paragraph (`... Governing law: X.`).
    r"(?:^|(?<=[.;!?] ))[ \t]*(?:Governing|Applicable|Proper|GOVERNING|APPLICABLE)"
    r"[ \t]+(?:[Ll]aw|LAW)"
    r"[ \t]*[:\u2013\u2014-]"
    rf"[ \t]*(?:the[ \t]+)?(?:laws?[ \t]+of[ \t]+(?:the[ \t]+)?)?(?P<place>{_PLACE_ON_LINE})",
    re.MULTILINE,
)
# What `<adjective> law` names. Other adjectives count only when they look like one
# (`Maltese`, `Ontarian`): `Contract law` is no jurisdiction.
_ADJECTIVES = {
    "english": "England and Wales",
    "scottish": "Scotland",
    "scots": "Scotland",
    "welsh": "Wales",
    "irish": "Ireland",
    "northern irish": "Northern Ireland",
    "french": "France",
    "german": "Germany",
    "dutch": "Netherlands",
    "swiss": "Switzerland",
    "new york": "New York",
    "delaware": "Delaware",
    "singapore": "Singapore",
    "hong kong": "Hong Kong",
}
_DEMONYM = re.compile(r"[A-Z][a-z]+(?:ish|ian|ese|ean|an|ic)")
_NOT_DEMONYMS = frozenset({"public", "islamic", "canon", "roman", "organic", "generic", "specific"})


# Collection ----------------------------------------------------------------------------


@dataclass
class _Term:
    fields: dict
    raw: str
    mentions: int
    evidence: list[Evidence]


class _Collector:
    """Terms by key, in order of first mention, with their evidence."""

    def __init__(self) -> None:
        self.terms: dict[object, _Term] = {}

    def add(self, key: object, fields: dict, raw: str, evidence: Evidence) -> _Term:
        term = self.terms.get(key)
        if term is None:
            term = self.terms[key] = _Term(fields, raw, 0, [])
        term.mentions += 1
        if len(term.evidence) < MAX_EVIDENCE and evidence not in term.evidence:
            term.evidence.append(evidence)
        return term


class _Passage:
    """A source with its sentences, to cite the sentence a term is in."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.text = source.content
        self._spans: list[tuple[int, int]] | None = None

    def evidence(self, start: int, end: int) -> Evidence:
        if self._spans is None:
            self._spans = sentence_spans(self.text)
        covering = [span for span in self._spans if span[0] < end and span[1] > start]
        begin = min([start, *(span[0] for span in covering)])
        finish = max([end, *(span[1] for span in covering)])
        if finish - begin > MAX_EXCERPT:
            begin = max(begin, start - _WINDOW)
            finish = min(finish, end + _WINDOW)
            while begin > 0 and begin < start and not self.text[begin - 1].isspace():
                begin += 1
            while finish < len(self.text) and finish > end and not self.text[finish].isspace():
                finish -= 1
        return Evidence.of(self.source, begin, finish)


def _non_overlapping(matches: list[tuple[int, int, object]]) -> list[tuple[int, int, object]]:
    """The matches that do not overlap an earlier (or, at one start, a longer) one."""
    kept: list[tuple[int, int, object]] = []
    end = -1
    for match in sorted(matches, key=lambda item: (item[0], -item[1])):
        if match[0] >= end:
            kept.append(match)
            end = match[1]
    return kept


# Parties -------------------------------------------------------------------------------


def _party_key(name: str) -> str:
    key = squash(name).casefold().replace(".", "").replace(",", "")
    key = re.sub(r"\b(?:limited|ltd)$", "ltd", key)
    return re.sub(r"\b(?:l l p)$", "llp", key)


def _companies(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, name) of each company name with a suffix."""
    for match in _COMPANY.finditer(text):
        words = list(re.finditer(r"\S+", match.group("name")))
        first = 0
        for index, word in enumerate(words[:-1]):  # `... the Employer. Northgate plc`
            if re.fullmatch(r"[A-Za-z]{3,}\.", word.group()) and word.group() != "Bros.":
                first = index + 1
        while first < len(words) and words[first].group().strip("(),:.").lower() in _NOT_NAME:
            first += 1
        if first == len(words):
            continue
        start = match.start("name") + words[first].start()
        yield start, match.end(), squash(text[start : match.end()])


def _role(match: re.Match[str]) -> str | None:
    role = squash(match.group("role") or match.group("bare")).strip(" -'\u2019")
    if not role or role.casefold() in _NOT_ROLES or role.split()[-1].casefold() in _NOT_ROLES:
        return None
    return role


def _parties(passages: list[_Passage]) -> tuple[Party, ...]:
    collector = _Collector()
    roles: dict[str, list[str]] = {}

    def found(passage: _Passage, start: int, end: int, name: str, named: list[str]) -> None:
        key = _party_key(name)
        collector.add(key, {"name": name}, passage.text[start:end], passage.evidence(start, end))
        for role in named:
            if role not in roles.setdefault(key, []):
                roles[key].append(role)

    for passage in passages:
        text = passage.text
        mentions: list[tuple[int, int, object]] = []
        for start, end, name in _companies(text):
            mentions.append((start, end, name))
        for match in _DEFINED_PERSON.finditer(text):
            if _role(match) is not None:
                mentions.append((match.start("name"), match.end("name"), squash(match["name"])))
        for match in _ROLE_LINE.finditer(text):
            mentions.append((match.start("name"), match.end("name"), squash(match["name"])))
        mentions = _non_overlapping(mentions)
        labelled: dict[int, str] = {}
        for match in _ROLE_LABEL.finditer(text):
            labelled[match.end()] = squash(match["role"])
        for match in _ROLE_LINE.finditer(text):
            labelled[match.start("name")] = squash(match["role"])
        definitions = [(match.start(), _role(match)) for match in _DEFINITION.finditer(text)]
        for index, (start, end, name) in enumerate(mentions):
            roles_here = [labelled[start]] if start in labelled else []
            following = mentions[index + 1][0] if index + 1 < len(mentions) else len(text)
            # The first definition after the name, if only an apposition lies between.
            for at, defined in definitions:
                if end <= at < following:
                    gap = text[end:at]
                    appositive = not gap.strip() or gap.lstrip()[0] in ",("
                    if defined and len(gap) <= MAX_APPOSITION and appositive:
                        roles_here.append(defined)
                    break
            found(passage, start, end, str(name), roles_here)
    return tuple(
        Party(
            name=term.fields["name"],
            roles=tuple(roles.get(key, ())),
            raw=squash(term.raw),
            mentions=term.mentions,
            evidence=tuple(term.evidence),
        )
        for key, term in collector.terms.items()
    )


# Dates ---------------------------------------------------------------------------------


def _dates(passages: list[_Passage]) -> tuple[DateTerm, ...]:
    collector = _Collector()
    for passage in passages:
        for start, end, iso in _non_overlapping(date_matches(passage.text)):
            raw = passage.text[start:end]
            key = iso or ("raw", squash(raw).casefold())
            collector.add(key, {"iso": iso}, raw, passage.evidence(start, end))
    return tuple(
        DateTerm(
            iso=term.fields["iso"],
            raw=squash(term.raw),
            mentions=term.mentions,
            evidence=tuple(term.evidence),
        )
        for term in collector.terms.values()
    )


# Amounts -------------------------------------------------------------------------------


def _decimal_string(value: Decimal) -> str:
    if value == value.quantize(Decimal("0.01")):
        return f"{value.quantize(Decimal('0.01')):f}"
    return f"{value.normalize():f}"


def _amount(match: re.Match[str], dollar: str | None = None) -> tuple[str, str] | None:
    """The match's value and currency; a bare `$` is `dollar` (its document's, issue 40),
    USD when the document names no one dollar."""
    for group in "1234":
        number = match[f"number{group}"]
        if number is not None:
            scale = match[f"word_scale{group}"] or match[f"short_scale{group}"]
            break
    else:
        return None
    if match["symbol"] == "$" and dollar is not None:
        currency = dollar
    elif match["symbol"]:
        currency = money.SYMBOLS[match["symbol"]]
    elif match["code"] or match["code_after"]:
        currency = money.currency_code(match["code"] or match["code_after"])
    else:
        word = match["word"].lower()
        currency = money.currency_of_word(word.split()[0])
        if word.startswith("pound") and "sterling" not in word and not _pays(match):
            return None  # pounds of load, not money
    if currency is None:
        return None
    try:
        value = Decimal(number.replace(",", ""))
    except InvalidOperation:
        return None
    if scale:
        value *= _SCALES[scale.lower()]
    return _decimal_string(value), currency


def _dollars_by_document(passages: list[_Passage]) -> dict:
    """The one dollar each document names anywhere (strongroom.text.money.dollar_of)."""
    texts: dict = {}
    for passage in passages:
        texts.setdefault(passage.source.document_id, []).append(passage.text)
    return {document: money.dollar_of("\n".join(parts)) for document, parts in texts.items()}


# A table's header cell that names the currency of its column: `Rate (AUD)`, `Amount $`,
# `Price (A$)`, `Cost in dollars`.
_CURRENCY_HEADER = re.compile(
    rf"(?:^|[\s(\[])(?P<symbol>{money.SYMBOL_PATTERN})(?:$|[\s)\]])"
    rf"|\b(?P<code>{money.CODE_PATTERN})\b|\b(?P<word>dollars?|euros?|sterling)\b"
)
_BARE_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _column_amounts(
    text: str, dollar: str | None
) -> Iterator[tuple[tuple[str, str], int, int, str]]:
    """Amounts written as bare numbers in a table column whose header names the currency
    (an XLSX rates schedule: `Item | Unit | Rate (AUD)` over `50 MPa concrete | m3 | 385`,
    issue 40): (value and currency, start, end, the cell)."""
    offset = 0
    for block in text.split("\n\n"):
        lines = block.split("\n")
        start_of_block = offset
        offset += len(block) + 2
        if len(lines) < 2 or " | " not in lines[0]:
            continue
        currencies = {
            column: currency
            for column, cell in enumerate(lines[0].split(" | "))
            if (currency := _header_currency(cell, dollar)) is not None
        }
        if not currencies:
            continue
        line_start = start_of_block + len(lines[0]) + 1
        for line in lines[1:]:
            cell_start = line_start
            for column, cell in enumerate(line.split(" | ")):
                value = cell.strip()
                if column in currencies and _BARE_NUMBER.fullmatch(value):
                    begin = cell_start + cell.index(value)
                    amount = Decimal(value.replace(",", ""))
                    found = (_decimal_string(amount), currencies[column])
                    yield found, begin, begin + len(value), value
                cell_start += len(cell) + 3
            line_start += len(line) + 1


def _header_currency(cell: str, dollar: str | None) -> str | None:
    match = _CURRENCY_HEADER.search(cell)
    if match is None:
        return None
    if match["symbol"]:
        return dollar if match["symbol"] == "$" and dollar else money.SYMBOLS[match["symbol"]]
    if match["code"]:
        return money.currency_code(match["code"])
    word = money.currency_of_word(match["word"])
    return dollar if word == "USD" and dollar else word


def _pays(match: re.Match[str]) -> bool:
    """Whether `N pounds` is money in its sentence (strongroom.text.money)."""
    text = match.string
    spans = sentence_spans(text)
    start, end = next(((s, e) for s, e in spans if s <= match.start() < e), (0, len(text)))
    return money.pounds_are_money(text[start:end], text[match.end() : match.end() + 40])


def _amounts(passages: list[_Passage]) -> tuple[Amount, ...]:
    collector = _Collector()
    dollars = _dollars_by_document(passages)
    for passage in passages:
        dollar = dollars[passage.source.document_id]
        found_in_text = (
            (_amount(match, dollar), match.start(), match.end(), match.group())
            for match in _AMOUNT.finditer(passage.text)
        )
        for found, start, end, raw in [*found_in_text, *_column_amounts(passage.text, dollar)]:
            if found is None:
                continue
            value, currency = found
            collector.add(
                (currency, Decimal(value)),
                {"value": value, "currency": currency},
                raw,
                passage.evidence(start, end),
            )
    return tuple(
        Amount(
            value=term.fields["value"],
            currency=term.fields["currency"],
            raw=squash(term.raw),
            mentions=term.mentions,
            evidence=tuple(term.evidence),
        )
        for term in collector.terms.values()
    )


# Governing law -------------------------------------------------------------------------


def _jurisdiction(match: re.Match[str]) -> str | None:
    place = match.groupdict().get("place")
    if place:
        return squash(place)
    adjective = squash(match["adjective"])
    for candidate in (adjective, adjective.split()[-1]):  # `the Scots law`, `Welsh law`
        if candidate.lower() in _ADJECTIVES:
            return _ADJECTIVES[candidate.lower()]
    last = adjective.split()[-1]
    return last if _DEMONYM.fullmatch(last) and last.lower() not in _NOT_DEMONYMS else None


def _governing_law(passages: list[_Passage]) -> tuple[GoverningLaw, ...]:
    collector = _Collector()
    for passage in passages:
        matches = []
        for pattern in (_GOVERNED, _NEC_LAW, _LAW_LINE):
            for match in pattern.finditer(passage.text):
                jurisdiction = _jurisdiction(match)
                if jurisdiction:
                    matches.append((match.start(), match.end(), jurisdiction))
        for start, end, jurisdiction in _non_overlapping(matches):
            collector.add(
                str(jurisdiction).casefold(),
                {"jurisdiction": jurisdiction},
                passage.text[start:end],
                passage.evidence(start, end),
            )
    return tuple(
        GoverningLaw(
            jurisdiction=term.fields["jurisdiction"],
            raw=squash(term.raw),
            mentions=term.mentions,
            evidence=tuple(term.evidence),
        )
        for term in collector.terms.values()
    )


_FINDERS: tuple[Callable[[list[_Passage]], tuple], ...] = (
    _parties,
    _dates,
    _amounts,
    _governing_law,
)


def extract_key_terms(sources: list[Source]) -> KeyTerms:
    """The parties, dates, amounts and governing law the sources state, in order of first
    mention (documents in order of first appearance, passages in page order)."""
    passages = [_Passage(source) for document in by_document(sources) for source in document]
    parties, dates, amounts, laws = (finder(passages) for finder in _FINDERS)
    return KeyTerms(parties=parties, dates=dates, amounts=amounts, governing_law=laws)

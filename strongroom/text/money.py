"""Money as documents write it: the currency a sum is in, and when `pounds` weigh rather than
pay (issue 27: key terms read only £ $ € GBP USD EUR, and reported a safety manual's "5,000
pounds" of load as an amount in GBP).

Both readers of amounts use it: strongroom.text.values (an answer's value) and the key-terms
workflow (strongroom.workflows.analysis_terms).

- Codes: every ISO 4217 currency code (pycountry's list), written before or after the number
  (`AUD 1,250,000`, `1,250,000 CAD`). A few codes that are also English words in capitals
  (`ALL`, `TOP`, `CUP`, `MOP`) are left out: `ALL 3 COPIES` is no sum.
- Symbols: `A$`, `AU$`, `C$`, `CA$`, `NZ$`, `HK$`, `S$`, `US$`, `R$`, `£`, `€`, `¥`, `₹`,
  `₩`; a bare `$` is the dollar its document names (`dollar_of`: a contract that states
  `AUD` or `Australian dollars` somewhere writes `$25,000` in AUD, issue 40), and USD when
  the document names none or more than one (the text is kept as written, so a reader sees
  it).
- Words: `dollars` (USD), `euros`, `pounds sterling`/`sterling`, and `pounds`, which is money
  only in a sentence about money (`sum`, `pay`, `damages`, `price`, ...) that says nothing of
  weight (`load`, `support`, `force`, `capacity`, ...) and is not followed by a unit of weight
  (`per square foot`, `(22.2 kN)`).
"""

from __future__ import annotations

import functools
import re

SYMBOLS = {
    "US$": "USD",
    "AU$": "AUD",
    "A$": "AUD",
    "CA$": "CAD",
    "C$": "CAD",
    "NZ$": "NZD",
    "HK$": "HKD",
    "S$": "SGD",
    "R$": "BRL",
    "£": "GBP",
    "€": "EUR",
    "¥": "JPY",
    "₹": "INR",
    "₩": "KRW",
    "$": "USD",
}
# Longest first, so that `US$` is read before `$`.
SYMBOL_PATTERN = "|".join(re.escape(symbol) for symbol in sorted(SYMBOLS, key=len, reverse=True))
CODE_PATTERN = r"[A-Z]{3}"  # a currency code when currency_code() says so
WORDS = {"dollar": "USD", "euro": "EUR", "sterling": "GBP", "pound": "GBP"}
_WORDS_LIKE_CODES = frozenset({"ALL", "TOP", "CUP", "MOP"})

_MONEY_WORDS = re.compile(
    r"\b(?:sums?|pay\w*|paid|prices?|costs?|fees?|damages|amounts?|fund\w*|compensat\w*|"
    r"insur\w*|values?|fines?|penalt\w*|budget\w*|invoice\w*|charges?|retention|retain\w*|"
    r"salar\w*|wages?|money|monies|liabilit\w*|claims?|bonds?|deposit\w*)\b",
    re.IGNORECASE,
)
_WEIGHT_WORDS = re.compile(
    r"\b(?:loads?|loaded|loading|weigh\w*|force|supports?|supporting|capacity|strength|"
    r"tension|withstand\w*|pressure|lift\w*|anchor\w*|psf|psi|kn|kg|kilograms?|lbs?|"
    r"deflect\w*|impact|tons?|tonnes?)\b",
    re.IGNORECASE,
)
_WEIGHT_AFTER = re.compile(
    r"\s*(?:\(\s*\d|per\s+(?:square|sq\.?|lineal|linear|cubic|foot|ft|inch|in\.)|of\s+"
    r"(?:force|pressure|load|weight|thrust)|force\b)",
    re.IGNORECASE,
)


@functools.cache
def currency_codes() -> frozenset[str]:
    """The ISO 4217 codes, read once, when an amount is first looked for (pycountry's data
    costs about 0.2 s to load: not at import)."""
    import pycountry

    return frozenset(currency.alpha_3 for currency in pycountry.currencies) - _WORDS_LIKE_CODES


def currency_code(code: str) -> str | None:
    """`code` when it is an ISO 4217 currency code, else None."""
    return code if code in currency_codes() else None


def currency_of_word(word: str) -> str | None:
    """The currency a word names (`dollars`, `euro`, `pounds`, `sterling`), or None."""
    return WORDS.get(word.lower().rstrip("s"))


# The dollars a document may name, by code, symbol or words.
_DOLLARS = {"USD", "AUD", "CAD", "NZD", "HKD", "SGD"}
_DOLLAR_WORDS = {
    "australian": "AUD",
    "canadian": "CAD",
    "new zealand": "NZD",
    "hong kong": "HKD",
    "singapore": "SGD",
    "us": "USD",
    "u.s.": "USD",
    "united states": "USD",
    "american": "USD",
}
_NAMED_DOLLAR = re.compile(
    r"\b(?P<code>USD|AUD|CAD|NZD|HKD|SGD)\b"
    r"|(?<![A-Za-z])(?P<symbol>US\$|AU\$|A\$|CA\$|C\$|NZ\$|HK\$|S\$)"
    r"|\b(?P<words>(?i:australian|canadian|new zealand|hong kong|singapore|u\.?s\.?|"
    r"united states|american))\s+dollars?\b"
)


def dollar_of(text: str) -> str | None:
    """The one dollar currency `text` (a whole document) names, or None when it names none
    or several: what a bare `$` in it means."""
    named = set()
    for match in _NAMED_DOLLAR.finditer(text):
        if match["code"]:
            named.add(match["code"])
        elif match["symbol"]:
            named.add(SYMBOLS[match["symbol"]])
        else:
            words = " ".join(match["words"].lower().replace(".", ". ").split()).replace(". ", ".")
            named.add(_DOLLAR_WORDS.get(words, _DOLLAR_WORDS.get(words.rstrip("."), "USD")))
    return next(iter(named)) if len(named) == 1 else None


def pounds_are_money(sentence: str, after: str) -> bool:
    """Whether `pounds` in `sentence`, followed by `after`, is money: `sterling`, or a
    sentence about money that says nothing of weight and no unit of weight after it."""
    if after.lstrip().lower().startswith("sterling"):
        return True
    if _WEIGHT_AFTER.match(after) or _WEIGHT_WORDS.search(sentence):
        return False
    return _MONEY_WORDS.search(sentence) is not None

"""The one text analysis: how the index, search and every answer engine see words.

Text becomes *terms*: words (letters and digits; `contractor's` is `contractor`, `won't` is
one word and a stop word) lower-cased, without accents, stop words dropped, and stemmed with
the Snowball English stemmer (PyStemmer, the Snowball project's own C implementation), so
`utilities`/`utility` and `warranties`/`warranty` meet. On top of the words, the construction
thesaurus (strongroom.text.thesaurus) adds *concept terms*: a passage that says "liquidated
damages" or "LDs" carries the concept term of that group, and a question saying either is
asked for the concept, so the two meet whichever words each uses.

The index stores a passage's terms as text (`document_chunks.index_terms`), which
PostgreSQL (`to_tsvector('simple', ...)`) and SQLite (FTS5 `unicode61`) index as they are:
both backends match exactly the terms computed here, never a stemmer of their own. Changing
this module or the thesaurus changes the terms: run `strongroom reindex` afterwards.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

from strongroom.text.stopwords import QUESTION_WORDS, STOP_WORDS
from strongroom.text.thesaurus import CONCEPTS

# Letters and digits (no underscore: PostgreSQL's parser would split there), with inner
# apostrophes kept so that contractions stay one word.
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_POSSESSIVE = re.compile(r"['\u2019]s$")
MAX_QUERY_TERMS = 64

_stemmer = Stemmer.Stemmer("english")


@dataclass(frozen=True)
class Token:
    """A word of the text: where it is, and its term (None for a stop word)."""

    start: int
    end: int
    raw: str
    term: str | None


@lru_cache(maxsize=65536)
def term_of(word: str) -> str | None:
    """The term of one word as the text has it, or None for a stop word."""
    folded = _fold(_POSSESSIVE.sub("", word)).replace("\u2019", "'")
    if folded in STOP_WORDS or not folded:
        return None
    if "'" in folded:  # other contractions (don't, won't, shan't) are stop words
        return None
    return _stemmer.stemWord(folded)


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def tokens(text: str) -> Iterator[Token]:
    for match in _WORD.finditer(text):
        raw = match.group()
        yield Token(match.start(), match.end(), raw, term_of(raw))


def terms(text: str) -> list[str]:
    """The terms of `text` in order, each concept term right after the words that name it."""
    said = list(tokens(text))
    words = [token for token in said if token.term is not None or token.raw in _ACRONYMS]
    concepts, _ = _concepts_in(said, words, query=False)
    out: list[str] = []
    for index, token in enumerate(words):
        if token.term is not None:
            out.append(token.term)
        out.extend(concepts.get(index, ()))
    return out


def _words(text: str) -> list[Token]:
    """The tokens that can carry meaning: not stop words, unless an acronym (`IT`)."""
    return [token for token in tokens(text) if token.term is not None or token.raw in _ACRONYMS]


def index_text(text: str) -> str:
    """What the full-text index stores for a passage: its terms, separated by spaces."""
    return " ".join(terms(text))


def index_texts(texts: list[str]) -> list[str]:
    """index_text of each of `texts` (one call for a document's passages, in a job thread)."""
    return [index_text(text) for text in texts]


@dataclass(frozen=True)
class Query:
    """A question's terms, distinct and in order: the words of a phrase the thesaurus knows
    are replaced by its concept term. `highlight` holds every term a matching passage may
    show for them (a concept's own words), to mark in snippets and answers."""

    terms: tuple[str, ...]
    highlight: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.terms)


def query(text: str) -> Query:
    """The terms to look for to answer `text` (at most MAX_QUERY_TERMS)."""
    said = list(tokens(text))
    words = [token for token in said if token.term is not None or token.raw in _ACRONYMS]
    concepts, covered = _concepts_in(said, words, query=True)
    ordered: dict[str, None] = {}
    for index, token in enumerate(words):
        for concept in concepts.get(index, ()):
            ordered[concept] = None
        if token.term is None or index in covered or token.raw.lower() in QUESTION_WORDS:
            continue  # a question word only phrases the question (unless in a phrase)
        ordered[token.term] = None
    chosen = tuple(ordered)[:MAX_QUERY_TERMS]
    highlight = set(chosen)
    for term in chosen:
        highlight.update(CONCEPT_WORDS.get(term, ()))
    return Query(chosen, frozenset(highlight))


def concepts_of_acronym(word: str) -> frozenset[str]:
    """The concept terms `word` names as an acronym (`LDs`), or none."""
    return frozenset(phrase.concept for phrase in _ACRONYMS.get(word, ()))


def _concepts_in(
    said: list[Token], words: list[Token], *, query: bool
) -> tuple[dict[int, list[str]], set[int]]:
    """({index in `words` of a phrase's last word: its concept terms}, the indexes in `words`
    of the words those phrases cover) for every thesaurus phrase in `said` (every token of
    the text; `words`, the ones that carry meaning). A phrase is matched word for word as
    the thesaurus writes it, its small words included (`hand over`, not any `hand`; `stand
    down`, not any `stand`); a document's words by their stem, slang (query-only, in
    questions only) as said, with an optional plural (`fired` is not `fire`, `sacked` not a
    `sack` of cement). Acronyms are matched in capitals."""
    place = {id(token): index for index, token in enumerate(words)}
    concepts: dict[int, list[str]] = {}
    covered: set[int] = set()

    def add(concept: str, span: list[Token]) -> None:
        inside = [place[id(token)] for token in span if id(token) in place]
        if not inside:
            return
        names = concepts.setdefault(inside[-1], [])
        if concept not in names:
            names.append(concept)
        covered.update(inside)

    folded = [_said(token) for token in said]
    for start, token in enumerate(said):
        for phrase in _ACRONYMS.get(token.raw, ()):
            if query or not phrase.query_only:
                add(phrase.concept, [token])
        keys = {token.term or folded[start], _singular(folded[start])}
        for key in keys:
            for phrase in _PHRASES_STARTING.get(key, ()):
                if phrase.query_only and not query:
                    continue
                end = start + len(phrase.words)
                if end <= len(said) and all(
                    _matches(phrase, k, said[start + k], folded[start + k])
                    for k in range(len(phrase.words))
                ):
                    add(phrase.concept, said[start:end])
    return concepts, covered


def _said(token: Token) -> str:
    """A token as said: lower case, no accents, no possessive."""
    return _fold(_POSSESSIVE.sub("", token.raw)).replace("\u2019", "'")


def _singular(word: str) -> str:
    """`word` without a plural ending `s` or `es` (slang is matched as said, plurals too)."""
    if word.endswith("es") and len(word) > 4 and word[-3] in "sxzh":
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us")) and len(word) > 3:
        return word[:-1]
    return word


def _matches(phrase: _Phrase, k: int, token: Token, folded: str) -> bool:
    """Whether the phrase's k-th word is `token`: a slang word as said (or its plural), a
    small word itself, any other word by its stem."""
    word = phrase.words[k]
    if phrase.query_only:
        return _singular(folded) == word
    if phrase.small[k]:
        return folded == word
    return token.term == word


@dataclass(frozen=True)
class _Phrase:
    concept: str
    words: tuple[str, ...]  # stems (small words as written), slang as said, or an acronym
    acronym: bool
    query_only: bool
    small: tuple[bool, ...] = ()  # which of `words` are stop words, matched as written


def _acronym_spellings(acronym: str) -> tuple[str, ...]:
    return (acronym, acronym + "s", acronym + "'s")


def _build(concepts: dict[str, Iterable[str]]):
    """Phrases indexed by their first word (acronyms by each spelling), and each concept
    term's own words. A phrase in CAPITALS is an acronym matched with its case (`CO`, `COs`,
    never `co`); a phrase starting with `?` counts only in questions, matched as said."""
    starting: dict[str, list[_Phrase]] = {}
    acronyms: dict[str, list[_Phrase]] = {}
    words_of: dict[str, set[str]] = {}
    for name, phrases in concepts.items():
        concept = "zz" + re.sub(r"[^a-z0-9]", "", name.lower())  # one word to every parser
        for text in phrases:
            query_only = text.startswith("?")
            text = text.lstrip("?")
            if text.isupper():
                phrase = _Phrase(concept, (text,), True, query_only)
                for spelling in _acronym_spellings(text):
                    acronyms.setdefault(spelling, []).append(phrase)
                continue
            written = [_fold(word) for word in _WORD.findall(text)]
            stems = [term_of(word) for word in written]
            if not any(stems):
                raise ValueError(f"thesaurus phrase {text!r} has only stop words")
            if query_only:
                said = tuple(_singular(word) for word in written)
                phrase = _Phrase(concept, said, False, True, (False,) * len(said))
            else:
                words = tuple(stem or word for stem, word in zip(stems, written, strict=True))
                small = tuple(stem is None for stem in stems)
                phrase = _Phrase(concept, words, False, False, small)
                words_of.setdefault(concept, set()).update(stem for stem in stems if stem)
            starting.setdefault(phrase.words[0], []).append(phrase)
    return (
        {key: tuple(value) for key, value in starting.items()},
        {key: tuple(value) for key, value in acronyms.items()},
        {key: frozenset(value) for key, value in words_of.items()},
    )


_PHRASES_STARTING, _ACRONYMS, CONCEPT_WORDS = _build(CONCEPTS)

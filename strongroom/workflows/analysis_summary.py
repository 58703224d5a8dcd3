"""An extractive summary of a set of documents, offline: no model, no network.

Each document's sentences are ranked by centrality, TextRank-style: a graph of the
document's sentences whose edges are the cosine similarities of their TF-IDF vectors
(light stems of the words that are not stop words), ranked by PageRank. The power iteration
never builds the graph: with unit vectors x_i, the weighted links into sentence i sum to
x_i . (sum over j of r_j x_j / degree_j) less its own, so each step costs the number of
words, not the square of the number of sentences. The best sentences are kept, skipping
near-repeats of one already kept, and given in document order, each with its `Evidence`.
The overall summary ranks every document's sentences together the same way.

Sentences come from the one splitter (strongroom.text.sentences) and words from the one
analysis (strongroom.text.analysis). Running headers and footers (the same words on three
or more pages) and sentences of fewer than four terms are left out.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass

from strongroom.text.analysis import terms
from strongroom.text.sentences import is_heading, sentence_spans
from strongroom.workflows.analysis_types import (
    Evidence,
    JsonResult,
    Source,
    by_document,
    squash,
)

MIN_WORDS = 4  # words that are not stop words, for a sentence to be summary material
BOILERPLATE_PAGES = 3  # the same words on this many pages: a running header or footer
REPEAT_SIMILARITY = 0.8  # a sentence this similar to one already chosen is left out
CONTAINED = 0.9  # ... and one with this share of its words in one already chosen
DAMPING = 0.85
MAX_ITERATIONS = 100
TOLERANCE = 1e-10


@dataclass(frozen=True)
class SummarySentence:
    document_id: uuid.UUID
    document_name: str
    text: str  # the sentence on one line
    score: float  # its centrality (PageRank), for the graph it was ranked in
    evidence: Evidence


@dataclass(frozen=True)
class DocumentSummary:
    document_id: uuid.UUID
    document_name: str
    sentence_count: int  # the sentences that were candidates
    sentences: tuple[SummarySentence, ...]  # in document order


@dataclass(frozen=True)
class Summary(JsonResult):
    documents: tuple[DocumentSummary, ...]  # in order of first appearance
    overall: tuple[SummarySentence, ...]  # in document order, then text order


# Sentences ---------------------------------------------------------------------------


def words_of(text: str) -> list[str]:
    """The terms of `text` (strongroom.text.analysis) that are not numbers, in order: a page
    number does not make a running header a new sentence."""
    return [term for term in terms(text) if not term.isdigit()]


_BULLET = re.compile(r"\s*(?:[-*\u2022\u25aa\u25cf>]|\d+[.)]|\([a-z0-9]{1,4}\))\s")
_CODE_CHARACTERS = frozenset("{}[]();=<>/\\_|#$@`~^*+")
CODE_SHARE = 0.08  # a sentence with this share of code characters is code, not prose


def is_prose(text: str) -> bool:
    """Whether `text` is a sentence a summary can quote: not code (many of `{}();=<>/_|`...),
    not a bullet's fragment (a list item that does not end as a sentence does)."""
    text = text.strip()
    if not text:
        return False
    if sum(char in _CODE_CHARACTERS for char in text) / len(text) >= CODE_SHARE:
        return False
    return not (_BULLET.match(text) and text[-1] not in ".!?")


# Ranking -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sentence:
    source: Source
    start: int
    end: int
    words: tuple[str, ...]

    @property
    def text(self) -> str:
        return squash(self.source.content[self.start : self.end])


def _candidates(document: list[Source]) -> list[_Sentence]:
    """The document's sentences worth ranking: long enough, each wording once, and not on
    `BOILERPLATE_PAGES` pages or more."""
    sentences = []
    pages: dict[tuple[str, ...], set[int]] = {}
    for source in document:
        for start, end in sentence_spans(source.content):
            words = tuple(words_of(source.content[start:end]))
            text = source.content[start:end]
            if len(words) < MIN_WORDS or is_heading(text) or not is_prose(text):
                continue
            pages.setdefault(words, set()).add(source.page_number)
            sentences.append(_Sentence(source, start, end, words))
    seen: set[tuple[str, ...]] = set()
    kept = []
    for sentence in sentences:
        if sentence.words in seen or len(pages[sentence.words]) >= BOILERPLATE_PAGES:
            continue
        seen.add(sentence.words)
        kept.append(sentence)
    return kept


def _vectors(sentences: list[_Sentence]) -> list[dict[str, float]]:
    """Unit TF-IDF vectors, with the sentences as the documents for IDF."""
    frequency: dict[str, int] = {}
    for sentence in sentences:
        for word in dict.fromkeys(sentence.words):
            frequency[word] = frequency.get(word, 0) + 1
    count = len(sentences)
    vectors = []
    for sentence in sentences:
        vector: dict[str, float] = {}
        for word in sentence.words:
            vector[word] = vector.get(word, 0.0) + 1.0
        for word in vector:
            vector[word] *= math.log((1 + count) / (1 + frequency[word])) + 1.0
        norm = math.sqrt(sum(value * value for value in vector.values()))
        vectors.append({word: value / norm for word, value in vector.items()})
    return vectors


def _dot(left: dict[str, float], right: dict[str, float]) -> float:
    if len(left) > len(right):
        left, right = right, left
    return sum(value * right.get(word, 0.0) for word, value in left.items())


def _pagerank(vectors: list[dict[str, float]]) -> list[float]:
    """PageRank of the complete graph weighted by cosine similarity, without self-links."""
    count = len(vectors)
    if count == 0:
        return []
    total: dict[str, float] = {}
    for vector in vectors:
        for word, value in vector.items():
            total[word] = total.get(word, 0.0) + value
    degrees = [max(_dot(vector, total) - 1.0, 0.0) for vector in vectors]
    ranks = [1.0 / count] * count
    for _ in range(MAX_ITERATIONS):
        flow: dict[str, float] = {}
        dangling = 0.0
        for vector, degree, rank in zip(vectors, degrees, ranks, strict=True):
            if degree <= 1e-12:
                dangling += rank
                continue
            share = rank / degree
            for word, value in vector.items():
                flow[word] = flow.get(word, 0.0) + share * value
        new = []
        for vector, degree, rank in zip(vectors, degrees, ranks, strict=True):
            inflow = _dot(vector, flow) - (rank / degree if degree > 1e-12 else 0.0)
            new.append((1 - DAMPING) / count + DAMPING * (max(inflow, 0.0) + dangling / count))
        change = sum(abs(a - b) for a, b in zip(new, ranks, strict=True))
        ranks = new
        if change < TOLERANCE:
            break
    return ranks


def _choose(
    sentences: list[_Sentence], limit: int, *, fair: bool = False
) -> list[tuple[_Sentence, float]]:
    """The `limit` most central sentences with their scores, in the order given, each unlike
    those already chosen. `fair`: no document takes more than its share of `limit` while
    another still has sentences to give (one long document must not fill the summary of
    many)."""
    if limit <= 0 or not sentences:
        return []
    vectors = _vectors(sentences)
    ranks = _pagerank(vectors)
    order = sorted(range(len(sentences)), key=lambda index: (-round(ranks[index], 12), index))
    documents = {sentence.source.document_id for sentence in sentences}
    share = -(-limit // len(documents)) if fair else limit
    chosen: list[int] = []
    taken: dict[uuid.UUID, int] = {}
    for cap in (share, limit):
        for index in order:
            document = sentences[index].source.document_id
            if index in chosen or taken.get(document, 0) >= cap:
                continue
            if any(_repeats(vectors[index], vectors[other]) for other in chosen):
                continue
            chosen.append(index)
            taken[document] = taken.get(document, 0) + 1
            if len(chosen) == limit:
                return [(sentences[index], ranks[index]) for index in sorted(chosen)]
    return [(sentences[index], ranks[index]) for index in sorted(chosen)]


def _repeats(vector: dict[str, float], other: dict[str, float]) -> bool:
    """Near repeats: alike as wholes, or one saying little the other does not."""
    if _dot(vector, other) > REPEAT_SIMILARITY:
        return True
    shorter, longer = (vector, other) if len(vector) <= len(other) else (other, vector)
    return sum(1 for word in shorter if word in longer) >= CONTAINED * len(shorter)


def _summary_sentence(sentence: _Sentence, score: float) -> SummarySentence:
    source = sentence.source
    return SummarySentence(
        document_id=source.document_id,
        document_name=source.document_name,
        text=sentence.text,
        score=round(score, 6),
        evidence=Evidence.of(source, sentence.start, sentence.end),
    )


def summarise(sources: list[Source], *, max_sentences: int = 8) -> Summary:
    """Each document's `max_sentences` most central sentences, and the `max_sentences` most
    central of all documents' sentences ranked together. Deterministic."""
    documents = []
    everything: list[_Sentence] = []
    for document in by_document(sources):
        candidates = _candidates(document)
        everything.extend(candidates)
        first = document[0]
        documents.append(
            DocumentSummary(
                document_id=first.document_id,
                document_name=first.document_name,
                sentence_count=len(candidates),
                sentences=tuple(
                    _summary_sentence(sentence, score)
                    for sentence, score in _choose(candidates, max_sentences)
                ),
            )
        )
    overall = tuple(
        _summary_sentence(sentence, score)
        for sentence, score in _choose(everything, max_sentences, fair=True)
    )
    return Summary(documents=tuple(documents), overall=overall)

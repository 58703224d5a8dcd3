"""The offline answer engine (D44), the default: no model, no network. It answers with the
sentences of the retrieved passages that share the most (and the rarest) words with the
question, in the passages' order, each followed by the number of the passage it comes from,
and cites each passage once with the stretch of its text that was used. When no sentence
shares a word with the question it says so plainly and cites nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

from strongroom.chat.engines.base import AnswerEvent, Cite, Delta, Passage, Usage
from strongroom.vault.search import query_words

MAX_SENTENCES = 4
MAX_ANSWER_CHARS = 1500
RELATIVE_CUTOFF = 0.5  # keep sentences scoring at least half the best one
WORDS_PER_DELTA = 4
MIN_WORDS = 4  # a shorter sentence is not a candidate

NO_PASSAGES = "No passage of the documents matches the question, so there is no answer to give."
NO_ANSWER = "The documents do not appear to contain an answer to this question."

_BOUNDARY = re.compile(r"[.!?]+(?=\s)|\n[ \t]*\n\s*|\n")
_ITEM = re.compile(r"\s*(?:[-*\u2022]|\d+[.)])\s")
_WORD = re.compile(r"\w+")
_SUFFIXES = ("ational", "ities", "ments", "ness", "ment", "ings", "ies", "ing", "ed", "es", "s")


def stem(word: str) -> str:
    """A light suffix-stripping stem: enough to match `piles`, `piling` and `pile`."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e") if len(word) > 4 else word


def stems(text: str) -> set[str]:
    return {stem(word) for word in query_words(text)}


@dataclass(frozen=True)
class Sentence:
    passage: Passage
    start: int
    end: int
    stems: frozenset[str]

    @property
    def text(self) -> str:
        """The sentence on one line (wrapped lines joined)."""
        return " ".join(self.passage.content[self.start : self.end].split())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`. Sentences end at `.`, `!` or `?` before white
    space, and at blank lines; a single line break ends one only after a table row (a line
    with a tab) or a heading, or before a list item: elsewhere it is a wrapped line (PDFs)."""
    spans, start = [], 0
    for match in _BOUNDARY.finditer(text):
        if match.group() == "\n":
            line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
            next_break = text.find("\n", match.end())
            following = text[match.end() : None if next_break < 0 else next_break]
            if not ("\t" in line or line.lstrip().startswith("#") or _ITEM.match(following)):
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


def sentences_of(passage: Passage) -> list[Sentence]:
    found = []
    for start, end in sentence_spans(passage.content):
        text = passage.content[start:end]
        # Headings and labels ("2. Contract Sum.") name a topic but answer nothing; table
        # rows (tabs) are kept whatever their length.
        if len(_WORD.findall(text)) >= MIN_WORDS or "\t" in text:
            found.append(Sentence(passage, start, end, frozenset(stems(text))))
    return found


def choose(question: str, passages: list[Passage], *, most: int = MAX_SENTENCES) -> list[Sentence]:
    """The (at most `most`) sentences that answer `question`, in passage order then text
    order."""
    wanted = stems(question)
    candidates = [sentence for passage in passages for sentence in sentences_of(passage)]
    if not wanted or not candidates:
        return []
    # Rarer words say more: weight each question word by its inverse sentence frequency.
    weight = {
        word: math.log(1 + len(candidates) / (1 + sum(word in s.stems for s in candidates)))
        for word in wanted
    }

    def score(sentence: Sentence) -> float:
        return sum(weight[word] for word in wanted & sentence.stems)

    scored = [(score(sentence), sentence) for sentence in candidates]
    best = max(value for value, _ in scored)
    if best <= 0:
        return []
    ranked = sorted(
        (item for item in scored if item[0] >= best * RELATIVE_CUTOFF),
        key=lambda item: (-item[0], item[1].passage.number, item[1].start),
    )
    chosen: list[Sentence] = []
    seen: set[str] = set()
    size = 0
    for _, sentence in ranked:
        if sentence.text in seen or size + len(sentence.text) > MAX_ANSWER_CHARS:
            continue
        chosen.append(sentence)
        seen.add(sentence.text)
        size += len(sentence.text)
        if len(chosen) == most:
            break
    return sorted(chosen, key=lambda sentence: (sentence.passage.number, sentence.start))


class ExtractiveEngine:
    name = "extractive"

    async def answer(
        self, question: str, passages: list[Passage], *, brief: bool = False
    ) -> AsyncIterator[AnswerEvent]:
        """`brief`: the one best sentence (no model can cut it down to the value alone)."""
        chosen = choose(question, passages, most=1 if brief else MAX_SENTENCES)
        input_tokens = len(question.split()) + sum(len(p.content.split()) for p in passages)
        if not chosen:
            text = NO_PASSAGES if not passages else NO_ANSWER
            yield Delta(text)
            yield Usage(input_tokens, len(text.split()))
            return
        by_passage: dict[int, list[Sentence]] = {}
        for sentence in chosen:
            by_passage.setdefault(sentence.passage.number, []).append(sentence)
        output_words = 0
        for index, sentence in enumerate(chosen):
            group = by_passage[sentence.passage.number]
            if sentence is group[0]:  # cite the stretch from its first to its last sentence
                excerpt = sentence.passage.content[group[0].start : group[-1].end]
                yield Cite(sentence.passage, excerpt)
            words = (sentence.text + f" [{sentence.passage.number}]").split()
            output_words += len(words)
            for start in range(0, len(words), WORDS_PER_DELTA):
                piece = " ".join(words[start : start + WORDS_PER_DELTA])
                yield Delta(piece if index == 0 and start == 0 else " " + piece)
        yield Usage(input_tokens, output_words)

    async def close(self) -> None:
        return None

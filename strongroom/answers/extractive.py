"""The offline answer engine (D44), the default: no model, no network.

It answers with the sentences of the retrieved passages that answer the question, quoted as
the documents have them, best first, each followed by the number of its citation (`[2]`),
and cites each passage once with the sentences it used. Three modules do the work: reading
a passage into sentences (strongroom.answers.reading), scoring them for the question and
deciding whether the best answers (strongroom.answers.ranking), and choosing what the answer
quotes, in what order (strongroom.answers.composing); this one turns that into the events an
engine streams. When nothing answers, the answer says plainly that the documents do not
answer it (`NotFound`) and cites the CLOSEST passages as such, so that a person can read them.

`brief` (template fill) answers with the value alone where the question asks for one and
the best sentence otherwise.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from strongroom.answers.base import (
    NO_PASSAGES,
    NOT_FOUND_PHRASE,
    AnswerEvent,
    Cite,
    Delta,
    NotFound,
    Passage,
    Usage,
)
from strongroom.answers.briefing import brief_value
from strongroom.answers.composing import choose
from strongroom.answers.meaning import Meaning
from strongroom.answers.reading import Sentence, candidates_of, next_in_paragraph, sentences_of
from strongroom.answers.trimming import said_of
from strongroom.text.question import Question

WORDS_PER_DELTA = 4
MEANING_PASSAGES = 5  # the best passages whose sentences are compared by meaning

NOT_FOUND = (
    f"{NOT_FOUND_PHRASE}: no sentence of the passages found answers this question. "
    "The closest passages are cited, for you to read."
)


def sentence_texts(content: str) -> list[str]:
    """The texts of a passage's candidate sentences as the engine compares them by meaning
    (`Sentence.text`): what ingestion embeds beside the passage (issue 40,
    strongroom.retrieval.sentence_vectors)."""
    passage = Passage(0, _NO_ID, _NO_ID, "", 0, content, 0.0)
    return list(dict.fromkeys(sentence.text for sentence in sentences_of(passage)))


_NO_ID = uuid.UUID(int=0)


def candidate_sentences(contents: list[str], most: int) -> list[list[str]]:
    """Each passage's first `most` sentence_texts: what a piece of a document's vectors
    embeds beside its passages (issue 50). Run in the job's bounded child (about 5 ms a
    passage of CPU that once ran on the event loop)."""
    return [sentence_texts(content)[:most] for content in contents]


class ExtractiveEngine:
    """`meaning`: when an embeddings provider is configured, sentences are chosen by their
    closeness in meaning to the question as well as by shared words."""

    name = "extractive"

    def __init__(self, meaning: Meaning | None = None) -> None:
        self.meaning = meaning

    async def answer(
        self, question: Question, passages: list[Passage], *, brief: bool = False
    ) -> AsyncIterator[AnswerEvent]:
        """`brief` (a template field): chat's answer to the question, with its citations,
        narrowed to the value it asks for (briefing.brief_value)."""
        input_tokens = len(question.text.split()) + sum(len(p.content.split()) for p in passages)
        candidates = candidates_of(passages)
        closeness = floor = None
        if self.meaning is not None and candidates:
            closeness = await self._closeness(question.text, candidates)
            floor = self.meaning.floor if closeness is not None else None
        choice = choose(question, passages, candidates=candidates, closeness=closeness, floor=floor)
        chosen = choice.sentences
        if not chosen:
            for event in _no_answer(passages, choice.closest, input_tokens):
                yield event
            return
        cited = _cited(chosen)
        if brief:  # chat's answer, narrowed to the value asked, with chat's citations
            for group in cited.values():
                yield Cite(group[0].passage, _excerpt(group), _span(group))
            value = brief_value(question, choice)
            yield Delta(value)
            yield Usage(input_tokens, len(value.split()))
            return
        # A marker names its citation by its place among the citations returned (issue 40:
        # `[2]` with one citation named nothing a client could find).
        marks = {number: place for place, number in enumerate(cited, start=1)}
        output_words = 0
        for index, sentence in enumerate(chosen):
            group = cited[sentence.passage.number]
            if sentence is group[0]:
                yield Cite(sentence.passage, _excerpt(group), _span(group))
            following = chosen[index + 1] if index + 1 < len(chosen) else None
            mark = marks[sentence.passage.number]
            marker = "" if _continues(sentence, following) else f" [{mark}]"
            words = (said_of(question, sentence) + marker).split()
            output_words += len(words)
            for start in range(0, len(words), WORDS_PER_DELTA):
                piece = " ".join(words[start : start + WORDS_PER_DELTA])
                yield Delta(piece if index == 0 and start == 0 else " " + piece)
        yield Usage(input_tokens, output_words)

    async def _closeness(self, question: str, candidates: list[Sentence]) -> list[float] | None:
        """Each candidate's closeness in meaning to `question`. Sentences whose vectors were
        made at ingestion (issue 40) are compared whatever their passage's place; the others
        are embedded now for the MEANING_PASSAGES best passages only (embedding costs
        milliseconds a sentence), and score 0 elsewhere (they compete by words)."""
        assert self.meaning is not None
        compared = [
            s
            for s in candidates
            if s.passage.number <= MEANING_PASSAGES or s.text in s.passage.sentence_vectors
        ]
        found = await self.meaning.closeness(
            question,
            [s.text for s in compared],
            [s.passage.sentence_vectors for s in compared],
        )
        if found is None:
            return None
        by_sentence = {id(s): value for s, value in zip(compared, found, strict=True)}
        return [by_sentence.get(id(s), 0.0) for s in candidates]

    async def close(self) -> None:
        return None


def _no_answer(
    passages: list[Passage],
    closest: list[tuple[Passage, tuple[int, int] | None]],
    input_tokens: int,
) -> list[AnswerEvent]:
    """The plain "not found" answer, citing the `closest` passages as such, each with the
    span of its closest sentence."""
    text = NOT_FOUND if passages else NO_PASSAGES
    return [
        NotFound(),
        *(Cite(passage, passage.content, span) for passage, span in closest),
        Delta(text),
        Usage(input_tokens, len(text.split())),
    ]


def _cited(chosen: list[Sentence]) -> dict[int, list[Sentence]]:
    """The sentences quoted from each passage, by passage number, in order of first quote:
    each group is one citation."""
    cited: dict[int, list[Sentence]] = {}
    for sentence in chosen:
        cited.setdefault(sentence.passage.number, []).append(sentence)
    return cited


def _continues(sentence: Sentence, following: Sentence | None) -> bool:
    """Whether `following` goes on the sentence `sentence` began (an item of the list that
    `sentence` leads in, or the next item of its own list), or is the very next sentence of
    its paragraph (a rule and its exception, a sentence and its sequel: `with_rule`,
    `with_sequel`): quoted as one, with one marker (issue 53: the first quoted sentence holds
    the fact asked, not half of it)."""
    if following is None or following.passage is not sentence.passage:
        return False
    own = (sentence.start, sentence.end)
    if following.lead is not None and following.lead in (own, sentence.lead):
        return True
    return (
        sentence.header is None
        and following.header is None
        and next_in_paragraph(sentence, following)
    )


def _span(group: list[Sentence]) -> tuple[int, int]:
    """From the first to the last sentence used, in the passage's text."""
    return min(s.start for s in group), max(s.end for s in group)


def _excerpt(group: list[Sentence]) -> str:
    """The stretch of the passage from the first to the last sentence used (in text order),
    or the table rows with their header."""
    ordered = sorted(group, key=lambda sentence: sentence.start)
    if any(sentence.header is not None for sentence in ordered):
        header = next(s.header for s in ordered if s.header is not None)
        rows = [s.raw for s in ordered if s.header is not None]
        prose = [s.raw for s in ordered if s.header is None]
        return "\n".join([*prose, header, *rows])
    content = ordered[0].passage.content
    return content[ordered[0].start : ordered[-1].end]

"""What every answer engine takes and gives."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from strongroom.text.question import Question

# How every engine says the documents hold no answer, in words a person reads; a client tells
# such an answer by its `answer_type` ("not_found": the engine sent `NotFound`).
NOT_FOUND_PHRASE = "Not found in the documents"
NO_PASSAGES = f"{NOT_FOUND_PHRASE}: no passage matches the question."
CLOSEST = 3  # how many of the closest passages a "not found" cites, for a person to read


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk of a document, best first; `number` is its 1-based place in the
    list, as an engine may cite it (`[2]`)."""

    number: int
    chunk_id: uuid.UUID
    document_id: uuid.UUID
    document_name: str
    page_number: int
    content: str
    score: float
    # The vectors of its sentences made at ingestion, by sentence text (issue 40,
    # strongroom.retrieval.sentence_vectors): an engine choosing by meaning embeds only what
    # is missing here.
    sentence_vectors: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Delta:
    """The next piece of the answer's text."""

    text: str


@dataclass(frozen=True)
class Cite:
    """The answer rests on `excerpt`, which is text of `passage.content` (all of it, or the
    sentences an extractive engine took from it). Each passage is cited at most once."""

    passage: Passage
    excerpt: str
    # (start, end) in `passage.content` of the sentence a person should read first: the one
    # quoted (an answer), or the one that came closest to answering (a "not found", issue 40).
    highlight: tuple[int, int] | None = None


@dataclass(frozen=True)
class NotFound:
    """No sentence of the passages answers the question (issue 27). Sent before any `Cite`:
    the passages cited after it are the closest to the question, for a person to read, not
    what an answer rests on."""


@dataclass(frozen=True)
class Usage:
    """Sent last. Tokens as the upstream model counted them, or whitespace-separated words
    for engines without a model."""

    input_tokens: int
    output_tokens: int


AnswerEvent = Delta | Cite | NotFound | Usage


class EngineError(Exception):
    """The engine failed (an upstream error or an answer it cannot read). `problem_code`: what
    a job that fails on it for good reports (strongroom.jobs.runner), as chat does."""

    problem_code = "upstream_error"


class EngineTimeout(EngineError):
    """The engine did not answer in time."""

    problem_code = "upstream_timeout"


class AnswerEngine(Protocol):
    name: str

    def answer(
        self, question: Question, passages: list[Passage], *, brief: bool = False
    ) -> AsyncIterator[AnswerEvent]:
        """Stream the answer to `question` from `passages`. When they hold no answer (or there
        are none), say so plainly after a `NotFound`, citing at most the closest passages.
        Ends with one `Usage`.
        `brief`: the value alone, as short as the engine can make it, from one passage (to
        fill a template field). Raises EngineError or EngineTimeout, possibly after deltas."""

    async def close(self) -> None: ...

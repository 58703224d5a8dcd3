"""Answer engines (D44): turn a question and the passages retrieved for it into an answer,
streamed as `Delta`s, with `Cite`s naming the passages the answer rests on (after a
`NotFound`: the closest passages, when nothing answers), and a closing `Usage`. Chosen once
by `STRONGROOM_CHAT_ENGINE` (`create_engine`)."""

from __future__ import annotations

from strongroom.answers.base import (
    AnswerEngine,
    AnswerEvent,
    Cite,
    Delta,
    EngineError,
    EngineTimeout,
    NotFound,
    Passage,
    Usage,
)
from strongroom.embeddings import EmbeddingProvider
from strongroom.settings import Settings


def create_engine(settings: Settings, embeddings: EmbeddingProvider | None = None) -> AnswerEngine:
    """The configured engine. The extractive engine also chooses sentences by meaning when
    an embeddings provider is configured (`embeddings`; strongroom.answers.meaning)."""
    if settings.chat_engine == "openai":
        from strongroom.answers.openai import OpenAICompatibleEngine

        return OpenAICompatibleEngine.from_settings(settings)
    from strongroom.answers.extractive import ExtractiveEngine
    from strongroom.answers.meaning import Meaning

    return ExtractiveEngine(Meaning(embeddings) if embeddings is not None else None)


__all__ = [
    "AnswerEngine",
    "AnswerEvent",
    "Cite",
    "Delta",
    "EngineError",
    "EngineTimeout",
    "NotFound",
    "Passage",
    "Usage",
    "create_engine",
]

"""Answer engines (D44): turn a question and the passages retrieved for it into an answer,
streamed as `Delta`s, with `Cite`s naming the passages the answer rests on, and a closing
`Usage`. Chosen once by `STRONGROOM_CHAT_ENGINE` (`create_engine`)."""

from __future__ import annotations

from strongroom.chat.engines.base import (
    AnswerEngine,
    AnswerEvent,
    Cite,
    Delta,
    EngineError,
    EngineTimeout,
    Passage,
    Usage,
)
from strongroom.settings import Settings


def create_engine(settings: Settings) -> AnswerEngine:
    if settings.chat_engine == "openai":
        from strongroom.chat.engines.openai import OpenAICompatibleEngine

        return OpenAICompatibleEngine.from_settings(settings)
    from strongroom.chat.engines.extractive import ExtractiveEngine

    return ExtractiveEngine()


__all__ = [
    "AnswerEngine",
    "AnswerEvent",
    "Cite",
    "Delta",
    "EngineError",
    "EngineTimeout",
    "Passage",
    "Usage",
    "create_engine",
]

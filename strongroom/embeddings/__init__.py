"""Embeddings providers (issue 16), chosen once by `STRONGROOM_EMBEDDINGS_PROVIDER` like the
answer engines (`create_provider`): `none` (search stays lexical), `openai` (any
OpenAI-compatible `/v1/embeddings` endpoint), `minilm` (all-MiniLM-L6-v2, offline, from
the `minilm` extra) or `wordllama` (WordLlama's static l2_supercat table, offline, from the
`wordllama` extra)."""

from __future__ import annotations

from strongroom.embeddings.base import EmbeddingError, EmbeddingProvider, normalised
from strongroom.settings import Settings


def create_provider(settings: Settings) -> EmbeddingProvider | None:
    """The configured provider, or None for `none`. `minilm` and `wordllama` load their
    weights lazily, at the first embedding, so choosing one costs nothing until it is used."""
    if settings.embeddings_provider == "openai":
        from strongroom.embeddings.openai import OpenAIEmbeddings

        return OpenAIEmbeddings.from_settings(settings)
    if settings.embeddings_provider == "minilm":
        from strongroom.embeddings.minilm import MiniLMEmbeddings

        return MiniLMEmbeddings(
            max_tokens=settings.embeddings_minilm_max_tokens,
            runtime=settings.embeddings_minilm_runtime,
            # A thread for each job slot's piece of a document's vectors (issue 50).
            document_threads=settings.worker_concurrency,
        )
    if settings.embeddings_provider == "wordllama":
        from strongroom.embeddings.wordllama import WordLlamaEmbeddings

        return WordLlamaEmbeddings(max_input_chars=settings.embeddings_max_input_chars)
    return None


def warm(provider: EmbeddingProvider | None) -> None:
    """Have a provider that loads weights (`minilm`) load them now, in its own thread, so that
    the first search or document after a start does not wait for them (issue 50); the others
    have nothing to load."""
    start = getattr(provider, "warm", None)
    if start is not None:
        start()


__all__ = ["EmbeddingError", "EmbeddingProvider", "create_provider", "normalised", "warm"]

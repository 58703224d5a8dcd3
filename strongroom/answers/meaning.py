"""How close in meaning each candidate sentence is to a question (issue 15), for the
extractive engine, by the configured embeddings provider (issue 16).

Words alone choose badly when a question is worded otherwise than the contract ("held back"
for "retain", "kicked off the job" for "terminate"): a sentence holding none of the
question's words scores nothing by words, however well it answers. The cosine between the
question's and the sentence's vectors scores it anyway.

The question and the sentences go to the provider in one call; on the request path it is
strongroom.embeddings.remembered's (a bounded LRU of vectors by text), so a question the
search embedded and sentences of passages seen before are not embedded again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from strongroom.embeddings import EmbeddingError, EmbeddingProvider

log = logging.getLogger("strongroom.chat")  # the name its logs had before the move: kept


class Meaning:
    """A question's closeness to sentences by `provider`. `floor`: the score (words and
    meaning together) the best sentence must reach to be taken as an answer (calibrated per
    model on the quality benchmark's tuning halves: `EmbeddingProvider.answer_floor`)."""

    def __init__(self, provider: EmbeddingProvider):
        self.provider = provider
        self.floor = provider.answer_floor

    async def closeness(
        self,
        question: str,
        sentences: Sequence[str],
        stored: Sequence[Mapping[str, Any]] = (),
    ) -> list[float] | None:
        """The cosine of `question` with each of `sentences`, in order; None when the
        provider fails (the answer is then chosen by words alone, and the failure logged).
        `stored[i]`: vectors made at ingestion for the passage of sentence i, by sentence text
        (issue 40); only sentences missing there are embedded, with the question."""
        known = [
            (stored[index].get(text) if index < len(stored) else None)
            for index, text in enumerate(sentences)
        ]
        missing = list(dict.fromkeys(t for t, v in zip(sentences, known, strict=True) if v is None))
        try:
            vectors = await self.provider.embed([question, *missing])
        except EmbeddingError as error:
            log.warning("embedding an answer's sentences failed, choosing by words: %s", error)
            return None
        made = dict(zip(missing, vectors[1:], strict=True))
        query = vectors[0]
        return [
            float((vector if vector is not None else made[text]) @ query)
            for text, vector in zip(sentences, known, strict=True)
        ]

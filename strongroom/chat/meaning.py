"""How close in meaning each candidate sentence is to a question (issue 15), for the
extractive engine, by the configured embeddings provider (issue 16).

Words alone choose badly when a question is worded otherwise than the contract ("held back"
for "retain", "kicked off the job" for "terminate"): a sentence holding none of the
question's words scores nothing by words, however well it answers. The cosine between the
question's and the sentence's vectors scores it anyway.

Sentences are embedded when an answer needs them and their vectors kept in a bounded LRU
(`CACHE_SENTENCES`, a few MB): the same passages are retrieved again and again, so most
answers embed only the question.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from strongroom.embeddings import EmbeddingError, EmbeddingProvider

log = logging.getLogger("strongroom.chat")

CACHE_SENTENCES = 8192  # about 12 MB of 384-dimension vectors


class Meaning:
    """A question's closeness to sentences by `provider`. `floor`: the closeness under which a
    sentence sharing few of the question's words is not taken as an answer (calibrated per
    model on the quality benchmark: `EmbeddingProvider.answer_floor`)."""

    def __init__(self, provider: EmbeddingProvider, *, cache_size: int = CACHE_SENTENCES):
        self.provider = provider
        self.floor = provider.answer_floor
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    async def closeness(self, question: str, sentences: Sequence[str]) -> list[float] | None:
        """The cosine of `question` with each of `sentences`, in order; None when the
        provider fails (the answer is then chosen by words alone, and the failure logged)."""
        keys = [_key(text) for text in sentences]
        missing = dict.fromkeys(key for key in keys if key not in self._cache)
        texts = {key: text for key, text in zip(keys, sentences, strict=True)}
        try:
            vectors = await self.provider.embed([question, *(texts[key] for key in missing)])
        except EmbeddingError as error:
            log.warning("embedding an answer's sentences failed, choosing by words: %s", error)
            return None
        found = {key: self._recall(key) for key in keys if key not in missing}
        found.update(zip(missing, vectors[1:], strict=True))  # in `missing`'s order
        for key in missing:
            self._remember(key, found[key])
        return [float(found[key] @ vectors[0]) for key in keys]

    def _remember(self, key: bytes, vector: np.ndarray) -> None:
        self._cache[key] = vector
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _recall(self, key: bytes) -> np.ndarray:
        self._cache.move_to_end(key)
        return self._cache[key]


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()

"""The request path's embeddings, remembered (issues 15, 16): a question is embedded by the
search's vector half and again by the answer's choice of sentences (strongroom.chat.meaning),
and the same passages' sentences come back answer after answer. This wraps the provider with
a bounded LRU of vectors by text, so each is embedded once while it is in use: a chat answer
whose sentences were seen before embeds nothing beyond the search's question.

Only the request path uses it (search, answers, template fill); ingestion and re-embedding
call the provider itself, so a large document does not flush what answers use.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from strongroom.embeddings.base import EmbeddingProvider

REMEMBERED_TEXTS = 8192  # about 12 MB of 384-dimension vectors


class RememberedEmbeddings:
    """`provider`, embedding only the texts whose vectors it does not remember (the last
    `size` texts embedded through it)."""

    def __init__(self, provider: EmbeddingProvider, size: int = REMEMBERED_TEXTS) -> None:
        self.provider = provider
        self.model = provider.model
        self.answer_floor = provider.answer_floor
        self.size = size
        self._vectors: OrderedDict[bytes, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        """How many texts' vectors are remembered now (at most `size`)."""
        return len(self._vectors)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_key(text) for text in texts]
        missing = {key: text for key, text in zip(keys, texts, strict=True)}
        for key in keys:
            if key in self._vectors:
                missing.pop(key, None)
        found = {key: self._recall(key) for key in keys if key not in missing}
        if missing:
            vectors = await self.provider.embed(list(missing.values()))
            found.update(zip(missing, vectors, strict=True))
            for key in missing:
                self._remember(key, found[key])
        return np.stack([found[key] for key in keys])

    def _remember(self, key: bytes, vector: np.ndarray) -> None:
        self._vectors[key] = vector
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)

    def _recall(self, key: bytes) -> np.ndarray:
        self._vectors.move_to_end(key)
        return self._vectors[key]


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()

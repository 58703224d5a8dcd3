"""The request path's embeddings, remembered (issues 15, 16): a question is embedded by the
search's vector half and again by the answer's choice of sentences (strongroom.answers.meaning),
and the same passages' sentences come back answer after answer. This wraps the provider with
an LRU of vectors by text, bounded in bytes, so each is embedded once while it is in use: a
chat answer whose sentences were seen before embeds nothing beyond the search's question.

The request path (search, answers, template fill) has one; documents' vectors (issue 50,
strongroom.vault.reembedding) have another, so a large document does not flush what answers
use, and a passage or sentence repeated across pieces and documents is embedded once.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

from strongroom.embeddings.base import EmbeddingProvider
from strongroom.lazy import numpy as np

REMEMBERED_BYTES = 16 * 2**20  # 10,000 vectors of 384 dimensions, 1,300 of 3,072


class RememberedEmbeddings:
    """`provider`, embedding only the texts whose vectors it does not remember (the texts
    embedded through it last, at most `max_bytes` of vectors, whatever the model's
    dimensions)."""

    def __init__(
        self,
        provider: EmbeddingProvider,
        max_bytes: int = REMEMBERED_BYTES,
        *,
        documents: bool = False,
    ) -> None:
        """`documents`: embed through the provider's `embed_documents` where it has one (a
        document's vectors, issue 50), else its `embed`."""
        self.provider = provider
        self._embed = provider.embed
        if documents:
            self._embed = getattr(provider, "embed_documents", provider.embed)
        self.model = provider.model
        self.answer_floor = provider.answer_floor
        self.passages_from_sentences = getattr(provider, "passages_from_sentences", False)
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._vectors: OrderedDict[bytes, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        """How many texts' vectors are remembered now."""
        return len(self._vectors)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_key(text) for text in texts]
        missing = {key: text for key, text in zip(keys, texts, strict=True)}
        for key in keys:
            if key in self._vectors:
                missing.pop(key, None)
        found = {key: self._recall(key) for key in keys if key not in missing}
        if missing:
            vectors = await self._embed(list(missing.values()))
            found.update(zip(missing, vectors, strict=True))
            for key in missing:
                self._remember(key, found[key])
        return np.stack([found[key] for key in keys])

    def _remember(self, key: bytes, vector: np.ndarray) -> None:
        self._vectors[key] = vector
        self.nbytes += vector.nbytes
        while self.nbytes > self.max_bytes:
            _, forgotten = self._vectors.popitem(last=False)
            self.nbytes -= forgotten.nbytes

    def _recall(self, key: bytes) -> np.ndarray:
        self._vectors.move_to_end(key)
        return self._vectors[key]


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()

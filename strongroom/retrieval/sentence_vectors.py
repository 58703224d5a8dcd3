"""Sentence vectors made at ingestion (issue 40), so that choosing an answer's sentence by
meaning embeds only the question at question time.

A passage's candidate sentences (strongroom.answers.extractive.sentence_texts) are embedded
with its passage vector, by the same model (`embedding_model`), and kept beside it as one
blob: each sentence is named by `key(text)` (8 bytes of BLAKE2b of its text), not by its
place, so a sentence the engine reads differently after an upgrade simply misses and is
embedded at question time, never compared with another sentence's vector.

The blob: a little-endian uint32 count n, then n keys of KEY_BYTES, then n x dimensions
float16 values (half the bytes of float32; a cosine moves by under 1e-3).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator, Mapping, Sequence

from strongroom.lazy import numpy as np

KEY_BYTES = 8
_COUNT = struct.Struct("<I")


def key(text: str) -> bytes:
    """How a sentence's vector is found: the same text gives the same key."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=KEY_BYTES).digest()


def to_blob(texts: Sequence[str], vectors: np.ndarray) -> bytes:
    """`vectors` (one row per text, in order) as a blob; a text seen twice is kept once."""
    keys: dict[bytes, int] = {}
    for index, text in enumerate(texts):
        keys.setdefault(key(text), index)
    rows = np.asarray(vectors)[list(keys.values())] if keys else None
    body = b"" if rows is None else rows.astype("<f2").tobytes()
    return _COUNT.pack(len(keys)) + b"".join(keys) + body


class SentenceVectors(Mapping):
    """A passage's stored sentence vectors, looked up by the sentence's text (or its `key`):
    what `Passage.sentence_vectors` holds, so the answer engine needs no knowledge of keys."""

    def __init__(self, by_key: dict[bytes, np.ndarray]) -> None:
        self._by_key = by_key

    def __getitem__(self, text: str | bytes) -> np.ndarray:
        return self._by_key[text if isinstance(text, bytes) else key(text)]

    def __contains__(self, text: object) -> bool:
        if isinstance(text, str):
            return key(text) in self._by_key
        return text in self._by_key

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)


def from_blob(blob: bytes | None) -> SentenceVectors:
    """The vectors of a blob as float32 rows, by text or key; empty for None or a blob that
    does not read (a truncated one is ignored rather than trusted)."""
    if not blob or len(blob) < _COUNT.size:
        return SentenceVectors({})
    (count,) = _COUNT.unpack_from(blob)
    keys_end = _COUNT.size + count * KEY_BYTES
    values = len(blob) - keys_end
    if count == 0 or values <= 0 or values % (2 * count):
        return SentenceVectors({})
    matrix = np.frombuffer(blob, dtype="<f2", offset=keys_end).reshape(count, -1)
    matrix = matrix.astype(np.float32)
    return SentenceVectors(
        {
            blob[_COUNT.size + i * KEY_BYTES : _COUNT.size + (i + 1) * KEY_BYTES]: matrix[i]
            for i in range(count)
        }
    )

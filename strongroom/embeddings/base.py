"""What an embeddings provider is (issue 16): texts in, unit-length float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class EmbeddingError(Exception):
    """The provider could not embed (upstream down, bad answer); the message names no secret."""


class EmbeddingProvider(Protocol):
    """Embeds passages and questions into one vector space.

    `model` names the space: it is stored beside every vector, and vectors of another
    `model` are never compared with this provider's (they are re-embedded instead)."""

    model: str
    # The score the best sentence (its words and its closeness in meaning together) must
    # reach for the extractive engine to answer (strongroom.answers.extractive.answers),
    # calibrated per model on bench/quality's tuning halves (bench/quality/tune.py).
    answer_floor: float

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order: float32, shape (len(texts), dimensions), each row of
        unit length (so a dot product is the cosine). Blocking work runs off the event loop."""
        ...


def normalised(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32 (a zero row stays zero)."""
    import numpy as np  # here: a process that never embeds never imports numpy (issue 29)

    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)

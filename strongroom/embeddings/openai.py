"""The embeddings provider that calls an OpenAI-compatible `POST {base_url}/embeddings` (a
text-embeddings server, vLLM, Ollama, OpenAI itself).

Texts go in batches of `batch_size`, each cut to `max_input_chars` characters first (an
upstream rejects over-long input, and a passage's start carries its topic). Every connect
and read waits at most `timeout_seconds`; connection failures, timeouts, 429 and 5xx are
retried `max_retries` times with a short backoff, then `EmbeddingError`. An answer that is
not one vector per text, all of one length, is an `EmbeddingError` too. The API key is sent
as a Bearer token and never logged nor put in an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import httpx
import numpy as np
from pydantic import SecretStr

from strongroom.embeddings.base import EmbeddingError, normalised
from strongroom.settings import Settings

BACKOFF_SECONDS = 0.2


class _Retryable(Exception):
    pass


@dataclass
class OpenAIEmbeddings:
    base_url: str
    upstream_model: str
    api_key: SecretStr | None = None
    timeout_seconds: float = 30.0
    max_retries: int = 2
    batch_size: int = 64
    max_input_chars: int = 8_000
    answer_floor: float = 0.5

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIEmbeddings:
        assert settings.embeddings_openai_base_url and settings.embeddings_openai_model
        return cls(
            base_url=settings.embeddings_openai_base_url.rstrip("/"),
            upstream_model=settings.embeddings_openai_model,
            api_key=settings.embeddings_openai_api_key,
            timeout_seconds=settings.embeddings_openai_timeout_seconds,
            max_retries=settings.embeddings_openai_max_retries,
            batch_size=settings.embeddings_openai_batch_size,
            max_input_chars=settings.embeddings_max_input_chars,
            answer_floor=settings.embeddings_openai_answer_floor,
        )

    @property
    def model(self) -> str:
        return f"openai:{self.upstream_model}"

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        headers = {}
        if self.api_key is not None:
            headers["Authorization"] = f"Bearer {self.api_key.get_secret_value()}"
        batches = []
        async with httpx.AsyncClient(timeout=self.timeout_seconds, headers=headers) as client:
            for start in range(0, len(texts), self.batch_size):
                batch = [
                    text[: self.max_input_chars] for text in texts[start : start + self.batch_size]
                ]
                batches.append(await self._with_retries(client, batch))
        if len({batch.shape[1] for batch in batches}) != 1:
            raise EmbeddingError("the embeddings upstream changed its vectors' length")
        return normalised(np.concatenate(batches))

    async def _with_retries(self, client: httpx.AsyncClient, batch: list[str]) -> np.ndarray:
        for attempt in range(self.max_retries + 1):
            try:
                return await self._call(client, batch)
            except _Retryable as error:
                if attempt == self.max_retries:
                    raise EmbeddingError(str(error)) from None
                await asyncio.sleep(BACKOFF_SECONDS * 2**attempt)
        raise AssertionError("unreachable")

    async def _call(self, client: httpx.AsyncClient, batch: list[str]) -> np.ndarray:
        try:
            response = await client.post(
                f"{self.base_url}/embeddings",
                json={"model": self.upstream_model, "input": batch, "encoding_format": "float"},
            )
        except httpx.TimeoutException:
            raise _Retryable("the embeddings upstream timed out") from None
        except httpx.TransportError:
            raise _Retryable("the embeddings upstream could not be reached") from None
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"the embeddings upstream answered {response.status_code}")
        if response.status_code != 200:
            raise EmbeddingError(f"the embeddings upstream answered {response.status_code}")
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError):
            raise EmbeddingError(
                "the embeddings upstream's answer is not a list of vectors"
            ) from None
        if vectors.ndim != 2 or len(vectors) != len(batch) or vectors.shape[1] == 0:
            raise EmbeddingError("the embeddings upstream did not give one vector per text")
        return vectors

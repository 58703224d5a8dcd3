"""The static offline embeddings provider: WordLlama `l2_supercat` at 256 dimensions (MIT, by
D. Lee Miller; see docs/embeddings.md), a context-free token table averaged over a text.

Its weights and tokenizer come from the `wordllama` wheel (the `wordllama` extra):
`weights/l2_supercat_256.safetensors` (32,000 x 256 float16, the Llama 2 vocabulary) and
`tokenizers/l2_supercat_tokenizer_config.json`, the only model the wheel ships. The package
is only located (`importlib.util.find_spec`), never imported, for two reasons found in
0.4.0.post1: importing it calls `logging.basicConfig(level=INFO)` on the root logger, and
`WordLlama.load(disable_download=True)` cannot find the tokenizer it ships (it looks in
`tokenizer/`, the wheel has `tokenizers/`), so without that flag it downloads the file from
a model hub. Nothing is fetched at run time here: there is no network code on this path.

A text's vector is what `WordLlama.embed(texts, norm=True)` gives: the tokens without special
tokens, their rows averaged, scaled to unit length (tests/embeddings check it against the
library's own numbers). The table stays float16 in memory (16 MB) and the rows are summed in
float32, one text at a time (a text is cut to `max_input_chars` first), so the memory a call
takes is bounded by one batch of `BATCH` texts whatever their number. The work runs on the
provider's own thread, never on the event loop; the table loads at the first call.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from strongroom.embeddings.base import EmbeddingError, normalised
from strongroom.embeddings.safetensors import read_tensors

PACKAGE = "wordllama"
CONFIG = "l2_supercat"
DIMENSIONS = 256
MODEL = f"wordllama:{CONFIG}-{DIMENSIONS}"
WEIGHTS = f"weights/{CONFIG}_{DIMENSIONS}.safetensors"
TOKENIZER = f"tokenizers/{CONFIG}_tokenizer_config.json"
TENSOR = "embedding.weight"
BATCH = 256  # texts tokenised together


class WordLlamaEmbeddings:
    model = MODEL
    # The best sentence's score (words and meaning) at which the extractive engine answers,
    # chosen on bench/quality's tuning halves (bench/quality/tune.py --provider wordllama:
    # right 45%, wrong of asserted 14%, unanswerable not asserted 90%; issue 40).
    answer_floor = 0.72

    def __init__(self, max_input_chars: int = 8_000) -> None:
        self.max_input_chars = max_input_chars
        self._table: np.ndarray | None = None
        self._tokenizer = None
        self._loading = threading.Lock()
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="strongroom-wordllama")

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self.embed_blocking, list(texts))

    def embed_blocking(self, texts: list[str]) -> np.ndarray:
        """`embed`, in the calling thread (benchmarks, the CLI). Tokenised `BATCH` texts at a
        time and summed one text at a time, so the memory it takes is bounded by a batch's
        tokens, not by how many texts a document has."""
        self._load()
        assert self._table is not None and self._tokenizer is not None
        last = len(self._table) - 1
        sums = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            encodings = self._tokenizer.encode_batch(
                [text[: self.max_input_chars] for text in texts[start : start + BATCH]],
                add_special_tokens=False,
            )
            for row, encoding in enumerate(encodings, start):
                if encoding.ids:  # an empty text stays a zero row, close to no question
                    ids = np.clip(np.asarray(encoding.ids), 0, last)  # as the library does
                    sums[row] = self._table[ids].sum(axis=0, dtype=np.float32)
        # The mean's division does not change the direction: unit length is enough.
        return normalised(sums)

    def _load(self) -> None:
        with self._loading:
            if self._table is not None:
                return
            from tokenizers import Tokenizer

            folder = _package_folder()
            tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
            tokenizer.no_padding()
            tokenizer.no_truncation()
            self._table = _float16_table((folder / WEIGHTS).read_bytes())
            self._tokenizer = tokenizer


def _package_folder() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddingError(
            "STRONGROOM_EMBEDDINGS_PROVIDER=wordllama needs the `wordllama` extra "
            "(the wordllama wheel)"
        )
    return Path(spec.origin).parent


def _float16_table(raw: bytes) -> np.ndarray:
    """The one float16 tensor `embedding.weight` of the wheel's safetensors file."""
    table = read_tensors(raw).get(TENSOR)
    if table is None or table.dtype != np.float16 or table.shape[1] != DIMENSIONS:
        raise EmbeddingError(f"the wordllama wheel's {WEIGHTS} is not the expected table")
    return table.copy()

"""The vectors of passages and queries: which model makes them, in process or upstream."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, Field, SecretStr, model_validator


class EmbeddingSettings(BaseModel):
    """The vectors of passages and queries: which model makes them, in process or upstream."""

    embeddings_provider: Literal["none", "openai", "minilm", "wordllama"] = Field(
        default="minilm",
        description=(
            "Embeddings for search and answers by meaning (issues 16, 40, docs/embeddings.md): "
            "`minilm` (the default) runs all-MiniLM-L6-v2 in process, offline (int8 in "
            "onnxruntime; about 135 MiB a process); `none` searches and answers by words only (the"
            " lexical fallback); `openai` calls an OpenAI-compatible `/embeddings` endpoint (a "
            "text-embeddings server, vLLM, Ollama); `wordllama` averages WordLlama's static "
            "l2_supercat token vectors (256 dimensions) in process, offline (needs the `wordllama`"
            " extra). Any other value stops every command at start. Changing it: run `strongroom "
            "reembed`."
        ),
    )
    embeddings_openai_base_url: str | None = Field(
        default=None,
        description=(
            "With `openai`: the API root, e.g. `http://tei:8080/v1` (`/embeddings` is added). "
            "Required with `openai`: without it every command stops at start."
        ),
    )
    embeddings_openai_model: str | None = Field(
        default=None,
        description=(
            "With `openai`: the model name sent upstream, stored with every vector. Required with "
            "`openai`, as above."
        ),
    )
    embeddings_openai_api_key: SecretStr | None = Field(
        default=None,
        description="With `openai`: the key sent as `Authorization: Bearer` (never logged).",
    )
    embeddings_openai_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="Longest wait to connect and for the answer of one embeddings call. Above 0.",
    )
    embeddings_openai_max_retries: int = Field(
        default=2,
        ge=0,
        description=(
            "Retries of an embeddings call that failed (connection, timeout, 429, 5xx), after 0.2 "
            "s, 0.4 s, ..."
        ),
    )
    embeddings_openai_batch_size: int = Field(
        default=64,
        ge=1,
        le=2048,
        description="Texts sent in one embeddings call (1-2048).",
    )
    embeddings_openai_answer_floor: float = Field(
        default=0.72,
        ge=0,
        le=2,
        description=(
            "With `openai`: the score (shared words and closeness in meaning together, as the "
            "extractive engine ranks sentences) the best sentence must reach for an answer; under "
            "it the answer is `not_found` (`minilm` and `wordllama`: 0.72, built in). Calibrate it"
            " for the model with `bench/quality/tune.py` on the tuning halves "
            "(docs/embeddings.md)."
        ),
    )
    embeddings_max_input_chars: int = Field(
        default=8_000,
        ge=100,
        description=(
            "A text sent to the embeddings upstream (`openai`) or embedded by `wordllama` is cut "
            "to this many characters first. At least 100."
        ),
    )
    embeddings_minilm_max_tokens: int = Field(
        default=256,
        ge=8,
        le=512,
        description="With `minilm`: a text is cut to this many tokens (8-512).",
    )
    embeddings_minilm_runtime: Literal["onnx-int8", "numpy"] = Field(
        default="onnx-int8",
        description=(
            "With `minilm`: `onnx-int8` runs the model in onnxruntime with int8 weights (about 3x "
            "faster per core, cosine 0.977-0.996 to the reference; the int8 model is built at the "
            "first load, in 3-5 s, and cached in `$XDG_CACHE_HOME/strongroom`, else "
            "`~/.cache/strongroom`; where that cannot be written it is built in memory at every "
            "start); `numpy` runs the float32 reference. Each is its own vector space "
            "(`minilm:all-MiniLM-L6-v2:int8`, `minilm:all-MiniLM-L6-v2`): changing it, run "
            "`strongroom reembed`."
        ),
    )

    @model_validator(mode="after")
    def _openai_embeddings_complete(self) -> Self:
        if self.embeddings_provider == "openai" and not (
            self.embeddings_openai_base_url and self.embeddings_openai_model
        ):
            raise ValueError(
                "STRONGROOM_EMBEDDINGS_PROVIDER=openai needs "
                "STRONGROOM_EMBEDDINGS_OPENAI_BASE_URL and _MODEL"
            )
        return self

"""Configuration from `STRONGROOM_*` environment variables (documented in docs/configuration.md).

Secrets (`key_pepper`, `secret_key`) have no default. Where they are unset and the database is
the embedded SQLite file, they are generated once and kept in `<data_dir>/secrets.json`, so the
embedded default works out of the box and its keys survive restarts. A server on a shared
database refuses to start without them: replicas that each invented a pepper could not verify
each other's keys.
"""

from __future__ import annotations

import json
import os
import secrets
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATA_DIR = Path(".strongroom")


class MissingSecretError(RuntimeError):
    """A required secret is not configured and may not be generated."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STRONGROOM_", extra="ignore")

    base_url: str = Field(
        default="http://127.0.0.1:8080",
        description="Public origin of the API (D1): problem `type` URLs, OAuth issuer.",
    )
    data_dir: Path = Field(default=DEFAULT_DATA_DIR, description="Embedded-default state.")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy async URL; default: SQLite file `<data_dir>/strongroom.db`.",
    )
    database_pool_size: int = Field(
        default=20,
        ge=1,
        description="PostgreSQL connections a process keeps, at most; a request waits for "
        "one when all are in use.",
    )
    database_read_pool_size: int = Field(
        default=10,
        ge=1,
        description="PostgreSQL connections a process may hold beside `database_pool_size` "
        "for the list reads of hot paths, the debits of live reads, and the last statements "
        "of writes that opened no transaction, such as a project's create (issue 29), opened "
        "when first needed.",
    )
    database_queue_pool_size: int | None = Field(
        default=None,
        ge=1,
        description="PostgreSQL connections a process's job queue (procrastinate's psycopg "
        "pool) may hold; `strongroom worker` has two such pools and one more connection that "
        "listens for new jobs. Unset: `worker_concurrency` + 1, at least 2.",
    )
    redis_url: str | None = Field(default=None, description="Redis URL; unset: in-process.")
    redis_prefix: str = Field(default="strongroom:", description="Prefix of every Redis key.")
    rate_limit_tiers: dict[str, tuple[int, int]] = Field(
        default={
            "free": (10, 20),
            "standard": (60, 120),
            "pro": (300, 600),
            "enterprise": (1500, 3000),
        },
        description="Tier -> (tokens per minute, burst) (D18).",
    )
    key_cache_seconds: float = Field(default=2.0, ge=0, le=2.0)
    idempotency_lock_seconds: float = Field(default=60.0, gt=0)
    idempotency_cache_seconds: int = Field(default=24 * 3600, gt=0)
    idempotency_max_body_bytes: int = Field(default=64 * 1024, gt=0)
    key_pepper: SecretStr | None = Field(default=None, description="HMAC key for API keys (D9).")
    secret_key: SecretStr | None = Field(default=None, description="Signs cursors (D5).")
    oauth_signing_keys_file: Path | None = Field(
        default=None,
        description="JWKS file with the ES256 private keys; the first signs (D29).",
    )
    oidc_issuer: str | None = Field(
        default=None, description="Upstream OpenID Connect provider that signs users in (D39)."
    )
    oidc_client_id: str | None = Field(default=None)
    oidc_client_secret: SecretStr | None = Field(default=None)
    dev_sign_in: bool = Field(
        default=False, description="Built-in OAuth sign-in page (embedded default, tests; D39)."
    )
    operator_resync_seconds: float = Field(
        default=300.0, gt=0, description="How often the operator repairs drift."
    )
    operator_metrics_port: int | None = Field(
        default=None, description="Port of the operator's /metrics; unset: none."
    )
    worker_metrics_port: int | None = Field(
        default=None, ge=1, le=65535, description="Port of the worker's /metrics; unset: none."
    )
    max_json_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    upload_max_bytes: int = Field(
        default=100 * 1024 * 1024, ge=1, description="Largest accepted upload (D42)."
    )
    upload_timeout_seconds: float = Field(
        default=900.0,
        gt=0,
        description="Longest an upload's body may take to arrive; past it 408 `request_timeout`.",
    )
    upload_idle_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="Longest any request body (an upload's too) may send nothing; past it 408 "
        "`request_timeout`.",
    )
    request_body_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Longest a request body other than an upload (JSON, /mcp) may take to "
        "arrive; past it 408 `request_timeout`.",
    )
    storage_url: str | None = Field(
        default=None,
        description="Where document bytes live: `s3://bucket/prefix` or a directory; "
        "default: `<data_dir>/blobs`.",
    )
    s3_endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint; unset: AWS."
    )
    s3_region: str = Field(default="us-east-1")
    s3_access_key_id: str | None = Field(default=None)
    s3_secret_access_key: SecretStr | None = Field(default=None)
    worker_concurrency: int = Field(default=2, ge=1, description="Jobs one worker runs at once.")
    job_slots_kept_for_other_tenants: int = Field(
        default=1,
        ge=0,
        description="Of a process's `worker_concurrency` job slots, how many one tenant's jobs "
        "leave to other tenants (it holds at least one): slow jobs of one tenant cannot hold "
        "up another's. 0: no share.",
    )
    job_max_attempts: int = Field(
        default=3, ge=1, description="Runs of a job before it is failed (D46)."
    )
    webhooks_allow_private_urls: bool = Field(
        default=False,
        description="Let webhook endpoints be loopback, private, link-local or metadata "
        "addresses (refused otherwise, at creation and at each delivery). On in `strongroom "
        "dev`, so a receiver on the same machine works.",
    )
    webhooks_timeout_seconds: float = Field(
        default=10.0, gt=0, le=60, description="How long one webhook delivery may take."
    )
    webhooks_max_attempts: int = Field(
        default=15,
        ge=1,
        le=50,
        description="Attempts at one webhook delivery before it is failed (with the default "
        "backoff, about three days) and its endpoint disabled.",
    )
    webhooks_first_retry_seconds: float = Field(
        default=5.0,
        gt=0,
        description="Wait before a failed webhook delivery's second attempt; each later wait "
        "is 3 times the one before, at most 12 hours, give or take a fifth at random.",
    )
    webhooks_poll_seconds: float = Field(
        default=1.0,
        gt=0,
        description="How often a process that delivers webhooks looks for deliveries due "
        "(an event recorded by the process itself is sent at once).",
    )
    webhooks_concurrency: int = Field(
        default=8, ge=1, le=100, description="Webhook deliveries one process makes at once."
    )
    webhooks_slots_kept_for_other_tenants: int = Field(
        default=2,
        ge=0,
        description="Of a process's `webhooks_concurrency` delivery slots, how many one "
        "tenant's deliveries leave to other tenants (it holds at least one): one tenant's "
        "slow or hanging endpoints cannot hold up another's deliveries. 0: no share.",
    )
    webhooks_endpoint_concurrency: int = Field(
        default=2,
        ge=1,
        le=10,
        description="Deliveries to one webhook endpoint in flight at once, counted across "
        "every process that delivers: an endpoint that hangs holds at most this many slots.",
    )
    webhooks_max_endpoints: int = Field(
        default=20,
        ge=1,
        description="Webhook endpoints one tenant may have in one environment.",
    )
    webhooks_retention_days: int = Field(
        default=30,
        ge=1,
        description="Days a webhook event and its deliveries are kept once recorded.",
    )
    worker_heartbeat_seconds: float = Field(default=10.0, gt=0)
    worker_stalled_seconds: float = Field(
        default=60.0, gt=0, description="A job whose worker is silent this long is retried."
    )
    worker_sweep_seconds: float = Field(
        default=30.0, gt=0, description="How often a worker looks for stalled or lost jobs."
    )
    blob_sweep_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="How often a process that runs jobs removes the stored files of deleted "
        "documents that a process killed between the deletion and the file's removal left "
        "(issue 42); also once at its start.",
    )
    tenant_erasure_days: int = Field(
        default=30,
        ge=0,
        description="Days after a tenant is deleted before its documents, files, passages, "
        "vectors, conversations and the rest are erased (issue 42); its row, users, keys and "
        "credit ledger stay. 0: erased at the next check.",
    )
    tenant_erasure_check_seconds: float = Field(
        default=30.0,
        gt=0,
        le=30,
        description="How often a process that runs jobs looks for deleted tenants whose "
        "erasure is due (at most 30 s: a tenant deleted with erasure at 0 is erased within a "
        "minute); also once at its start.",
    )
    job_timeout_seconds: float = Field(
        default=1800.0,
        gt=0,
        description="A job running longer than this is failed with `job_timeout`.",
    )
    job_memory_limit_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=64 * 1024 * 1024,
        description="Address space of the child process that parses a job's file (RLIMIT_AS); "
        "past it the job fails with `job_resource_limit`.",
    )
    job_cpu_limit_seconds: float = Field(
        default=300.0,
        gt=0,
        description="CPU seconds of the child process that parses a job's file (RLIMIT_CPU); "
        "past them the job fails with `job_resource_limit`.",
    )
    job_warm_children_at_start: bool = Field(
        default=True,
        description="Start `worker_concurrency` parsing children, parsers imported, when a "
        "process that runs jobs starts, and keep that many ready (issue 41); off, a child "
        "is started at a job's first need and kept for the next.",
    )
    job_child_memory_mark_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1,
        description="A warm parsing child whose resident memory has grown this far past its "
        "size at start (parsers imported) is replaced after its call (issue 41).",
    )
    job_child_max_calls: int = Field(
        default=500,
        ge=1,
        description="Calls one warm parsing child serves before it is replaced (issue 41).",
    )
    template_max_unzipped_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description="Bound on a DOCX template's decompressed size, declared and actual.",
    )
    template_max_xml_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=1,
        description="Bound on the decompressed size of a DOCX template's XML parts together.",
    )
    template_max_xml_elements: int = Field(
        default=500_000,
        ge=1,
        description="Bound on the XML tags of a DOCX template's parts together (one per empty "
        "element, two per element with content: a bound on the elements python-docx builds), "
        "counted while inflating by the Office guard ingestion uses too.",
    )
    job_shutdown_grace_seconds: float = Field(
        default=10.0,
        ge=0,
        description="How long stopping (SIGTERM) waits for running jobs to finish before "
        "cancelling them: the embedded default runs them again at its next start, a worker "
        "queues them again for another worker.",
    )
    ingest_max_unzipped_bytes: int = Field(
        default=512 * 1024 * 1024,
        ge=1,
        description="Bound on a DOCX/XLSX's decompressed size (zip bombs).",
    )
    ingest_max_xml_tags: int = Field(
        default=2_000_000,
        ge=1,
        description="Bound on the XML tags a DOCX (every part) or XLSX (every part but its "
        "sheets, which are streamed) may hold, counted while inflating (`document_too_large`).",
    )
    ingest_max_xml_bytes: int = Field(
        default=128 * 1024 * 1024,
        ge=1,
        description="Bound on the bytes of XML a DOCX (every part) or XLSX (every part but its "
        "sheets) may hold, counted while inflating, before any parser builds a tree of it "
        "(`document_too_large`).",
    )
    ingest_max_sheet_cells: int = Field(
        default=5_000_000,
        ge=1,
        description="Bound on the cells (empty ones within a row included) read from an XLSX.",
    )
    ingest_max_pdf_page_chars: int = Field(
        default=200_000,
        ge=1,
        description="Bound on the text one PDF page may give (pages sharing a huge stream).",
    )
    ingest_max_text_chars: int = Field(
        default=25_000_000,
        ge=1,
        description="Bound on the characters of text one document may give.",
    )
    ingest_max_passages: int = Field(
        default=20_000,
        ge=1,
        description="Bound on the passages (search chunks) one document may give.",
    )
    ocr: Literal["tesseract", "off"] = Field(
        default="tesseract",
        description="Read scanned PDF pages and PNG, JPEG and TIFF images by OCR (issue 51): "
        "`tesseract` (bundled with its English data; nothing is downloaded), or `off`, where "
        "a document with no text layer fails with `no_text`.",
    )
    ocr_max_pages: int = Field(
        default=500,
        ge=1,
        description="Bound on the pages one document may have read by OCR (image pages of a "
        "PDF, frames of a TIFF); past it the document fails with `document_too_large`.",
    )
    ocr_max_image_pixels: int = Field(
        default=100_000_000,
        ge=1_000_000,
        description="Bound on the pixels an image (or a TIFF frame) may declare, checked "
        "before it is decoded; past it the document fails with `document_too_large`.",
    )
    ocr_dpi: int = Field(
        default=300,
        ge=72,
        le=600,
        description="Resolution at which a PDF page without text is rendered for OCR (a "
        "page is also kept within 12 M pixels).",
    )
    ocr_page_seconds: float = Field(
        default=60.0,
        gt=0,
        description="Tesseract's deadline for one page: a page not read by then is counted "
        "as empty (the job's own CPU and time bounds hold as well).",
    )
    chat_engine: Literal["extractive", "openai"] = Field(
        default="extractive",
        description="Answer engine (D44): `extractive` needs no model; `openai` calls an "
        "OpenAI-compatible chat-completions endpoint.",
    )
    chat_openai_base_url: str | None = Field(
        default=None, description="E.g. `https://api.openai.com/v1` (`/chat/completions` is added)."
    )
    chat_openai_model: str | None = Field(default=None, description="Model name sent upstream.")
    chat_openai_api_key: SecretStr | None = Field(
        default=None, description="Bearer key sent upstream."
    )
    chat_openai_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Longest wait for the upstream's next token."
    )
    chat_openai_max_retries: int = Field(
        default=2, ge=0, description="Retries of a failed upstream call before any token came."
    )
    chat_openai_max_tokens: int = Field(
        default=1024,
        ge=1,
        description="`max_tokens` sent with every chat-completions request.",
    )
    chat_max_answer_chars: int = Field(
        default=32_000,
        ge=100,
        description="An answer from the upstream model is cut at this many characters.",
    )
    embeddings_provider: Literal["none", "openai", "minilm", "wordllama"] = Field(
        default="minilm",
        description="Embeddings for search and answers by meaning (issues 16, 40): `minilm` "
        "(the default) runs all-MiniLM-L6-v2 in process, offline; `none` searches and answers "
        "by words only (the lexical fallback); `openai` calls an OpenAI-compatible "
        "`/embeddings` endpoint; `wordllama` averages WordLlama's static token vectors in "
        "process (needs the `wordllama` extra).",
    )
    embeddings_openai_base_url: str | None = Field(
        default=None, description="E.g. `http://tei:8080/v1` (`/embeddings` is added)."
    )
    embeddings_openai_model: str | None = Field(
        default=None, description="Embedding model name sent upstream."
    )
    embeddings_openai_api_key: SecretStr | None = Field(
        default=None, description="Bearer key sent to the embeddings upstream."
    )
    embeddings_openai_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Longest wait for one embeddings call (connect, read)."
    )
    embeddings_openai_max_retries: int = Field(
        default=2, ge=0, description="Retries of an embeddings call that failed or timed out."
    )
    embeddings_openai_batch_size: int = Field(
        default=64, ge=1, le=2048, description="Texts sent in one embeddings call."
    )
    embeddings_openai_answer_floor: float = Field(
        default=0.72,
        ge=0,
        le=2,
        description="`openai`: the score (shared words and closeness in meaning together) "
        "the best sentence must reach for chat's extractive engine to answer rather than say "
        "`not_found`; 0.72 is MiniLM's, calibrate it for your model with "
        "`bench/quality/tune.py` (docs/embeddings.md).",
    )
    embeddings_max_input_chars: int = Field(
        default=8_000,
        ge=100,
        description="A text sent to the embeddings upstream (`openai`) or embedded by "
        "`wordllama` is cut to this many characters.",
    )
    embeddings_minilm_max_tokens: int = Field(
        default=256,
        ge=8,
        le=512,
        description="`minilm`: a text is cut to this many tokens (256, as sentence-"
        "transformers does).",
    )
    embeddings_minilm_runtime: Literal["onnx-int8", "numpy"] = Field(
        default="onnx-int8",
        description="`minilm`: `onnx-int8` runs the model in onnxruntime with int8 weights "
        "(about 3x faster, cosine 0.977-0.996 to the reference; built once and cached under "
        "`$XDG_CACHE_HOME/strongroom`); `numpy` runs the float32 reference. Each is its own "
        "vector space: changing it, run `strongroom reembed`.",
    )
    search_lexical_weight: float = Field(
        default=0.4,
        ge=0,
        description="Hybrid search: weight of the lexical (BM25) score, min-max normalised.",
    )
    search_vector_weight: float = Field(
        default=0.6,
        ge=0,
        description="Hybrid search: weight of the vector (cosine) score, min-max normalised.",
    )
    search_fusion: Literal["blend", "rrf"] = Field(
        default="blend",
        description="Hybrid search: `blend` sums the weighted min-max normalised scores; "
        "`rrf` is weighted reciprocal rank fusion.",
    )
    search_max_vectors: int = Field(
        default=20_000,
        ge=1,
        description="Hybrid search: most stored vectors read for one query. A search whose "
        "documents hold more scores by meaning only the passages found by words.",
    )
    search_vector_memory_mb: int = Field(
        default=256,
        ge=0,
        description="Hybrid search without pgvector: memory (MiB) each process may hold "
        "passage vectors in, least recently searched tenant dropped first (about 170,000 "
        "vectors of 384 dimensions in 256 MiB). A tenant whose vectors do not fit, or 0, "
        "reads them from the database on every search (`search_max_vectors`).",
    )
    search_term_memory_mb: int = Field(
        default=256,
        ge=0,
        description="Search by words: memory (MiB) each process may hold passage terms in "
        "(an inverted index per tenant and environment, least recently searched dropped "
        "first; about 150,000 passages of a contract's prose in 256 MiB), so a search scores "
        "every passage in scope in memory. A tenant whose terms do not fit, or 0, is searched "
        "with the database's full-text index.",
    )
    log_level: str = Field(default="INFO")
    log_client_request_id_max_chars: int = Field(
        default=64,
        ge=1,
        description="A client's X-Request-Id is logged only if it is at most this many safe "
        "characters and looks like no credential (strongroom/api/client_request_id.py).",
    )

    @field_validator("base_url")
    @classmethod
    def _bare_origin(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str | None) -> str | None:
        """Accept plain `postgresql://` URLs and pin the async psycopg 3 driver."""
        if value and value.startswith(("postgresql://", "postgres://")):
            return "postgresql+psycopg://" + value.split("://", 1)[1]
        return value

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.data_dir / 'strongroom.db'}"

    @property
    def is_embedded(self) -> bool:
        """True when state lives in a local SQLite file (one process owns it)."""
        return self.resolved_database_url.startswith("sqlite")

    @model_validator(mode="after")
    def _upstream_complete(self) -> Settings:
        upstream = (self.oidc_issuer, self.oidc_client_id, self.oidc_client_secret)
        if any(upstream) and not all(upstream):
            raise ValueError("set STRONGROOM_OIDC_ISSUER, _CLIENT_ID and _CLIENT_SECRET together")
        return self

    @model_validator(mode="after")
    def _s3_credentials_complete(self) -> Settings:
        if (self.s3_access_key_id is None) != (self.s3_secret_access_key is None):
            raise ValueError(
                "set STRONGROOM_S3_ACCESS_KEY_ID and _SECRET_ACCESS_KEY together "
                "(or neither, for the default AWS credential chain)"
            )
        return self

    @model_validator(mode="after")
    def _openai_engine_complete(self) -> Settings:
        if self.chat_engine == "openai" and not (
            self.chat_openai_base_url and self.chat_openai_model
        ):
            raise ValueError(
                "STRONGROOM_CHAT_ENGINE=openai needs STRONGROOM_CHAT_OPENAI_BASE_URL and _MODEL"
            )
        return self

    @model_validator(mode="after")
    def _openai_embeddings_complete(self) -> Settings:
        if self.embeddings_provider == "openai" and not (
            self.embeddings_openai_base_url and self.embeddings_openai_model
        ):
            raise ValueError(
                "STRONGROOM_EMBEDDINGS_PROVIDER=openai needs "
                "STRONGROOM_EMBEDDINGS_OPENAI_BASE_URL and _MODEL"
            )
        return self

    @property
    def blob_location(self) -> str:
        """`storage_url`, or the embedded default's blob directory."""
        return self.storage_url or str(self.data_dir / "blobs")

    @property
    def postgres_conninfo(self) -> str:
        """The database URL as libpq conninfo (for the job queue's own pool)."""
        return "postgresql://" + self.resolved_database_url.split("://", 1)[1]

    @property
    def api_audience(self) -> str:
        """The resource the API's access tokens are for (D29, D30)."""
        return f"{self.base_url}/api/v2"

    @property
    def signing_keys_path(self) -> Path:
        """Where the OAuth signing keys are read: the configured file, or, in the embedded
        default only, a file generated under the data directory.

        Raises MissingSecretError on a shared database without a configured file."""
        if self.oauth_signing_keys_file is not None:
            return self.oauth_signing_keys_file
        if not self.is_embedded:
            raise MissingSecretError(
                "STRONGROOM_OAUTH_SIGNING_KEYS_FILE must be set when the database is shared"
            )
        return self.data_dir / "oauth-signing-keys.json"

    @cached_property
    def _secrets(self) -> dict[str, str]:
        return _load_or_create_secrets(self.data_dir / "secrets.json")

    def secret(self, name: str) -> bytes:
        """Return the secret `name` (`key_pepper` or `secret_key`) as bytes.

        Raises MissingSecretError when it is unset on a shared (non-SQLite) database.
        """
        configured: SecretStr | None = getattr(self, name)
        if configured is not None:
            return configured.get_secret_value().encode()
        if not self.is_embedded:
            raise MissingSecretError(
                f"STRONGROOM_{name.upper()} must be set when the database is shared "
                f"({self.resolved_database_url.split(':', 1)[0]})"
            )
        return self._secrets[name].encode()


def _load_or_create_secrets(path: Path) -> dict[str, str]:
    if path.exists():
        return json.loads(path.read_text())
    path.parent.mkdir(parents=True, exist_ok=True)
    values = {name: secrets.token_urlsafe(32) for name in ("key_pepper", "secret_key")}
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race; use its secrets
        return json.loads(path.read_text())
    with os.fdopen(fd, "w") as handle:
        json.dump(values, handle)
    return values

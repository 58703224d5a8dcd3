"""The process-wide parts every command and request uses: settings, database, secrets, and
the stores behind the request path (Redis across replicas, in-process in the embedded
default: one choice, made here)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.answers import AnswerEngine
from strongroom.answers import create_engine as create_answer_engine
from strongroom.api.pagination import CursorCodec
from strongroom.auth.authenticate import ApiKeyAuthenticator
from strongroom.auth.cache import KeyCache
from strongroom.auth.invalidation import Invalidations, LocalInvalidations, RedisInvalidations
from strongroom.background import Process, Supervisor
from strongroom.db.engine import create_engine, session_factory
from strongroom.db.reads import Reads
from strongroom.embeddings import EmbeddingProvider, create_provider, warm
from strongroom.embeddings.remembered import RememberedEmbeddings
from strongroom.idempotency.durable import DurableRecords
from strongroom.idempotency.guard import IdempotencyGuard
from strongroom.idempotency.store import MemoryIdempotencyStore, RedisIdempotencyStore
from strongroom.jobs.bounded import WorkPool
from strongroom.jobs.queue import JobQueue, create_job_queue
from strongroom.jobs.runner import run_job, unfinished_jobs
from strongroom.problems import Problem
from strongroom.ratelimit.buckets import MemoryTokenBuckets, RedisTokenBuckets
from strongroom.ratelimit.limiter import RateLimiter
from strongroom.redis_client import create_redis
from strongroom.retrieval.semantic import Semantic
from strongroom.retrieval.term_memory import TermMemory
from strongroom.retrieval.vector_memory import VectorMemory
from strongroom.retrieval.vectors import vector_index
from strongroom.settings import Settings
from strongroom.storage import BlobStore, create_blob_store
from strongroom.storage.base import remove_leftover_spool_files
from strongroom.unavailable import StoreUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from strongroom.oauth.signing import SigningKeys
    from strongroom.oauth.tokens import TokenService
    from strongroom.oauth.upstream import UpstreamProvider
    from strongroom.oauth.verify import AccessTokenVerifier

log = logging.getLogger("strongroom.runtime")
T = TypeVar("T")

# What a parsing child imports before its first call (strongroom/jobs/bounded.py).
PARSING_MODULES = (
    "strongroom.ingest.passages",
    "strongroom.templates.docx_fill",
    "strongroom.answers.extractive",  # sentences cut for a document's vectors (issue 50)
    "strongroom.ingest.ocr",  # Tesseract and PDFium for scans (issue 51)
)


@dataclass
class Runtime:
    settings: Settings
    engine: AsyncEngine
    # Same pool, no BEGIN/ROLLBACK per checkout: for single-statement reads on hot paths.
    read_engine: AsyncEngine
    # Constant SELECTs of hot paths on the driver itself (issue 29).
    reads: Reads
    sessions: async_sessionmaker[AsyncSession]
    key_pepper: bytes = field(repr=False)
    redis: Redis | None
    key_cache: KeyCache
    authenticator: ApiKeyAuthenticator
    invalidations: Invalidations
    rate_limiter: RateLimiter
    idempotency: IdempotencyGuard
    cursors: CursorCodec
    # OAuth (D29): None where no signing keys are configured; OAuth is then switched off.
    tokens: TokenService | None
    token_verifier: AccessTokenVerifier | None
    upstream: UpstreamProvider | None  # the OpenID provider users sign in with (D39)
    blobs: BlobStore  # document bytes (D42)
    jobs: JobQueue  # background work (D46)
    work: WorkPool  # the bounded children that parse a job's files (issue 41)
    answers: AnswerEngine  # chat's answer engine (D44)
    embeddings: EmbeddingProvider | None = None  # search by meaning (issue 16); None: words
    # Passage vectors held for hybrid search (issue 16); None: no provider, or no memory for it.
    vectors: VectorMemory | None = None
    # Passage terms held for the search by words (issue 16); None: the database's index only.
    terms: TermMemory | None = None
    # The process's background tasks (strongroom.background.TASKS), started by `start` or,
    # in a worker, by strongroom.worker.
    background: Supervisor = field(init=False)
    _job_threads: ThreadPoolExecutor | None = None
    _remembered: RememberedEmbeddings | None = None
    _document_remembered: RememberedEmbeddings | None = None

    def __post_init__(self) -> None:
        self.background = Supervisor(self)

    @property
    def request_embeddings(self) -> RememberedEmbeddings | None:
        """`embeddings` for the request path (searches, answers), remembering recent texts'
        vectors, so a question is embedded once for its search and its answer; ingestion and
        re-embedding use `embeddings` itself."""
        if self.embeddings is None:
            return None
        if self._remembered is None or self._remembered.provider is not self.embeddings:
            self._remembered = RememberedEmbeddings(self.embeddings)
        return self._remembered

    @property
    def document_embeddings(self) -> RememberedEmbeddings | None:
        """`embeddings` for documents' vectors (strongroom.vault.reembedding), remembering the
        last texts' vectors apart from the request path's, so that a passage or sentence
        repeated across a document's pieces, or across documents, is embedded once, and a
        large document does not flush what questions use."""
        if self.embeddings is None:
            return None
        remembered = self._document_remembered
        if remembered is None or remembered.provider is not self.embeddings:
            remembered = self._document_remembered = RememberedEmbeddings(
                self.embeddings, documents=True
            )
        return remembered

    async def in_job_thread(self, function: Callable[..., T], *args, **kwargs) -> T:
        """Run a job's blocking work (a parser, an analysis) in the jobs' own pool of
        `worker_concurrency` threads. A parser that hangs is left running when its job times
        out (a thread cannot be stopped): this bounds how many threads such parsers can hold,
        and keeps them off the default executor that uploads and storage use."""
        if self._job_threads is None:
            self._job_threads = ThreadPoolExecutor(
                self.settings.worker_concurrency, thread_name_prefix="strongroom-job"
            )
        call = functools.partial(function, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._job_threads, call)

    async def _remove_leftover_spool_files(self) -> None:
        """What an upload killed half-way left in the spool (issue 28): every file in the
        embedded default (the one process that spools), else those past the upload deadline
        (other processes may share the directory)."""
        settings = self.settings
        older_than = 0.0 if settings.is_embedded else settings.upload_timeout_seconds
        removed = await asyncio.to_thread(
            remove_leftover_spool_files, self.blobs.spool_dir, older_than_seconds=older_than
        )
        if removed:
            log.info("removed %d leftover spool files", removed)

    @classmethod
    def create(cls, settings: Settings) -> Runtime:
        """Build the runtime; raises MissingSecretError before opening anything."""
        key_pepper = settings.secret("key_pepper")
        secret_key = settings.secret("secret_key")
        engine = create_engine(settings)
        read_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        redis = create_redis(settings)
        key_cache = KeyCache(settings.key_cache_seconds)
        if redis is not None:
            buckets = RedisTokenBuckets(redis, settings.redis_prefix)
            idempotency_store = RedisIdempotencyStore(redis, settings.redis_prefix)
            invalidations = RedisInvalidations(redis, settings)
        else:
            buckets = MemoryTokenBuckets()
            idempotency_store = MemoryIdempotencyStore()
            invalidations = LocalInvalidations()
        tokens = verifier = None
        keys = _signing_keys(settings)
        if keys is not None:  # OAuth on; off, a process never imports its parts (issue 29)
            from strongroom.oauth.tokens import TokenService
            from strongroom.oauth.verify import AccessTokenVerifier

            tokens = TokenService(keys, settings.base_url, settings.api_audience)
            verifier = AccessTokenVerifier(
                keys, settings.base_url, settings.api_audience, read_engine
            )
        sessions = session_factory(engine)
        reads = Reads(read_engine, pool_size=settings.database_read_pool_size)
        durable = DurableRecords(sessions, settings.idempotency_cache_seconds)
        embeddings = create_provider(settings)
        remembered = RememberedEmbeddings(embeddings) if embeddings is not None else None
        return cls(
            settings=settings,
            engine=engine,
            read_engine=read_engine,
            reads=reads,
            sessions=sessions,
            key_pepper=key_pepper,
            redis=redis,
            key_cache=key_cache,
            authenticator=ApiKeyAuthenticator(reads, key_pepper, key_cache),
            invalidations=invalidations,
            rate_limiter=RateLimiter(buckets, settings.rate_limit_tiers),
            idempotency=IdempotencyGuard(idempotency_store, settings, durable),
            cursors=CursorCodec(secret_key),
            tokens=tokens,
            token_verifier=verifier,
            upstream=_upstream(settings),
            blobs=create_blob_store(settings),
            jobs=create_job_queue(settings),
            work=WorkPool(settings, PARSING_MODULES),
            answers=create_answer_engine(settings, remembered),
            embeddings=embeddings,
            _remembered=remembered,
            vectors=(
                VectorMemory(settings.search_vector_memory_mb * 2**20, sessions)
                if embeddings is not None and settings.search_vector_memory_mb
                else None
            ),
            terms=(
                TermMemory(settings.search_term_memory_mb * 2**20, sessions)
                if settings.search_term_memory_mb
                else None
            ),
        )

    def semantic(self) -> Semantic | None:
        """How this process's searches use meaning (issue 16): its embeddings provider, the
        fusion settings and its held vectors; None: by words only."""
        return Semantic.configured(self.request_embeddings, self.settings, self.vectors)

    def require_oauth(self) -> TokenService:
        """The token service; raises Problem `not_implemented` when OAuth is off."""
        if self.tokens is None:
            raise Problem(
                "not_implemented",
                "OAuth is not configured here: set STRONGROOM_OAUTH_SIGNING_KEYS_FILE.",
            )
        return self.tokens

    async def announce(self, event: dict[str, str]) -> None:
        """Publish an invalidation event (D16). If Redis is away the change still lands
        everywhere within the key cache's TTL (2 s), so this logs instead of failing."""
        try:
            await self.invalidations.publish(event)
        except StoreUnavailable as error:
            log.warning("invalidation event not published", extra={"error": error.reason})

    async def start(self) -> None:
        """Start the background work of a serving process: cache invalidation, and in the
        embedded default the job runners, which first pick up what a previous run left, and
        the background tasks of a process that runs jobs (strongroom.background.TASKS)."""
        if self.embeddings is None:
            log.info("search is lexical: no embeddings provider is configured")
        else:
            log.info("search is hybrid: embeddings by %s", self.embeddings.model)
            warm(self.embeddings)  # loaded in the background, before the first search needs it
        index = await vector_index(self.read_engine)
        log.info("vector search: %s", index)
        if self.vectors is not None and "ranked in process" in index:
            log.info(
                "without pgvector, passage vectors are held in memory, at most %d MiB",
                self.settings.search_vector_memory_mb,
            )
        if self.terms is None:
            log.info("search by words: the database's full-text index on every search")
        else:
            log.info(
                "search by words: passage terms held in memory, at most %d MiB",
                self.settings.search_term_memory_mb,
            )
        await self._remove_leftover_spool_files()
        if self.settings.is_embedded:  # jobs run here: their parsers ready before they come
            self.work.warm()
        unfinished = await unfinished_jobs(self) if self.settings.is_embedded else []
        await self.jobs.start(lambda job_id: run_job(self, job_id), unfinished)
        self.background.start_for(Process.EMBEDDED if self.settings.is_embedded else Process.API)

    async def close(self) -> None:
        await self.background.stop()
        for held in (self.vectors, self.terms):
            if held is not None:
                await held.close()
        await self.jobs.close()
        await self.work.close()
        await self.blobs.close()
        await self.answers.close()
        if self.redis is not None:
            await self.redis.aclose()
        if self.upstream is not None:
            await self.upstream.close()
        if self._job_threads is not None:
            self._job_threads.shutdown(wait=False, cancel_futures=True)
        await self.reads.close()
        await self.engine.dispose()


def _signing_keys(settings: Settings) -> SigningKeys | None:
    """The configured signing keys; generated on first start in the embedded default."""
    if settings.oauth_signing_keys_file is None and not settings.is_embedded:
        return None
    from strongroom.oauth.signing import load_signing_keys

    return load_signing_keys(settings.signing_keys_path, create=settings.is_embedded)


def _upstream(settings: Settings) -> UpstreamProvider | None:
    """The OpenID provider users sign in with (D39), where one is configured."""
    if not settings.oidc_issuer:
        return None
    from strongroom.oauth.upstream import UpstreamProvider

    return UpstreamProvider(settings)

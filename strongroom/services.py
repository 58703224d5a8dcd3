"""What a capability's handlers and its jobs may use of the process they run in.

`strongroom.runtime.Runtime`, the composition root, builds these parts once per process and is
the one implementation; the vault, chat, templates and workflows receive it typed as
`Services`, so none of them imports the composition root (docs/development.md, "Who may import
whom"). Parts below the capability areas (the request path, the job runner, the OAuth routes)
declare the few parts they use in Protocols of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.answers import AnswerEngine
from strongroom.api.capability import Call
from strongroom.api.pagination import CursorCodec
from strongroom.db.reads import Reads
from strongroom.embeddings import EmbeddingProvider
from strongroom.jobs.bounded import WorkPool
from strongroom.jobs.models import Job
from strongroom.jobs.queue import JobQueue
from strongroom.jobs.turns import in_turn
from strongroom.retrieval.semantic import Semantic
from strongroom.retrieval.term_memory import TermMemory
from strongroom.settings import Settings
from strongroom.storage import BlobStore

T = TypeVar("T")


class Services(Protocol):
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    reads: Reads  # constant SELECTs of hot paths, on the driver (issue 29)
    blobs: BlobStore  # document bytes (D42)
    jobs: JobQueue  # background work (D46)
    work: WorkPool  # the bounded children that parse a job's files (issue 41)
    cursors: CursorCodec  # signed list cursors (D5)
    answers: AnswerEngine  # chat's answer engine (D44)
    embeddings: EmbeddingProvider | None  # None: search by words only (issue 16)
    # `embeddings` for documents' vectors, remembering the last texts (issue 50); None with it.
    document_embeddings: EmbeddingProvider | None
    terms: TermMemory | None  # passage terms held for the search by words (issue 16)

    def semantic(self) -> Semantic | None:
        """How searches use meaning; None: by words only."""
        ...

    async def in_job_thread(self, function: Callable[..., T], *args, **kwargs) -> T:
        """Run a job's blocking work in the jobs' own bounded pool of threads."""
        ...

    async def announce(self, event: dict[str, str]) -> None:
        """Tell every process of a change to a tenant's credentials or credits (D16)."""
        ...


async def queue_at_commit(call: Call[Services], job: Job) -> None:
    """Queue `job`, already in the call's session, once the call's transaction commits, in
    its tenant's turn (strongroom.jobs.turns.in_turn). Committed but never queued (the queue
    was down), it stays `pending` and a worker's sweep queues it."""
    await call.session.flush()
    priority = await in_turn(call.session, job)
    queue, job_id = call.services.jobs, job.id
    call.after_commit(lambda: queue.enqueue(job_id, priority=priority))

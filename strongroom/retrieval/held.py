"""What a search reads of a partition's passages, held in the process and kept coherent with
the database (issue 16): the passages' vectors (strongroom.retrieval.vector_memory) and their
terms (strongroom.retrieval.term_memory) are each one `HeldPartitions`, which this module gives
their loading, coherence, filters and memory bound; each kind says what it reads of a
passage and how it stores it.

Loading: a partition's first search loads its passages itself when they are few (at most
`inline_rows`); more are loaded in the background, in a session of their own, while the
searches meanwhile take the database path they would take without this module: no request
waits seconds for a load.

Coherence: every search first reads its partition's row of `vault_generations`, which
triggers bump in the transaction of any change to its documents (added, deleted, status,
project) or to their `passages_version` (bumped by a trigger whenever a passage's terms or
vector are updated, and by ingestion when it replaces a document's passages; migrations
0014, 0015). Unchanged: what is held is current. Changed: the partition's `ready` documents
are listed (id, project, `passages_version`); a document not held, or held at another
version, has its passages (re)loaded, one no longer listed (deleted, failed) is dropped. So
a change made by any process (`strongroom reembed`, `strongroom reindex`, a worker, another
API replica) is seen by the next search. The generation is read before the list and the
passages after it, so what is held is never older than what it is filed under (at worst it
is read again).

Filters: the project, document and `ready` conditions become a mask over the held rows
(`allowed`) before anything is scored, so no passage outside them is a candidate and no page
comes back short; what is held only ever belongs to the partition's own tenant and
environment.

Bound: all partitions of one kind together hold at most `max_bytes`; the least recently
searched partition is dropped first. A partition that cannot fit alone is not held: its
searches take the database path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import String, select, type_coerce
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.corpus.models import Document, DocumentChunk, DocumentStatus, VaultGeneration
from strongroom.lazy import numpy as np
from strongroom.retrieval.filters import Filters
from strongroom.tenants.partition import Partition

log = logging.getLogger("strongroom.vault")  # the name its logs had before the move: kept

LOAD_BATCH = 200  # documents whose passages are read per statement
LOAD_PASSAGES = 20_000  # and passages (one document of more is read alone)
INLINE_ROWS = 2_000  # a search loads at most this many passages itself; more load apart


@dataclass
class Held:
    """One partition's held passages. Rows are only appended (a search reading rows [:rows]
    while another appends is unaffected); compaction builds new arrays.

    `codes[row]` is the code of the (document, version) the row belongs to: a document
    loaded again gets a new code, and the rows of a retired code are dead (never allowed,
    dropped at the next compaction). `code_projects[code]` is the number of the code's
    project (in `projects`), -1 once the code is retired: filters become masks over codes
    with numpy, whatever the number of documents."""

    codes: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    ids: list = field(default_factory=list)  # chunk id of each row, as the driver gives it
    rows: int = 0
    generation: int | None = None  # the partition's generation when last refreshed
    # document key -> (code, passages_version, project key)
    documents: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    code_projects: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    projects: dict[str, int] = field(default_factory=dict)  # project key -> number
    next_code: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def nbytes(self) -> int:
        raise NotImplementedError

    def hold(self, document: str, version: int, project: str) -> int:
        """A new code for the document at `version` (its previous one retired)."""
        self.drop(document)
        code = self.next_code
        self.next_code += 1
        if code >= len(self.code_projects):
            grown = np.full(max(64, 2 * len(self.code_projects)), -1, np.int32)
            grown[: len(self.code_projects)] = self.code_projects
            self.code_projects = grown
        self.documents[document] = (code, version, project)
        self.code_projects[code] = self._number(project)
        return code

    def drop(self, document: str) -> None:
        """Retire the document's code, if held: its rows are dead."""
        held = self.documents.pop(document, None)
        if held is not None:
            self.code_projects[held[0]] = -1

    def move(self, document: str, project: str) -> None:
        """The document is now in `project` (its rows unchanged)."""
        code, version, _ = self.documents[document]
        self.documents[document] = (code, version, project)
        self.code_projects[code] = self._number(project)

    def _number(self, project: str) -> int:
        """The project's number in `code_projects` (a new one for a project not seen)."""
        return self.projects.setdefault(project, len(self.projects))

    def allowed(self, filters: Filters) -> np.ndarray:
        """allowed[row] for rows [:rows]: whether the row may be a candidate under
        `filters` (its document's current version, in the filters' projects and
        documents)."""
        code_projects = self.code_projects[: self.next_code]
        if filters.project_ids is None:
            by_code = code_projects >= 0
        else:
            numbers = [self.projects.get(project.hex, -1) for project in filters.project_ids]
            by_code = np.isin(code_projects, [number for number in numbers if number >= 0])
        if filters.document_ids is not None:
            named = np.zeros(len(by_code), bool)
            for document in filters.document_ids:
                held = self.documents.get(document.hex)
                if held is not None:
                    named[held[0]] = True
            by_code &= named
        return by_code[self.codes[: self.rows]]

    def live(self) -> np.ndarray:
        """The indices of the rows [:rows] whose document version is still held."""
        return np.flatnonzero(self.code_projects[self.codes[: self.rows]] >= 0)


class TooLarge(Exception):
    """A partition's passages cannot fit in the memory bound on their own."""


class _NotHeld(Exception):
    """A refresh stopped without fault of the partition's own (evicted while loading, no
    room while other partitions refresh): it is not held now, and tried again later."""


H = TypeVar("H", bound=Held)


class HeldPartitions(Generic[H]):
    """The passages of the partitions searched lately, at most `max_bytes` in all, for one
    kind of search (see the module's docstring). A subclass says what it reads of a passage
    (`_columns`, `_where`), how it adds a batch of documents' passages to what it holds
    (`_add`), and what a partition costs (`Held.nbytes`)."""

    kind = "passages"  # what is held, for the log
    setting = ""  # the environment variable of the bound, for the log

    def __init__(
        self,
        max_bytes: int,
        sessions: async_sessionmaker[AsyncSession],
        inline_rows: int = INLINE_ROWS,
    ) -> None:
        self.max_bytes = max_bytes
        self.inline_rows = inline_rows
        self._sessions = sessions
        self._held: OrderedDict[Hashable, H] = OrderedDict()
        # key -> (generation, passages) when it did not fit: not tried again until it shrinks
        self._too_large: dict[Hashable, tuple[int | None, int]] = {}
        # key -> generation at which holding it failed: not tried again until it changes
        self._failed: dict[Hashable, int] = {}
        self._loading: dict[Hashable, asyncio.Task] = {}

    # What a kind says.

    def _new(self) -> H:
        raise NotImplementedError

    def _columns(self, key: Hashable) -> Sequence[Any]:
        """What is read of each passage besides its document and chunk id."""
        raise NotImplementedError

    def _where(self, key: Hashable) -> Sequence[Any]:
        """Which of the documents' passages are read (besides the partition's own)."""
        return ()

    def _floor(self, passages: int) -> int:
        """The least `passages` can cost held (bytes): past `max_bytes` they are not read."""
        return 0

    async def _decide(self, session, key: Hashable, partition: Partition, held: H, changed) -> None:
        """Raise TooLarge when `held` with the passages of the `changed` documents (as
        _ready_documents lists them, not yet read) cannot fit in the bound alone, deciding
        before any is read into what is held. By default from their count (`_floor`); a
        kind may also count what they would cost, as long as counting costs at most about
        the bound (issue 44.4)."""
        if self._floor(sum(count for *_, count in changed)) > self.max_bytes:
            raise TooLarge  # decided from the counts, before reading any passage

    async def _add(
        self, key: Hashable, held: H, loaded: list[tuple[int, list]], expected: int
    ) -> None:
        """Append the passages of `loaded` ((code, [(chunk id, *columns)]) per document);
        `expected`: how many passages this refresh still brings, these included. Raises
        TooLarge when they cannot fit in the bound."""
        raise NotImplementedError

    # The common part.

    @property
    def nbytes(self) -> int:
        """Bytes held now, over all partitions (at most `max_bytes`)."""
        return sum(held.nbytes for held in self._held.values())

    def partitions(self) -> list[Hashable]:
        """The keys held, least recently searched first."""
        return list(self._held)

    async def settled(self) -> None:
        """Wait for the background loads under way (for benchmarks and tests)."""
        while self._loading:
            await asyncio.wait(list(self._loading.values()))

    async def close(self) -> None:
        """Stop the background loads."""
        for task in list(self._loading.values()):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._loading.values(), return_exceptions=True)
        self._loading.clear()

    async def current(self, session, key: Hashable, partition: Partition) -> H | None:
        """The partition's held passages, brought up to date with the database; None when
        they are not held here now (too large, being loaded, failed at this generation):
        the caller then takes the database path."""
        if key in self._loading:
            return None
        generation = await _generation(session, partition)
        if generation in (self._too_large.get(key, (None, 0))[0], self._failed.get(key)):
            return None
        held = self._held.get(key)
        if held is not None and held.generation == generation:
            self._held.move_to_end(key)
            return held
        listed = await _ready_documents(session, partition)
        passages = sum(count for _, _, _, count in listed)
        if passages >= self._too_large.get(key, (None, passages + 1))[1]:
            return None
        held = self._held_for(key)
        if _to_load(held, listed) > self.inline_rows:
            if key not in self._loading:  # another search may have started it meanwhile
                self._loading[key] = asyncio.create_task(self._load(key, partition))
            return None
        return await self._update(session, key, partition, held, listed, generation)

    def _held_for(self, key: Hashable) -> H:
        """The partition's held passages (none at first), now the most recently searched."""
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = self._new()
        self._held.move_to_end(key)
        return held

    async def _load(self, key: Hashable, partition: Partition) -> None:
        """Refresh the partition in the background, in a session of its own."""
        try:
            async with self._sessions() as session:
                generation = await _generation(session, partition)
                listed = await _ready_documents(session, partition)
                held = self._held_for(key)
                await self._update(session, key, partition, held, listed, generation)
        except Exception:  # reading the generation or the documents failed
            self._held.pop(key, None)
            log.exception("loading a partition's %s failed: its searches read them", self.kind)
        finally:
            if self._loading.get(key) is asyncio.current_task():
                del self._loading[key]

    async def _update(
        self, session, key: Hashable, partition: Partition, held: H, listed, generation: int
    ) -> H | None:
        """Refresh `held` to the listed documents under its lock and file it under
        `generation`; None, holding nothing for the partition, when it does not fit, fails,
        is cancelled (a search whose client went away) or was dropped meanwhile. What a
        refresh left half done is never searched: it is dropped."""
        passages = sum(count for _, _, _, count in listed)
        fresh = None
        try:
            async with held.lock:
                if self._held.get(key) is not held:  # dropped while this one waited
                    return None
                fresh = not held.documents
                await self._refresh(session, key, partition, held, listed)
                held.generation = generation
        except TooLarge:
            self._drop(key, held)
            if fresh:  # on its own, not for rows a refresh left dead: not tried again
                self._too_large[key] = (generation, passages)  # until it shrinks
                log.warning(
                    "a partition's %s (%d passages) exceed %s: its searches read them from "
                    "the database",
                    self.kind,
                    passages,
                    self.setting,
                )
            return None
        except _NotHeld:
            self._drop(key, held)
            return None
        except asyncio.CancelledError:
            self._drop(key, held)
            raise
        except Exception:
            self._drop(key, held)
            self._failed[key] = generation
            log.exception(
                "holding a partition's %s failed: its searches read them from the database "
                "until it changes",
                self.kind,
            )
            return None
        self._too_large.pop(key, None)
        self._failed.pop(key, None)
        return held

    def _drop(self, key: Hashable, held: H) -> None:
        """Hold nothing for the partition, if `held` is still what is held for it."""
        if self._held.get(key) is held:
            del self._held[key]

    async def _refresh(self, session, key: Hashable, partition: Partition, held: H, listed) -> None:
        """Bring `held` to the listed documents: drop the unlisted, (re)load the new and
        the changed. Raises TooLarge when they cannot fit in the bound."""
        wanted = {document: (version, project) for document, project, version, _ in listed}
        for document in [d for d in held.documents if d not in wanted]:
            held.drop(document)
        for document, (_, _, project) in list(held.documents.items()):
            if wanted[document][1] != project:  # moved to another project
                held.move(document, wanted[document][1])
        changed = _stale(held, listed)
        # Room for all of them at once: one copy of what is held, not one per growth.
        expected = sum(count for *_, count in changed)
        await self._decide(session, key, partition, held, changed)
        for batch in _batches(changed):
            rows = await self._read(session, key, partition, batch)
            if self._held.get(key) is not held:  # evicted while loading: stop here
                raise _NotHeld
            by_document: dict[str, list] = {document: [] for document in batch}
            for document, *passage in rows:
                by_document[_key(document)].append(passage)
            loaded = []
            for document in batch:
                code = held.hold(document, *wanted[document])
                if by_document[document]:
                    loaded.append((code, by_document[document]))
            if loaded:
                await self._add(key, held, loaded, expected)
            expected -= sum(len(passages) for _, passages in loaded)

    async def _read(self, session, key: Hashable, partition: Partition, documents: Sequence[str]):
        """(document id, chunk id, *columns) of those documents' passages, inside the
        partition only."""
        statement = select(
            type_coerce(DocumentChunk.document_id, String),
            type_coerce(DocumentChunk.id, String),
            *self._columns(key),
        ).where(
            DocumentChunk.tenant_id == partition.tenant_id,
            DocumentChunk.environment == partition.environment.value,
            DocumentChunk.document_id.in_([uuid.UUID(hex=document) for document in documents]),
            *self._where(key),
        )
        return list((await session.exec(statement)).all())

    def _room(self, key: Hashable, needed: int) -> int:
        """Make room for `needed` bytes for `key`'s partition, dropping the least recently
        searched others that no refresh is using; returns the bytes the others still hold.
        Raises TooLarge when `needed` alone exceeds the bound, _NotHeld when the others in
        use leave too little room now."""
        if needed > self.max_bytes:
            raise TooLarge
        others = sum(h.nbytes for k, h in self._held.items() if k != key)
        idle = [k for k, h in self._held.items() if k != key and not h.lock.locked()]
        while others + needed > self.max_bytes and idle:
            others -= self._held.pop(idle.pop(0)).nbytes
        if others + needed > self.max_bytes:
            raise _NotHeld
        return others


def _batches(changed: list[tuple[str, str, int, int]]) -> list[list[str]]:
    """The documents to read, in statements of at most LOAD_BATCH documents and (but for
    a document larger on its own) LOAD_PASSAGES passages, so that what one statement
    brings is bounded too."""
    batches: list[list[str]] = [[]]
    passages = 0
    for document, _, _, count in changed:
        full = len(batches[-1]) >= LOAD_BATCH or passages + count > LOAD_PASSAGES
        if batches[-1] and full:
            batches.append([])
            passages = 0
        batches[-1].append(document)
        passages += count
    return [batch for batch in batches if batch]


def _stale(held: Held, listed) -> list[tuple[str, str, int, int]]:
    """The listed documents (as _ready_documents gives them) not held at their version."""
    return [entry for entry in listed if held.documents.get(entry[0], (None, None))[1] != entry[2]]


def _to_load(held: Held, listed) -> int:
    """How many passages a refresh of `held` to the listed documents would read."""
    return sum(count for *_, count in _stale(held, listed))


async def _generation(session, partition: Partition) -> int:
    """The partition's count of changes to its documents (0 before the first)."""
    statement = select(VaultGeneration.generation).where(
        VaultGeneration.tenant_id == partition.tenant_id,
        VaultGeneration.environment == partition.environment.value,
    )
    return (await session.exec(statement)).scalar_one_or_none() or 0


async def _ready_documents(session, partition: Partition) -> list[tuple[str, str, int, int]]:
    """(document key, project key, passages_version, passage_count) of the partition's
    ready documents."""
    statement = select(
        type_coerce(Document.id, String),
        type_coerce(Document.project_id, String),
        Document.passages_version,
        Document.passage_count,
    ).where(
        Document.tenant_id == partition.tenant_id,
        Document.environment == partition.environment.value,
        Document.status == DocumentStatus.READY.value,
    )
    rows = (await session.exec(statement)).all()
    return [
        (_key(document), _key(project), version, count)
        for document, project, version, count in rows
    ]


async def off_loop_if(large: bool, function, *arguments):
    """`function(*arguments)`: in the default executor when `large` (numpy work of more than
    a few milliseconds must not stall the event loop), here otherwise (a thread hop costs
    more than small work)."""
    if large:
        return await asyncio.get_running_loop().run_in_executor(None, function, *arguments)
    return function(*arguments)


def _key(value) -> str:
    """An id as 32 hex digits, whether the driver gave a UUID (psycopg) or text (SQLite)."""
    return value.hex if isinstance(value, uuid.UUID) else value.replace("-", "")


def as_uuid(value) -> uuid.UUID:
    """A chunk id as the driver gave it, as a UUID."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)

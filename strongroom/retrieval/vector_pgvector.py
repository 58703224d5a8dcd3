"""Search by meaning inside PostgreSQL with pgvector and HNSW (issue 16).

Where the database has the `vector` extension, migration 0013 gives `document_chunks` an
untyped `embedding_vector vector` column and passage vectors are stored there instead of in
`embedding` (the float32 bytes of SQLite and of PostgreSQL without pgvector): one copy per
database (strongroom.retrieval.vectors.VectorStore writes either). As models differ in
dimensions, each (model, dimensions) gets its own partial expression HNSW index,

    CREATE INDEX document_chunks_hnsw_<hash>_<D> ON document_chunks USING hnsw
        ((embedding_vector::vector(D)) vector_cosine_ops)
        WHERE embedding_model = '<model>' AND vector_dims(embedding_vector) = D

made when a model's first vectors are written (ingestion, `strongroom reembed`). A search is
one statement: the caller's tenant, environment, `ready`, project and document conditions in
its WHERE, `ORDER BY embedding_vector::vector(D) <=> question LIMIT 300`, the model and D as
literals (so the planner can match the partial index, also in a generic plan), with
`hnsw.iterative_scan = relaxed_order` so that rows the filters reject make the index scan go
on rather than shorten the page, up to `hnsw.max_scan_tuples` visited; it is planned for the
actual tenant and filters each time (`plan_cache_mode = force_custom_plan`). If it still
returns fewer than 300 (a scope that is a small part of the table), the scope's vectors are
ranked exactly by the same statement without the index (the untyped column, which it does
not cover), when there are at most `search_max_vectors` of them. Results are re-sorted by exact
distance (relaxed order is only nearly sorted).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
import weakref

from sqlalchemy import (
    Column,
    MetaData,
    String,
    Table,
    and_,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.types import UserDefinedType

from strongroom.corpus.models import DocumentChunk
from strongroom.lazy import numpy as np

log = logging.getLogger("strongroom.vault")  # the name its logs had before the move: kept

COLUMN = "embedding_vector"
INDEX = "pgvector-hnsw"
# HNSW search bounds: the candidate list of each step of the scan, and the most index tuples
# one search visits while filters reject them (pgvector's default, made explicit).
EF_SEARCH = 100
MAX_SCAN_TUPLES = 20_000
BUILD_MEMORY = "512MB"  # maintenance_work_mem while an index is built: its graph fits


class Vector(UserDefinedType):
    """pgvector's `vector` (untyped, or `vector(D)`), bound as its text form."""

    cache_ok = True

    def __init__(self, dimensions: int | None = None) -> None:
        self.dimensions = dimensions

    def get_col_spec(self, **_) -> str:
        return "vector" if self.dimensions is None else f"vector({self.dimensions})"

    def bind_expression(self, bindvalue):
        return cast(bindvalue, self)

    def bind_processor(self, dialect):
        return lambda value: None if value is None else as_text(value)


def as_text(vector) -> str:
    """A vector in pgvector's text form. `repr` of each float32 (as a double) is exact, and
    pgvector reads it back to the same float32."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


_enabled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def enabled(connection) -> bool:
    """Whether this database stores vectors in pgvector (migration 0013 found the extension):
    looked up once per engine. `connection`: an AsyncConnection."""
    engine = connection.engine.sync_engine
    if engine.dialect.name != "postgresql":
        return False
    if engine not in _enabled:
        found = await connection.execute(
            text(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'document_chunks' AND column_name = :column"
            ),
            {"column": COLUMN},
        )
        _enabled[engine] = found.first() is not None
    return _enabled[engine]


async def describe(engine) -> str:
    """Which vector search runs on this database, for /readyz and the start-up log."""
    if engine.dialect.name != "postgresql":
        return "none (SQLite: vectors ranked in process)"
    async with engine.connect() as connection:
        if await enabled(connection):
            return INDEX
        available = await connection.execute(
            text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        )
        if available.first() is None:
            return "none (no pgvector extension: vectors ranked in process)"
        return (
            "none (pgvector is available but was not when migration 0013 ran, or could not be "
            "created: vectors ranked in process; docs/embeddings.md)"
        )


_CHUNKS: Table | None = None


def chunks_table() -> Table:
    """`document_chunks` with its pgvector column, which the models do not declare (it exists
    only where the extension does), for writing vectors."""
    global _CHUNKS
    if _CHUNKS is None:
        table = DocumentChunk.__table__.to_metadata(MetaData())
        table.append_column(Column(COLUMN, Vector(), nullable=True))
        _CHUNKS = table
    return _CHUNKS


def index_name(model: str, dimensions: int) -> str:
    return f"document_chunks_hnsw_{hashlib.sha256(model.encode()).hexdigest()[:12]}_{dimensions}"


def _predicate(model: str, dimensions: int) -> str:
    """The rows of a model's index: its vectors, of its dimensions (a vector of others under
    the same name, however it came, is left out rather than failing the cast)."""
    quoted = "'" + model.replace("'", "''") + "'"
    return f"embedding_model = {quoted} AND vector_dims({COLUMN}) = {int(dimensions)}"


_indexed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def ensure_index(engine, model: str, dimensions: int) -> None:
    """The HNSW index of the model's vectors, made if missing (under an advisory lock: one
    process builds it, the others wait and find it). Known indexes are remembered per
    engine: this costs one round trip per model and process."""
    sync_engine = engine.sync_engine
    known = _indexed.setdefault(sync_engine, set())
    if (model, dimensions) in known:
        return
    name = index_name(model, dimensions)
    async with engine.begin() as connection:
        await connection.execute(
            text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": name}
        )
        exists = await connection.execute(text("SELECT to_regclass(:name)"), {"name": name})
        if exists.scalar_one() is None:
            await connection.execute(text(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'"))
            await connection.execute(
                text(
                    f"CREATE INDEX IF NOT EXISTS {name} ON document_chunks USING hnsw "
                    f"(({COLUMN}::vector({int(dimensions)})) vector_cosine_ops) "
                    f"WHERE {_predicate(model, dimensions)}"
                )
            )
            log.info("built the HNSW index of %s's vectors", model, extra={"index": name})
    known.add((model, dimensions))


async def ranking(
    session, model: str, max_vectors: int, scope, query: np.ndarray, pool_size: int
) -> list[tuple[uuid.UUID, float]]:
    """(chunk id, cosine) of the `pool_size` passages of the scope closest to the question
    (`query`, its vector) among those with a vector of `model`, best first, ties by id; exact
    by a scan when the index misses some of at most `max_vectors` passages in scope."""
    dimensions = int(query.shape[0])
    question_vector = bindparam("question", as_text(query), type_=String)
    column = literal_column(f"document_chunks.{COLUMN}", type_=Vector())
    # The model and dimensions inline: a partial index is matched only against constants.
    of_model = and_(
        DocumentChunk.embedding_model == bindparam("model", model, literal_execute=True),
        func.vector_dims(column) == bindparam("dimensions", dimensions, literal_execute=True),
    )

    def nearest(distance, limit: int):
        return (
            scope(select(DocumentChunk.id, distance.label("distance")))
            .where(of_model)
            .order_by(distance)
            .limit(limit)
        )

    approximate = cast(column, Vector(dimensions)).op("<=>")(
        cast(question_vector, Vector(dimensions))
    )
    connection = await session.connection()
    await connection.execute(
        text(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', :ef_search, true), "
            "set_config('hnsw.max_scan_tuples', :max_scan_tuples, true), "
            # Planned for this tenant and filters every time (a prepared statement's generic
            # plan cannot tell a tenant of 50 passages, better served by its own rows, from
            # one of 100,000, better served by the index): about 0.3 ms.
            "set_config('plan_cache_mode', 'force_custom_plan', true)"
        ),
        {"ef_search": str(EF_SEARCH), "max_scan_tuples": str(MAX_SCAN_TUPLES)},
    )
    rows = (await connection.execute(nearest(approximate, pool_size))).all()
    if len(rows) < pool_size:
        in_scope = (
            await connection.execute(
                select(func.count()).select_from(
                    scope(select(DocumentChunk.id))
                    .where(of_model)
                    .limit(max_vectors + 1)
                    .subquery()
                )
            )
        ).scalar_one()
        if len(rows) < in_scope <= max_vectors:
            exact = column.op("<=>")(cast(question_vector, Vector(dimensions)))
            rows = (await connection.execute(nearest(exact, pool_size))).all()
    ranked = [(chunk_id, 1.0 - float(distance)) for chunk_id, distance in rows]
    ranked.sort(key=lambda item: (-item[1], item[0]))
    return ranked

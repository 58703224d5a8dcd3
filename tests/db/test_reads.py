"""`db.reads.Reads`: constant SELECTs of hot paths on psycopg itself (issue 29), with the
rows SQLAlchemy gives, connections kept and replaced as the engine's are, and a bound on how
many it opens. On the real PostgreSQL, and on SQLite (the embedded default's path)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from sqlalchemy import Column, MetaData, String, Table, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.types import Uuid

from strongroom.db.reads import Reads
from strongroom.db.types import UTCDateTime
from tests.conftest import own_postgres_database

metadata = MetaData()
items = Table(
    "read_items",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("owner", String, nullable=False),
    Column("name", String, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)
BY_OWNER = (
    select(items)
    .where(items.c.owner == bindparam("owner"))
    .order_by(items.c.created_at.desc())
    .limit(bindparam("rows"))
)
SLEEP = select(func.pg_sleep(bindparam("seconds")).label("slept"))
PID = select(func.pg_backend_pid().label("pid"))
START = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)


async def _engine_with_items(url: str) -> AsyncEngine:
    engine = create_async_engine(url)
    async with engine.begin() as connection:
        await connection.run_sync(metadata.create_all)
        await connection.execute(
            items.insert(),
            [
                {
                    "id": uuid.uuid4(),
                    "owner": "a" if number % 2 else "b",
                    "name": f"item {number}",
                    "created_at": START + timedelta(minutes=number),
                }
                for number in range(10)
            ],
        )
    return engine


@pytest.fixture(params=["postgresql", "sqlite"])
async def engine(request, tmp_path) -> AsyncIterator[AsyncEngine]:
    if request.param == "sqlite":
        engine = await _engine_with_items(f"sqlite+aiosqlite:///{tmp_path / 'reads.db'}")
        yield engine
        await engine.dispose()
        return
    async with own_postgres_database() as url:
        engine = await _engine_with_items(url.replace("postgresql://", "postgresql+psycopg://"))
        yield engine
        await engine.dispose()


async def _sqlalchemy_rows(engine: AsyncEngine, params: dict) -> list:
    async with engine.connect() as connection:
        return list((await connection.execute(BY_OWNER, params)).all())


async def test_reads_give_the_rows_sqlalchemy_gives(engine):
    reads = Reads(engine, pool_size=2)
    try:
        params = {"owner": "a", "rows": 3}
        rows = await reads.all(BY_OWNER, params)
        expected = await _sqlalchemy_rows(engine, params)
        assert [tuple(row) for row in rows] == [tuple(row) for row in expected]
        assert [row.name for row in rows] == ["item 9", "item 7", "item 5"]
        assert all(row.created_at.utcoffset() == timedelta(0) for row in rows)
        assert isinstance(rows[0].id, uuid.UUID)
        assert await reads.all(BY_OWNER, {"owner": "nobody", "rows": 3}) == []
    finally:
        await reads.close()


async def test_a_statement_with_fixed_values_is_refused(postgres_engine):
    reads = Reads(postgres_engine, pool_size=1)
    with_literal = select(items).where(items.c.owner == "a")
    with pytest.raises(ValueError, match="bind parameters only"):
        await reads.all(with_literal, {})
    await reads.close()


@pytest.fixture
async def postgres_engine() -> AsyncIterator[AsyncEngine]:
    async with own_postgres_database() as url:
        engine = await _engine_with_items(url.replace("postgresql://", "postgresql+psycopg://"))
        yield engine
        await engine.dispose()


async def _backends(engine: AsyncEngine) -> set[int]:
    """Process ids of this database's other client connections."""
    async with engine.connect() as connection:
        result = await connection.exec_driver_sql(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        return {row.pid for row in result}


async def test_a_connection_the_server_closed_is_replaced_not_used(postgres_engine):
    reads = Reads(postgres_engine, pool_size=2)
    try:
        await reads.all(BY_OWNER, {"owner": "a", "rows": 1})
        kept = await _backends(postgres_engine)
        assert len(kept) == 1
        async with postgres_engine.connect() as connection:  # as a restart or failover does
            await connection.exec_driver_sql(f"SELECT pg_terminate_backend({kept.pop()})")
        await asyncio.sleep(0.2)  # the server's FATAL message reaches the idle socket
        rows = await reads.all(BY_OWNER, {"owner": "a", "rows": 1})
        assert [row.name for row in rows] == ["item 9"]
    finally:
        await reads.close()


async def test_no_more_connections_than_the_pool_size(postgres_engine):
    reads = Reads(postgres_engine, pool_size=2)
    try:
        sleepers = [asyncio.create_task(reads.all(SLEEP, {"seconds": 0.5})) for _ in range(5)]
        await asyncio.sleep(0.3)
        assert len(await _backends(postgres_engine)) == 2
        results = await asyncio.gather(*sleepers)
        assert len(results) == 5
        assert len(await _backends(postgres_engine)) == 2  # kept, not closed
    finally:
        await reads.close()
    await asyncio.sleep(0.2)
    assert await _backends(postgres_engine) == set()


async def test_a_read_cancelled_mid_query_does_not_leave_its_connection_for_the_next(
    postgres_engine,
):
    reads = Reads(postgres_engine, pool_size=1)
    try:
        [(first,)] = await reads.all(PID, {})
        sleeper = asyncio.create_task(reads.all(SLEEP, {"seconds": 5}))
        await asyncio.sleep(0.3)
        sleeper.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sleeper
        [(then,)] = await reads.all(PID, {})
        assert then != first  # a new connection, not the one still sleeping on the server
    finally:
        await reads.close()


async def test_a_refused_query_keeps_its_connection_usable(postgres_engine):
    reads = Reads(postgres_engine, pool_size=1)
    try:
        with pytest.raises(psycopg.DataError):
            await reads.all(BY_OWNER, {"owner": "a", "rows": -1})  # LIMIT must not be negative
        assert len(await reads.all(BY_OWNER, {"owner": "a", "rows": 2})) == 2
        assert len(await _backends(postgres_engine)) == 1
    finally:
        await reads.close()


async def test_a_server_that_is_down_fails_the_read_at_once():
    engine = create_async_engine("postgresql+psycopg://postgres@127.0.0.1:1/nothing")
    reads = Reads(engine, pool_size=1)
    with pytest.raises(psycopg.OperationalError):
        await asyncio.wait_for(reads.all(BY_OWNER, {"owner": "a", "rows": 1}), timeout=5)
    await engine.dispose()


async def test_a_column_whose_sql_name_is_not_its_key_is_refused(postgres_engine):
    renamed = Table(
        "renamed_items", MetaData(), Column("vectors_version", String, key="passages_version")
    )
    reads = Reads(postgres_engine, pool_size=1)
    with pytest.raises(ValueError, match="passages_version"):
        await reads.all(select(renamed), {})
    await reads.close()

"""`db.together`: statements sent to PostgreSQL in one round trip, as one transaction
(issue 29). The values are bound on the client, so they must come back exactly as
SQLAlchemy's own execution stores them, quotes and all; and the statements commit all
together or not at all. On the real PostgreSQL (SQLite runs them one by one in a session:
tests/api/test_credits.py and test_idempotency_durable.py cover both)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import JSON, Column, Integer, LargeBinary, MetaData, String, Table, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.types import Uuid

from strongroom.db.reads import Reads
from strongroom.db.together import Statement, raise_refusal, send_together
from strongroom.db.types import UTCDateTime
from tests.conftest import own_postgres_database

metadata = MetaData()
things = Table(
    "together_things",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("name", String, nullable=False),
    Column("count", Integer, nullable=False),
    Column("tags", JSON, nullable=False),
    Column("blob", LargeBinary, nullable=False),
    Column("at", UTCDateTime, nullable=False),
)
ADD = insert(things)
COUNT = select(things.c.id)
HOSTILE_NAME = "O'Brien's \"café\" \\x00 %(id)s %s; DROP TABLE together_things; --"


class Refused(Exception):
    pass


@pytest.fixture
async def engine() -> AsyncIterator[AsyncEngine]:
    async with own_postgres_database() as url:
        engine = create_async_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        async with engine.begin() as connection:
            await connection.run_sync(metadata.create_all)
        yield engine
        await engine.dispose()


def a_thing(name: str = "thing", count: int = 1) -> dict:
    return {
        "id": uuid.uuid4(),
        "name": name,
        "count": count,
        "tags": {"a": [1, "two", None], "quote": "it's"},
        "blob": bytes(range(256)),
        "at": datetime(2026, 11, 28, 15, 30, 1, 123456, tzinfo=UTC),
    }


async def stored(engine: AsyncEngine) -> list:
    async with engine.connect() as connection:
        return list((await connection.execute(select(things).order_by(things.c.name))).all())


async def test_values_bound_on_the_client_are_stored_as_sqlalchemy_stores_them(engine):
    reads = Reads(engine, pool_size=1)
    sent, executed = a_thing(HOSTILE_NAME), a_thing("plain")
    try:
        assert await reads.together([Statement(ADD, sent)]) == [[]]
    finally:
        await reads.close()
    async with engine.begin() as connection:
        await connection.execute(ADD, executed)
    rows = {row.name: row for row in await stored(engine)}
    assert set(rows) == {HOSTILE_NAME, "plain"}
    ours, theirs = rows[HOSTILE_NAME], rows["plain"]
    assert ours.id == sent["id"]
    assert (ours.tags, ours.blob, ours.at) == (theirs.tags, theirs.blob, theirs.at)
    assert ours.at == sent["at"]


async def test_statements_sent_together_commit_all_or_none(engine):
    reads = Reads(engine, pool_size=1)
    first, duplicate = a_thing("first"), a_thing("second")
    duplicate["id"] = first["id"]  # the second INSERT fails on the primary key
    try:
        with pytest.raises(Exception, match="duplicate key"):
            await reads.together([Statement(ADD, first), Statement(ADD, duplicate)])
        assert await stored(engine) == []
        results = await reads.together(
            [Statement(ADD, a_thing("one")), Statement(ADD, a_thing("two")), Statement(COUNT, {})]
        )
        assert [len(rows) for rows in results] == [0, 0, 2]
        # The connection that failed went back to the pool and serves again.
        assert len(await reads.all(select(things.c.name), {})) == 2
    finally:
        await reads.close()


async def test_a_refusal_is_raised_in_place_of_the_driver_error(engine):
    """A statement names the exception its SQLSTATE stands for (here 23505, the unique
    violation); the others' work is not committed."""
    reads = Reads(engine, pool_size=1)
    first = a_thing("first")
    try:
        await reads.together([Statement(ADD, first)])
        again = Statement(ADD, first, refusals={"23505": Refused})
        with pytest.raises(Refused):
            await reads.together([Statement(ADD, a_thing("other")), again])
    finally:
        await reads.close()
    assert [row.name for row in await stored(engine)] == ["first"]


async def test_statements_end_an_open_transaction_with_its_commit(engine):
    """On a connection inside a transaction they are sent with its COMMIT: the earlier work
    and theirs commit together, or, when one fails, neither."""
    for fail in (True, False):
        async with engine.connect() as connection:
            await connection.execute(ADD, a_thing(f"earlier {fail}"))
            driver = (await connection.get_raw_connection()).driver_connection
            statements = [Statement(ADD, a_thing(f"later {fail}"))]
            if fail:
                statements.append(Statement(ADD, a_thing("bad", count=None)))  # NOT NULL
            try:
                await send_together(driver, connection.dialect, statements, commit=True)
            except Exception as error:
                raise_refusal(error, statements)  # none named: nothing raised here
                assert fail
                await connection.rollback()
            await connection.commit()  # a no-op after the driver's COMMIT
    names = [row.name for row in await stored(engine)]
    assert names == ["earlier False", "later False"]

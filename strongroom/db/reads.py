"""Reads on hot paths at the driver's speed (issue 29).

A list page is one SELECT whose statement never changes, only its parameters. Run through
SQLAlchemy's async engine it cost about twice what the same query costs through psycopg
alone (bench/RESULTS.md): a pool checkout and check-in through the greenlet bridge, the
isolation level set and reset on each checkout, the execution context, the result's type
processing. `Reads` runs such a statement, compiled once, on psycopg connections of its own,
in autocommit, with the session's time zone UTC (so `timestamptz` values come back as UTC,
as `db.types.UTCDateTime` gives them). Rows have attributes named after the statement's
columns, as SQLAlchemy's rows do.

The same connections carry the hot paths' writes that are one transaction by themselves:
a live read's debit (billing/credits.py), and the last statements of a write call that
opened no transaction, sent together (`together`, strongroom/db/together.py).

Only PostgreSQL has the fast path: on SQLite (the embedded default) `Reads` runs the same
statement through SQLAlchemy, one code path for callers either way.

Its connections are kept as SQLAlchemy's pool keeps the engine's, not as psycopg_pool
would: psycopg_pool connects in the background with a backoff of 1, 2, 4 ... seconds and
has requests wait for it, so while PostgreSQL restarts a read waited up to 30 s, and reads
came back seconds after writes (tests/faults/test_restarts.py). Here a request that finds no
idle connection connects itself, and fails at once (503) when the server is down. At most
`database_read_pool_size` connections are open; a connection the server has hung up on (a
restart, a failover) is found at checkout by the engine's poll (`db.engine.closed_by_server`)
and replaced; one left in doubt (an error that broke it, a request cancelled mid-query) is
closed, never reused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from strongroom.db.engine import closed_by_server
from strongroom.db.together import Statement, raise_refusal, send_together
from strongroom.lazy import LazyModule

# Read on PostgreSQL only, by then loaded with the engine's dialect (issue 29: SQLite, the
# embedded default, never imports psycopg).
psycopg = LazyModule("psycopg")
psycopg_rows = LazyModule("psycopg.rows")

CONNECT_TIMEOUT_SECONDS = 10


class Reads:
    """Constant SELECTs on the hot path; see the module's docstring."""

    def __init__(self, engine: AsyncEngine, *, pool_size: int) -> None:
        self._engine = engine
        # Whether statements run on the driver (else through SQLAlchemy, uncommitted).
        self.on_postgresql = engine.dialect.name == "postgresql"
        url = make_url(engine.url).set(drivername="postgresql")
        self._conninfo = url.render_as_string(hide_password=False)  # libpq's URL
        self._slots = asyncio.Semaphore(pool_size)
        self._idle: list[psycopg.AsyncConnection] = []
        self._compiled: dict[Select, str] = {}

    async def all(self, statement: Select, params: dict[str, Any]) -> list[Any]:
        """Every row of `statement` (a SELECT built once, its varying values bind
        parameters) with `params`. On PostgreSQL a SELECT whose WITH writes (a debit:
        billing/credits.py) commits as it returns, atomic by itself."""
        if not self.on_postgresql:
            async with self._engine.connect() as connection:
                return list((await connection.execute(statement, params)).all())
        sql = self._compiled.get(statement) or self._compile(statement)
        async with self._connection() as connection:
            cursor = await connection.execute(sql, params)
            return await cursor.fetchall()

    async def together(self, statements: list[Statement]) -> list[list[Any]]:
        """PostgreSQL only: `statements` in one round trip, as one transaction of their own
        (strongroom/db/together.py); each one's rows."""
        try:
            async with self._connection() as connection:
                dialect = self._engine.dialect
                return await send_together(connection, dialect, statements, commit=False)
        except psycopg.Error as error:
            raise_refusal(error, statements)
            raise

    def _compile(self, statement: Select) -> str:
        """The statement in psycopg's `%(name)s` placeholders. A literal value in it would be
        bound by SQLAlchemy, not rendered, and so lost here; a column whose SQL name is not
        its attribute's (`Column("vectors_version", key="passages_version")`) would come
        back under the other name: both are refused."""
        renamed = [column.key for column in statement.selected_columns if column.key != column.name]
        if renamed:
            raise ValueError(f"Reads give columns their SQL names; label these: {renamed}")
        compiled = statement.compile(dialect=self._engine.dialect)
        fixed = {name for name, value in compiled.params.items() if value is not None}
        if fixed:
            raise ValueError(f"Reads take bind parameters only; fixed values: {sorted(fixed)}")
        self._compiled[statement] = compiled.string
        return compiled.string

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        async with self._slots:
            connection = await self._checkout()
            try:
                yield connection
            except psycopg.Error:
                if not connection.broken:
                    self._idle.append(connection)  # a refused query leaves it usable
                raise
            except BaseException:
                await connection.close()  # cancelled mid-query: its state is unknown
                raise
            self._idle.append(connection)

    async def _checkout(self) -> psycopg.AsyncConnection:
        """The most recently used idle connection the server has not closed, else a new
        one (which fails at once when PostgreSQL is down)."""
        while self._idle:
            connection = self._idle.pop()
            if not closed_by_server(connection):
                return connection
            await connection.close()
        return await psycopg.AsyncConnection.connect(
            self._conninfo,
            autocommit=True,
            row_factory=psycopg_rows.namedtuple_row,
            options="-c TimeZone=UTC",
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
        )

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.close()

"""The async engine: psycopg 3 on PostgreSQL, aiosqlite for the embedded default."""

from __future__ import annotations

import select

from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.lazy import LazyModule
from strongroom.settings import Settings

# psycopg (about 40 ms of imports) loads with a PostgreSQL engine, whose dialect imports it;
# the embedded default on SQLite never does (issue 29).
psycopg = LazyModule("psycopg")


def create_engine(settings: Settings) -> AsyncEngine:
    url = settings.resolved_database_url
    if url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, connect_args={"timeout": 30})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    # No pool_pre_ping (a SELECT 1 round trip on every checkout). Dead connections are found
    # two ways instead: on error, SQLAlchemy sees the disconnect and invalidates the whole
    # pool, so one failed query flushes every connection older than it; and at checkout,
    # `_drop_if_closed_by_server` discards a connection the server has already hung up on
    # (a restart, a failover, a terminated backend), at the cost of one poll() system call.
    # Every connection is kept (no overflow): overflow connections are closed as they come
    # back whenever the pool is full, so under a load above the pool size each request
    # opened and closed a connection of its own (a server process each; 10% of a busy
    # worker's time in the profile of issue 29). The bound on connections per process is
    # the same as before (10 kept + 10 overflow then, 20 kept now).
    engine = create_async_engine(
        url,
        pool_size=settings.database_pool_size,
        max_overflow=0,
    )
    event.listen(engine.sync_engine, "checkout", _drop_if_closed_by_server)
    return engine


def _drop_if_closed_by_server(dbapi_connection, _record, _proxy) -> None:
    """Raising DisconnectionError makes the pool connect afresh."""
    if closed_by_server(dbapi_connection.driver_connection):
        raise DisconnectionError("connection closed by the server")


def closed_by_server(connection: psycopg.AsyncConnection) -> bool:
    """Whether an idle connection is known dead: closed, broken, or with something to read,
    which for an idle connection means the server closed it (it sends its FATAL message,
    then EOF). One poll() system call, no round trip."""
    if connection.closed or connection.broken:
        return True
    try:
        socket = connection.pgconn.socket
    except psycopg.OperationalError:  # libpq has no socket for it any more
        return True
    poller = select.poll()
    poller.register(socket, select.POLLIN)
    return bool(poller.poll(0))


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    """WAL lets readers run beside the one writer; foreign keys are off by default in SQLite."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, class_=AsyncSession, expire_on_commit=False)

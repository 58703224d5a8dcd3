"""Reading and writing `IdempotencyRecord` rows (see strongroom/idempotency/models.py)."""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Insert, bindparam, delete, func
from sqlalchemy.ext.asyncio import AsyncConnection, async_sessionmaker
from sqlmodel import col, select

from strongroom.db.together import Statement
from strongroom.db.types import utcnow
from strongroom.idempotency.models import IdempotencyRecord
from strongroom.idempotency.store import CachedResponse

_COLUMNS = ("key", "fingerprint", "status", "headers", "body", "expires_at")


@functools.cache
def _upsert(dialect_name: str) -> Insert:
    """INSERT, or replace an expired row of the key; RETURNING no row means a live one is
    there. Built once per dialect: building it per call cost twice its execution. The
    dialect's module is imported here, by the engine's own dialect name: importing both at
    the top loaded PostgreSQL's (50 ms) into SQLite-only processes too (issue 29)."""
    dialect = importlib.import_module(f"sqlalchemy.dialects.{dialect_name}")
    insert = dialect.insert(IdempotencyRecord).values({name: bindparam(name) for name in _COLUMNS})
    return insert.on_conflict_do_update(
        index_elements=["key"],
        set_={name: insert.excluded[name] for name in _COLUMNS if name != "key"},
        where=col(IdempotencyRecord.expires_at) <= bindparam("now"),
    ).returning(col(IdempotencyRecord.key))


class KeyAlreadyCommitted(Exception):
    """Another attempt of the same key committed first: roll back, replay its response."""


# strongroom_keep_response (migration 0019): `_upsert`, raising SR409 instead of returning
# no row, so that it can travel with the COMMIT.
_KEEP_FUNCTION = select(
    func.strongroom_keep_response(
        *(bindparam(name, type_=IdempotencyRecord.__table__.c[name].type) for name in _COLUMNS),
        bindparam("now", type_=IdempotencyRecord.__table__.c.expires_at.type),
    )
)
_LIVE_RECORD = "SR409"


class KeptResponse:
    """The durable record of a response, written in the handler's transaction as its last
    statements but one (a `db.together.Closing`; an expired record of the same key is
    replaced). Raises KeyAlreadyCommitted when a live record is there already: the call's
    work is not committed."""

    def __init__(self, store_key: str, cached: CachedResponse, parameters: dict[str, Any]) -> None:
        self.cached = cached  # what the idempotency store gets once this commits
        self._store_key = store_key
        self._parameters = parameters
        refused = functools.partial(KeyAlreadyCommitted, store_key)
        self.statement = Statement(_KEEP_FUNCTION, parameters, {_LIVE_RECORD: refused})

    async def elsewhere(self, connection: AsyncConnection) -> None:
        statement = _upsert(connection.dialect.name)
        if (await connection.execute(statement, self._parameters)).first() is None:
            raise KeyAlreadyCommitted(self._store_key)

    def outcome(self, rows: list[Any]) -> None:
        return None


def record_key(store_key: str) -> str:
    return hashlib.sha256(store_key.encode()).hexdigest()


class DurableRecords:
    def __init__(self, sessions: async_sessionmaker, ttl_seconds: float) -> None:
        self._sessions = sessions
        self._ttl = timedelta(seconds=ttl_seconds)

    async def find(self, store_key: str) -> tuple[CachedResponse, datetime] | None:
        """The live (unexpired) record of the key, if an attempt committed one, and when it
        expires."""
        statement = select(IdempotencyRecord).where(
            col(IdempotencyRecord.key) == record_key(store_key),
            col(IdempotencyRecord.expires_at) > utcnow(),
        )
        async with self._sessions() as session:
            row = (await session.exec(statement)).first()
        if row is None:
            return None
        cached = CachedResponse(
            fingerprint=row.fingerprint,
            status=row.status,
            headers=[(name, value) for name, value in row.headers],
            body=base64.b64encode(row.body).decode(),
        )
        return cached, row.expires_at

    def keep(self, store_key: str, cached: CachedResponse) -> KeptResponse:
        """The record of `cached`, to commit with the handler's work (see `KeptResponse`)."""
        now = utcnow()
        return KeptResponse(
            store_key,
            cached,
            {
                "key": record_key(store_key),
                "fingerprint": cached.fingerprint,
                "status": cached.status,
                "headers": [list(pair) for pair in cached.headers],
                "body": base64.b64decode(cached.body),
                "expires_at": now + self._ttl,
                "now": now,
            },
        )

    async def delete_expired(self) -> int:
        async with self._sessions() as session:
            statement = delete(IdempotencyRecord).where(
                col(IdempotencyRecord.expires_at) <= utcnow()
            )
            result = await session.exec(statement)  # type: ignore[call-overload]
            await session.commit()
        return result.rowcount or 0

"""Statements sent to PostgreSQL in one round trip, as one transaction (issue 29).

The end of a write call is a few statements whose results nobody waits for before the
COMMIT: the handler's INSERT of a new row, the Idempotency-Key's durable record, the debit.
Sent one at a time, each costs a round trip (and psycopg's BEGIN one more), and each round
trip waits its turn on a busy worker's event loop while the transaction holds its locks.
Sent together they cost one:

- on a connection with no transaction open, as one simple-protocol query of several
  statements, which PostgreSQL runs as one implicit transaction (protocol, "Multiple
  Statements in a Simple Query"): all of them commit, or none;
- on a connection inside the call's transaction (the handler read or wrote through its
  session first), followed by COMMIT in the same query: an error skips the rest, COMMIT
  included, and the session rolls back.

A simple query carries no parameters, so each statement's values are bound by psycopg on
the client (`ClientCursor.mogrify`: the same adapters and quoting as server-side binding),
after SQLAlchemy's own bind processing of the column types (JSON, UUID, UTC datetimes).

A statement refuses by raising a SQLSTATE of its own (a PL/pgSQL function's `RAISE ...
USING ERRCODE`): `Statement.refusals` turns it into the caller's exception. SQLite (the
embedded default) has no such functions and one writer at a time: what ends a call there
runs statement by statement in the session (`Closing.elsewhere`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import Executable
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from strongroom.lazy import LazyModule

# Used on PostgreSQL only, where the engine's dialect has loaded it (issue 29).
psycopg = LazyModule("psycopg")


@dataclass(frozen=True)
class Statement:
    """A statement built once (its compiled text is kept) and this call's values."""

    clause: Executable
    params: Mapping[str, Any]
    # SQLSTATE the statement raises to refuse -> the exception its caller gets instead.
    refusals: Mapping[str, Callable[[], Exception]] = field(default_factory=dict)


class Closing(Protocol):
    """A statement that ends a call's transaction after the handler's work: the
    Idempotency-Key's record, a write's debit."""

    @property
    def statement(self) -> Statement:
        """Sent with the handler's writes and the COMMIT (PostgreSQL)."""
        ...

    async def elsewhere(self, connection: AsyncConnection) -> Any:
        """Run in the call's transaction on `connection` (SQLite); returns the outcome."""
        ...

    def outcome(self, rows: list[Any]) -> Any:
        """The outcome from the rows `statement` returned."""
        ...


class WritesAtCommit(Protocol):
    """Where a handler leaves a write whose result it does not need (a `Call`)."""

    def write_at_commit(self, clause: Executable, params: Mapping[str, Any]) -> None: ...


_compiled: dict[tuple[Executable, frozenset[str]], tuple[Any, dict[str, Callable | None]]] = {}


def _compile(dialect: Dialect, statement: Statement) -> tuple[Any, dict[str, Callable | None]]:
    """The statement compiled for these parameter names, and each bind's type processor.
    Statements are module constants, so this holds a few entries per process."""
    key = (statement.clause, frozenset(statement.params))
    found = _compiled.get(key)
    if found is None:
        compiled = statement.clause.compile(dialect=dialect, column_keys=list(statement.params))
        processors = {
            name: bind.type.dialect_impl(dialect).bind_processor(dialect)
            for name, bind in compiled.binds.items()
        }
        found = _compiled[key] = (compiled, processors)
    return found


def _sql(cursor: psycopg.AsyncClientCursor, dialect: Dialect, statement: Statement) -> str:
    compiled, processors = _compile(dialect, statement)
    values = compiled.construct_params(dict(statement.params))
    for name, process in processors.items():
        if process is not None and name in values:
            values[name] = process(values[name])
    return cursor.mogrify(compiled.string, values)


async def send_together(
    connection: psycopg.AsyncConnection,
    dialect: Dialect,
    statements: list[Statement],
    *,
    commit: bool,
) -> list[list[Any]]:
    """Run `statements` in one round trip; with `commit`, end the connection's open
    transaction with them. Returns each statement's rows (none for one that returns none).
    Raises the driver's error, nothing committed (`raise_refusal` names a refusal)."""
    cursor = psycopg.AsyncClientCursor(connection)
    parts = [_sql(cursor, dialect, statement) for statement in statements]
    if commit:
        parts.append("COMMIT")
    await cursor.execute(";\n".join(parts))
    results: list[list[Any]] = []
    for _ in statements:
        results.append(await cursor.fetchall() if cursor.description is not None else [])
        cursor.nextset()
    return results


def raise_refusal(error: Exception, statements: list[Statement]) -> None:
    """Raise the refusal of the statement whose SQLSTATE `error` carries, if one has it."""
    sqlstate = getattr(error, "sqlstate", None)
    for statement in statements:
        refusal = statement.refusals.get(sqlstate or "")
        if refusal is not None:
            raise refusal() from error

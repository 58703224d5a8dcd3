"""One declaration per capability (architecture: principles).

A `Capability` says everything the platform needs to know about an endpoint: method and path,
request and response models, required scopes, rate and credit cost (D19), whether OAuth tokens
may call it (D15). The route, the validation, the OpenAPI entry and the scope and cost checks
all come from it; handlers hold business logic only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel
from quart import Response
from sqlalchemy import Executable
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.multipart import MultipartForm
from strongroom.api.sse import EventStream
from strongroom.auth.principal import Principal
from strongroom.db.reads import Reads
from strongroom.db.together import Closing, Statement, raise_refusal, send_together
from strongroom.lazy import LazyModule
from strongroom.problems import PROBLEM_TYPES

# On PostgreSQL only, loaded by then with the engine's dialect (issue 29).
psycopg_pq = LazyModule("psycopg.pq")
if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("strongroom.api")


@dataclass(frozen=True)
class Capability:
    name: str
    method: str
    path: str
    summary: str
    tag: str
    scopes: frozenset[str] = frozenset()
    cost: int = 1
    oauth: bool = True
    status: int = 200
    body: type[BaseModel] | None = None
    # A request with no body at all (no Content-Type, nothing sent) reads as `{}`: for a
    # body whose every field is optional (a routine run's start, a review's decision).
    empty_body_is_object: bool = False
    query: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    description: str = ""
    # Multipart uploads and template fills opt out (spec 4.1 rule 9).
    honours_idempotency_key: bool = True
    # A multipart/form-data body with one file, streamed to a spool file (api/multipart.py);
    # the model documents the form's fields.
    upload: type[BaseModel] | None = None
    # The response is not JSON (document bytes): the handler returns a quart Response.
    raw_response: bool = False
    # What the file is, for the document: an upload's accepted `file` part, or the media
    # types a raw response answers with (one of them).
    media_types: tuple[str, ...] = ()
    # Server-Sent Events: the handler returns an api.sse.EventStream, whose `events` (event
    # name -> the model of its `data`) the document describes.
    streams: bool = False
    events: Mapping[str, type[BaseModel]] = field(default_factory=dict, hash=False)
    # Problem codes the handler itself answers, beyond those of the request path
    # (api/openapi.py's problem_codes): `not_found` for an id in the body, query or form that
    # is not the caller's; `upstream_error`/`upstream_timeout` from an upstream.
    problems: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = self.problems - PROBLEM_TYPES.keys()
        if unknown:
            raise ValueError(f"{self.name}: unknown problem codes {sorted(unknown)}")
        if self.raw_response and not self.media_types:
            raise ValueError(f"{self.name}: a raw response declares its media_types")
        if self.streams and not self.events:
            raise ValueError(f"{self.name}: a stream declares its events")

    @property
    def is_write(self) -> bool:
        return self.method in {"POST", "PUT", "PATCH", "DELETE"}

    @property
    def idempotent(self) -> bool:
        """Whether an Idempotency-Key applies: writes only (spec 4.1 rule 2)."""
        return self.is_write and self.honours_idempotency_key


class OpensSessions(Protocol):
    """What a call itself uses of its process: where the request's session comes from. A
    running process passes all of strongroom.services.Services, which handlers read as
    `call.services`."""

    sessions: async_sessionmaker[AsyncSession]
    # The same pool without BEGIN/COMMIT: a read-only call's statements each commit alone.
    read_engine: AsyncEngine
    # The driver's connections: a call's last statements, when it has no transaction open.
    reads: Reads


S = TypeVar("S", bound=OpensSessions)


@dataclass
class Call(Generic[S]):
    """What a handler gets: who calls, the validated input, the process's services, and the
    request's database session. Handlers flush but never commit: the request path commits
    their work together with the bill."""

    principal: Principal
    services: S
    path: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    query: Any = None
    upload: MultipartForm | None = None
    # A GET only reads: its session runs each statement in a transaction of its own (no
    # BEGIN and COMMIT round trips, issue 29). Under PostgreSQL's READ COMMITTED every
    # statement sees its own snapshot either way; nothing it does needs to commit together.
    reads_only: bool = False
    _session: AsyncSession | None = None
    _after_commit: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    _undo: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    _writes: list[Statement] = field(default_factory=list)
    _committed: bool = False

    def after_commit(self, action: Callable[[], Awaitable[None]]) -> None:
        """Run `action` once the handler's work is committed (queue a job, say). It must not
        fail the request: the work is done, so its errors are logged, not answered."""
        self._after_commit.append(action)

    def write_at_commit(self, clause: Executable, params: Mapping[str, Any]) -> None:
        """Run `clause` (a statement built once) with `params` as part of the commit: on
        PostgreSQL in the one round trip that commits the call (strongroom/db/together.py),
        rather than one round trip now. For a write whose result the handler does not need
        (an INSERT of values it made itself): the session does not see it, and its errors
        are raised by the commit, after the handler has returned."""
        self._writes.append(Statement(clause, params))

    def undo_unless_committed(self, action: Callable[[], Awaitable[None]]) -> None:
        """Run `action` if the handler's work is rolled back: removes what the handler put
        outside the database (a stored blob, say), so a failed call leaves nothing behind."""
        self._undo.append(action)

    @property
    def session(self) -> AsyncSession:
        """The request's session, opened on first use (`/me` never needs one)."""
        if self._session is None:
            if self.reads_only:
                self._session = self.services.sessions(bind=self.services.read_engine)
            else:
                self._session = self.services.sessions()
        return self._session

    async def commit(self, *closing: Closing) -> list[Any]:
        """Commit the handler's work, its `write_at_commit` statements and then `closing`,
        together; returns each closing statement's outcome. Raises what a statement raised
        (a refusal, or the driver's error), with nothing committed."""
        session = self._session
        pending = session is not None and not _nothing_to_flush(session)
        if not (self._writes or closing):
            if session is not None and (pending or not self.reads_only):
                await session.commit()  # a read's statements committed as they ran
            self._committed = True
            return []
        if pending:
            await session.flush()
        if self.services.reads.on_postgresql:
            outcomes = await self._send_with_commit(list(closing))
        else:
            outcomes = await self._run_in_session(list(closing))
        self._committed = True
        return outcomes

    async def _send_with_commit(self, closing: list[Closing]) -> list[Any]:
        """PostgreSQL: the writes and `closing` in one round trip. If the session holds a
        transaction, they end it, with its COMMIT; else they are one transaction of their
        own, on a connection of the driver's."""
        statements = [*self._writes, *(step.statement for step in closing)]
        session = self._session
        driver = await _open_transaction(session)
        if driver is None:
            results = await self.services.reads.together(statements)
        else:
            dialect = self.services.read_engine.dialect  # the sessions' engine's
            try:
                results = await send_together(driver, dialect, statements, commit=True)
            except Exception as error:  # the transaction is aborted: close() rolls it back
                raise_refusal(error, statements)
                raise
        if session is not None:
            await session.commit()  # the driver committed: this ends the session's side
        done = results[len(self._writes) :]
        return [step.outcome(rows) for step, rows in zip(closing, done, strict=True)]

    async def _run_in_session(self, closing: list[Closing]) -> list[Any]:
        """SQLite: each statement in the session's transaction, then its commit."""
        connection = await self.session.connection()
        for write in self._writes:
            await connection.execute(write.clause, dict(write.params))
        outcomes = [await step.elsewhere(connection) for step in closing]
        await self.session.commit()
        return outcomes

    async def run_after_commit(self) -> None:
        for action in self._after_commit:
            try:
                await action()
            except Exception:
                log.exception("post-commit action failed")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        if not self._committed:
            for action in self._undo:
                try:
                    await action()
                except Exception:
                    log.exception("undoing a rolled-back call failed")
        if self.upload is not None:
            await self.upload.discard()  # whatever the handler did not take over


async def _open_transaction(session: AsyncSession | None) -> psycopg.AsyncConnection | None:
    """The session's psycopg connection if a transaction is open on it at the server (a
    statement ran since BEGIN); None if there is none to end (no session, or nothing sent
    yet)."""
    if session is None or not session.in_transaction():
        return None
    connection = await session.connection()
    driver = (await connection.get_raw_connection()).driver_connection
    if driver.info.transaction_status != psycopg_pq.TransactionStatus.INTRANS:
        return None
    return driver


def _nothing_to_flush(session: AsyncSession) -> bool:
    return not (session.new or session.dirty or session.deleted)


Handler = Callable[[Call[Any]], Awaitable[BaseModel | Response | EventStream]]


class Routes:
    """The capabilities of one area, in declaration order, with their handlers."""

    def __init__(self) -> None:
        self.entries: list[tuple[Capability, Handler]] = []

    def capability(self, capability: Capability) -> Callable[[Handler], Handler]:
        def decorator(handler: Handler) -> Handler:
            self.entries.append((capability, handler))
            return handler

        return decorator

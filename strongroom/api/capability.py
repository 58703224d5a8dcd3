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
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel
from quart import Response
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.multipart import MultipartForm
from strongroom.api.sse import EventStream
from strongroom.auth.principal import Principal

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
    # Problem statuses the handler itself answers, beyond those of the request path
    # (api/openapi.py's problem_statuses): 404 for an id in the body, query or form that is
    # not the caller's; 502/504 from an upstream.
    problems: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
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
    _committed: bool = False

    def after_commit(self, action: Callable[[], Awaitable[None]]) -> None:
        """Run `action` once the handler's work is committed (queue a job, say). It must not
        fail the request: the work is done, so its errors are logged, not answered."""
        self._after_commit.append(action)

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

    async def commit(self) -> None:
        session = self._session
        if session is not None and not (self.reads_only and _nothing_to_flush(session)):
            await session.commit()  # a read's statements committed as they ran
        self._committed = True

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

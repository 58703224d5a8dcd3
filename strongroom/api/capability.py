"""One declaration per capability (architecture: principles).

A `Capability` says everything the platform needs to know about an endpoint: method and path,
request and response models, required scopes, rate and credit cost (D19), whether OAuth tokens
may call it (D15). The route, the validation, the OpenAPI entry and the scope and cost checks
all come from it; handlers hold business logic only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.auth.principal import Principal
from strongroom.runtime import Runtime


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

    @property
    def is_write(self) -> bool:
        return self.method in {"POST", "PUT", "PATCH", "DELETE"}

    @property
    def idempotent(self) -> bool:
        """Whether an Idempotency-Key applies: writes only (spec 4.1 rule 2)."""
        return self.is_write and self.honours_idempotency_key


@dataclass
class Call:
    """What a handler gets: who calls, the validated input, the runtime's services, and the
    request's database session. Handlers flush but never commit: the request path commits
    their work together with the bill."""

    principal: Principal
    runtime: Runtime
    path: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    query: Any = None
    _session: AsyncSession | None = None

    @property
    def session(self) -> AsyncSession:
        """The request's session, opened on first use (`/me` never needs one)."""
        if self._session is None:
            self._session = self.runtime.sessions()
        return self._session

    async def commit(self) -> None:
        if self._session is not None:
            await self._session.commit()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


Handler = Callable[[Call], Awaitable[BaseModel]]


class Routes:
    """The capabilities of one area, in declaration order, with their handlers."""

    def __init__(self) -> None:
        self.entries: list[tuple[Capability, Handler]] = []

    def capability(self, capability: Capability) -> Callable[[Handler], Handler]:
        def decorator(handler: Handler) -> Handler:
            self.entries.append((capability, handler))
            return handler

        return decorator

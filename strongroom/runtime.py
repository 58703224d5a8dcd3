"""The process-wide parts every command and request uses: settings, database, secrets."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.api.pagination import CursorCodec
from strongroom.auth.authenticate import ApiKeyAuthenticator
from strongroom.db.engine import create_engine, session_factory
from strongroom.settings import Settings


@dataclass
class Runtime:
    settings: Settings
    engine: AsyncEngine
    # Same pool, no BEGIN/ROLLBACK per checkout: for single-statement reads on hot paths.
    read_engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    key_pepper: bytes
    authenticator: ApiKeyAuthenticator
    cursors: CursorCodec

    @classmethod
    def create(cls, settings: Settings) -> Runtime:
        """Build the runtime; raises MissingSecretError before opening anything."""
        key_pepper = settings.secret("key_pepper")
        secret_key = settings.secret("secret_key")
        engine = create_engine(settings)
        read_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        return cls(
            settings=settings,
            engine=engine,
            read_engine=read_engine,
            sessions=session_factory(engine),
            key_pepper=key_pepper,
            authenticator=ApiKeyAuthenticator(read_engine, key_pepper),
            cursors=CursorCodec(secret_key),
        )

    async def close(self) -> None:
        await self.engine.dispose()

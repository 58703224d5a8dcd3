"""Commit hooks attached to the one session that needs them (issue 54,
strongroom/db/commit_hooks.py), on a real SQLite database."""

from __future__ import annotations

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from strongroom.db import commit_hooks
from strongroom.db.commit_hooks import after_commit


async def test_a_hook_runs_at_commit_once_per_key_and_is_dropped_at_rollback(tmp_path):
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'hooks.db'}")
    ran: list[str] = []
    try:
        async with AsyncSession(engine) as session, AsyncSession(engine) as other:
            await session.execute(text("SELECT 1"))
            after_commit(session, lambda: ran.append("keyed"), key="wake")
            after_commit(session, lambda: ran.append("keyed"), key="wake")
            after_commit(session, lambda: ran.append("plain"))
            assert ran == []  # nothing before the commit
            await session.commit()
            assert sorted(ran) == ["keyed", "plain"]
            await session.execute(text("SELECT 1"))
            after_commit(session, lambda: ran.append("rolled back"))
            await session.rollback()
            await session.execute(text("SELECT 1"))
            await session.commit()
            assert "rolled back" not in ran and len(ran) == 2
            # The listeners are that session's: neither another session nor the class has one.
            assert event.contains(session.sync_session, "after_commit", commit_hooks._run)
            assert not event.contains(other.sync_session, "after_commit", commit_hooks._run)
            assert not event.contains(Session, "after_commit", commit_hooks._run)
    finally:
        await engine.dispose()

"""What runs once a session's transaction commits, attached to that session alone (issue 54):
the listeners are the session's own, added the first time it is given a hook, so no other
session of the process (a request's, a job's, a test's) runs a listener for it."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

_HOOKS = "strongroom.commit_hooks"


def after_commit(
    session: AsyncSession | Session, hook: Callable[[], None], key: Hashable | None = None
) -> None:
    """Call `hook` once the session's transaction commits; drop it if it rolls back. A hook
    given again under the same `key` in one transaction runs once."""
    sync = session.sync_session if isinstance(session, AsyncSession) else session
    hooks: dict[Hashable, Callable[[], None]] | None = sync.info.get(_HOOKS)
    if hooks is None:
        hooks = sync.info[_HOOKS] = {}
        event.listen(sync, "after_commit", _run)
        event.listen(sync, "after_rollback", _drop)
    hooks[key if key is not None else object()] = hook


def _run(session: Session) -> None:
    hooks = session.info[_HOOKS]
    pending = list(hooks.values())
    hooks.clear()
    for hook in pending:
        hook()


def _drop(session: Session) -> None:
    session.info[_HOOKS].clear()

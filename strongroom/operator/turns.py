"""One reconcile or deletion of a resource at a time in a replica.

kopf runs a resource's timer beside its change handlers: `idle` only waits until the resource
has not changed for that long, and a handler that changes nothing for that long (a slow
database, a loaded machine) lets the timer start while it runs. Two reconciles of an ApiKey
whose Secret is missing then each issued a key: the Secret kept the one written last, and the
other stayed active with no Secret holding it and nothing to revoke it (two concurrent
reconciles of one ApiKey: two active keys in 2 of 2 runs). Each handler takes its resource's
turn first (`handlers._reconcile`, `handlers._release`). Replicas never overlap (peering
pauses all but one, `pausing`), so a lock per resource in the replica is enough.
"""

from __future__ import annotations

import asyncio
import weakref


class Turns:
    """A lock per resource uid, kept while a handler holds or awaits it (weak values: a
    resource nobody is reconciling holds no memory)."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def of(self, uid: str) -> asyncio.Lock:
        lock = self._locks.get(uid)
        if lock is None:
            lock = self._locks[uid] = asyncio.Lock()
        return lock

    def __len__(self) -> int:
        return len(self._locks)

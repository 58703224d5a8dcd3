"""A paused replica runs no handler (issue 52, point 10).

kopf pauses a replica (peering: a live peer of higher priority) by closing its watch streams
and stopping its timers, and nothing more: what the replica had already received went on.
Events queued for an object were processed and their handlers run, and a worker waiting for
its own patch to come back (it never did: the stream was closed) ran the handlers again on
its stale copy once kopf's consistency timeout (5 s) was over. On a real API server the paused
replica of two (`--namespace`) ran handlers for 5.9 s after it paused, 14 of them after the
other had resumed, and all 30 ApiKeys were handled by both.

Two gates, both reading kopf's own pause state (its `operator_paused` toggles: on while any
peering of this replica says pause):

- kopf's processing of an event (`process_resource_event`, wrapped once, by `install`): while
  the replica is paused an event is dropped, neither handled nor patched. Nothing is lost: on
  resume kopf lists every object again and processes what it finds then. A DELETED event is
  still processed (it runs no handler: kopf's cause is GONE) so that kopf forgets the object
  and drops it from its indexes.
- every handler (`while_active`): one invoked while paused (the pause came while kopf was
  processing the event, e.g. during that 5 s wait), or one that meets the pause at a point
  where it checks (`raise_if_paused`), does nothing more: it waits for the replica to resume
  and then asks kopf to retry it with the object as it is then. Writing a retry while paused
  would record a delay that the active replica honours. A timer's run is skipped (kopf stops
  the timers on pause, and starts them again on resume).

A handler already past its checks when the pause comes finishes: it was invoked before.
kopf's pause state is not public: `install` wraps a function of kopf's own and checks at
import that it still takes `operator_paused` (kopf 1.45), failing loudly otherwise.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import kopf
from kopf._core.reactor import processing

from strongroom.operator.logs import HELD_RETRY  # what the retry says (logged at INFO)

# Retried this long after the replica resumed, with the object as it is then.
RETRY_AFTER_RESUME_SECONDS = 1

HELD = "is held: this replica is paused"

logger = logging.getLogger(__name__)

# kopf's pause toggles of the operator running this task (one per operator: tests run two in
# one process), set where kopf processes an event; handlers and timers started from there
# inherit it.
_paused: contextvars.ContextVar[Any] = contextvars.ContextVar("operator_paused", default=None)


class Paused(Exception):
    """Raised where a handler checks (`raise_if_paused`) and the replica is paused."""


def is_paused() -> bool:
    toggles = _paused.get()
    return toggles is not None and toggles.is_on()


def raise_if_paused() -> None:
    if is_paused():
        raise Paused()


async def _process_resource_event(
    *,
    raw_event: dict,
    operator_paused: Any = None,
    resource_indexed: Any = None,
    operator_indexed: Any = None,
    **kwargs: Any,
) -> str | None:
    _paused.set(operator_paused)
    if operator_paused is not None and operator_paused.is_on() and raw_event["type"] != "DELETED":
        # What kopf does for an event before anything else, kept so that its readiness (the
        # indexes of the first listing) does not wait for this event for ever.
        if operator_indexed is not None and resource_indexed is not None:
            await operator_indexed.drop_toggle(resource_indexed)
        meta = raw_event.get("object", {}).get("metadata", {})
        logger.debug("paused: an event of %s/%s is dropped; kopf lists it again on resume",
                     meta.get("namespace", ""), meta.get("name"))  # fmt: skip
        return None
    return await _original(raw_event=raw_event, operator_paused=operator_paused,
                           resource_indexed=resource_indexed,
                           operator_indexed=operator_indexed, **kwargs)  # fmt: skip


_original = processing.process_resource_event


def install() -> None:
    """Wrap kopf's processing of an event; before kopf starts (running.py reads the function
    when the operator starts). Idempotent."""
    if processing.process_resource_event is _process_resource_event:
        return
    taken = inspect.signature(_original).parameters
    missing = {"raw_event", "operator_paused", "resource_indexed", "operator_indexed"} - set(taken)
    if missing:
        raise RuntimeError(
            f"this kopf's process_resource_event takes no {sorted(missing)}: a paused replica "
            "could not be kept from handling (strongroom.operator.pausing); pin kopf 1.45"
        )
    processing.process_resource_event = _process_resource_event


def while_active(handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """A kopf handler that does nothing while its replica is paused (module docstring)."""

    @functools.wraps(handler)  # kopf's handler id follows __wrapped__: ids stay as they were
    async def gated(**kwargs: Any) -> Any:
        if not is_paused():
            try:
                return await handler(**kwargs)
            except Paused:
                pass
        if kwargs.get("stopped") is not None:  # a timer (kopf passes `stopped` to timers only)
            kwargs["logger"].info(f"Handler {handler.__name__!r} {HELD}; a timer: skipped")
            return None
        kwargs["logger"].info(f"Handler {handler.__name__!r} {HELD}; retried after it resumes")
        toggles = _paused.get()
        await toggles.wait_for(False)
        raise kopf.TemporaryError(HELD_RETRY, delay=RETRY_AFTER_RESUME_SECONDS)

    return gated

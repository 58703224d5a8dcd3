"""What an unexpected reconcile failure shows on the resource: a reason and a message that
say what failed without ever carrying a secret (a database error's text holds its SQL
parameters, a Kubernetes error its request), and how soon to try again."""

from __future__ import annotations

import json

from kubernetes_asyncio.client.exceptions import ApiException
from sqlalchemy.exc import SQLAlchemyError

FIRST_RETRY_SECONDS, LONGEST_RETRY_SECONDS = 1, 30


def backoff(retry: int) -> int:
    """1, 2, 4, ... seconds, at most 30: short at first, without hammering a broken
    dependency (kopf's own default is 60 s for every retry)."""
    return min(FIRST_RETRY_SECONDS * 2 ** min(retry, 10), LONGEST_RETRY_SECONDS)


def describe(error: BaseException) -> tuple[str, str]:
    """(reason, message) for a condition and an Event."""
    if isinstance(error, ApiException):
        said = _status_message(error.body)
        return "KubernetesError", (
            f"the Kubernetes API answered {error.status} {error.reason}"
            + (f": {said}" if said else "")
        )
    if isinstance(error, SQLAlchemyError):
        cause = type(getattr(error, "orig", None) or error).__name__
        return "DatabaseError", f"the database refused or failed ({cause}); retrying"
    if isinstance(error, OSError):
        return "ConnectionError", f"a dependency could not be reached ({type(error).__name__})"
    said = _own_words(error)
    return "ReconcileFailed", (
        f"unexpected {type(error).__name__}" + (f": {said}" if said else "")
        + "; the operator logged it at ERROR with its traceback and this resource's name"
    )  # fmt: skip


def _own_words(error: BaseException) -> str | None:
    """The message of one of Strongroom's own errors (written by us, never carrying a secret:
    issue 44, item 7, where a bare "NotFoundError; see the operator's log" told nothing and
    the log held nothing more); None for anyone else's, whose text may hold anything."""
    if not type(error).__module__.startswith("strongroom."):
        return None
    said = str(error).strip()
    return said[:300] or None


def _status_message(body) -> str | None:
    """The `message` of the API server's Status object: what was refused and why, never the
    request's content."""
    try:
        message = json.loads(body).get("message")
    except (TypeError, ValueError, AttributeError):
        return None
    return message[:500] if isinstance(message, str) else None

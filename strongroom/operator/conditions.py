"""Status conditions in the Kubernetes style. `lastTransitionTime` moves only when a
condition's status changes (True <-> False), not on every reconcile (issue 17)."""

from __future__ import annotations

from strongroom.db.types import utcnow


def condition(kind: str, ok: bool, reason: str, message: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": utcnow().isoformat(),
    }


def ready(reason: str = "Reconciled", message: str = "in the database") -> dict[str, str]:
    return condition("Ready", True, reason, message)


def not_ready(reason: str, message: str) -> dict[str, str]:
    return condition("Ready", False, reason, message)


def find(status: dict | None, kind: str = "Ready") -> dict | None:
    for found in (status or {}).get("conditions") or []:
        if found.get("type") == kind:
            return found
    return None


def keep_transition_times(previous: dict | None, status: dict) -> dict:
    """`status` with each condition's `lastTransitionTime` taken from `previous` when the
    condition's status has not changed."""
    conditions = []
    for new in status.get("conditions") or []:
        old = find(previous, new["type"])
        if old and old.get("status") == new["status"] and old.get("lastTransitionTime"):
            new = new | {"lastTransitionTime": old["lastTransitionTime"]}
        conditions.append(new)
    return status | ({"conditions": conditions} if "conditions" in status else {})


def is_news(previous: dict | None, reason: str) -> bool:
    """Whether a Ready=False for `reason` is news: an Event is posted once while a reason
    stands, not at every retry (issue 17)."""
    old = find(previous)
    return not (old and old.get("status") == "False" and old.get("reason") == reason)

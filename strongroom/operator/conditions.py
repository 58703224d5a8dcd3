"""Status conditions in the Kubernetes style."""

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

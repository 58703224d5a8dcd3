"""kopf passes its whole OperatorSettings with every per-object log record (`extra`), and a
JSON formatter that writes every extra field dumps them into each line: 84% of the
operator's log bytes on a real cluster (issue 17). The object reference stays. A deleted
Tenant's wait for its erasure (issue 42), which kopf logs as a failure, is logged at INFO."""

from __future__ import annotations

import logging

KOPF_INTERNALS = ("settings", "k8s_skip")


# What the Tenant's erasure handler raises while it waits (strongroom.operator.handlers): kopf
# logs every TemporaryError at ERROR, which for a wait of 30 days, looked at every minute,
# would be tens of thousands of errors that are none.
WAITING_FOR_ERASURE = "waiting for erasure"
# A handler held while its replica was paused, retried once it resumed (pausing.while_active).
HELD_RETRY = "held while this replica was paused; retried with the object as it is now"


class WithoutKopfInternals(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for name in KOPF_INTERNALS:
            record.__dict__.pop(name, None)
        if record.levelno == logging.ERROR and record.name.startswith("kopf"):
            message = record.getMessage()
            if f"failed temporarily: {WAITING_FOR_ERASURE}" in message or HELD_RETRY in message:
                record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def drop_kopf_internals() -> None:
    """On every handler of the root logger (they run after kopf's own event poster)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(found, WithoutKopfInternals) for found in handler.filters):
            handler.addFilter(WithoutKopfInternals())

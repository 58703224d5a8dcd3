"""kopf passes its whole OperatorSettings with every per-object log record (`extra`), and a
JSON formatter that writes every extra field dumps them into each line: 84% of the
operator's log bytes on a real cluster (issue 17). The object reference stays."""

from __future__ import annotations

import logging

KOPF_INTERNALS = ("settings", "k8s_skip")


class WithoutKopfInternals(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for name in KOPF_INTERNALS:
            record.__dict__.pop(name, None)
        return True


def drop_kopf_internals() -> None:
    """On every handler of the root logger (they run after kopf's own event poster)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(found, WithoutKopfInternals) for found in handler.filters):
            handler.addFilter(WithoutKopfInternals())

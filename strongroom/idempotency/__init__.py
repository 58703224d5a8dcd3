"""Idempotency keys (spec 3 and 4.1, D23-D28)."""

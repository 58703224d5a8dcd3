"""The Idempotency-Key header (D23) and the body fingerprint (D24)."""

from __future__ import annotations

import hashlib
import json
import re

from strongroom.problems import Problem

MAX_LENGTH = 255
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]{1,255}")
_SF_STRING = re.compile(r'"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"')


def parse_idempotency_key(header: str) -> str:
    """Return the key of an Idempotency-Key header value.

    An RFC 8941 string (`"abc"`) is unquoted first. Raises Problem `invalid_idempotency_key`
    unless the key is 1-255 characters of visible ASCII.
    """
    quoted = _SF_STRING.fullmatch(header)
    key = re.sub(r"\\(.)", r"\1", quoted.group(1)) if quoted else header
    if not _VISIBLE_ASCII.fullmatch(key):
        raise Problem(
            "invalid_idempotency_key",
            f"Idempotency-Key must be 1 to {MAX_LENGTH} visible ASCII characters "
            "(0x21-0x7E), optionally as a quoted string.",
        )
    return key


def fingerprint(body: bytes, mimetype: str) -> str:
    """SHA-256 of the body: JSON re-serialised canonically, anything else as raw bytes."""
    if mimetype == "application/json" or mimetype.endswith("+json"):
        try:
            canonical = json.dumps(
                json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode()
        except (ValueError, RecursionError):
            canonical = body
    else:
        canonical = body
    return hashlib.sha256(canonical).hexdigest()

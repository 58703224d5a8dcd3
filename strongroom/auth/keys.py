"""API key material (spec 2.2, D9): generation, shape check, display prefix, keyed hash.

A key is `ak_live_` or `ak_test_` followed by 52 RFC 4648 base32 characters (32 random bytes,
no padding): 60 characters. The database holds only `prefix` (environment prefix plus four
characters) and an HMAC-SHA-256 of the whole key under a server pepper, so a leaked table
yields nothing usable.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from strongroom.tenants.partition import Environment

KEY_LENGTH = 60
BODY_BYTES = 32
DISPLAY_CHARS = 4
KEY_PATTERN = re.compile(r"ak_(live|test)_[A-Z2-7]{52}")
# Anything that looks like one of our keys, wherever it appears (D12).
KEY_LIKE = re.compile(r"ak_(?:live|test)_")
_KEY_AND_BODY = re.compile(r"(ak_(?:live|test)_)[A-Za-z0-9]*")


@dataclass(frozen=True)
class ParsedKey:
    raw: str
    environment: Environment


def generate_key(environment: Environment) -> str:
    """Return a fresh raw key for `environment`; show it once, store only its hash."""
    body = base64.b32encode(secrets.token_bytes(BODY_BYTES)).decode().rstrip("=")
    key = f"ak_{environment.value}_{body}"
    assert len(key) == KEY_LENGTH
    return key


def parse_key(candidate: str) -> ParsedKey | None:
    """Return the parsed key, or None when `candidate` is not of the key shape."""
    match = KEY_PATTERN.fullmatch(candidate)
    if match is None:
        return None
    return ParsedKey(raw=candidate, environment=Environment(match.group(1)))


def display_prefix(key: str) -> str:
    """`ak_live_ABCD`: the environment prefix plus the first four body characters."""
    return key[: len("ak_live_") + DISPLAY_CHARS]


def redact_keys(text: str) -> str:
    """`text` with every key-like run replaced by its environment prefix and `[redacted]`."""
    return _KEY_AND_BODY.sub(r"\1[redacted]", text)


def hash_key(key: str, pepper: bytes) -> str:
    """HMAC-SHA-256 of the whole key under the server pepper, hex-encoded."""
    return hmac.new(pepper, key.encode(), hashlib.sha256).hexdigest()

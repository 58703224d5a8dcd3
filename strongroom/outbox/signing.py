"""Signing webhooks as Standard Webhooks says (https://www.standardwebhooks.com/), and
keeping their secrets sealed at rest.

A secret is `whsec_` + base64 of 32 random bytes. A delivery carries `webhook-id`,
`webhook-timestamp` (Unix seconds) and `webhook-signature`: `v1,` + base64 of
HMAC-SHA256(key, f"{id}.{timestamp}." + body), one per secret that signs (space-separated:
after a rotation the old secret signs beside the new one).

Secrets sign, so unlike API keys they cannot be kept as digests: `SecretBox` seals them
with Fernet under a key derived (HKDF-SHA256) from the server's `secret_key`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets as random_bytes
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SECRET_PREFIX = "whsec_"  # noqa: S105  (a prefix, not a secret)
KEY_BYTES = 32


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(random_bytes.token_bytes(KEY_BYTES)).decode()


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signature_header(secrets: Sequence[str], message_id: str, timestamp: int, body: bytes) -> str:
    return " ".join(signature(secret, message_id, timestamp, body) for secret in secrets)


def headers(secrets: Sequence[str], message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The headers of one delivery attempt, signed by each of `secrets`."""
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(secrets, message_id, timestamp, body),
    }


class SecretBox:
    """Seals and unseals signing secrets under a key derived from `key_material`."""

    def __init__(self, key_material: bytes) -> None:
        derived = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"strongroom webhook secrets"
        ).derive(key_material)
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def unseal(self, token: str) -> str:
        """Raises ValueError for a token sealed under another key (or not a token)."""
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken as error:
            raise ValueError("the secret was sealed under another key") from error

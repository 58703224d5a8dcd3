"""ES256 signing keys for access tokens (D29).

The keys live in a JWKS file of private keys: in production a mounted Kubernetes Secret
(`STRONGROOM_OAUTH_SIGNING_KEYS_FILE`), in the embedded default a file generated on first
start under the data directory. The first key signs; every key verifies and is published at
`/.well-known/jwks.json`. Rotation: put a new key first, keep the old one listed until the
last token it signed has expired (an hour), then drop it (`strongroom oauth rotate-key`).
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from strongroom.lazy import LazyModule

if TYPE_CHECKING:
    from joserfc.jwk import ECKey, KeySet

# joserfc's keys load cryptography's EC and X.509 code: on first use (issue 29), since a
# process with OAuth off never signs or verifies.
jwk = LazyModule("joserfc.jwk")

ALGORITHM = "ES256"


def new_key() -> ECKey:
    kid = secrets.token_urlsafe(12)
    return jwk.ECKey.generate_key("P-256", parameters={"kid": kid, "alg": ALGORITHM, "use": "sig"})


@dataclass(frozen=True)
class SigningKeys:
    keys: list[ECKey]

    @property
    def active(self) -> ECKey:
        return self.keys[0]

    @property
    def key_set(self) -> KeySet:
        return jwk.KeySet(self.keys)

    def public_jwks(self) -> dict:
        return {"keys": [key.as_dict(private=False) for key in self.keys]}

    def private_jwks(self) -> dict:
        return {"keys": [key.as_dict(private=True) for key in self.keys]}

    @classmethod
    def from_jwks(cls, document: dict) -> SigningKeys:
        keys = [jwk.ECKey.import_key(entry) for entry in document.get("keys", [])]
        if not keys:
            raise ValueError("the signing key file holds no key")
        for key in keys:
            if key.get("kid") is None or key.curve_name != "P-256":
                raise ValueError("signing keys must be P-256 keys with a kid")
        return cls(keys)


def load_signing_keys(path: Path, *, create: bool) -> SigningKeys:
    """Read the key file; with `create`, write a fresh one first if there is none."""
    if create and not path.exists():
        write_signing_keys(path, SigningKeys([new_key()]))
    return SigningKeys.from_jwks(json.loads(path.read_text()))


def write_signing_keys(path: Path, keys: SigningKeys) -> None:
    """Write atomically with mode 0600 (it holds private keys)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(keys.private_jwks(), handle)
    os.replace(temporary, path)


def rotate(keys: SigningKeys, *, keep: int = 2) -> SigningKeys:
    """A new signing key first, followed by up to `keep - 1` previous keys."""
    return SigningKeys([new_key(), *keys.keys[: keep - 1]])

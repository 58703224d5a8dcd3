"""Where the operator keeps what must never reach the database in clear: the raw API key
and the OAuth client secret. Behind a protocol, so the reconcile functions run in unit tests
with the in-memory store and in the operator with the Kubernetes API."""

from __future__ import annotations

from typing import Protocol


class SecretStore(Protocol):
    async def read(self, namespace: str, name: str) -> dict[str, str] | None:
        """The Secret's data (decoded), or None when there is no such Secret."""
        ...

    async def write(self, namespace: str, name: str, data: dict[str, str], owner: dict) -> None:
        """Create the Secret, owned by `owner` (a resource body), or replace its data."""
        ...


class MemorySecretStore:
    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], dict[str, str]] = {}
        self.owners: dict[tuple[str, str], str] = {}

    async def read(self, namespace: str, name: str) -> dict[str, str] | None:
        data = self.secrets.get((namespace, name))
        return dict(data) if data is not None else None

    async def write(self, namespace: str, name: str, data: dict[str, str], owner: dict) -> None:
        self.secrets[(namespace, name)] = dict(data)
        self.owners[(namespace, name)] = owner["metadata"]["uid"]

"""Where the operator keeps what must never reach the database in clear: the raw API key
and the OAuth client secret. Behind a protocol, so the reconcile functions run in unit tests
with the in-memory store and in the operator with the Kubernetes API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from strongroom.operator.outcome import NotReady


@dataclass(frozen=True)
class StoredSecret:
    data: dict[str, str]  # decoded
    controller: str | None  # the uid of its controller owner reference; None: nothing


class SecretStore(Protocol):
    async def read(self, namespace: str, name: str) -> StoredSecret | None:
        """The Secret with the resource that controls it, or None when there is no such
        Secret."""
        ...

    async def write(self, namespace: str, name: str, data: dict[str, str], owner: dict) -> None:
        """Create the Secret, owned by `owner` (a resource body), or replace its data."""
        ...

    async def delete(self, namespace: str, name: str) -> None:
        """Delete the Secret; one already gone is not an error."""
        ...


async def read_owned(
    store: SecretStore, namespace: str, name: str, owner: dict
) -> dict[str, str] | None:
    """The data of the Secret `name` when the resource `owner` controls it, None when there is
    no such Secret. A Secret belongs to the resource that created it (issue 44: an ApiKey whose
    `secretName` named another ApiKey's Secret adopted that key, and deleting it revoked the
    other's): one that another resource, or nobody, controls raises NotReady, retried (it may
    be a Secret Kubernetes has yet to collect after its owner went), and nothing is changed."""
    stored = await store.read(namespace, name)
    if stored is None:
        return None
    if stored.controller != owner["metadata"]["uid"]:
        raise NotReady("SecretNotOwned", not_owned(name, owner, stored), retry=True)
    return stored.data


def not_owned(name: str, owner: dict, stored: StoredSecret) -> str:
    """What to tell the user of a Secret in the way (issue 44, item 10: on a real cluster the
    user's own Secret of the default name read like an RBAC error)."""
    kind = owner.get("kind", "resource")
    whose = (
        "another resource controls it"
        if stored.controller
        else "nothing controls it: it was made by hand or by another tool"
    )
    return (
        f"Secret {name} exists and is not owned by this {kind} ({whose}); the operator leaves "
        f"it as it is and writes nothing. Set spec.secretName to another name, or delete "
        f"Secret {name} if it is not needed: the {kind} goes ahead at its next retry"
    )


class MemorySecretStore:
    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], dict[str, str]] = {}
        self.owners: dict[tuple[str, str], str] = {}

    async def read(self, namespace: str, name: str) -> StoredSecret | None:
        data = self.secrets.get((namespace, name))
        if data is None:
            return None
        return StoredSecret(dict(data), self.owners.get((namespace, name)))

    async def write(self, namespace: str, name: str, data: dict[str, str], owner: dict) -> None:
        self.secrets[(namespace, name)] = dict(data)
        self.owners[(namespace, name)] = owner["metadata"]["uid"]

    async def delete(self, namespace: str, name: str) -> None:
        self.secrets.pop((namespace, name), None)
        self.owners.pop((namespace, name), None)

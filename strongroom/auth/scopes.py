"""The scope catalogue (spec 5.4)."""

from __future__ import annotations

from enum import StrEnum


class Scope(StrEnum):
    VAULT_READ = "vault:read"
    VAULT_WRITE = "vault:write"
    CHAT_READ = "chat:read"
    CHAT_WRITE = "chat:write"
    TEMPLATES_READ = "templates:read"
    TEMPLATES_WRITE = "templates:write"
    WORKFLOWS_READ = "workflows:read"
    WORKFLOWS_WRITE = "workflows:write"
    WEBHOOKS_READ = "webhooks:read"  # issue 30
    WEBHOOKS_WRITE = "webhooks:write"
    ROUTINES_READ = "routines:read"  # issue 43
    ROUTINES_WRITE = "routines:write"
    META_READ = "meta:read"


ALL_SCOPES: tuple[str, ...] = tuple(scope.value for scope in Scope)


def parse_scopes(text: str) -> list[str]:
    """Split a space- or comma-separated scope list, refusing unknown scopes.

    Raises ValueError naming the unknown scopes.
    """
    requested = [part for part in text.replace(",", " ").split() if part]
    unknown = sorted(set(requested) - set(ALL_SCOPES))
    if unknown:
        raise ValueError(f"unknown scopes: {', '.join(unknown)}")
    return sorted(set(requested), key=ALL_SCOPES.index)

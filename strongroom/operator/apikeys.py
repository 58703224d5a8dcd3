"""ApiKey resources -> API key rows, with the raw key only in a Secret the ApiKey owns.

Crash safety: the Secret (raw key and key id) is written before the row. A crash after the
Secret leaves a Secret the next run completes with its row; a crash after the row leaves
both, found again by the key id in the Secret. No row ever lacks its Secret, and no raw key
is lost. A Secret deleted by hand cannot be restored (only a hash is stored): the operator
revokes the old key and issues a new one into a new Secret, and says so.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlmodel import select

from strongroom.admin import revoke_api_key
from strongroom.auth.keys import display_prefix, generate_key, hash_key
from strongroom.auth.models import ApiKey
from strongroom.db.types import utcnow
from strongroom.operator.conditions import ready
from strongroom.operator.outcome import NotReady, Outcome
from strongroom.operator.parts import OperatorParts
from strongroom.operator.secrets import SecretStore, read_owned
from strongroom.tenants.models import RateLimitTier, Tenant, User
from strongroom.tenants.partition import Environment


def secret_name_of(body: dict) -> str:
    return body["spec"].get("secretName") or f"{body['metadata']['name']}-api-key"


async def reconcile_api_key(parts: OperatorParts, secrets: SecretStore, body: dict) -> Outcome:
    """Make the key of `body` exist, hold its Secret, and follow `revoked` and expiry."""
    spec, meta = body["spec"], body["metadata"]
    namespace, secret_name = meta.get("namespace", "default"), secret_name_of(body)
    events: list[str] = []
    data = await read_owned(secrets, namespace, secret_name, body)
    await _refuse_immutable_changes(parts, spec, data, body.get("status") or {})
    async with parts.sessions() as session:
        tenant = (await session.exec(select(Tenant).where(Tenant.name == spec["tenant"]))).first()
        # Waiting for a Tenant or a user: told when it comes, at once (issue 44, item 10). A
        # retry at a backoff would hold the ApiKey's handlers until then (kopf runs no
        # update handler while a creation handler waits for its retry).
        if tenant is None:
            raise NotReady("TenantNotFound", f"no Tenant {spec['tenant']!r} yet", retry=False,
                           told=True)  # fmt: skip
        if tenant.deleted_at is not None:  # its keys were revoked: issue none
            key_id = (data or {}).get("key-id")
            issued = key_id and await session.get(ApiKey, uuid.UUID(key_id))
            raise NotReady("TenantDeleted", f"Tenant {tenant.name!r} was deleted", retry=False,
                           fields=_state_of(issued) if issued else None)  # fmt: skip
        email = spec["userEmail"].strip().lower()
        user = (
            await session.exec(select(User).where(User.tenant_id == tenant.id, User.email == email))
        ).first()
        if user is None:
            raise NotReady("UserNotFound", f"{email} is not a user of Tenant {tenant.name!r}",
                           retry=False, told=True)  # fmt: skip

    status = body.get("status") or {}
    if not data or "api-key" not in data or "key-id" not in data:
        revoked = await _revoked_key(parts, status.get("keyId"))
        if revoked is not None:  # revoked for good, whatever `revoked` says now (issue 44, 9)
            return Outcome(status=_status(revoked, secret_name, spec, secret_gone=True))
        raw = generate_key(Environment(spec["environment"]))
        data = {"api-key": raw, "key-id": str(uuid.uuid4()), "prefix": display_prefix(raw)}
        await secrets.write(namespace, secret_name, data, body)  # the Secret first
        events.append(f"wrote the key into Secret {secret_name}")
    key_id = uuid.UUID(data["key-id"])

    async with parts.sessions() as session:
        key = await session.get(ApiKey, key_id)
        if key is None:
            key = ApiKey(
                id=key_id,
                tenant_id=tenant.id,
                user_id=user.id,
                name=spec["name"],
                environment=spec["environment"],
                prefix=display_prefix(data["api-key"]),
                key_hash=hash_key(data["api-key"], parts.key_pepper),
                scopes=list(spec["scopes"]),
                rate_limit_tier=RateLimitTier(spec["rateLimitTier"]).value
                if spec.get("rateLimitTier") else None,
                expires_at=_expiry(spec.get("expiresAt")),
            )  # fmt: skip
            session.add(key)
            await session.commit()
            events.append(f"created key {key.prefix}... ({key_id})")
        else:  # name, tier and expiry may change in place
            tier = RateLimitTier(spec["rateLimitTier"]).value if spec.get("rateLimitTier") else None
            wanted = (spec["name"], tier, _expiry(spec.get("expiresAt")))
            if (key.name, key.rate_limit_tier, key.expires_at) != wanted:
                key.name, key.rate_limit_tier, key.expires_at = wanted
                session.add(key)
                await session.commit()
                await parts.announce({"api_key_id": str(key.id)})
                events.append(f"updated the name, tier or expiry of {key.prefix}...")

    rotation = None
    previous = status.get("keyId")
    if previous and previous != str(key_id):  # a new key replaced the one status names
        rotation = await _retire(parts, secrets, body, uuid.UUID(previous), key_id,
                                 status.get("secretName"), secret_name)  # fmt: skip
        events.append(rotation["message"])
    if spec.get("revoked") and key.revoked_at is None:
        key = await revoke_api_key(parts, key_id)
        events.append(f"revoked key {key.prefix}...")
    status = _status(key, secret_name, spec) | ({"lastRotation": rotation} if rotation else {})
    return Outcome(status=status, events=events)


async def _revoked_key(parts: OperatorParts, key_id: str | None) -> ApiKey | None:
    """The key the ApiKey last had (its status's `keyId`) if it is revoked: a revoked ApiKey
    never gets another key. Below Kubernetes 1.25 no CEL rule refuses `revoked: false`, and a
    Secret deleted afterwards made the operator issue a new, working key (issue 44, item 9).
    The key's row is the record (`revoked_at`); a key whose row is gone is no record."""
    if key_id is None:
        return None
    async with parts.sessions() as session:
        key = await session.get(ApiKey, uuid.UUID(key_id))
    return key if key is not None and key.revoked_at is not None else None


async def _retire(parts: OperatorParts, secrets: SecretStore, body: dict, previous: uuid.UUID,
                  key_id: uuid.UUID, old_secret: str | None, secret_name: str) -> dict:  # fmt: skip
    """Revoke the key a new one replaced and, when `secretName` changed, delete the Secret the
    operator wrote under the old name (issue 44, item 10: it was left, holding a revoked key,
    and the status said it "had been deleted"). A key whose row no longer exists needs no
    revoking (item 7: revoking it failed NotFoundError at every retry, for good). Returns
    what happened, for status (`lastRotation`) and an Event."""
    namespace = body["metadata"].get("namespace", "default")
    async with parts.sessions() as session:
        exists = await session.get(ApiKey, previous) is not None
    if exists:
        await revoke_api_key(parts, previous)
        revoked = f"revoked the previous key {previous}"
    else:
        revoked = (
            f"the previous key {previous} no longer existed in the database (nothing to revoke)"
        )
    if old_secret and old_secret != secret_name:
        why = f"spec.secretName changed from {old_secret} to {secret_name}"
        try:
            owned = await read_owned(secrets, namespace, old_secret, body)
        except NotReady:  # not the operator's to delete
            left = f"left Secret {old_secret}, which is not this ApiKey's"
        else:
            if owned is not None:
                await secrets.delete(namespace, old_secret)
                left = f"deleted Secret {old_secret}"
            else:
                left = f"Secret {old_secret} was already gone"
        message = f"{why}: issued key {key_id} into Secret {secret_name}, {revoked}, {left}"
    else:
        message = (
            f"Secret {secret_name} was gone (deleted by hand?) and its raw key cannot be "
            f"recovered: issued key {key_id} into a new Secret {secret_name}, {revoked}"
        )
    return {"time": utcnow().isoformat(), "message": message}


async def _refuse_immutable_changes(
    parts: OperatorParts, spec: dict, data: dict[str, str] | None, status: dict
) -> None:
    """Immutable (no retry) if the key already issued (the Secret's, else the status's) was
    issued for another tenant, environment or scopes. Checked before the tenant and user of
    the spec are looked up: the CRD's CEL rules refuse such an edit, but a Kubernetes below
    1.25 drops them silently, and a changed tenant must not read as a missing user, retried
    forever (issue 31 E)."""
    key_id = (data or {}).get("key-id") or status.get("keyId")
    if key_id is None:
        return
    async with parts.sessions() as session:
        key = await session.get(ApiKey, uuid.UUID(key_id))
        tenant = key and await session.get(Tenant, key.tenant_id)
    if key is None or tenant is None:
        return
    if (
        tenant.name != spec["tenant"]
        or key.environment != spec["environment"]
        or sorted(key.scopes) != sorted(spec["scopes"])
    ):
        raise NotReady("Immutable", "tenant, environment and scopes cannot change; create "
                       "a new ApiKey and delete this one to rotate", retry=False)  # fmt: skip


async def release_api_key(parts: OperatorParts, secrets: SecretStore, body: dict) -> None:
    """On deletion: revoke the key before the finalizer lets go."""
    key_id = (body.get("status") or {}).get("keyId")
    if key_id is None:
        try:
            data = await read_owned(secrets, body["metadata"].get("namespace", "default"),
                                    secret_name_of(body), body)  # fmt: skip
        except NotReady:  # another's Secret: its key is not this resource's to revoke
            data = None
        key_id = (data or {}).get("key-id")
    if key_id is not None:
        async with parts.sessions() as session:
            exists = await session.get(ApiKey, uuid.UUID(key_id)) is not None
        if exists:
            await revoke_api_key(parts, uuid.UUID(key_id))


def _state_of(key: ApiKey) -> dict:
    """The state of a key already issued, for a status whose condition tells another story
    (its tenant deleted: the key was revoked with it)."""
    state = "revoked" if key.revoked_at is not None else "active"
    return {"keyId": str(key.id), "prefix": key.prefix, "state": state}


def _status(key: ApiKey, secret_name: str, spec: dict, *, secret_gone: bool = False) -> dict:
    state, message = "active", f"key {key.prefix}... active"
    if key.revoked_at is not None:
        state, message = "revoked", f"key {key.prefix}... revoked"
        if secret_gone:
            message += (
                f" for good, and Secret {secret_name} is gone: no new key is issued for a "
                "revoked ApiKey, whatever spec.revoked says now; create a new ApiKey"
            )
        elif not spec.get("revoked"):  # the CRD refuses it where CEL rules apply
            message += " for good: revoked: false cannot restore it; create a new ApiKey"
    elif key.expires_at is not None and key.expires_at <= utcnow():
        state, message = "expired", f"key {key.prefix}... expired"
    return {
        "keyId": str(key.id),
        "prefix": key.prefix,
        "state": state,
        "secretName": secret_name,
        "conditions": [ready(reason=state.capitalize(), message=message)],
    }


def _expiry(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))

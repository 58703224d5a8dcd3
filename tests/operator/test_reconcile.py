"""The operator's reconcile functions without a cluster (issue 5, unit tests): Tenant and
ApiKey resources against the real databases, Secrets in memory, and of the process only what
OperatorParts declares (issue 54)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from strongroom.auth.keys import display_prefix, generate_key
from strongroom.auth.models import ApiKey
from strongroom.operator import handlers
from strongroom.operator.apikeys import reconcile_api_key, release_api_key
from strongroom.operator.oauthclients import reconcile_oauth_client, release_oauth_client
from strongroom.operator.outcome import NotReady
from strongroom.operator.parts import OperatorParts
from strongroom.operator.secrets import MemorySecretStore
from strongroom.operator.tenants import reconcile_tenant, release_tenant
from strongroom.operator.turns import Turns
from strongroom.runtime import Runtime
from strongroom.settings import Settings
from strongroom.tenants.models import Tenant, User
from strongroom.tenants.partition import Environment

ME = "/api/v2/me"


@dataclass
class OnlyOperatorParts:
    """OperatorParts and nothing else of the process: a reconcile function reaching for
    another part of the Runtime fails here. Its announcements are counted, and published (the
    API the tests ask must see each change at once)."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    key_pepper: bytes
    publish: Callable[[dict[str, str]], Awaitable[None]]
    announced: list[dict[str, str]] = field(default_factory=list)

    async def announce(self, event: dict[str, str]) -> None:
        self.announced.append(event)
        await self.publish(event)

    async def close(self) -> None:
        pass  # the app's runtime, whose parts these are, is closed by its fixture


@pytest.fixture
def parts(runtime: Runtime) -> OperatorParts:
    return OnlyOperatorParts(runtime.settings, runtime.sessions, runtime.key_pepper,
                             runtime.announce)  # fmt: skip


@pytest.fixture
def secrets() -> MemorySecretStore:
    return MemorySecretStore()


def test_the_runtime_has_every_part_the_operator_uses(runtime):
    """The operator's start builds a Runtime and uses it as OperatorParts."""
    protocols = [cls for cls in OperatorParts.__mro__ if getattr(cls, "_is_protocol", False)]
    declared = {  # its own and its bases' (AdminParts) fields and methods
        name
        for protocol in protocols
        for name in [*vars(protocol).get("__annotations__", {}), *vars(protocol)]
        if not name.startswith("_")
    }
    assert {"sessions", "announce"} <= declared  # its fields and its methods both seen
    assert all(hasattr(runtime, name) for name in declared)


def tenant_spec(**changes) -> dict:
    return {
        "displayName": "Acme",
        "users": [{"email": "dev@acme.example", "name": "Dev"}],
    } | changes


async def tenant_status(parts: OperatorParts, name: str, **changes) -> dict:
    """The status reconcile_tenant gives a Tenant `name` of tenant_spec(**changes)."""
    body = {"kind": "Tenant", "metadata": {"name": name, "uid": str(uuid.uuid4())},
            "spec": tenant_spec(**changes)}  # fmt: skip
    return (await reconcile_tenant(parts, MemorySecretStore(), body)).status


def api_key(tenant: str, **changes) -> dict:
    return {
        "metadata": {"name": "ci", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"tenant": tenant, "userEmail": "dev@acme.example", "name": "CI",
                 "environment": "test", "scopes": ["vault:read"]} | changes,
    }  # fmt: skip


@pytest.fixture
async def tenant(parts) -> str:
    name = f"acme-{uuid.uuid4().hex[:8]}"
    await tenant_status(parts, name)
    return name


async def code_of(client, key: str) -> str | None:
    response = await client.get(ME, headers={"Authorization": f"Bearer {key}"})
    return None if response.status_code == 200 else (await response.get_json())["code"]


async def test_a_tenant_is_created_with_its_users_and_credits(parts, secrets):
    body = {"metadata": {"name": f"t-{uuid.uuid4().hex[:8]}", "uid": "u"}, "spec": tenant_spec()}
    outcome = await reconcile_tenant(parts, secrets, body)
    status = outcome.status
    assert secrets.secrets == {} and outcome.events == []  # a Tenant holds no Secret
    assert parts.announced == [{"tenant_id": status["tenantId"]}]  # every API process told
    assert status["creditsRemaining"] == 100_000
    assert status["conditions"][0]["status"] == "True"
    uuid.UUID(status["tenantId"])


async def test_tenant_reconcile_is_idempotent_and_grants_only_increases(parts):
    name = f"t-{uuid.uuid4().hex[:8]}"
    first = await tenant_status(parts, name)
    again = await tenant_status(parts, name)
    assert again["tenantId"] == first["tenantId"] and again["creditsRemaining"] == 100_000
    raised = await tenant_status(parts, name, creditsGranted=150_000)
    assert raised["creditsRemaining"] == 150_000
    lowered = await tenant_status(parts, name, creditsGranted=10)
    assert lowered["creditsRemaining"] == 150_000  # credits are not taken back
    [condition] = lowered["conditions"]  # and it says so where no CEL rule refused it
    assert condition["reason"] == "CreditsNotTakenBack" and "150000" in condition["message"]


async def test_an_api_key_lands_in_its_secret_and_works(parts, secrets, tenant, client):
    body = api_key(tenant)
    outcome = await reconcile_api_key(parts, secrets, body)
    data = secrets.secrets[("default", "ci-api-key")]
    assert len(data["api-key"]) == 60 and data["api-key"].startswith("ak_test_")
    assert data["key-id"] == outcome.status["keyId"] and data["prefix"] == data["api-key"][:12]
    assert secrets.owners[("default", "ci-api-key")] == body["metadata"]["uid"]
    assert outcome.status["state"] == "active" and outcome.status["prefix"] == data["prefix"]
    assert await code_of(client, data["api-key"]) is None


async def test_api_key_reconcile_is_idempotent(parts, secrets, tenant):
    body = api_key(tenant)
    first = await reconcile_api_key(parts, secrets, body)
    again = await reconcile_api_key(parts, secrets, body | {"status": first.status})
    assert again.status["keyId"] == first.status["keyId"] and again.events == []


async def test_a_crash_after_the_secret_loses_no_key(parts, secrets, tenant, client):
    body = api_key(tenant)
    raw = generate_key(Environment.TEST)  # written, then the operator died before the row
    secrets.secrets[("default", "ci-api-key")] = {"api-key": raw, "key-id": str(uuid.uuid4()),
                                                   "prefix": display_prefix(raw)}  # fmt: skip
    secrets.owners[("default", "ci-api-key")] = body["metadata"]["uid"]  # written as its own
    assert await code_of(client, raw) == "invalid_api_key"
    outcome = await reconcile_api_key(parts, secrets, body)
    assert outcome.status["keyId"] == secrets.secrets[("default", "ci-api-key")]["key-id"]
    assert await code_of(client, raw) is None


async def test_an_api_key_naming_another_api_keys_secret_is_refused_with_no_effect(
    parts, secrets, tenant, client
):
    """Issue 44: an ApiKey whose secretName named another ApiKey's Secret adopted its key, and
    deleting it revoked the other's while the other's status still said `active`."""
    first = api_key(tenant)
    issued = await reconcile_api_key(parts, secrets, first)
    raw = secrets.secrets[("default", "ci-api-key")]["api-key"]
    intruder = api_key(tenant, secretName="ci-api-key")
    intruder["metadata"]["name"] = "intruder"
    with pytest.raises(NotReady) as refused:
        await reconcile_api_key(parts, secrets, intruder)
    assert refused.value.reason == "SecretNotOwned" and "ci-api-key" in refused.value.message
    assert secrets.secrets[("default", "ci-api-key")]["api-key"] == raw
    await release_api_key(parts, secrets, intruder)  # deleting it touches nothing of first's
    assert await code_of(client, raw) is None
    again = await reconcile_api_key(parts, secrets, first | {"status": issued.status})
    assert again.status["keyId"] == issued.status["keyId"] and again.status["state"] == "active"


async def test_a_secret_of_the_users_with_the_default_name_is_never_overwritten(
    parts, secrets, tenant
):
    secrets.secrets[("default", "ci-api-key")] = {"password": "the user's own"}
    with pytest.raises(NotReady) as refused:
        await reconcile_api_key(parts, secrets, api_key(tenant))
    assert refused.value.reason == "SecretNotOwned"
    assert secrets.secrets[("default", "ci-api-key")] == {"password": "the user's own"}


async def test_an_oauth_client_naming_another_resources_secret_is_refused(parts, secrets):
    secrets.secrets[("default", "shared")] = {"client-id": "client_theirs"}
    secrets.owners[("default", "shared")] = str(uuid.uuid4())
    body = {
        "metadata": {"name": "app", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"clientName": "App", "redirectUris": ["https://app.example/cb"],
                 "secretName": "shared"},
    }  # fmt: skip
    with pytest.raises(NotReady) as refused:
        await reconcile_oauth_client(parts, secrets, body)
    assert refused.value.reason == "SecretNotOwned"


async def test_a_crash_before_the_status_makes_no_second_key(parts, secrets, tenant):
    body = api_key(tenant)
    first = await reconcile_api_key(parts, secrets, body)
    again = await reconcile_api_key(parts, secrets, body)  # status never written
    assert again.status["keyId"] == first.status["keyId"]


async def test_a_secret_deleted_by_hand_rotates_the_key(parts, secrets, tenant, client):
    body = api_key(tenant)
    first = await reconcile_api_key(parts, secrets, body)
    old = secrets.secrets.pop(("default", "ci-api-key"))["api-key"]
    second = await reconcile_api_key(parts, secrets, body | {"status": first.status})
    new = secrets.secrets[("default", "ci-api-key")]["api-key"]
    assert second.status["keyId"] != first.status["keyId"]
    assert any("deleted" in event for event in second.events)
    assert await code_of(client, old) == "api_key_revoked"
    assert await code_of(client, new) is None


async def test_revoked_true_revokes_at_once(parts, secrets, tenant, client):
    body = api_key(tenant)
    await reconcile_api_key(parts, secrets, body)
    raw = secrets.secrets[("default", "ci-api-key")]["api-key"]
    assert await code_of(client, raw) is None
    body["spec"]["revoked"] = True
    outcome = await reconcile_api_key(parts, secrets, body)
    assert outcome.status["state"] == "revoked"
    assert await code_of(client, raw) == "api_key_revoked"
    body["spec"]["revoked"] = False  # where no CEL rule refused it: said, not done
    again = await reconcile_api_key(parts, secrets, body)
    assert again.status["state"] == "revoked" and "for good" in again.status["conditions"][0][
        "message"]  # fmt: skip
    assert await code_of(client, raw) == "api_key_revoked"


async def test_an_expired_key_says_so(parts, secrets, tenant):
    body = api_key(tenant, expiresAt="2020-01-01T00:00:00Z")
    outcome = await reconcile_api_key(parts, secrets, body)
    assert outcome.status["state"] == "expired"


async def test_scopes_cannot_change_in_place(parts, secrets, tenant):
    body = api_key(tenant)
    await reconcile_api_key(parts, secrets, body)
    body["spec"]["scopes"] = ["vault:read", "vault:write"]
    with pytest.raises(NotReady) as refused:
        await reconcile_api_key(parts, secrets, body)
    assert refused.value.reason == "Immutable" and not refused.value.retry


async def test_the_tenant_and_environment_cannot_change_in_place_without_cel(
    parts, secrets, tenant
):
    """Issue 31 E: below Kubernetes 1.25 the CRD's CEL rules are dropped, so the operator is
    the only guard: a changed tenant is Immutable (not retried), whether the new tenant is
    missing, lacks the user, or has it; never a UserNotFound retried forever."""
    body = api_key(tenant)
    await reconcile_api_key(parts, secrets, body)
    other = f"acme-{uuid.uuid4().hex[:8]}"
    await tenant_status(parts, other, users=[{"email": "x@acme.example"}])
    with_user = f"acme-{uuid.uuid4().hex[:8]}"
    await tenant_status(parts, with_user)
    changes = [
        {"tenant": "no-such-tenant"},
        {"tenant": other},
        {"tenant": with_user},
        {"environment": "live"},
        {"tenant": other, "userEmail": "x@acme.example"},
    ]
    for change in changes:
        with pytest.raises(NotReady) as refused:
            await reconcile_api_key(parts, secrets, body | {"spec": body["spec"] | change})
        assert (refused.value.reason, refused.value.retry) == ("Immutable", False), change


async def test_a_missing_tenant_or_user_waits_to_be_told_not_for_a_backoff(parts, secrets, tenant):
    """Issue 44, item 10: the Tenant's handlers tell the ApiKey when it comes (or its users
    change); a retry at a backoff held the ApiKey's handlers until then."""
    with pytest.raises(NotReady) as missing:
        await reconcile_api_key(parts, secrets, api_key("no-such-tenant"))
    assert missing.value.reason == "TenantNotFound"
    assert missing.value.told and not missing.value.retry
    with pytest.raises(NotReady) as stranger:
        await reconcile_api_key(parts, secrets, api_key(tenant, userEmail="x@acme.example"))
    assert stranger.value.reason == "UserNotFound"
    assert stranger.value.told and not stranger.value.retry


async def test_deleting_the_resource_revokes_the_key(parts, secrets, tenant, client):
    body = api_key(tenant)
    outcome = await reconcile_api_key(parts, secrets, body)
    raw = secrets.secrets[("default", "ci-api-key")]["api-key"]
    await release_api_key(parts, secrets, body | {"status": outcome.status})
    assert await code_of(client, raw) == "api_key_revoked"


async def test_suspension_and_removed_users_take_effect_in_the_api(parts, secrets, client):
    name = f"t-{uuid.uuid4().hex[:8]}"
    await tenant_status(parts, name)
    await reconcile_api_key(parts, secrets, api_key(name))
    raw = secrets.secrets[("default", "ci-api-key")]["api-key"]
    assert await code_of(client, raw) is None
    await tenant_status(parts, name, users=[])
    assert await code_of(client, raw) == "user_inactive"
    await tenant_status(parts, name, suspended=True)
    assert await code_of(client, raw) == "tenant_disabled"


# -- OAuthClient ------------------------------------------------------------------------------


def oauth_client_body(**changes) -> dict:
    return {
        "apiVersion": "strongroom.io/v1", "kind": "OAuthClient",
        "metadata": {"name": "portal", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"clientName": "Portal", "redirectUris": ["https://portal.example/cb"],
                 "scopes": ["vault:read", "vault:write"]} | changes,
    }  # fmt: skip


async def test_an_oauth_client_is_registered_with_its_secret_only_in_the_secret(parts, secrets):
    from strongroom.oauth.models import OAuthClient

    body = oauth_client_body()
    outcome = await reconcile_oauth_client(parts, secrets, body)
    data = secrets.secrets[("default", "portal-oauth-client")]
    assert data["client-id"] == outcome.status["clientId"] and data["client-secret"]
    async with parts.sessions() as session:
        row = await session.get(OAuthClient, data["client-id"])
    assert row.scope == "vault:read vault:write" and not row.dynamic
    assert data["client-secret"] not in str(row.model_dump())
    again = await reconcile_oauth_client(parts, secrets, body | {"status": outcome.status})
    assert again.status["clientId"] == outcome.status["clientId"] and again.events == []


async def test_an_oauth_client_follows_spec_changes_and_goes_on_deletion(parts, secrets):
    from strongroom.oauth.models import OAuthClient

    body = oauth_client_body()
    outcome = await reconcile_oauth_client(parts, secrets, body)
    body["spec"]["redirectUris"] = ["https://portal.example/new"]
    await reconcile_oauth_client(parts, secrets, body)
    async with parts.sessions() as session:
        row = await session.get(OAuthClient, outcome.status["clientId"])
        assert row.redirect_uris == ["https://portal.example/new"]
    await release_oauth_client(parts, body | {"status": outcome.status})
    async with parts.sessions() as session:
        assert await session.get(OAuthClient, outcome.status["clientId"]) is None


async def test_an_oauth_client_with_a_bad_redirect_uri_is_refused_for_good(parts, secrets):
    body = oauth_client_body(redirectUris=["http://evil.example/cb"])
    with pytest.raises(NotReady) as refused:
        await reconcile_oauth_client(parts, secrets, body)
    assert not refused.value.retry


async def test_name_tier_and_expiry_change_in_place(parts, secrets, tenant, client):
    body = api_key(tenant)
    first = await reconcile_api_key(parts, secrets, body)
    raw = secrets.secrets[("default", "ci-api-key")]["api-key"]
    assert await code_of(client, raw) is None
    body["spec"] |= {"name": "Renamed", "rateLimitTier": "pro", "expiresAt": "2020-01-01T00:00:00Z"}
    again = await reconcile_api_key(parts, secrets, body | {"status": first.status})
    assert again.status["keyId"] == first.status["keyId"] and again.status["state"] == "expired"
    assert await code_of(client, raw) == "api_key_expired"


# -- Tenant deletion (issue 17) -------------------------------------------------------------


async def test_deleting_a_tenant_ends_its_keys_and_grants_and_keeps_the_record(
    parts, secrets, client
):
    from strongroom.oauth.models import OAuthChain
    from strongroom.tenants.models import Tenant

    name = f"t-{uuid.uuid4().hex[:8]}"
    status = await tenant_status(parts, name)
    await reconcile_api_key(parts, secrets, api_key(name))
    raw = secrets.secrets[("default", "ci-api-key")]["api-key"]
    assert await code_of(client, raw) is None
    async with parts.sessions() as session:
        tenant = await session.get(Tenant, uuid.UUID(status["tenantId"]))
        user = (await session.exec(select(User).where(User.tenant_id == tenant.id))).one()
        portal = await reconcile_oauth_client(parts, secrets, oauth_client_body())
        chain = OAuthChain(client_id=portal.status["clientId"], user_id=user.id,
                           tenant_id=tenant.id, scope="vault:read")  # fmt: skip
        session.add(chain)
        await session.commit()

    revoked = await release_tenant(parts, name, status)

    assert revoked == {"keys": 1, "grants": 1}
    assert await code_of(client, raw) == "api_key_revoked"
    key_id = uuid.UUID(secrets.secrets[("default", "ci-api-key")]["key-id"])
    async with parts.sessions() as session:
        kept = await session.get(Tenant, uuid.UUID(status["tenantId"]))
        assert kept.deleted_at is not None and kept.suspended and kept.credits == 100_000
        assert (await session.get(ApiKey, key_id)).revoked_at is not None
        assert (await session.get(OAuthChain, chain.id)).revoked_at is not None


async def test_a_new_tenant_of_a_deleted_name_is_refused_and_never_adopts_the_record(parts):
    name = f"t-{uuid.uuid4().hex[:8]}"
    status = await tenant_status(parts, name)
    await release_tenant(parts, name, status)
    with pytest.raises(NotReady) as refused:
        await tenant_status(parts, name, creditsGranted=500_000)
    assert refused.value.reason == "TenantDeleted" and not refused.value.retry
    assert "restoreDeleted" in refused.value.message
    # The refused resource's deletion leaves the kept record as it was.
    assert await release_tenant(parts, name, {}) is None


async def test_restore_deleted_restores_the_old_record_with_its_keys_still_revoked(
    parts, secrets, client
):
    name = f"t-{uuid.uuid4().hex[:8]}"
    status = await tenant_status(parts, name)
    await reconcile_api_key(parts, secrets, api_key(name))
    raw = secrets.secrets[("default", "ci-api-key")]["api-key"]
    await release_tenant(parts, name, status)
    restored = await tenant_status(parts, name, restoreDeleted=True)
    assert restored["tenantId"] == status["tenantId"] and restored["creditsRemaining"] == 100_000
    assert await code_of(client, raw) == "api_key_revoked"


async def test_an_api_key_of_a_deleted_tenant_gets_no_new_key(parts, secrets):
    name = f"t-{uuid.uuid4().hex[:8]}"
    status = await tenant_status(parts, name)
    await release_tenant(parts, name, status)
    with pytest.raises(NotReady) as refused:
        await reconcile_api_key(parts, secrets, api_key(name))
    assert refused.value.reason == "TenantDeleted" and not refused.value.retry
    assert secrets.secrets == {}


async def test_a_deleted_tenants_erasure_is_what_its_status_waits_for(parts, runtime):
    """Issue 42, item 5: the Tenant's deletion handler keeps the finalizer while `erasedAt`
    is null; nothing to wait for without a reconciled record."""
    from datetime import datetime, timedelta

    from strongroom.operator.tenants import ErasureNotStarted, erasure_of
    from strongroom.tenant_erasure import erase_tenant_named

    name = f"t-{uuid.uuid4().hex[:8]}"
    status = await tenant_status(parts, name)
    with pytest.raises(ErasureNotStarted):
        await erasure_of(parts, status)  # the deletion's first handler has not run
    assert await erasure_of(parts, {}) is None  # never reconciled, or refused

    await release_tenant(parts, name, status)
    waiting = await erasure_of(parts, status)
    due = datetime.fromisoformat(waiting["dueAt"])
    assert waiting["erasedAt"] is None
    assert due - datetime.now(due.tzinfo) > timedelta(days=parts.settings.tenant_erasure_days - 1)

    await erase_tenant_named(runtime, name)  # the processes that run jobs erase it
    done = await erasure_of(parts, status)
    assert done["dueAt"] == waiting["dueAt"] and done["erasedAt"] is not None


# -- one handler of a resource at a time (strongroom.operator.turns) ---------------------------


class KubeLikeSecretStore(MemorySecretStore):
    api_client = None  # the handlers' status writes are recorded instead


async def test_a_timer_beside_a_handler_issues_one_key_not_two(parts, tenant, monkeypatch):
    """kopf runs a resource's timer beside its change handlers. Two reconciles at once of an
    ApiKey without its Secret each issued a key (2 of 2 runs): the Secret kept one, the other
    stayed active with nothing holding or revoking it. In turns, the second finds the first's
    Secret and key."""
    written = []

    async def write_status(api_client, body, status) -> None:
        written.append(status)

    monkeypatch.setattr(handlers, "write_status", write_status)
    monkeypatch.setattr(handlers, "_post", lambda *args: None)
    secrets = KubeLikeSecretStore()
    memo = SimpleNamespace(parts=parts, secrets=secrets, warned={}, turns=Turns())
    body = api_key(tenant) | {"kind": "ApiKey"}
    await asyncio.gather(*(handlers._reconcile(reconcile_api_key, body, body["metadata"], {},
                                               memo, 0) for _ in range(2)))  # fmt: skip

    held = secrets.secrets[("default", "ci-api-key")]["key-id"]
    async with parts.sessions() as session:
        active = (
            await session.exec(
                select(ApiKey.id)
                .join(Tenant, Tenant.id == ApiKey.tenant_id)
                .where(Tenant.name == tenant, ApiKey.revoked_at.is_(None))
            )
        ).all()
    assert [str(key_id) for key_id in active] == [held]
    assert [status["keyId"] for status in written] == [held, held]
    assert len(memo.turns) == 0  # no lock kept once nobody reconciles

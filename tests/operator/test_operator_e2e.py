"""The operator end to end (issue 5): kopf's KopfRunner runs `strongroom.operator.handlers`
against a Kubernetes API, the resources are applied with a Kubernetes client, and the API
sees the result. Here the API is the kmock emulator (tests/operator/emulator.py; no cluster
runs here); with KUBECONFIG pointing at a real cluster (kind in CI elsewhere, CRDs applied
from crds/) the same tests run against it unchanged.

Every name a test creates begins with its `run` prefix, and the test deletes what it created
while its operator still runs (issue 17): a real cluster keeps what a test leaves, and the
next operator would adopt it. Merge-style patches go as merge patches, which a real API
server requires (the emulator refuses the wrong content type too)."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import time
import uuid
from datetime import datetime, timedelta

import kopf
import pytest
from kopf._core.intents.handlers import TimerHandler
from kopf.testing import KopfRunner
from kubernetes_asyncio import client, config
from sqlmodel import select

from strongroom.app import create_app
from strongroom.auth.models import ApiKey
from strongroom.operator import failures, handlers
from strongroom.runtime import Runtime
from tests.operator.emulator import EmulatedCluster, status_schemas
from tests.processes import environment_of

GROUP, VERSION = "strongroom.io", "v1"
MERGE_PATCH = "application/merge-patch+json"


@pytest.fixture
def erasure_days() -> int:
    """STRONGROOM_TENANT_ERASURE_DAYS of the operator: 0, so that a deleted Tenant goes once
    `eraser` has erased its data (issue 42, item 5); a test of the wait says 30."""
    return 0


@pytest.fixture
def cluster(tmp_path, monkeypatch, postgres_settings, erasure_days):
    for name, value in environment_of(postgres_settings).items():
        if name.startswith("STRONGROOM_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("STRONGROOM_OPERATOR_RESYNC_SECONDS", "1")  # drift repair within a test
    monkeypatch.setenv("STRONGROOM_TENANT_ERASURE_DAYS", str(erasure_days))
    if os.environ.get("KUBECONFIG"):  # a real cluster: the CRDs are applied beforehand
        yield None
        return
    with EmulatedCluster(tmp_path) as emulated:
        monkeypatch.setenv("KUBECONFIG", str(emulated.kubeconfig))
        yield emulated


@pytest.fixture
def resync_seconds() -> float:
    """How often the resync timers run: every second, so that drift is repaired within a
    test; a test of what must happen without waiting for a resync says 300."""
    return 1


def registry_with_resync(seconds: float) -> kopf.OperatorRegistry:
    """The operator's handlers, with their resync timers every `seconds` (kopf reads a
    timer's interval once, when the decorator runs at import)."""
    import strongroom.operator.handlers  # noqa: F401 (registers the handlers)

    source, registry = kopf.get_default_registry(), kopf.OperatorRegistry()
    for part in ("_activities", "_indexing", "_watching", "_spawning", "_changing", "_webhooks"):
        for handler in getattr(source, part).get_all_handlers():
            if isinstance(handler, TimerHandler):
                handler = dataclasses.replace(handler, interval=seconds, idle=seconds)
            getattr(registry, part).append(handler)
    return registry


@pytest.fixture
def retry_seconds() -> float | None:
    """The backoff of a failed or waiting reconcile: the operator's own (1, 2, 4 ... s),
    unless a test of what must happen without waiting for a retry says 300."""
    return None


@pytest.fixture
def operator(cluster, resync_seconds, retry_seconds, monkeypatch):
    if retry_seconds is not None:  # the operator runs in this process: its backoff is ours
        monkeypatch.setattr(failures, "FIRST_RETRY_SECONDS", retry_seconds)
        monkeypatch.setattr(failures, "LONGEST_RETRY_SECONDS", retry_seconds)
    # A Tenant waiting for an erasure due later is looked at again every second (not 60 s):
    # erased by the test or by `run`'s teardown, it goes within the teardown's wait.
    monkeypatch.setattr(handlers, "ERASURE_RECHECK_SECONDS", 1)
    with KopfRunner(["run", "--standalone", "--all-namespaces"], timeout=60,
                    registry=registry_with_resync(resync_seconds)) as runner:  # fmt: skip
        yield runner
    assert runner.exception is None, runner.exception


@pytest.fixture
async def kube(cluster):
    """The test's own client. On a real cluster it may use another context of the kubeconfig
    than the operator (E2E_CLIENT_CONTEXT, e.g. an admin's), so that the operator runs under
    its ServiceAccount's token and RBAC (crds/operator-rbac.yaml) while the test, as a user,
    creates what the operator may not."""
    context = os.environ.get("E2E_CLIENT_CONTEXT") if cluster is None else None
    await config.load_kube_config(config_file=os.environ["KUBECONFIG"], context=context)
    api_client = client.ApiClient()
    yield client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    await api_client.close()


@pytest.fixture
async def eraser(postgres_settings):
    """What a worker does beside the operator: erase deleted tenants when due, here checked
    every 0.2 s (its `tenant_erasure` background task; strongroom.tenant_erasure)."""
    settings = postgres_settings.model_copy(update={"tenant_erasure_check_seconds": 0.2})
    process = Runtime.create(settings)
    process.background.start("tenant_erasure")
    yield process
    await process.close()


@pytest.fixture
async def run(eraser, operator, kube):
    """A name prefix for this test; afterwards, everything named with it is deleted (the
    operator still running, so that its finalizers let go) and awaited until gone."""
    prefix = f"e2e-{uuid.uuid4().hex[:6]}"
    yield prefix
    custom, core = kube
    leftovers = []
    for plural in ("apikeys", "oauthclients"):
        listed = await custom.list_namespaced_custom_object(GROUP, VERSION, "default", plural)
        leftovers += [(plural, item["metadata"]["name"]) for item in listed["items"]]
    listed = await custom.list_cluster_custom_object(GROUP, VERSION, "tenants")
    leftovers += [("tenants", item["metadata"]["name"]) for item in listed["items"]]
    leftovers = [(plural, name) for plural, name in leftovers if name.startswith(prefix)]
    erased: set[str] = set()
    for plural, name in leftovers:
        await _ignore_404(_delete(custom, plural, name))
    for plural, name in leftovers:
        if plural == "tenants":  # the test's hold released, its erasure not waited for
            await until(lambda name=name: _tenant_let_go(custom, eraser, name, erased))
        await until(lambda plural=plural, name=name: _gone(custom, plural, name))
    secrets = await core.list_namespaced_secret("default")
    for secret in secrets.items:  # a real cluster collects owned Secrets; the emulator does not
        if secret.metadata.name.startswith(prefix):
            await _ignore_404(core.delete_namespaced_secret(secret.metadata.name, "default"))


async def _tenant_let_go(custom, eraser, name: str, erased: set[str]) -> bool:
    """The deleted Tenant `name` gone, or let go: the test's own finalizer (HOLD) removed,
    which a real API server allows while an object is being deleted (adding one it refuses),
    and its data erased at once, as `strongroom tenants erase` does, when the operator waits
    for an erasure due later (STRONGROOM_TENANT_ERASURE_DAYS 30): else the Tenant stays
    Terminating for 30 days, and the next operator adopts it."""
    from strongroom.tenant_erasure import erase_tenant_named

    resource = await tenant_resource(custom, name)
    if resource is None:
        return True
    if HOLD in resource["metadata"].get("finalizers", []):
        await _release_hold(custom, name)
    erasure = (resource.get("status") or {}).get("erasure") or {}
    if erasure.get("dueAt") and not erasure.get("erasedAt") and name not in erased:
        await erase_tenant_named(eraser, name)
        erased.add(name)
    return "strongroom.io/finalizer" not in resource["metadata"].get("finalizers", [])


def _delete(custom, plural: str, name: str):
    if plural == "tenants":
        return custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
    return custom.delete_namespaced_custom_object(GROUP, VERSION, "default", plural, name)


async def _gone(custom, plural: str, name: str) -> bool:
    try:
        if plural == "tenants":
            await custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
        else:
            await custom.get_namespaced_custom_object(GROUP, VERSION, "default", plural, name)
    except client.ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


async def _ignore_404(call) -> None:
    try:
        await call
    except client.ApiException as error:
        if error.status != 404:
            raise


@pytest.fixture
async def database(postgres_settings):
    """The API's database, for a test that changes a row behind the operator's back."""
    runtime = Runtime.create(postgres_settings)
    yield runtime
    await runtime.close()


@pytest.fixture
async def api(postgres_settings):
    app = create_app(postgres_settings)
    async with app.test_app():
        yield app.test_client()


async def until(probe, seconds: float = 30):
    """The first truthy answer of `probe`, polled for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        result = await probe()
        if result:
            return result
        assert time.monotonic() < deadline, "timed out waiting for the operator"
        await asyncio.sleep(0.2)


async def test_tenant_and_api_key_reach_the_api_and_revocation_follows(run, kube, api):
    custom, core = kube
    tenant = f"{run}-acme"
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": tenant},
        "spec": {"displayName": "Acme", "creditsGranted": 100000,
                 "users": [{"email": "dev@acme.example", "name": "Dev"}]}})  # fmt: skip
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", "apikeys", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ApiKey",
        "metadata": {"name": f"{tenant}-ci", "namespace": "default"},
        "spec": {"tenant": tenant, "userEmail": "dev@acme.example", "name": "CI",
                 "environment": "test", "scopes": ["vault:read"]}})  # fmt: skip

    async def state() -> str | None:
        key = await custom.get_namespaced_custom_object(GROUP, VERSION, "default", "apikeys",
                                                        f"{tenant}-ci")  # fmt: skip
        return (key.get("status") or {}).get("state")

    assert await until(state) == "active"
    secret = await core.read_namespaced_secret(f"{tenant}-ci-api-key", "default")
    raw = base64.b64decode(secret.data["api-key"]).decode()
    headers = {"Authorization": f"Bearer {raw}"}
    assert (await api.get("/api/v2/me", headers=headers)).status_code == 200

    await custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        "apikeys",
        f"{tenant}-ci",
        {"spec": {"revoked": True}},
        _content_type=MERGE_PATCH,
    )
    assert await until(lambda: _is(state, "revoked"))
    refused = await api.get("/api/v2/me", headers=headers)
    assert (await refused.get_json())["code"] == "api_key_revoked"


async def _is(probe, value):
    return await probe() == value


async def apply_tenant_and_key(custom, tenant: str, **tenant_spec) -> str:
    await custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "tenants",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Tenant",
            "metadata": {"name": tenant},
            "spec": {"displayName": "Acme", "users": [{"email": "dev@acme.example"}]} | tenant_spec,
        },
    )
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", "apikeys", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ApiKey",
        "metadata": {"name": f"{tenant}-ci", "namespace": "default"},
        "spec": {"tenant": tenant, "userEmail": "dev@acme.example", "name": "CI",
                 "environment": "test", "scopes": ["vault:read"]}})  # fmt: skip
    return tenant


async def secret_of(core, tenant: str) -> dict[str, str] | None:
    try:
        secret = await core.read_namespaced_secret(f"{tenant}-ci-api-key", "default")
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return {key: base64.b64decode(value).decode() for key, value in secret.data.items()}


async def me_code(api, key: str) -> str | None:
    response = await api.get("/api/v2/me", headers={"Authorization": f"Bearer {key}"})
    return None if response.status_code == 200 else (await response.get_json())["code"]


async def test_deleting_an_api_key_revokes_it_before_it_goes(run, kube, api):
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    data = await until(lambda: secret_of(core, tenant))
    assert await until(lambda: _none_is_ok(me_code(api, data["api-key"])))
    await custom.delete_namespaced_custom_object(GROUP, VERSION, "default", "apikeys",
                                                 f"{tenant}-ci")  # fmt: skip

    async def gone() -> bool:
        try:
            await custom.get_namespaced_custom_object(GROUP, VERSION, "default", "apikeys",
                                                      f"{tenant}-ci")  # fmt: skip
        except client.ApiException as error:
            return error.status == 404
        return False

    assert await until(gone)
    assert await me_code(api, data["api-key"]) == "api_key_revoked"


async def _none_is_ok(code) -> bool:
    return await code is None


async def test_a_secret_deleted_by_hand_is_repaired_with_a_new_key(run, kube, api):
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    first = await until(lambda: secret_of(core, tenant))
    await until(lambda: _none_is_ok(me_code(api, first["api-key"])))
    await core.delete_namespaced_secret(f"{tenant}-ci-api-key", "default")

    async def replaced():
        data = await secret_of(core, tenant)
        return data if data and data["key-id"] != first["key-id"] else None

    second = await until(replaced)
    assert await until(lambda: _is(lambda: me_code(api, first["api-key"]), "api_key_revoked"))
    assert await me_code(api, second["api-key"]) is None


async def test_suspending_the_tenant_refuses_its_keys(run, kube, api):
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    data = await until(lambda: secret_of(core, tenant))
    await until(lambda: _none_is_ok(me_code(api, data["api-key"])))
    await custom.patch_cluster_custom_object(GROUP, VERSION, "tenants", tenant,
                                             {"spec": {"suspended": True}},
                                             _content_type=MERGE_PATCH)  # fmt: skip
    assert await until(lambda: _is(lambda: me_code(api, data["api-key"]), "tenant_disabled"))


async def test_an_operator_that_died_after_writing_the_secret_completes_the_key(run, kube, api):
    """The crash between the two steps, end to end: a Secret with a key exists, written (and
    owned, as the operator writes it) for the ApiKey by an operator that died before the
    database row; the running operator adopts that key. The ApiKey waits for its Tenant while
    the Secret is put in place, so no reconcile writes one first."""
    custom, core = kube
    from strongroom.auth.keys import display_prefix, generate_key
    from strongroom.tenants.partition import Environment

    tenant = f"{run}-acme"
    raw = generate_key(Environment.TEST)
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", "apikeys", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ApiKey",
        "metadata": {"name": f"{tenant}-ci", "namespace": "default"},
        "spec": {"tenant": tenant, "userEmail": "dev@acme.example", "name": "CI",
                 "environment": "test", "scopes": ["vault:read"]}})  # fmt: skip
    key = await custom.get_namespaced_custom_object(
        GROUP, VERSION, "default", "apikeys", f"{tenant}-ci"
    )
    await core.create_namespaced_secret("default", {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": f"{tenant}-ci-api-key", "ownerReferences": [{
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "ApiKey", "name": f"{tenant}-ci",
            "uid": key["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "data": {name: base64.b64encode(value.encode()).decode() for name, value in {
            "api-key": raw, "key-id": str(uuid.uuid4()), "prefix": display_prefix(raw)}.items()},
    })  # fmt: skip
    assert await me_code(api, raw) == "invalid_api_key"
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": tenant},
        "spec": {"displayName": "Acme", "users": [{"email": "dev@acme.example"}]}})  # fmt: skip
    assert await until(lambda: _none_is_ok(me_code(api, raw)))


async def test_an_api_key_naming_another_api_keys_secret_leaves_it_alone(run, kube, api):
    """Issue 44: the second ApiKey is refused in its status; the first key keeps working."""
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    assert await until(lambda: secret_of(core, tenant))
    raw = (await secret_of(core, tenant))["api-key"]
    assert await until(lambda: _none_is_ok(me_code(api, raw)))
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", "apikeys", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ApiKey",
        "metadata": {"name": f"{tenant}-intruder", "namespace": "default"},
        "spec": {"tenant": tenant, "userEmail": "dev@acme.example", "name": "Intruder",
                 "environment": "test", "scopes": ["vault:read"],
                 "secretName": f"{tenant}-ci-api-key"}})  # fmt: skip

    async def refused():
        body = await custom.get_namespaced_custom_object(
            GROUP, VERSION, "default", "apikeys", f"{tenant}-intruder"
        )
        conditions = (body.get("status") or {}).get("conditions") or []
        return any(c.get("reason") == "SecretNotOwned" for c in conditions)

    assert await until(refused)
    await custom.delete_namespaced_custom_object(
        GROUP, VERSION, "default", "apikeys", f"{tenant}-intruder"
    )
    assert (await secret_of(core, tenant))["api-key"] == raw
    assert await me_code(api, raw) is None


async def test_an_oauth_client_resource_registers_a_client_with_its_secret(run, kube, api):
    custom, core = kube
    name = f"{run}-portal"
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", "oauthclients", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "OAuthClient",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"clientName": "Portal", "redirectUris": ["https://portal.example/cb"],
                 "scopes": ["vault:read", "meta:read"]}})  # fmt: skip

    async def registered():
        resource = await custom.get_namespaced_custom_object(GROUP, VERSION, "default",
                                                             "oauthclients", name)  # fmt: skip
        return (resource.get("status") or {}).get("clientId")

    client_id = await until(registered)
    secret = await core.read_namespaced_secret(f"{name}-oauth-client", "default")
    assert base64.b64decode(secret.data["client-id"]).decode() == client_id
    assert base64.b64decode(secret.data["client-secret"])
    page = await api.get(f"/api/v2/oauth/authorize?client_id={client_id}"
                         "&redirect_uri=https://evil.example/cb")  # fmt: skip
    assert "not registered" in await page.get_data(as_text=True)  # the client is known


async def test_what_the_operator_did_is_told_in_events(run, kube):
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    data = await until(lambda: secret_of(core, tenant))

    async def events():  # once the Secret's Event has landed (Events are posted behind)
        listed = await core.list_namespaced_event("default")
        messages = [event.message for event in listed.items
                    if event.involved_object.name == f"{tenant}-ci"]  # fmt: skip
        return messages if any("wrote the key" in message for message in messages) else None

    messages = await until(events)
    from prometheus_client import REGISTRY

    succeeded = REGISTRY.get_sample_value(
        "strongroom_operator_reconciliations_total", {"kind": "ApiKey", "outcome": "succeeded"}
    )
    assert succeeded and succeeded >= 1
    assert any("wrote the key into Secret" in message for message in messages)
    assert not any(data["api-key"] in message for message in messages)  # never the key itself


# -- issue 17: tenant deletion, visible failures ----------------------------------------------


async def tenant_ready(custom, name: str) -> dict | None:
    try:
        resource = await custom.get_cluster_custom_object(GROUP, VERSION, "tenants", name)
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return _ready_condition(resource)


async def key_ready(custom, name: str) -> dict | None:
    resource = await custom.get_namespaced_custom_object(GROUP, VERSION, "default", "apikeys",
                                                         name)  # fmt: skip
    return _ready_condition(resource)


def _ready_condition(resource: dict) -> dict | None:
    conditions = (resource.get("status") or {}).get("conditions") or []
    return next((found for found in conditions if found["type"] == "Ready"), None)


async def warnings_of(core, name: str) -> list:
    listed = await core.list_namespaced_event("default")
    return [event for event in listed.items
            if event.involved_object.name == name and event.type == "Warning"]  # fmt: skip


async def test_deleting_a_tenant_revokes_its_keys_and_its_name_is_not_silently_reused(
    run, kube, api
):
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    data = await until(lambda: secret_of(core, tenant))
    await until(lambda: _none_is_ok(me_code(api, data["api-key"])))

    await custom.delete_cluster_custom_object(GROUP, VERSION, "tenants", tenant)
    assert await until(lambda: _gone(custom, "tenants", tenant))  # the finalizer let go
    assert await me_code(api, data["api-key"]) == "api_key_revoked"

    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": tenant},
        "spec": {"displayName": "Someone else"}})  # fmt: skip

    async def refused():
        condition = await tenant_ready(custom, tenant)
        return condition if condition and condition["status"] == "False" else None

    condition = await until(refused)
    assert condition["reason"] == "TenantDeleted" and "restoreDeleted" in condition["message"]
    assert await me_code(api, data["api-key"]) == "api_key_revoked"

    await custom.patch_cluster_custom_object(GROUP, VERSION, "tenants", tenant,
                                             {"spec": {"restoreDeleted": True}},
                                             _content_type=MERGE_PATCH)  # fmt: skip

    async def restored():
        condition = await tenant_ready(custom, tenant)
        return condition if condition and condition["status"] == "True" else None

    assert await until(restored)
    assert await me_code(api, data["api-key"]) == "api_key_revoked"  # revoked for good


async def test_a_failed_reconcile_shows_on_the_resource_warns_once_and_is_retried_soon(
    run, kube, cluster
):
    """The 403 a hardened cluster gives the Secret (emulated: the emulator refuses Secrets)."""
    if cluster is None:
        pytest.skip("refusing Secrets with 403 needs the emulator")
    custom, core = kube
    cluster.emulator.forbidden.add("secrets")
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")

    async def failing():
        condition = await key_ready(custom, f"{tenant}-ci")
        return condition if condition and condition["reason"] == "KubernetesError" else None

    condition = await until(failing)
    assert condition["status"] == "False" and "403 Forbidden" in condition["message"]
    first_transition = condition["lastTransitionTime"]
    await asyncio.sleep(4)  # retries after 1, 2 s...: the reason stands
    again = await key_ready(custom, f"{tenant}-ci")
    assert again["status"] == "False" and again["lastTransitionTime"] == first_transition
    warnings = await warnings_of(core, f"{tenant}-ci")
    reasons = [event.reason for event in warnings]
    assert reasons.count("KubernetesError") == 1, reasons  # once, not at every retry

    cluster.emulator.forbidden.discard("secrets")

    async def active():
        condition = await key_ready(custom, f"{tenant}-ci")
        return condition if condition and condition["status"] == "True" else None

    # `until` waits at most 30 s, the longest backoff, where kopf's own is 60 s (the
    # schedule itself: test_visibility's backoff test, no stopwatch).
    assert await until(active)


async def test_an_api_key_waiting_for_its_tenant_warns_once(run, kube, api):
    custom, core = kube
    tenant = f"{run}-late"
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", "apikeys", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ApiKey",
        "metadata": {"name": f"{tenant}-ci", "namespace": "default"},
        "spec": {"tenant": tenant, "userEmail": "dev@acme.example", "name": "CI",
                 "environment": "test", "scopes": ["vault:read"]}})  # fmt: skip

    async def waiting():
        condition = await key_ready(custom, f"{tenant}-ci")
        return condition if condition and condition["reason"] == "TenantNotFound" else None

    await until(waiting)
    await asyncio.sleep(4)
    warnings = await warnings_of(core, f"{tenant}-ci")
    assert [event.reason for event in warnings] == ["TenantNotFound"]
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": tenant},
        "spec": {"displayName": "Late", "users": [{"email": "dev@acme.example"}]}})  # fmt: skip
    data = await until(lambda: secret_of(core, tenant))
    assert await until(lambda: _none_is_ok(me_code(api, data["api-key"])))


async def test_last_transition_time_stands_across_resyncs(run, kube):
    custom, _ = kube
    tenant = f"{run}-acme"
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": tenant},
        "spec": {"displayName": "Acme"}})  # fmt: skip

    async def ready():
        condition = await tenant_ready(custom, tenant)
        return condition if condition and condition["status"] == "True" else None

    first = await until(ready)
    await asyncio.sleep(3)  # the resync timer runs every second here
    assert (await tenant_ready(custom, tenant))["lastTransitionTime"] == first[
        "lastTransitionTime"]  # fmt: skip


# -- issue 31: dependents told at once ----------------------------------------------------------


def _keyed(tenant: str, name: str) -> dict:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ApiKey",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"tenant": tenant, "userEmail": "dev@acme.example", "name": "CI",
                     "environment": "test", "scopes": ["vault:read"]}}  # fmt: skip


@pytest.mark.parametrize("resync_seconds", [300])
async def test_api_keys_learn_of_their_tenants_deletion_and_restoration_at_once(run, kube, api):
    """A: not at their next resync (300 s here): the tenant's handler tells its ApiKeys."""
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    data = await until(lambda: secret_of(core, tenant))
    await until(lambda: _none_is_ok(me_code(api, data["api-key"])))

    await custom.delete_cluster_custom_object(GROUP, VERSION, "tenants", tenant)

    async def reason_of(name: str, wanted: str) -> dict | None:
        resource = await custom.get_namespaced_custom_object(GROUP, VERSION, "default",
                                                             "apikeys", name)  # fmt: skip
        condition = _ready_condition(resource) or {}
        return resource["status"] if condition.get("reason") == wanted else None

    told = await until(lambda: reason_of(f"{tenant}-ci", "TenantDeleted"))
    assert told["conditions"][0]["status"] == "False" and told["state"] == "revoked"

    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", "apikeys",
                                                 _keyed(tenant, f"{tenant}-late"))  # fmt: skip
    assert await until(lambda: reason_of(f"{tenant}-late", "TenantDeleted"))
    # The name is free once the deleted Tenant has gone, its data erased (issue 42, item 5).
    assert await until(lambda: _gone(custom, "tenants", tenant))
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": tenant},
        "spec": {"displayName": "Acme", "restoreDeleted": True,
                 "users": [{"email": "dev@acme.example"}]}})  # fmt: skip
    late = await until(lambda: reason_of(f"{tenant}-late", "Active"))
    assert late["state"] == "active"
    restored = await until(lambda: reason_of(f"{tenant}-ci", "Revoked"))
    assert restored["conditions"][0]["status"] == "True"  # revoked for good, said plainly


# -- issue 44: what a real v1.24 API server showed ---------------------------------------------


async def key_status(custom, name: str) -> dict:
    resource = await custom.get_namespaced_custom_object(GROUP, VERSION, "default", "apikeys",
                                                         name)  # fmt: skip
    return resource.get("status") or {}


async def secret_named(core, name: str) -> dict[str, str] | None:
    try:
        secret = await core.read_namespaced_secret(name, "default")
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return {key: base64.b64decode(value).decode() for key, value in (secret.data or {}).items()}


def _reason_is(custom, name: str, reason: str):
    async def probe() -> dict | None:
        condition = await key_ready(custom, name)
        return condition if condition and condition["reason"] == reason else None

    return probe


def _another_secret(core, name: str, before: dict):
    async def probe() -> dict | None:
        data = await secret_named(core, name)
        return data if data and data["key-id"] != before["key-id"] else None

    return probe


STATE_ENUM = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/state/enum"


async def _set_state_enum(cluster, api_client, values: list[str]) -> None:
    """The values an ApiKey's `status.state` may take: in the emulator's copy of the CRD's
    schema, or in the cluster's CRD itself (a JSON Patch of it, as an admin)."""
    if cluster is not None:
        cluster.emulator.status_schemas["apikeys"]["properties"]["state"]["enum"] = values
        return
    await client.ApiextensionsV1Api(api_client).patch_custom_resource_definition(
        "apikeys.strongroom.io", [{"op": "replace", "path": STATE_ENUM, "value": values}]
    )


async def test_a_status_the_api_server_refuses_is_said_in_status_and_the_timer_survives_it(
    run, kube, cluster, api
):
    """Item 6: a 422 on a status patch (here: a CRD older than the operator, whose schema
    lacks the state `active`) killed the resync timer for good. The status says what was
    refused; the timer goes on repairing, and once the status is accepted again it is whole.
    On a real cluster the ApiKey CRD itself is narrowed for the test's length, and restored."""
    custom, core = kube
    original = status_schemas()["apikeys"]["properties"]["state"]["enum"]  # crds/
    await _set_state_enum(cluster, custom.api_client, ["revoked", "expired"])
    try:
        tenant = await apply_tenant_and_key(custom, f"{run}-acme")
        condition = await until(_reason_is(custom, f"{tenant}-ci", "StatusRefused"))
        assert condition["status"] == "False"
        assert 'status.state: Unsupported value: "active"' in condition["message"]
        first = await until(lambda: secret_of(core, tenant))
        assert (await key_status(custom, f"{tenant}-ci"))["keyId"] == first["key-id"]  # kept

        await core.delete_namespaced_secret(f"{tenant}-ci-api-key", "default")
        second = await until(_another_secret(core, f"{tenant}-ci-api-key", first))  # the timer
        # The Secret is written first; the same reconcile then revokes the key it replaced
        # and ends with the status (here only its identity, the rest refused). The API asked
        # before that end still took the first key: this test failed so under load.
        status = await until(lambda: _naming(custom, f"{tenant}-ci", second["key-id"]))
        assert status["conditions"][0]["reason"] == "StatusRefused"
        assert await me_code(api, first["api-key"]) == "api_key_revoked"
    finally:
        await _set_state_enum(cluster, custom.api_client, original)
    await core.delete_namespaced_secret(f"{tenant}-ci-api-key", "default")
    third = await until(_another_secret(core, f"{tenant}-ci-api-key", second))  # still alive
    status = await until(lambda: _active_with(custom, f"{tenant}-ci", third["key-id"]))
    assert status["conditions"][0]["status"] == "True"
    assert await me_code(api, second["api-key"]) == "api_key_revoked"
    assert await me_code(api, third["api-key"]) is None


async def _naming(custom, name: str, key_id: str) -> dict | None:
    status = await key_status(custom, name)
    return status if status.get("keyId") == key_id else None


async def _active_with(custom, name: str, key_id: str) -> dict | None:
    status = await key_status(custom, name)
    return status if status.get("keyId") == key_id and status.get("state") == "active" else None


async def test_an_api_key_whose_secret_and_key_row_are_both_gone_gets_a_new_key(
    run, kube, api, database
):
    """Item 7: revoking the old key failed NotFoundError at every retry (ReconcileFailed for
    good). A key that no longer exists needs no revoking; the status says what happened."""
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    first = await until(lambda: secret_of(core, tenant))
    await until(lambda: _active_with(custom, f"{tenant}-ci", first["key-id"]))
    async with database.sessions() as session:
        await session.delete(await session.get(ApiKey, uuid.UUID(first["key-id"])))
        await session.commit()
    await core.delete_namespaced_secret(f"{tenant}-ci-api-key", "default")

    second = await until(_another_secret(core, f"{tenant}-ci-api-key", first))
    status = await until(lambda: _active_with(custom, f"{tenant}-ci", second["key-id"]))
    assert status["conditions"][0]["status"] == "True"
    assert first["key-id"] in status["lastRotation"]["message"]
    assert "no longer existed" in status["lastRotation"]["message"]
    assert await me_code(api, second["api-key"]) is None


@pytest.mark.parametrize(("resync_seconds", "retry_seconds"), [(300, 300)])
async def test_an_api_key_waiting_for_its_tenant_or_user_gets_its_key_when_they_come(
    run, kube, api
):
    """Item 10: not at its next retry (300 s here, as the resync): the Tenant's handler tells
    its waiting ApiKeys when it is created and when its users change."""
    custom, core = kube
    tenant = f"{run}-late"
    await custom.create_namespaced_custom_object(GROUP, VERSION, "default", "apikeys",
                                                 _keyed(tenant, f"{tenant}-ci"))  # fmt: skip
    await until(_reason_is(custom, f"{tenant}-ci", "TenantNotFound"))
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": tenant},
        "spec": {"displayName": "Late", "users": [{"email": "other@acme.example"}]}})  # fmt: skip
    await until(_reason_is(custom, f"{tenant}-ci", "UserNotFound"))
    await custom.patch_cluster_custom_object(GROUP, VERSION, "tenants", tenant, {"spec": {
        "users": [{"email": "other@acme.example"}, {"email": "dev@acme.example"}]}},
        _content_type=MERGE_PATCH)  # fmt: skip
    data = await until(lambda: secret_of(core, tenant))
    await until(lambda: _active_with(custom, f"{tenant}-ci", data["key-id"]))
    assert await me_code(api, data["api-key"]) is None


async def test_a_secret_of_the_users_with_the_default_name_is_named_in_status_not_taken(
    run, kube, api
):
    """Item 10: the status says that a Secret not owned by this ApiKey exists and what to do;
    once that Secret is gone the key is issued."""
    custom, core = kube
    tenant = f"{run}-acme"
    await core.create_namespaced_secret("default", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{tenant}-ci-api-key"},
        "data": {"mine": base64.b64encode(b"the user's own").decode()}})  # fmt: skip
    await apply_tenant_and_key(custom, tenant)
    condition = await until(_reason_is(custom, f"{tenant}-ci", "SecretNotOwned"))
    assert condition["status"] == "False"
    message = condition["message"]
    assert f"Secret {tenant}-ci-api-key" in message and "not owned by this ApiKey" in message
    assert "spec.secretName" in message and "delete" in message
    assert await secret_named(core, f"{tenant}-ci-api-key") == {"mine": "the user's own"}

    await core.delete_namespaced_secret(f"{tenant}-ci-api-key", "default")
    data = await until(lambda: secret_of(core, tenant))
    await until(lambda: _active_with(custom, f"{tenant}-ci", data["key-id"]))


async def test_rotating_by_secret_name_deletes_the_old_secret_and_says_so(run, kube, api):
    """Item 10: the Secret the operator wrote under the old name is deleted (not left with a
    revoked key in it), and the status tells a rename, not a deletion by hand."""
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    first = await until(lambda: secret_of(core, tenant))
    await until(lambda: _active_with(custom, f"{tenant}-ci", first["key-id"]))
    await custom.patch_namespaced_custom_object(GROUP, VERSION, "default", "apikeys",
                                                f"{tenant}-ci",
                                                {"spec": {"secretName": f"{tenant}-renamed"}},
                                                _content_type=MERGE_PATCH)  # fmt: skip

    second = await until(lambda: secret_named(core, f"{tenant}-renamed"))
    status = await until(lambda: _active_with(custom, f"{tenant}-ci", second["key-id"]))
    assert status["secretName"] == f"{tenant}-renamed"
    said = status["lastRotation"]["message"]
    assert "secretName changed" in said and "had been deleted" not in said
    assert f"deleted Secret {tenant}-ci-api-key" in said
    assert await secret_named(core, f"{tenant}-ci-api-key") is None
    assert await me_code(api, first["api-key"]) == "api_key_revoked"
    assert await me_code(api, second["api-key"]) is None


async def test_a_revoked_api_key_never_gets_a_new_key_even_unrevoked_without_its_secret(
    run, kube, api
):
    """Item 9: below Kubernetes 1.25 nothing refuses `revoked: false` (CEL is dropped; the
    emulator has none either). Revocation is for good in the operator itself."""
    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    first = await until(lambda: secret_of(core, tenant))
    name = f"{tenant}-ci"
    await until(lambda: _active_with(custom, name, first["key-id"]))
    for revoked in (True, False):
        await custom.patch_namespaced_custom_object(GROUP, VERSION, "default", "apikeys", name,
                                                    {"spec": {"revoked": revoked}},
                                                    _content_type=MERGE_PATCH)  # fmt: skip
        if revoked:
            await until(lambda: _is(lambda: me_code(api, first["api-key"]), "api_key_revoked"))
    await core.delete_namespaced_secret(f"{tenant}-ci-api-key", "default")

    async def answered() -> dict | None:  # a reconcile after the Secret went: either way
        status = await key_status(custom, name)
        reissued = await secret_of(core, tenant)
        condition = _ready_condition({"status": status}) or {}
        return status if reissued or "no new key" in condition.get("message", "") else None

    status = await until(answered)
    assert await secret_of(core, tenant) is None
    assert status["state"] == "revoked" and status["keyId"] == first["key-id"]
    assert "for good" in status["conditions"][0]["message"]
    assert await me_code(api, first["api-key"]) == "api_key_revoked"


# -- issue 42, item 5: a deleted Tenant's data is erased; the status says when ----------------

HOLD = "test.strongroom.io/hold"  # the test's own finalizer: the status stays readable


async def tenant_resource(custom, name: str) -> dict | None:
    try:
        return await custom.get_cluster_custom_object(GROUP, VERSION, "tenants", name)
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise


def _erasure_with(custom, name: str, field: str):
    async def probe() -> dict | None:
        resource = await tenant_resource(custom, name)
        erasure = ((resource or {}).get("status") or {}).get("erasure") or {}
        return erasure if field in erasure else None

    return probe


async def _operator_let_go(custom, name: str) -> bool:
    resource = await tenant_resource(custom, name)
    return "strongroom.io/finalizer" not in resource["metadata"].get("finalizers", [])


async def _release_hold(custom, name: str) -> None:
    resource = await tenant_resource(custom, name)
    kept = [f for f in resource["metadata"].get("finalizers", []) if f != HOLD]
    await custom.patch_cluster_custom_object(GROUP, VERSION, "tenants", name,
                                             {"metadata": {"finalizers": kept}},
                                             _content_type=MERGE_PATCH)  # fmt: skip


async def _hold(custom, name: str) -> None:
    resource = await tenant_resource(custom, name)
    finalizers = [*resource["metadata"].get("finalizers", []), HOLD]
    await custom.patch_cluster_custom_object(GROUP, VERSION, "tenants", name,
                                             {"metadata": {"finalizers": finalizers}},
                                             _content_type=MERGE_PATCH)  # fmt: skip


async def _events_of(core, name: str, reason: str) -> list[str]:
    listed = await core.list_namespaced_event("default")
    return [event.message for event in listed.items
            if event.involved_object.name == name and event.reason == reason]  # fmt: skip


async def _seeded(database, custom, name: str, tmp_path) -> uuid.UUID:
    """One of everything a tenant makes (tests/test_tenant_erasure.py) for the tenant the
    operator created for the Tenant `name`."""
    from types import SimpleNamespace

    from strongroom.tenants.models import Tenant, User
    from tests.test_tenant_erasure import seed

    async def reconciled() -> str | None:
        return ((await tenant_resource(custom, name) or {}).get("status") or {}).get("tenantId")

    tenant_id = await until(reconciled)
    async with database.sessions() as session:
        tenant = await session.get(Tenant, uuid.UUID(tenant_id))
        user = (await session.exec(select(User).where(User.tenant_id == tenant.id))).first()
    await seed(database, SimpleNamespace(tenant=tenant, user=user), tmp_path)
    return tenant.id


async def test_a_deleted_tenant_with_erasure_at_0_is_erased_and_its_status_says_when(
    run, kube, database, tmp_path
):
    """The Tenant stays until its data is erased (here by `eraser`, as a worker would), then
    says `erasedAt` and posts `Erased`; its key records and ledger stay."""
    from tests.test_tenant_erasure import ERASED, KEPT, counts, stored

    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    await until(lambda: secret_of(core, tenant))
    tenant_id = await _seeded(database, custom, tenant, tmp_path)
    kept = await counts(database, tenant_id, KEPT)
    await _hold(custom, tenant)

    await custom.delete_cluster_custom_object(GROUP, VERSION, "tenants", tenant)
    await until(lambda: _operator_let_go(custom, tenant))

    erasure = (await tenant_resource(custom, tenant))["status"]["erasure"]
    assert datetime.fromisoformat(erasure["dueAt"]) <= datetime.fromisoformat(erasure["erasedAt"])
    assert await until(lambda: _events_of(core, tenant, "Erased"))
    assert set((await counts(database, tenant_id, ERASED)).values()) == {0}
    assert await stored(database, tenant_id) == []
    assert await counts(database, tenant_id, KEPT) == kept
    await _release_hold(custom, tenant)
    assert await until(lambda: _gone(custom, "tenants", tenant))


@pytest.mark.parametrize("erasure_days", [30])
async def test_a_deleted_tenant_waits_for_its_erasure_due_and_goes_once_an_admin_erases_it(
    run, kube, database, tmp_path
):
    """30 days: the Tenant stays, Terminating, and its status says when erasure is due; `strongroom
    tenants erase` (erase_tenant_named) erases it at once, and then it goes (at the operator's
    next look: within ERASURE_RECHECK_SECONDS, 1 s here)."""
    from strongroom.tenant_erasure import erase_tenant_named
    from tests.test_tenant_erasure import ERASED, counts

    custom, core = kube
    tenant = await apply_tenant_and_key(custom, f"{run}-acme")
    await until(lambda: secret_of(core, tenant))
    tenant_id = await _seeded(database, custom, tenant, tmp_path)
    await _hold(custom, tenant)  # before the deletion: a real API server refuses it after
    await custom.delete_cluster_custom_object(GROUP, VERSION, "tenants", tenant)

    erasure = await until(_erasure_with(custom, tenant, "dueAt"))
    due = datetime.fromisoformat(erasure["dueAt"])
    assert timedelta(days=29) < due - datetime.now(due.tzinfo) <= timedelta(days=30)
    assert "erasedAt" not in erasure
    assert await until(lambda: _events_of(core, tenant, "ErasureScheduled"))
    resource = await tenant_resource(custom, tenant)
    assert resource["metadata"].get("deletionTimestamp")  # Terminating, held by the operator
    assert (await counts(database, tenant_id, ERASED))["documents"] == 2  # nothing erased yet

    await erase_tenant_named(database, tenant)
    await until(lambda: _operator_let_go(custom, tenant))

    erasure = (await tenant_resource(custom, tenant))["status"]["erasure"]
    assert erasure["dueAt"] == due.isoformat() and erasure["erasedAt"]
    assert set((await counts(database, tenant_id, ERASED)).values()) == {0}
    await _release_hold(custom, tenant)
    assert await until(lambda: _gone(custom, "tenants", tenant))

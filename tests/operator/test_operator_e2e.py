"""The operator end to end (issue 5): kopf's KopfRunner runs `strongroom.operator.handlers`
against a Kubernetes API, the resources are applied with a Kubernetes client, and the API
sees the result. Here the API is the kmock emulator (tests/operator/emulator.py; no cluster
runs here); with KUBECONFIG pointing at a real cluster (kind in CI elsewhere, CRDs applied
from crds/) the same tests run against it unchanged."""

from __future__ import annotations

import asyncio
import base64
import os
import time
import uuid

import pytest
from kopf.testing import KopfRunner
from kubernetes_asyncio import client, config

from strongroom.api.app import create_app
from tests.operator.emulator import EmulatedCluster
from tests.processes import environment_of

GROUP, VERSION = "strongroom.io", "v1"


@pytest.fixture
def cluster(tmp_path, monkeypatch, postgres_settings):
    for name, value in environment_of(postgres_settings).items():
        if name.startswith("STRONGROOM_"):
            monkeypatch.setenv(name, value)
    if os.environ.get("KUBECONFIG"):  # a real cluster: the CRDs are applied beforehand
        yield None
        return
    with EmulatedCluster(tmp_path) as emulated:
        monkeypatch.setenv("KUBECONFIG", str(emulated.kubeconfig))
        yield emulated


@pytest.fixture
def operator(cluster):
    with KopfRunner(["run", "--standalone", "--all-namespaces", "-m",
                     "strongroom.operator.handlers"], timeout=60) as runner:  # fmt: skip
        yield runner
    assert runner.exception is None, runner.exception


@pytest.fixture
async def kube(cluster):
    await config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    api_client = client.ApiClient()
    yield client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
    await api_client.close()


@pytest.fixture
async def api(postgres_settings):
    app = create_app(postgres_settings)
    async with app.test_app():
        yield app.test_client()


async def until(probe):
    """The first truthy answer of `probe`, polled for at most 30 s."""
    deadline = time.monotonic() + 30
    while True:
        result = await probe()
        if result:
            return result
        assert time.monotonic() < deadline, "timed out waiting for the operator"
        await asyncio.sleep(0.2)


async def test_tenant_and_api_key_reach_the_api_and_revocation_follows(operator, kube, api):
    custom, core = kube
    tenant = f"acme-{uuid.uuid4().hex[:6]}"
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
        GROUP, VERSION, "default", "apikeys", f"{tenant}-ci", {"spec": {"revoked": True}}
    )
    assert await until(lambda: _is(state, "revoked"))
    refused = await api.get("/api/v2/me", headers=headers)
    assert (await refused.get_json())["code"] == "api_key_revoked"


async def _is(probe, value):
    return await probe() == value

"""The emulator refuses what a real API server refuses (issue 17, point 4): tests that pass
on it must not depend on leniency a real cluster lacks (shared/notes/real-apiserver.md)."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio import client, config

from tests.operator.emulator import EmulatedCluster

GROUP, VERSION = "strongroom.io", "v1"
MERGE = "application/merge-patch+json"


@pytest.fixture
async def custom(tmp_path):
    with EmulatedCluster(tmp_path) as emulated:
        await config.load_kube_config(config_file=str(emulated.kubeconfig))
        api_client = client.ApiClient()
        yield client.CustomObjectsApi(api_client)
        await api_client.close()


async def a_tenant(custom) -> None:
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": "acme"},
        "spec": {"displayName": "Acme"}})  # fmt: skip


async def test_a_merge_style_body_sent_as_json_patch_is_refused_with_400(custom):
    await a_tenant(custom)
    with pytest.raises(client.ApiException) as refused:  # the client's default content type
        await custom.patch_cluster_custom_object(GROUP, VERSION, "tenants", "acme",
                                                 {"spec": {"suspended": True}})  # fmt: skip
    assert refused.value.status == 400
    assert "jsonPatchOp" in refused.value.body


async def test_a_merge_patch_with_its_content_type_is_applied(custom):
    await a_tenant(custom)
    patched = await custom.patch_cluster_custom_object(
        GROUP, VERSION, "tenants", "acme", {"spec": {"suspended": True}}, _content_type=MERGE
    )
    assert patched["spec"] == {"displayName": "Acme", "suspended": True}


async def test_a_json_patch_array_is_applied(custom):
    await a_tenant(custom)
    patched = await custom.patch_cluster_custom_object(
        GROUP, VERSION, "tenants", "acme", [{"op": "add", "path": "/spec/suspended", "value": True}]
    )
    assert patched["spec"]["suspended"] is True


async def test_a_strategic_merge_patch_of_a_custom_resource_is_refused_with_415(custom):
    await a_tenant(custom)
    with pytest.raises(client.ApiException) as refused:
        await custom.patch_cluster_custom_object(
            GROUP, VERSION, "tenants", "acme", {"spec": {"suspended": True}},
            _content_type="application/strategic-merge-patch+json",
        )  # fmt: skip
    assert refused.value.status == 415


async def test_a_status_its_crd_refuses_is_refused_with_422(custom):
    """A real API server validates a status against the CRD's schema (issue 44, item 6)."""
    await a_tenant(custom)
    with pytest.raises(client.ApiException) as refused:
        await custom.patch_cluster_custom_object_status(
            GROUP, VERSION, "tenants", "acme",
            {"status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}},
            _content_type=MERGE,
        )  # fmt: skip
    assert refused.value.status == 422
    message = json.loads(refused.value.body)["message"]
    assert message.startswith('Tenant.strongroom.io "acme" is invalid: ')
    assert 'status.conditions[0].status: Unsupported value: "Maybe"' in message
    patched = await custom.patch_cluster_custom_object_status(
        GROUP, VERSION, "tenants", "acme",
        {"status": {"creditsRemaining": 5, "kopf": {"anything": "goes"}}}, _content_type=MERGE,
    )  # fmt: skip
    assert patched["status"]["creditsRemaining"] == 5


async def test_a_new_finalizer_on_an_object_being_deleted_is_refused_with_422(custom):
    """A real API server refuses a finalizer added to an object whose deletionTimestamp is
    set (apimachinery's ValidateNoNewFinalizers; issue 52, point 10); removing one, or
    keeping the ones it has, stays allowed, and the object goes with its last finalizer."""
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant",
        "metadata": {"name": "acme", "finalizers": ["a.example/one", "a.example/two"]},
        "spec": {"displayName": "Acme"}})  # fmt: skip
    await custom.delete_cluster_custom_object(GROUP, VERSION, "tenants", "acme")
    added = ["a.example/one", "a.example/two", "test.example/hold"]
    for body, content_type in (
        ({"metadata": {"finalizers": added}}, MERGE),
        ([{"op": "add", "path": "/metadata/finalizers/-", "value": "test.example/hold"}], None),
    ):
        with pytest.raises(client.ApiException) as refused:
            await custom.patch_cluster_custom_object(
                GROUP, VERSION, "tenants", "acme", body,
                **({"_content_type": content_type} if content_type else {}),
            )  # fmt: skip
        assert refused.value.status == 422
        status = json.loads(refused.value.body)
        assert status["reason"] == "Invalid"
        assert status["message"] == (
            'Tenant.strongroom.io "acme" is invalid: metadata.finalizers: Forbidden: no new '
            "finalizers can be added if the object is being deleted, found new finalizers "
            '[]string{"test.example/hold"}'
        )
        cause = {"reason": "FieldValueForbidden", "field": "metadata.finalizers",
                 "message": "Forbidden: no new finalizers can be added if the object is being "
                 'deleted, found new finalizers []string{"test.example/hold"}'}  # fmt: skip
        assert status["details"]["causes"] == [cause, cause]  # twice, as a v1.24 server says
    resource = await custom.get_cluster_custom_object(GROUP, VERSION, "tenants", "acme")
    assert resource["metadata"]["finalizers"] == ["a.example/one", "a.example/two"]

    kept = await custom.patch_cluster_custom_object(  # the same finalizers, and a label
        GROUP, VERSION, "tenants", "acme",
        {"metadata": {"finalizers": ["a.example/two", "a.example/one"], "labels": {"a": "b"}}},
        _content_type=MERGE,
    )  # fmt: skip
    assert kept["metadata"]["labels"] == {"a": "b"}
    removed = await custom.patch_cluster_custom_object(
        GROUP, VERSION, "tenants", "acme", {"metadata": {"finalizers": ["a.example/two"]}},
        _content_type=MERGE,
    )  # fmt: skip
    assert removed["metadata"]["finalizers"] == ["a.example/two"]
    await custom.patch_cluster_custom_object(
        GROUP, VERSION, "tenants", "acme", {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    with pytest.raises(client.ApiException) as gone:
        await custom.get_cluster_custom_object(GROUP, VERSION, "tenants", "acme")
    assert gone.value.status == 404


async def test_a_finalizer_added_before_the_deletion_is_allowed(custom):
    await a_tenant(custom)
    held = await custom.patch_cluster_custom_object(
        GROUP, VERSION, "tenants", "acme", {"metadata": {"finalizers": ["test.example/hold"]}},
        _content_type=MERGE,
    )  # fmt: skip
    assert held["metadata"]["finalizers"] == ["test.example/hold"]
    await custom.delete_cluster_custom_object(GROUP, VERSION, "tenants", "acme")
    resource = await custom.get_cluster_custom_object(GROUP, VERSION, "tenants", "acme")
    assert resource["metadata"]["deletionTimestamp"]  # Terminating, held

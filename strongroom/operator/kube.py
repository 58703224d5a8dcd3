"""The SecretStore of the running operator: Secrets through the Kubernetes API
(kubernetes_asyncio, so that no call blocks the event loop), owned by the resource they
belong to so that Kubernetes deletes them with it."""

from __future__ import annotations

import base64
import os
from datetime import UTC, datetime

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from strongroom.operator.secrets import StoredSecret


class KubernetesSecretStore:
    def __init__(self, api_client: client.ApiClient) -> None:
        self._api_client = api_client
        self._core = client.CoreV1Api(api_client)

    @classmethod
    async def connect(cls) -> KubernetesSecretStore:
        """In a pod: its service account; elsewhere: the current kubeconfig context."""
        try:
            config.load_incluster_config()
        except config.ConfigException:
            # Read KUBECONFIG now: the library reads it once, at import.
            await config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
        return cls(client.ApiClient())

    async def read(self, namespace: str, name: str) -> StoredSecret | None:
        try:
            secret = await self._core.read_namespaced_secret(name, namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        data = {key: base64.b64decode(value).decode() for key, value in (secret.data or {}).items()}
        references = secret.metadata.owner_references or []
        return StoredSecret(data, next((ref.uid for ref in references if ref.controller), None))

    async def write(self, namespace: str, name: str, data: dict[str, str], owner: dict) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "strongroom-operator"},
                "ownerReferences": [{
                    "apiVersion": owner["apiVersion"], "kind": owner["kind"],
                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                    "controller": True, "blockOwnerDeletion": True,
                }],
            },
            "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
        }  # fmt: skip
        try:
            await self._core.create_namespaced_secret(namespace, body)
        except ApiException as error:
            if error.status != 409:
                raise
            await self._core.replace_namespaced_secret(name, namespace, body)

    async def delete(self, namespace: str, name: str) -> None:
        try:
            await self._core.delete_namespaced_secret(name, namespace)
        except ApiException as error:
            if error.status != 404:
                raise

    @property
    def api_client(self) -> client.ApiClient:
        return self._api_client

    async def close(self) -> None:
        await self._api_client.close()


PEERING_GROUP, PEERING_VERSION = "kopf.dev", "v1"


async def peering_problem(
    api_client: client.ApiClient, name: str, namespace: str | None = None
) -> str | None:
    """Why kopf's peering `name` cannot work, or None: cluster-wide (a ClusterKopfPeering),
    or in `namespace` (a KopfPeering there, as kopf uses when run with --namespace). Without
    its CRD, its object or the right to read it, kopf pauses every handler and waits,
    silently."""
    custom = client.CustomObjectsApi(api_client)
    kind, plural = ("KopfPeering", "kopfpeerings") if namespace else \
        ("ClusterKopfPeering", "clusterkopfpeerings")  # fmt: skip
    try:
        if namespace:
            await custom.get_namespaced_custom_object(
                PEERING_GROUP, PEERING_VERSION, namespace, plural, name
            )
        else:
            await custom.get_cluster_custom_object(PEERING_GROUP, PEERING_VERSION, plural, name)
    except ApiException as error:
        where = f" in namespace {namespace!r}" if namespace else ""
        if error.status == 404:
            return (
                f"no {kind} {name!r}{where}: apply crds/peering.kopf.dev.yaml and a "
                f"{kind} named {name!r}{where} (the chart does both for a cluster-wide "
                "operator), or run without --peering (one replica)"
            )
        if error.status == 403:
            return (
                f"the operator may not read {plural}{where}: grant the rules of "
                "crds/operator-rbac.yaml"
            )
        raise
    return None


async def announce_peer(
    api_client: client.ApiClient,
    name: str,
    identity: str,
    priority: int,
    lifetime: int,
    namespace: str | None = None,
) -> None:
    """Write this replica's record into the ClusterKopfPeering `name` (or the KopfPeering
    `name` in `namespace`), as kopf's keep-alive writes it, before kopf starts: see
    `handlers.start`."""
    record = {"priority": priority, "lifetime": lifetime,
              "lastseen": datetime.now(UTC).isoformat()}  # fmt: skip
    custom, body = client.CustomObjectsApi(api_client), {"status": {identity: record}}
    if namespace:
        await custom.patch_namespaced_custom_object(
            PEERING_GROUP, PEERING_VERSION, namespace, "kopfpeerings", name, body,
            _content_type="application/merge-patch+json",
        )  # fmt: skip
    else:
        await custom.patch_cluster_custom_object(
            PEERING_GROUP, PEERING_VERSION, "clusterkopfpeerings", name, body,
            _content_type="application/merge-patch+json",
        )  # fmt: skip

"""Two API pods and two worker pods by values (issue 45, item 4): requests through the Service
reach both API pods, ingestion jobs are taken by both workers, and a key revoked through its
ApiKey is refused by every API pod within 2 s (D16) of the first refusal.

The release is changed with the runner's upgrade command (`STRONGROOM_E2E_UPGRADE`, see
test_upgrade.py), given `VALUES`, a JSON object merged over values-dev.yaml. Without it the
test is skipped."""

from __future__ import annotations

import time
import uuid

import pytest
from urllib3 import encode_multipart_formdata

from tests.kind import test_kind_e2e as e2e
from tests.kind.test_upgrade import UPGRADE, api_forward, apply, deployment_images, upgrade

pytestmark = pytest.mark.kind
cluster = e2e.cluster
REVOCATION_S = 2.0  # D16: a revoked key fails on every replica within 2 s
SCALED = {"api": {"replicas": 2}, "worker": {"replicas": 2}}
SPREAD = """
import urllib.request
for _ in range(40):
    request = urllib.request.Request("http://{release}-strongroom-api/api/v2/me",
                                     headers={{"Authorization": "Bearer " + {key!r},
                                              "Connection": "close"}})
    urllib.request.urlopen(request, timeout=10).read()
"""


def running_pods(component: str) -> list[str]:
    return [pod["metadata"]["name"] for pod in e2e.pods(component)
            if all(c.get("ready") for c in pod["status"].get("containerStatuses", []))]  # fmt: skip


def pod_metric(pod: str, name: str, **labels: str) -> float:
    with e2e.port_forward(f"pod/{pod}", 9090, "/metrics") as base:
        return e2e.value([e2e.get_text(base + "/metrics") or ""], name, **labels)


@pytest.fixture
def scaled(cluster):
    if not UPGRADE:
        pytest.skip("no upgrade command: set STRONGROOM_E2E_UPGRADE (make test-cluster does)")
    tag = deployment_images()[f"{e2e.RELEASE}-strongroom-api"].rpartition(":")[2]
    upgrade(tag, SCALED)  # the same image: only the replicas change
    e2e.wait_for(lambda: len(running_pods("api")) == 2 and len(running_pods("worker")) == 2,
                 180, "two API and two worker pods Ready")  # fmt: skip


@pytest.fixture
def own_key(cluster) -> tuple[str, str]:
    name = f"e2e-scale-{uuid.uuid4().hex[:6]}"
    spec = {**e2e.EXAMPLE_KEY["spec"], "name": "e2e scale", "rateLimitTier": "enterprise"}
    apply({"apiVersion": "strongroom.io/v1", "kind": "ApiKey",
           "metadata": {"name": name, "namespace": e2e.KEY_NAMESPACE}, "spec": spec})  # fmt: skip
    raw = e2e.wait_for(lambda: e2e.secret_key(f"{name}-api-key", e2e.KEY_NAMESPACE), 120,
                       f"Secret {name}-api-key")  # fmt: skip
    yield name, raw
    e2e.kubectl("delete", "apikey", name, "--wait=false", namespace=e2e.KEY_NAMESPACE,
                check=False)  # fmt: skip


def test_two_api_and_two_worker_pods_share_the_work_and_revocation_reaches_both(scaled, own_key):
    name, key = own_key
    api_pods, worker_pods = running_pods("api"), running_pods("worker")
    with api_forward() as api:
        e2e.wait_for(lambda: e2e.usable(api, key), 60, "the key to be accepted")
        # Requests through the Service, from inside the cluster (a worker pod has the image's
        # Python): kube-proxy spreads new connections over both API pods.
        e2e.kubectl("exec", worker_pods[0], "--", "python", "-c",
                    SPREAD.format(release=e2e.RELEASE, key=key))  # fmt: skip
        served = {pod: pod_metric(pod, "strongroom_http_requests_total", route="/api/v2/me")
                  for pod in api_pods}  # fmt: skip
        assert all(count > 0 for count in served.values()), served

        new = {"name": "E2E scale", "project_type": "other"}
        status, project, _ = e2e.request("POST", f"{api}/api/v2/vault/projects", key, new)
        assert status == 201, project
        jobs = []
        for index in range(10):
            body, content_type = encode_multipart_formdata({
                "project_id": project["id"],
                "file": (f"s{index}.txt", f"Scale-out document {index}.\n".encode() * 400),
            })  # fmt: skip
            status, document, _ = e2e.request("POST", f"{api}/api/v2/vault/documents", key,
                                              body, {"Content-Type": content_type})  # fmt: skip
            assert status == 202, document
            jobs.append(document["ingestion_job_id"])

        def all_done() -> bool:
            states = [e2e.request("GET", f"{api}/api/v2/vault/ingestion-jobs/{job}", key)[1]
                      .get("status") for job in jobs]  # fmt: skip
            return all(state == "succeeded" for state in states)

        e2e.wait_for(all_done, 300, "the ten ingestion jobs")
    taken = {pod: pod_metric(pod, "strongroom_jobs_finished_total", kind="ingestion")
             for pod in worker_pods}  # fmt: skip
    assert all(count > 0 for count in taken.values()), taken

    # Revocation: each API pod asked directly, through a port-forward of its own.
    with e2e.port_forward(f"pod/{api_pods[0]}", 8080, "/healthz") as first:
        with e2e.port_forward(f"pod/{api_pods[1]}", 8080, "/healthz") as second:
            bases = [first, second]
            assert all(e2e.usable(base, key) for base in bases)
            patched = time.monotonic()
            revoke = '{"spec": {"revoked": true}}'
            e2e.kubectl("patch", "apikey", name, "--type", "merge", "-p", revoke,
                        namespace=e2e.KEY_NAMESPACE)  # fmt: skip
            refused_at: dict[str, float] = {}
            deadline = patched + 60
            while len(refused_at) < len(bases) and time.monotonic() < deadline:
                for base in bases:
                    if base not in refused_at:
                        status, problem, _ = e2e.request("GET", f"{base}/api/v2/me", key)
                        if status == 401 and problem.get("code") == "api_key_revoked":
                            refused_at[base] = time.monotonic()
                time.sleep(0.05)
    assert len(refused_at) == 2, "a pod still accepts the revoked key after 60 s"
    first_refusal, last_refusal = min(refused_at.values()), max(refused_at.values())
    print(
        f"revocation: patch -> first pod {first_refusal - patched:.2f} s, "
        f"-> every pod {last_refusal - patched:.2f} s"
    )
    assert last_refusal - first_refusal <= REVOCATION_S

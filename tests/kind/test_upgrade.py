"""An upgrade under load loses nothing (issue 45): steady traffic through the API's Service
(tests/kind/traffic.py, in a pod of the release's own image: reads, project creations with an
Idempotency-Key, uploads, streamed chat) while the release is upgraded to another image tag
(`helm upgrade`, migrations run as the chart runs them) and then the operator's pod is
deleted. Afterwards: no failure a client following docs/api.md would see (a 503 or 429 with
`Retry-After` is waited out, a reset connection is a failure), no pause longer than 5 s without
a successful answer, every acknowledged write there exactly once, no document left
`processing`, and every ApiKey and its Secret as before.

How to upgrade differs per cluster, so the runner says it: `STRONGROOM_E2E_UPGRADE` is a shell
command that upgrades the release to the image under the tag in `TAG` (the build under test,
tagged so if need be), with `VALUES` (a JSON object, optional) merged over values-dev.yaml, and
returns once it is rolled out (`make test-cluster` sets scripts/cluster/upgrade.sh). Without it
the test is skipped."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from urllib3 import encode_multipart_formdata

from tests.kind import test_kind_e2e as e2e

pytestmark = pytest.mark.kind
UPGRADE = os.environ.get("STRONGROOM_E2E_UPGRADE", "")
cluster = e2e.cluster
LONGEST_PAUSE_S = 5  # issue 45's goal for an upgrade
TRAFFIC = Path(__file__).with_name("traffic.py")


def upgrade(tag: str, values: dict | None = None) -> None:
    """The runner's upgrade command, to `tag`, with `values` over values-dev.yaml."""
    env = {**os.environ, "TAG": tag, "VALUES": json.dumps(values or {})}
    done = subprocess.run(UPGRADE, shell=True, capture_output=True, text=True, timeout=900, env=env)  # noqa: S602
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def apply(resource: dict) -> None:
    subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(resource), text=True,
                   check=True, capture_output=True, timeout=60)  # fmt: skip


@pytest.fixture
def loud_key(cluster) -> str:
    """An ApiKey of the example tenant that may chat and is not held back by rate limits."""
    name = f"e2e-upgrade-{uuid.uuid4().hex[:6]}"
    spec = {**e2e.EXAMPLE_KEY["spec"], "name": "e2e upgrade", "rateLimitTier": "enterprise",
            "scopes": ["vault:read", "vault:write", "chat:write"]}  # fmt: skip
    apply({"apiVersion": "strongroom.io/v1", "kind": "ApiKey",
           "metadata": {"name": name, "namespace": e2e.KEY_NAMESPACE}, "spec": spec})  # fmt: skip
    raw = e2e.wait_for(lambda: e2e.secret_key(f"{name}-api-key", e2e.KEY_NAMESPACE), 120,
                       f"Secret {name}-api-key")  # fmt: skip
    yield raw
    e2e.kubectl("delete", "apikey", name, "--wait=false", namespace=e2e.KEY_NAMESPACE,
                check=False)  # fmt: skip


def keys_and_secrets() -> dict[str, object]:
    """Every ApiKey's spec and issued key id, and its Secret's data."""
    items = json.loads(e2e.kubectl("get", "apikeys", "-A", "-o", "json", namespace=None))["items"]
    found: dict[str, object] = {}
    for item in items:
        meta = item["metadata"]
        secret = (item.get("status") or {}).get("secretName")
        data = None
        if secret:
            raw = e2e.kubectl("get", "secret", secret, "-o", "jsonpath={.data}",
                              namespace=meta["namespace"], check=False)  # fmt: skip
            data = json.loads(raw) if raw else None
        found[f"{meta['namespace']}/{meta['name']}"] = {
            "spec": item["spec"],
            "keyId": (item.get("status") or {}).get("keyId"),
            "secret": data,
        }
    return found


def deployment_images() -> dict[str, str]:
    listed = json.loads(e2e.kubectl("get", "deployments", "-l",
                        f"app.kubernetes.io/instance={e2e.RELEASE}", "-o", "json"))  # fmt: skip
    return {item["metadata"]["name"]: item["spec"]["template"]["spec"]["containers"][0]["image"]
            for item in listed["items"]}  # fmt: skip


def listed(api: str, key: str, path: str) -> list[dict]:
    """Every item of a list endpoint (`path` with its query), following the cursors."""
    found, cursor = [], ""
    while True:
        status, page, _ = e2e.request("GET", f"{api}{path}&limit=100{cursor}", key)
        assert status == 200, page
        found += page["data"]
        if not page["has_more"]:
            return found
        cursor = f"&cursor={page['next_cursor']}"


def documents(api: str, key: str, project: str) -> list[dict]:
    return listed(api, key, f"/api/v2/vault/documents?project_id={project}")


def projects_named(api: str, key: str, prefix: str) -> list[dict]:
    projects = listed(api, key, "/api/v2/vault/projects?")
    return [p for p in projects if p["name"].startswith(prefix + " ")]


@pytest.fixture
def traffic_pod(cluster, loud_key):
    """Starts tests/kind/traffic.py in a pod; yields (name, run tag, project id for uploads)."""
    name = f"e2e-traffic-{uuid.uuid4().hex[:6]}"
    run = f"upgrade-{uuid.uuid4().hex[:8]}"
    image = deployment_images()[f"{e2e.RELEASE}-strongroom-api"]
    e2e.kubectl("create", "configmap", name, f"--from-file=traffic.py={TRAFFIC}")
    e2e.kubectl("create", "secret", "generic", name, f"--from-literal=key={loud_key}")
    yield name, run, image
    for kind in ("pod", "configmap", "secret"):
        e2e.kubectl("delete", kind, name, "--wait=false", check=False)


def start_traffic(name: str, run: str, image: str, project: str, **extra: str) -> None:
    """tests/kind/traffic.py in pod `name`; `extra` goes to its environment (THREADS, PAUSE)."""
    env = [{"name": "API", "value": f"http://{e2e.RELEASE}-strongroom-api"},
           {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": name, "key": "key"}}},
           {"name": "PROJECT", "value": project}, {"name": "RUN", "value": run},
           *({"name": k, "value": v} for k, v in extra.items())]  # fmt: skip
    apply({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": e2e.NAMESPACE},
        "spec": {
            "restartPolicy": "Never", "automountServiceAccountToken": False,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 10001},
            "containers": [{
                "name": "traffic", "image": image, "imagePullPolicy": "IfNotPresent",
                "command": ["python", "/traffic/traffic.py"], "env": env,
                "volumeMounts": [{"name": "script", "mountPath": "/traffic"}],
                "resources": {"limits": {"memory": "256Mi"}},
            }],
            "volumes": [{"name": "script", "configMap": {"name": name}}],
        },
    })  # fmt: skip
    e2e.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s")


def api_forward():
    """A port-forward to the API's Service (it follows one pod: make a new one after a
    rollout)."""
    return e2e.port_forward(f"svc/{e2e.RELEASE}-strongroom-api", 80, "/healthz")


def follow_logs(directory: Path) -> None:
    """The logs of the API and worker pods there are now, followed into `directory` (or
    STRONGROOM_E2E_LOGS) until the pods end: an upgrade removes them, and their logs with them."""
    directory = Path(os.environ.get("STRONGROOM_E2E_LOGS") or directory)
    directory.mkdir(parents=True, exist_ok=True)
    for component in ("api", "worker"):
        for pod in e2e.pods(component):
            name = pod["metadata"]["name"]
            with (directory / f"{name}.log").open("w") as out:
                subprocess.Popen(["kubectl", "--namespace", e2e.NAMESPACE, "logs", "-f", name],
                                 stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    print("pod logs:", directory)


def test_an_upgrade_and_an_operator_restart_under_load_lose_nothing(
    loud_key, traffic_pod, tmp_path
):
    if not UPGRADE:
        pytest.skip("no upgrade command: set STRONGROOM_E2E_UPGRADE (make test-cluster does)")
    name, run, image = traffic_pod
    key = loud_key
    with api_forward() as api:
        project = seed(api, key, f"{run} uploads")
    before = keys_and_secrets()
    images_before = deployment_images()

    follow_logs(tmp_path)
    start_traffic(name, run, image, project)
    time.sleep(10)
    moments = {"upgrade started": time.time()}
    upgrade(f"upgrade-{run}")
    moments["upgrade rolled out"] = time.time()
    images_after = deployment_images()
    rolled = [n for n in images_before if n.endswith(("-api", "-worker", "-operator"))]
    assert all(images_after[n] != images_before[n] for n in rolled), images_after
    time.sleep(5)
    moments["operator pod deleted"] = time.time()
    e2e.kubectl("delete", "pod", "-l", "app.kubernetes.io/component=operator", "--wait=false")
    time.sleep(15)
    e2e.kubectl("exec", name, "--", "touch", "/tmp/stop")  # noqa: S108  the pod's /tmp
    e2e.kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", f"pod/{name}",
                "--timeout=120s")  # fmt: skip
    report = json.loads(e2e.kubectl("logs", name).strip().splitlines()[-1])
    print("traffic:", json.dumps({k: v for k, v in report.items() if k != "writes"}))
    print(
        "at (s after the traffic started):",
        {what: round(at - report["started_at"], 1) for what, at in moments.items()},
    )

    assert report["failures"] == [], report["failures"]
    assert report["counts"].get("create", 0) >= 10 and report["counts"].get("upload", 0) >= 3
    written = report["writes"]
    assert len(set(written.values())) == len(written)  # one project per Idempotency-Key
    with api_forward() as api:
        stored = [p["id"] for p in projects_named(api, key, run) if p["id"] != project]
        assert sorted(stored) == sorted(written.values())  # none lost, none doubled

        def settled() -> list[dict] | None:
            found = documents(api, key, project)
            return found if all(d["status"] != "processing" for d in found) else None

        settled_documents = e2e.wait_for(settled, 180, "every document to leave processing")
        assert len(settled_documents) == 1 + report["counts"].get("upload", 0)
        assert {d["status"] for d in settled_documents} == {"ready"}
        assert e2e.usable(api, key)
    # The operator came back and changed no key: the same ApiKeys, key ids and Secrets.
    e2e.kubectl("rollout", "status", f"deployment/{e2e.RELEASE}-strongroom-operator",
                "--timeout=120s")  # fmt: skip
    assert keys_and_secrets() == before
    # Last, being a matter of time on a shared machine rather than of correctness:
    assert report["longest_pause_s"] < LONGEST_PAUSE_S, report


def seed(api: str, key: str, name: str) -> str:
    """A project with one document for the traffic's uploads and chat; its id."""
    e2e.wait_for(lambda: e2e.usable(api, key), 60, "the key to be accepted")
    status, project, _ = e2e.request("POST", f"{api}/api/v2/vault/projects", key,
                                     {"name": name, "project_type": "other"})  # fmt: skip
    assert status == 201, project
    body, content_type = encode_multipart_formdata({
        "project_id": project["id"],
        "file": ("seed.txt", b"The retention is released on completion of the works.\n" * 30),
    })  # fmt: skip
    status, document, _ = e2e.request("POST", f"{api}/api/v2/vault/documents", key, body,
                                      {"Content-Type": content_type})  # fmt: skip
    assert status == 202, document
    return project["id"]

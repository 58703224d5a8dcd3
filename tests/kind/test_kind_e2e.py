"""The whole product on a Kubernetes cluster (issue 6): the chart installed, a Tenant and an
ApiKey applied with kubectl, and the API called through a port-forward: whoami, projects
created and listed, an idempotent retry, a key revoked through its ApiKey resource, and the
metrics of the API, the worker and the operator scraped after that traffic.

`scripts/e2e-kind.sh` (`make test-kind`) makes such a cluster on kind (it needs docker, kind,
helm and kubectl) and runs this module against it. The module itself runs against any
cluster given by `KUBECONFIG` where the chart is installed and `examples/tenant.yaml` and
`examples/apikey.yaml` are applied:

    KUBECONFIG=~/.kube/config STRONGROOM_E2E_NAMESPACE=strongroom \\
        .venv/bin/pytest -m kind tests/kind

`STRONGROOM_E2E_RELEASE` (default `sr`) and `STRONGROOM_E2E_NAMESPACE` (default
`strongroom`) name the release. Without `KUBECONFIG` every test is skipped, never passed;
`make test` deselects them anyway (marker `kind`). The tests change nothing they did not
create, except projects of the example tenant, so they can run again on the same cluster.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import yaml
from urllib3 import encode_multipart_formdata

T = TypeVar("T")
ROOT = Path(__file__).parents[2]
RELEASE = os.environ.get("STRONGROOM_E2E_RELEASE", "sr")
NAMESPACE = os.environ.get("STRONGROOM_E2E_NAMESPACE", "strongroom")
EXAMPLE_KEY = yaml.safe_load((ROOT / "examples" / "apikey.yaml").read_text())
KEY_NAMESPACE = EXAMPLE_KEY["metadata"]["namespace"]
pytestmark = pytest.mark.kind


def kubectl(*args: str, namespace: str | None = NAMESPACE, check: bool = True) -> str:
    command = ["kubectl", *(["--namespace", namespace] if namespace else []), *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command)}: {result.stderr.strip()}")
    return result.stdout


def wait_for(probe: Callable[[], T | None], seconds: float = 120, what: str = "it") -> T:
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(
    method: str, url: str, key: str | None = None, body: dict | bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict, dict[str, str]]:  # fmt: skip
    """Status, JSON body and lower-cased headers; never raises for an HTTP error status."""
    all_headers = dict(headers or {})
    if key:
        all_headers["Authorization"] = f"Bearer {key}"
    data = body
    if isinstance(body, dict):
        data = json.dumps(body).encode()
        all_headers.setdefault("Content-Type", "application/json")
    prepared = urllib.request.Request(url, data=data, headers=all_headers, method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(prepared, timeout=15) as response:  # noqa: S310
            return response.status, json.loads(response.read() or b"{}"), _lower(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}"), _lower(error.headers)


def _lower(headers) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def get_text(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310
            return response.read().decode()
    except OSError:
        return None


@contextlib.contextmanager
def port_forward(target: str, remote: int | str, ready_path: str) -> Iterator[str]:
    """`kubectl port-forward target local:remote`; yields `http://127.0.0.1:local` once
    `ready_path` answers there."""
    local = free_port()
    process = subprocess.Popen(
        ["kubectl", "--namespace", NAMESPACE, "port-forward", target, f"{local}:{remote}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{local}"
    try:

        def answering() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"port-forward {target} ended: {process.stderr.read()}")
            return get_text(base + ready_path) is not None

        wait_for(answering, 60, f"a port-forward to {target}")
        yield base
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def cluster() -> None:
    config = os.environ.get("KUBECONFIG")
    if not config:
        pytest.skip("no cluster: set KUBECONFIG (scripts/e2e-kind.sh does, on a kind cluster)")
    missing = [path for path in config.split(os.pathsep) if not Path(path).exists()]
    assert not missing, f"KUBECONFIG names files that do not exist: {missing}"
    assert shutil.which("kubectl"), "the kind tests need kubectl on PATH"
    deployments = json.loads(kubectl("get", "deployments", "-l",
                             f"app.kubernetes.io/instance={RELEASE}", "-o", "json"))  # fmt: skip
    names = {item["metadata"]["name"] for item in deployments["items"]}
    wanted = {f"{RELEASE}-strongroom-{component}" for component in ("api", "worker", "operator")}
    assert wanted <= names, f"release {RELEASE} in {NAMESPACE} lacks {wanted - names}"


@pytest.fixture(scope="module")
def api(cluster) -> Iterator[str]:
    with port_forward(f"svc/{RELEASE}-strongroom-api", 80, "/healthz") as base:
        yield base


def secret_key(name: str, namespace: str) -> str | None:
    raw = kubectl("get", "secret", name, "-o", "jsonpath={.data.api-key}",
                  namespace=namespace, check=False)  # fmt: skip
    return base64.b64decode(raw).decode() if raw else None


def usable(api: str, key: str) -> bool:
    return request("GET", f"{api}/api/v2/me", key)[0] == 200


@pytest.fixture(scope="module")
def key(api) -> str:
    """The raw key of examples/apikey.yaml, from the Secret the operator wrote."""
    secret = f"{EXAMPLE_KEY['metadata']['name']}-api-key"
    raw = wait_for(lambda: secret_key(secret, KEY_NAMESPACE), 120, f"Secret {secret}")
    wait_for(lambda: usable(api, raw), 60, "the example key to be accepted")
    return raw


def test_whoami_answers_for_the_key_applied_with_kubectl(api, key):
    status, me, headers = request("GET", f"{api}/api/v2/me", key)
    assert status == 200, me
    spec = EXAMPLE_KEY["spec"]
    assert me["email"] == spec["userEmail"]
    assert me["api_key_name"] == spec["name"]
    assert me["environment"] == spec["environment"]
    assert set(me["scopes"]) == set(spec["scopes"])
    assert key.startswith(me["api_key_prefix"])
    assert headers["x-request-id"].startswith("req_")
    # Without a credential: a problem document, not a page of the ingress or a proxy.
    status, problem, _ = request("GET", f"{api}/api/v2/me")
    assert (status, problem["code"]) == (401, "missing_api_key")


def project_ids(api: str, key: str) -> list[str]:
    """Every project of the key's tenant, following the cursors."""
    ids: list[str] = []
    url = f"{api}/api/v2/vault/projects?limit=100"
    while True:
        status, page, _ = request("GET", url, key)
        assert status == 200, page
        ids += [project["id"] for project in page["data"]]
        if not page["has_more"]:
            return ids
        url = f"{api}/api/v2/vault/projects?limit=100&cursor={page['next_cursor']}"


def test_projects_are_created_and_listed(api, key):
    name = f"E2E Tower {uuid.uuid4().hex[:8]}"
    status, project, _ = request("POST", f"{api}/api/v2/vault/projects", key,
                                 {"name": name, "project_type": "commercial"})  # fmt: skip
    assert status == 201, project
    assert project["name"] == name and project["status"] == "active"
    status, first_page, _ = request("GET", f"{api}/api/v2/vault/projects?limit=10", key)
    assert status == 200
    assert first_page["data"][0]["id"] == project["id"]  # newest first
    assert project["id"] in project_ids(api, key)
    status, fetched, _ = request("GET", f"{api}/api/v2/vault/projects/{project['id']}", key)
    assert status == 200 and fetched["name"] == name


def test_a_retry_with_the_same_idempotency_key_is_replayed_not_repeated(api, key):
    body = {"name": f"Retried {uuid.uuid4().hex[:8]}", "project_type": "residential"}
    headers = {"Idempotency-Key": f"e2e-{uuid.uuid4()}"}
    url = f"{api}/api/v2/vault/projects"
    first = request("POST", url, key, body, headers)
    second = request("POST", url, key, body, headers)
    assert first[0] == second[0] == 201, (first, second)
    assert second[1] == first[1]
    assert second[2].get("idempotent-replayed") == "true"
    assert "idempotent-replayed" not in first[2]
    assert second[2]["x-request-id"] == first[2]["x-request-id"]
    assert project_ids(api, key).count(first[1]["id"]) == 1
    # The same key with another body is refused, not run.
    status, problem, _ = request("POST", url, key, body | {"name": "Other"}, headers)
    assert status == 422, problem


@pytest.fixture
def own_api_key(cluster) -> Iterator[str]:
    """An ApiKey resource of this test's own, for the example tenant; deleted afterwards."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    resource = {
        "apiVersion": "strongroom.io/v1",
        "kind": "ApiKey",
        "metadata": {"name": name, "namespace": KEY_NAMESPACE},
        "spec": {**EXAMPLE_KEY["spec"], "name": "e2e revocation"},
    }
    subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(resource), text=True,
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    yield name
    kubectl("delete", "apikey", name, "--wait=true", "--timeout=120s",
            namespace=KEY_NAMESPACE, check=False)  # fmt: skip


def test_revoking_through_the_apikey_resource_is_refused_by_the_api(api, own_api_key):
    raw = wait_for(lambda: secret_key(f"{own_api_key}-api-key", KEY_NAMESPACE), 120,
                   f"Secret {own_api_key}-api-key")  # fmt: skip
    wait_for(lambda: usable(api, raw), 60, "the new key to be accepted")
    kubectl("patch", "apikey", own_api_key, "--type", "merge",
            "-p", '{"spec": {"revoked": true}}', namespace=KEY_NAMESPACE)  # fmt: skip

    def refused() -> bool:
        status, problem, _ = request("GET", f"{api}/api/v2/me", raw)
        return status == 401 and problem.get("code") == "api_key_revoked"

    wait_for(refused, 60, "the revoked key to be refused")

    def state() -> str:
        return kubectl("get", "apikey", own_api_key, "-o", "jsonpath={.status.state}",
                       namespace=KEY_NAMESPACE)  # fmt: skip

    assert wait_for(lambda: state() == "revoked", 60, "status.state revoked")


def pods(component: str) -> list[dict]:
    selector = f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component={component}"
    found = json.loads(kubectl("get", "pods", "-l", selector, "-o", "json"))["items"]
    return [pod for pod in found if pod["status"].get("phase") == "Running"]


def metrics_port(pod: dict) -> int:
    for container in pod["spec"]["containers"]:
        for port in container.get("ports", []):
            if port.get("name") == "metrics":
                return port["containerPort"]
    raise AssertionError(f"pod {pod['metadata']['name']} has no port named metrics")


def scrape(component: str) -> list[str]:
    """The /metrics text of every running pod of `component`."""
    texts = []
    running = pods(component)
    assert running, f"no running {component} pod"
    for pod in running:
        name = pod["metadata"]["name"]
        with port_forward(f"pod/{name}", metrics_port(pod), "/metrics") as base:
            text = get_text(base + "/metrics")
        assert text is not None, name
        texts.append(text)
    return texts


def value(texts: list[str], name: str, **labels: str) -> float:
    """A metric summed over pods and over series that carry `labels`."""
    total = 0.0
    for text in texts:
        for line in text.splitlines():
            series, _, number = line.rpartition(" ")
            if (series == name or series.startswith(name + "{")) and all(
                f'{label}="{wanted}"' in series for label, wanted in labels.items()
            ):
                total += float(number)
    return total


def ingest(api: str, key: str) -> dict:
    """Upload a small text document and wait for its ingestion job to end."""
    status, project, _ = request("POST", f"{api}/api/v2/vault/projects", key,
                                 {"name": "E2E metrics", "project_type": "other"})  # fmt: skip
    assert status == 201, project
    body, content_type = encode_multipart_formdata({
        "project_id": project["id"],
        "file": ("retention.txt", b"The retention is released on completion.\n" * 40),
    })  # fmt: skip
    status, document, _ = request("POST", f"{api}/api/v2/vault/documents", key, body,
                                  {"Content-Type": content_type})  # fmt: skip
    assert status == 202, document
    job_url = f"{api}/api/v2/vault/ingestion-jobs/{document['ingestion_job_id']}"

    def ended() -> dict | None:
        job = request("GET", job_url, key)[1]
        return job if job.get("status") in {"succeeded", "failed"} else None

    return wait_for(ended, 120, "the ingestion job")


def test_metrics_of_the_api_the_worker_and_the_operator_are_scraped(api, key):
    for _ in range(3):
        assert usable(api, key)
    job = ingest(api, key)
    assert job["status"] == "succeeded", job

    api_texts = scrape("api")
    assert value(api_texts, "strongroom_http_requests_total", route="/api/v2/me",
                 method="GET", status="200") >= 3  # fmt: skip
    assert value(api_texts, "strongroom_http_request_duration_seconds_count") >= 3
    assert value(api_texts, "strongroom_rate_limit_decisions_total", outcome="allowed") >= 3

    worker_texts = scrape("worker")
    assert value(worker_texts, "strongroom_jobs_finished_total", kind="ingestion",
                 status="succeeded") >= 1  # fmt: skip
    assert value(worker_texts, "strongroom_ingested_pages_total") >= 1

    operator_texts = scrape("operator")
    assert value(operator_texts, "strongroom_operator_reconciliations_total", kind="ApiKey",
                 outcome="succeeded") >= 1  # fmt: skip

    for text in api_texts + worker_texts + operator_texts:
        assert key not in text and key[:16] not in text

    # What Prometheus scrapes: each metrics Service has ready endpoints on its `metrics` port.
    for component in ("api", "worker", "operator"):
        service = f"{RELEASE}-strongroom-{component}"
        selector = f"kubernetes.io/service-name={service}"
        slices = json.loads(kubectl("get", "endpointslices", "-l", selector, "-o", "json"))
        ready = [endpoint for item in slices["items"]
                 if any(port.get("name") == "metrics" for port in item.get("ports") or [])
                 for endpoint in item.get("endpoints") or []
                 if endpoint.get("conditions", {}).get("ready")]  # fmt: skip
        assert ready, f"Service {service} has no ready endpoint on its metrics port"

"""Three API pods and three worker pods by values, under load (issues 45 and 52): requests
through the Service reach every API pod, ingestion jobs are taken by every worker, a key
revoked through its ApiKey is refused by every API pod within 2 s (D16) of the first refusal,
and PostgreSQL refuses no connection (issue 52, item 5: the chart's defaults gave 2 API pods 40
connections each and a worker about 32, more than a default `max_connections` of 100).

While all of that runs, tests/kind/traffic.py loads the API through its Service from a pod
(8 threads with a 0.05 s pause, where the upgrade test has 3 with 0.2 s), and PostgreSQL's client
connections are counted every half second inside its pod (`pg_stat_activity`, by client
address, so by pod). Afterwards: no failure the traffic saw and no 503 (a refused database
connection is answered 503 with `Retry-After`, which the traffic would otherwise wait out),
no "too many clients" in PostgreSQL's log, every pod within the connections its pools allow,
and the peak within `max_connections` less the chart's reserve.

The release is changed with the runner's upgrade command (`STRONGROOM_E2E_UPGRADE`, see
test_upgrade.py), given `VALUES`, a JSON object merged over values-dev.yaml. Without it the
test is skipped."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
import uuid
from collections import defaultdict

import pytest
from urllib3 import encode_multipart_formdata

from tests.kind import test_kind_e2e as e2e
from tests.kind import test_upgrade as upgrades
from tests.kind.test_upgrade import (
    UPGRADE,
    api_forward,
    apply,
    deployment_images,
    seed,
    start_traffic,
    upgrade,
)

pytestmark = pytest.mark.kind
cluster = e2e.cluster
loud_key, traffic_pod = upgrades.loud_key, upgrades.traffic_pod
REVOCATION_S = 2.0  # D16: a revoked key fails on every replica within 2 s
PODS = 3
SCALED = {"api": {"replicas": PODS}, "worker": {"replicas": PODS}}
LOAD = {"THREADS": "8", "PAUSE": "0.05"}  # tests/kind/traffic.py's
RESERVED = 8  # the chart's database.reservedConnections
REFUSALS = ("too many clients", "remaining connection slots are reserved")
SPREAD = """
import urllib.request
for _ in range(45):
    request = urllib.request.Request("http://{release}-strongroom-api/api/v2/me",
                                     headers={{"Authorization": "Bearer " + {key!r},
                                              "Connection": "close"}})
    urllib.request.urlopen(request, timeout=30).read()
"""
# Every half second until STOP_SAMPLER exists (or 20 minutes): the time and, by client
# address, the client connections other than its own (psql over the pod's Unix socket).
STOP_SAMPLER = "/tmp/stop-sampler"  # noqa: S108  in PostgreSQL's pod
COUNT = (
    "select extract(epoch from now()), coalesce(host(client_addr), 'local'), count(*)"
    " from pg_stat_activity where backend_type = 'client backend'"
    " and pid <> pg_backend_pid() group by 2"
)
SAMPLER = f"""
end=$(( $(date +%s) + 1200 ))
while [ ! -e {STOP_SAMPLER} ] && [ "$(date +%s)" -lt "$end" ]; do
  psql -U postgres -XAtq -F ' ' -c "{COUNT}"
  sleep 0.5
done
"""


def running_pods(component: str) -> list[str]:
    return [pod["metadata"]["name"] for pod in e2e.pods(component)
            if all(c.get("ready") for c in pod["status"].get("containerStatuses", []))]  # fmt: skip


def pod_metric(pod: str, name: str, **labels: str) -> float:
    with e2e.port_forward(f"pod/{pod}", 9090, "/metrics") as base:
        return e2e.value([e2e.get_text(base + "/metrics") or ""], name, **labels)


def postgres_pod() -> str:
    [pod] = running_pods("postgres")
    return pod


def psql(query: str) -> str:
    return e2e.kubectl("exec", postgres_pod(), "--", "psql", "-U", "postgres", "-XAtq",
                       "-c", query).strip()  # fmt: skip


def refusals() -> list[str]:
    """PostgreSQL's log lines (its pod's, since it started) that refused a client."""
    log = e2e.kubectl("logs", postgres_pod())
    return [line for line in log.splitlines() if any(r in line for r in REFUSALS)]


def allowed_connections(pod: dict) -> int:
    """The most connections a pod of the release may open, from what its container is told:
    per process its pool, its read pool and its job queue's pool, and for `strongroom worker`
    a second queue pool and the connection that listens for jobs (docs/deploy.md)."""
    [container] = pod["spec"]["containers"]
    args = container.get("args") or []
    env = {item["name"]: item.get("value") for item in container.get("env", [])}
    pools = sum(int(env[f"STRONGROOM_DATABASE_{name}POOL_SIZE"]) for name in ("", "READ_"))
    queue = int(env["STRONGROOM_DATABASE_QUEUE_POOL_SIZE"])
    processes = int(args[args.index("--workers") + 1]) if "--workers" in args else 1
    return processes * (pools + queue + (queue + 1 if args[0] == "worker" else 0))


class Connections:
    """PostgreSQL's client connections, sampled in its pod every half second (its output
    read as it comes, so that a long run never fills the pipe and stalls the sampling)."""

    def __init__(self) -> None:
        self.pod = postgres_pod()
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            ["kubectl", "--namespace", e2e.NAMESPACE, "exec", self.pod, "--", "sh", "-c",
             SAMPLER],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout or ():
            self.lines.append(line)

    def stop(self) -> dict[float, dict[str, int]]:
        """Stops sampling; each sample's time -> its counts by client address."""
        e2e.kubectl("exec", self.pod, "--", "touch", STOP_SAMPLER, check=False)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.reader.join(10)
        samples: dict[float, dict[str, int]] = defaultdict(dict)
        for line in self.lines:
            parts = line.split()
            if len(parts) == 3:
                samples[float(parts[0])][parts[1]] = int(parts[2])
        return samples


@pytest.fixture
def scaled(cluster):
    if not UPGRADE:
        pytest.skip("no upgrade command: set STRONGROOM_E2E_UPGRADE (make test-cluster does)")
    tag = deployment_images()[f"{e2e.RELEASE}-strongroom-api"].rpartition(":")[2]
    upgrade(tag, SCALED)  # the same image: only the replicas change
    e2e.wait_for(lambda: len(running_pods("api")) == PODS and len(running_pods("worker")) == PODS,
                 300, f"{PODS} API and {PODS} worker pods Ready")  # fmt: skip
    yield
    # Back to values-dev.yaml's one API and one worker pod, so that the next test starts from
    # the release it was given: test_upgrade.py's rollout from 3 + 3 pods to a new image had
    # three new workers load their models beside the one API pod left serving, and its
    # traffic once waited 10 s for an answer (first run, load average 25).
    upgrade(tag, {})


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


def connection_stats(samples: dict[float, dict[str, int]]) -> dict:
    """The samples' peak, each pod's peak, and every pod seen over what its pools allow."""
    selector = f"app.kubernetes.io/instance={e2e.RELEASE}"
    release = json.loads(e2e.kubectl("get", "pods", "-l", selector, "-o", "json"))
    owners = {}  # a pod's address -> its name and the connections its pools allow
    for pod in release["items"]:
        component = pod["metadata"]["labels"].get("app.kubernetes.io/component")
        if component in ("api", "worker", "operator") and pod["status"].get("podIP"):
            owners[pod["status"]["podIP"]] = (pod["metadata"]["name"], allowed_connections(pod))
    per_pod_peak: dict[str, int] = defaultdict(int)
    over: dict[str, tuple[int, int]] = {}
    for sample in samples.values():
        for address, count in sample.items():
            owner, allowed = owners.get(address, (address, None))
            per_pod_peak[owner] = max(per_pod_peak[owner], count)
            if allowed is not None and count > allowed:
                over[owner] = (count, allowed)
    return {
        "samples": len(samples),
        "peak": max((sum(sample.values()) for sample in samples.values()), default=0),
        "per_pod_peak": dict(sorted(per_pod_peak.items())),
        "over": over,
    }


def test_three_api_and_three_worker_pods_under_load_share_the_work_and_fit_postgresql(
    scaled, own_key, loud_key, traffic_pod
):
    name, key = own_key
    traffic, run, image = traffic_pod
    api_pods, worker_pods = running_pods("api"), running_pods("worker")
    max_connections = int(psql("show max_connections"))
    deployment = json.loads(e2e.kubectl("get", "deployment", f"{e2e.RELEASE}-strongroom-api",
                                        "-o", "json"))  # fmt: skip
    counted = int(deployment["metadata"]["annotations"]["strongroom.io/database-connections"])
    refused_before = refusals()
    connections = Connections()  # until the jobs the load queued are done
    try:
        with api_forward() as api:
            project = seed(api, loud_key, f"{run} uploads")
            start_traffic(traffic, run, image, project, **LOAD)
            e2e.wait_for(lambda: e2e.usable(api, key), 60, "the key to be accepted")
            time.sleep(10)  # the load under way
            # Requests through the Service, from inside the cluster (a worker pod has the
            # image's Python): kube-proxy spreads new connections over every API pod.
            e2e.kubectl("exec", worker_pods[0], "--", "python", "-c",
                        SPREAD.format(release=e2e.RELEASE, key=key))  # fmt: skip
            served = {pod: pod_metric(pod, "strongroom_http_requests_total",
                                      route="/api/v2/me") for pod in api_pods}  # fmt: skip
            assert all(count > 0 for count in served.values()), served

            new = {"name": "E2E scale", "project_type": "other"}
            status, made, _ = e2e.request("POST", f"{api}/api/v2/vault/projects", key, new)
            assert status == 201, made
            jobs = []
            for index in range(10):
                body, content_type = encode_multipart_formdata({
                    "project_id": made["id"],
                    "file": (f"s{index}.txt", f"Scale-out document {index}.\n".encode() * 400),
                })  # fmt: skip
                headers = {"Content-Type": content_type}
                url = f"{api}/api/v2/vault/documents"
                status, document, _ = e2e.request("POST", url, key, body, headers)
                assert status == 202, document
                jobs.append(document["ingestion_job_id"])

            # Revocation, under the same load: each API pod asked directly, through a
            # port-forward of its own.
            with contextlib.ExitStack() as stack:
                bases = [stack.enter_context(e2e.port_forward(f"pod/{pod}", 8080, "/healthz"))
                         for pod in api_pods]  # fmt: skip
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

            e2e.kubectl("exec", traffic, "--", "touch", "/tmp/stop")  # noqa: S108  its /tmp
            e2e.kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", f"pod/{traffic}",
                        "--timeout=180s")  # fmt: skip
            report = json.loads(e2e.kubectl("logs", traffic).strip().splitlines()[-1])
            print("traffic:", json.dumps({k: v for k, v in report.items() if k != "writes"}))

            def all_done() -> bool:
                states = [e2e.request("GET", f"{api}/api/v2/vault/ingestion-jobs/{job}",
                                      loud_key)[1].get("status") for job in jobs]  # fmt: skip
                return all(state == "succeeded" for state in states)

            e2e.wait_for(all_done, 600, "the ten ingestion jobs")

            def settled() -> list[dict] | None:  # the traffic's uploads, before the next test
                found = upgrades.documents(api, loud_key, project)
                return found if all(d["status"] != "processing" for d in found) else None

            uploaded = e2e.wait_for(settled, 600, "the traffic's documents to leave processing")
    finally:
        stats = connection_stats(connections.stop())
        refused = refusals()[len(refused_before) :]
        seen = {"max_connections": max_connections, "chart_sum": counted, **stats,
                "refusals": len(refused), "first_refusals": refused[:3]}  # fmt: skip
        print("postgresql:", json.dumps(seen))
    taken = {pod: pod_metric(pod, "strongroom_jobs_finished_total", kind="ingestion")
             for pod in worker_pods}  # fmt: skip
    first_refusal = min(refused_at.values(), default=patched)
    last_refusal = max(refused_at.values(), default=patched)
    print("scale-out:", json.dumps({
        "api_pods": len(api_pods), "worker_pods": len(worker_pods),
        "served_me": served, "ingestion_taken": taken,
        "uploads_ready": sum(d["status"] == "ready" for d in uploaded),
        "revocation_s": {"first": round(first_refusal - patched, 2),
                         "every": round(last_refusal - patched, 2)},
    }))  # fmt: skip

    assert refused == [], refused[:5]  # PostgreSQL refused no client
    assert report["failures"] == [], report["failures"]
    assert report["counts"].get("waited 503", 0) == 0, report["waits"]
    assert report["counts"].get("me", 0) >= 50, report["counts"]
    assert stats["samples"] >= 20, "PostgreSQL's connections were hardly sampled"
    assert stats["over"] == {}, stats  # every pod within what its pools allow
    assert stats["peak"] <= counted <= max_connections - RESERVED, stats
    assert all(count > 0 for count in taken.values()), taken
    assert {d["status"] for d in uploaded} == {"ready"}
    assert len(uploaded) == 1 + report["counts"].get("upload", 0)
    assert len(refused_at) == len(api_pods), "a pod still accepts the revoked key after 60 s"
    assert last_refusal - first_refusal <= REVOCATION_S

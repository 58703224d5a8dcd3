"""The Helm chart (issue 6), rendered and linted offline with Helm's own library
(helm-python-sdk ships it; no helm binary or cluster is needed)."""

from __future__ import annotations

import os
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from helm_python.chart import Chart, lint
from helm_python.errors import HelmRenderError, HelmValuesError

from strongroom.settings import Settings

ROOT = Path(__file__).parents[2]
CHART = ROOT / "charts" / "strongroom"


def render(**values) -> list[dict]:
    rendered = Chart.load(str(CHART)).render(values, name="sr", namespace="strongroom",
                                             is_install=True)  # fmt: skip
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]


def by_kind(documents: list[dict], kind: str) -> list[dict]:
    return [doc for doc in documents if doc["kind"] == kind]


def test_the_chart_lints_clean():
    report = lint(str(CHART))
    assert report["errors"] == []
    assert all(message["severity"] <= 1 for message in report["messages"]), report


def test_default_values_render_every_part():
    kinds = {doc["kind"] for doc in render()}
    assert kinds >= {"Deployment", "Service", "Ingress", "HorizontalPodAutoscaler",
                     "PodDisruptionBudget", "NetworkPolicy", "ServiceAccount", "ClusterRole",
                     "ClusterRoleBinding", "Job", "ConfigMap"}  # fmt: skip
    assert "ServiceMonitor" not in kinds  # only when the Prometheus operator is there


def test_pods_run_non_root_on_a_read_only_root_with_probes():
    deployments = {doc["metadata"]["name"]: doc for doc in by_kind(render(), "Deployment")}
    api = deployments["sr-strongroom-api"]["spec"]["template"]["spec"]["containers"][0]
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # Not Kubernetes' 1 s: a busy node answered /readyz slower than that (issue 45).
    probes = ("readinessProbe", "livenessProbe", "startupProbe")
    assert all(api[probe]["timeoutSeconds"] == 5 for probe in probes)
    assert api["readinessProbe"]["failureThreshold"] * api["readinessProbe"]["periodSeconds"] == 30
    assert "--workers" in api["args"] and "--metrics-port" in api["args"]
    for deployment in deployments.values():
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] and context["runAsNonRoot"]
            assert context["capabilities"]["drop"] == ["ALL"]
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]  # noqa: S108


def test_secrets_are_referenced_by_name_never_rendered():
    documents = render()
    assert by_kind(documents, "Secret") == []
    env = by_kind(documents, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    refs = {item["name"]: item["valueFrom"]["secretKeyRef"]["name"] for item in env
            if "valueFrom" in item}  # fmt: skip
    assert refs["STRONGROOM_KEY_PEPPER"] == "strongroom-app"
    assert refs["STRONGROOM_DATABASE_URL"] == "strongroom-database"


def test_migrations_run_as_a_pre_install_and_pre_upgrade_hook():
    [job] = by_kind(render(), "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]


def test_monitoring_objects_come_with_the_switch():
    kinds = {doc["kind"] for doc in render(metrics={"serviceMonitor": True})}
    assert {"ServiceMonitor", "PrometheusRule"} <= kinds


def test_dev_values_bring_their_own_databases():
    values = yaml.safe_load((CHART / "values-dev.yaml").read_text())
    documents = render(**values)
    names = {doc["metadata"]["name"] for doc in by_kind(documents, "Deployment")}
    assert {"sr-strongroom-postgres", "sr-strongroom-redis", "sr-strongroom-api"} <= names
    [postgres] = [doc for doc in by_kind(documents, "Deployment")
                  if doc["metadata"]["name"] == "sr-strongroom-postgres"]  # fmt: skip
    # With pgvector, so that hybrid search runs on HNSW indexes there (issue 16).
    assert postgres["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "pgvector/pgvector:pg16"
    )
    assert len(by_kind(documents, "Secret")) == 3 and not by_kind(documents, "Ingress")
    # They exist before the migration Job runs: hooks of a lower weight.
    [job] = by_kind(documents, "Job")
    job_weight = int(job["metadata"]["annotations"]["helm.sh/hook-weight"])
    for doc in by_kind(documents, "Secret"):
        assert int(doc["metadata"]["annotations"]["helm.sh/hook-weight"]) < job_weight
    # An upgrade leaves them alone (issue 45): a pre-upgrade hook would recreate them mid-upgrade,
    # an empty database and a pepper no issued key was hashed under.
    hooks = [doc["metadata"].get("annotations", {}) for doc in documents]
    dev = [hook for hook in hooks if hook.get("helm.sh/hook-weight") == "-10"]
    assert len(dev) == 7  # 2 Deployments, 2 Services, 3 Secrets
    assert {hook["helm.sh/hook"] for hook in dev} == {"pre-install"}


def test_the_chart_ships_the_same_crds_and_operator_rules_as_crds():
    shipped = sorted(path.name for path in (ROOT / "crds").glob("*.yaml"))
    assert "peering.kopf.dev.yaml" in shipped  # kopf's peering CRDs (issue 17)
    for name in shipped:
        if name != "operator-rbac.yaml":
            assert (CHART / "crds" / name).read_text() == (ROOT / "crds" / name).read_text()
    [role] = by_kind(render(), "ClusterRole")
    [reference] = [doc for doc in yaml.safe_load_all((ROOT / "crds" / "operator-rbac.yaml")
                   .read_text()) if doc["kind"] == "ClusterRole"]  # fmt: skip
    assert role["rules"] == reference["rules"]


@pytest.mark.parametrize(
    "values",
    [
        {"api": {"workers": 0}},
        {"baseUrl": "not a url"},
        {"image": {"pullPolicy": "Sometimes"}},
        {"unknown": 1},
        {"config": {"rateLimitTiers": {"standard": [60]}}},
        {"worker": {"concurrency": 0}},
        {"worker": {"replica": 2}},
        {"worker": {"metricsPort": 0}},
        {"worker": {"metricsPort": "9090"}},
        {"storage": {"url": "my-bucket"}},
        {"storage": {"url": "s3://"}},
        {"storage": {"volume": {"accessMode": "ReadMany"}}},
        {"chat": {"engine": "gpt"}},
        {"chat": {"engine": "openai"}},  # no base URL, no model
        {"chat": {"engine": "openai", "openai": {"baseUrl": "https://llm.example/v1"}}},
        {"chat": {"engine": "openai", "openai": {"model": "m"}}},
        {"chat": {"openai": {"baseUrl": "llm.example"}}},
        {"chat": {"openai": {"timeoutSeconds": 0}}},
        {"chat": {"openai": {"maxRetries": -1}}},
        {"chat": {"openai": {"apiKey": "sk-plaintext"}}},  # keys come from a Secret only
        {"oidc": {"issuer": "https://id.example"}},  # no client id
        {"oidc": {"clientId": "strongroom"}},  # no issuer
        {"oidc": {"issuer": "https://id.example", "clientId": "strongroom", "secret": ""}},
        {"oidc": {"clientSecret": "plaintext"}},
    ],
)
def test_the_values_schema_refuses_bad_values(values):
    with pytest.raises(HelmValuesError):
        Chart.load(str(CHART)).validate_schema(values)


def test_skaffold_builds_the_dockerfile_and_deploys_the_chart_with_dev_values():
    config = yaml.safe_load((ROOT / "skaffold.yaml").read_text())
    [artifact] = config["build"]["artifacts"]
    assert (ROOT / artifact["docker"]["dockerfile"]).exists()
    [release] = config["manifests"]["helm"]["releases"]
    assert (ROOT / release["chartPath"] / "Chart.yaml").exists()
    assert all((ROOT / path).exists() for path in release["valuesFiles"])
    [forward] = config["portForward"]
    assert forward["resourceName"] == f"{release['name']}-strongroom-api"


DEV_VALUES = yaml.safe_load((CHART / "values-dev.yaml").read_text())
# Kinds of the Prometheus operator's CRDs: kubernetes-validate has no schema for them.
CUSTOM_KINDS = {"ServiceMonitor", "PrometheusRule", "ClusterKopfPeering"}
VARIANTS = {
    "default": {},
    "dev": DEV_VALUES,
    "monitoring": {"metrics": {"serviceMonitor": True}},
    "directory storage": {"storage": {"url": "/srv/blobs", "volume": {"existingClaim": "blobs"}}},
    "one worker, no extras": {"worker": {"replicas": 1}, "operator": {"enabled": False},
                              "secrets": {"signingKeys": ""}},
    "operator with peering": {"operator": {"replicas": 2}},
    "openai chat and oidc": {"chat": {"engine": "openai",
                                      "openai": {"baseUrl": "https://llm.example/v1",
                                                 "model": "gpt-4o-mini"}},
                             "oidc": {"issuer": "https://id.example", "clientId": "strongroom"}},
}  # fmt: skip


# 1.25: the oldest schema kubernetes-validate ships; the chart's floor, 1.24, is checked on a real
# API server by make test-cluster (scripts/cluster/)
@pytest.mark.parametrize("version", ["1.25.0", "1.37.0"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rendered_object_is_valid_for_kubernetes(variant, version):
    documents = render(**VARIANTS[variant])
    checked = 0
    for doc in documents:
        if doc["kind"] in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            raise AssertionError(f"{doc['kind']} {doc['metadata']['name']}: {error}") from error
        checked += 1
    assert checked == len([doc for doc in documents if doc["kind"] not in CUSTOM_KINDS]) > 5


def deployment(documents: list[dict], component: str) -> dict:
    [found] = [doc for doc in by_kind(documents, "Deployment")
               if doc["metadata"]["name"] == f"sr-strongroom-{component}"]  # fmt: skip
    return found


def env_of(container: dict) -> dict[str, object]:
    """Variable -> value, or (Secret, key) for a secretKeyRef."""
    values: dict[str, object] = {}
    for item in container["env"]:
        ref = item.get("valueFrom", {}).get("secretKeyRef")
        field = item.get("valueFrom", {}).get("fieldRef")
        values[item["name"]] = (
            (ref["name"], ref["key"]) if ref else ("field", field["fieldPath"]) if field
            else item["value"]
        )  # fmt: skip
    return values


def s3_env(container: dict) -> dict[str, object]:
    return {name: value for name, value in env_of(container).items() if "_S3_" in name}


def test_the_worker_runs_strongroom_worker_like_the_api_runs_serve():
    documents = render()
    worker = deployment(documents, "worker")
    pod = worker["spec"]["template"]["spec"]
    [container] = pod["containers"]
    api_pod = deployment(documents, "api")["spec"]["template"]["spec"]
    [api] = api_pod["containers"]
    assert container["args"] == ["worker"]
    assert container["image"] == api["image"]
    assert worker["spec"]["replicas"] == 2
    # The same settings and Secrets as the API, and its own concurrency.
    assert container["envFrom"] == api["envFrom"]
    env, api_env = env_of(container), env_of(api)
    assert env.pop("STRONGROOM_WORKER_CONCURRENCY") == "2"
    assert env.pop("STRONGROOM_WORKER_METRICS_PORT") == "9090"
    # Issue 28: running jobs get the termination grace period less 15 s, then are cancelled.
    assert pod["terminationGracePeriodSeconds"] == 120
    assert env.pop("STRONGROOM_JOB_SHUTDOWN_GRACE_SECONDS") == "105"
    assert env.pop("STRONGROOM_JOB_SLOTS_KEPT_FOR_OTHER_TENANTS") == "1"
    assert without_api_pools(env) == without_api_pools(api_env)
    assert env["STRONGROOM_DATABASE_URL"] == ("strongroom-database", "url")
    assert env["STRONGROOM_REDIS_URL"] == ("strongroom-redis", "url")
    assert env["STRONGROOM_KEY_PEPPER"] == ("strongroom-app", "key-pepper")
    assert env["STRONGROOM_SECRET_KEY"] == ("strongroom-app", "secret-key")
    assert env["STRONGROOM_S3_SECRET_ACCESS_KEY"] == ("strongroom-s3", "secret-access-key")
    # A configuration change rolls the workers too.
    checksums = [deployment(documents, component)["spec"]["template"]["metadata"]["annotations"]
                 ["checksum/config"] for component in ("api", "worker")]  # fmt: skip
    assert checksums[0] == checksums[1]
    # Non-root on a read-only root, limited, no Kubernetes credentials, only /metrics served.
    assert pod["securityContext"]["runAsNonRoot"] and pod["automountServiceAccountToken"] is False
    assert container["securityContext"] == api["securityContext"]
    assert container["securityContext"]["runAsUser"] == 10001
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert "memory" in container["resources"]["limits"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 9090}]
    # Liveness on the metrics thread only (see worker.yaml): no readiness (it takes no
    # traffic), nothing that asks PostgreSQL.
    assert container["livenessProbe"]["httpGet"] == {"path": "/metrics", "port": "metrics"}
    assert not {"readinessProbe", "startupProbe"} & container.keys()
    assert pod["terminationGracePeriodSeconds"] >= 30  # time to finish running jobs
    accounts = {doc["metadata"]["name"]: doc for doc in by_kind(documents, "ServiceAccount")}
    assert accounts[pod["serviceAccountName"]]["automountServiceAccountToken"] is False


def test_several_workers_get_a_disruption_budget_and_one_does_not():
    budgets = {doc["metadata"]["name"]: doc for doc in by_kind(render(), "PodDisruptionBudget")}
    budget = budgets["sr-strongroom-worker"]["spec"]
    assert budget["maxUnavailable"] == 1
    assert budget["selector"]["matchLabels"]["app.kubernetes.io/component"] == "worker"
    single = by_kind(render(worker={"replicas": 1}), "PodDisruptionBudget")
    assert "sr-strongroom-worker" not in {doc["metadata"]["name"] for doc in single}


def test_only_prometheus_reaches_the_worker_and_the_worker_reaches_everything():
    policies = {doc["metadata"]["name"]: doc["spec"] for doc in by_kind(render(), "NetworkPolicy")}
    worker = policies["sr-strongroom-worker"]
    assert worker["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "worker"
    # Its metrics port, from anywhere, as the API's: nothing else.
    assert worker["policyTypes"] == ["Ingress"]
    assert worker["ingress"] == [{"ports": [{"port": "metrics"}]}]
    assert {"ports": [{"port": "metrics"}]} in policies["sr-strongroom-api"]["ingress"]
    # Egress is not restricted, for the worker as for the API: PostgreSQL, Redis and S3
    # are wherever the cluster's operator put them.
    assert all("Egress" not in policy["policyTypes"] for policy in policies.values())


def test_the_worker_can_be_switched_off():
    names = {doc["metadata"]["name"] for doc in render(worker={"enabled": False})}
    assert not {name for name in names if name.endswith("-worker")}  # Service included


def test_storage_settings_reach_the_api_and_the_worker():
    documents = render(storage={"url": "s3://docs/strongroom",
                                "s3": {"endpointUrl": "https://minio.example:9000",
                                       "region": "eu-west-1"}})  # fmt: skip
    [config] = by_kind(documents, "ConfigMap")
    assert config["data"]["STRONGROOM_STORAGE_URL"] == "s3://docs/strongroom"
    assert config["data"]["STRONGROOM_S3_ENDPOINT_URL"] == "https://minio.example:9000"
    assert config["data"]["STRONGROOM_S3_REGION"] == "eu-west-1"
    assert config["data"]["STRONGROOM_DATA_DIR"].startswith("/tmp/")  # noqa: S108 (an emptyDir)
    for component in ("api", "worker"):
        [container] = deployment(documents, component)["spec"]["template"]["spec"]["containers"]
        assert s3_env(container) == {
            "STRONGROOM_S3_ACCESS_KEY_ID": ("strongroom-s3", "access-key-id"),
            "STRONGROOM_S3_SECRET_ACCESS_KEY": ("strongroom-s3", "secret-access-key"),
        }
        # Uploads are spooled under /tmp (tempfile's directory) before they go to S3.
        assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]  # noqa: S108
    # Ambient credentials (IRSA, instance role): no Secret at all.
    documents = render(storage={"s3": {"credentialsSecret": ""}})
    for component in ("api", "worker"):
        [container] = deployment(documents, component)["spec"]["template"]["spec"]["containers"]
        assert s3_env(container) == {}


def test_a_directory_store_is_one_volume_mounted_by_the_api_and_every_worker():
    documents = render(storage={"url": "/srv/blobs", "volume": {"existingClaim": "shared"}})
    assert by_kind(documents, "PersistentVolumeClaim") == []
    [config] = by_kind(documents, "ConfigMap")
    assert config["data"]["STRONGROOM_STORAGE_URL"] == "/srv/blobs"
    assert "STRONGROOM_S3_REGION" not in config["data"]
    for component in ("api", "worker"):
        pod = deployment(documents, component)["spec"]["template"]["spec"]
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        assert volumes["blobs"]["persistentVolumeClaim"]["claimName"] == "shared"
        assert {"name": "blobs", "mountPath": "/srv/blobs"} in pod["containers"][0]["volumeMounts"]
        assert s3_env(pod["containers"][0]) == {}


def test_a_directory_store_without_a_shared_volume_is_refused():
    # Each pod's own /tmp would hold different files: uploads the worker never sees.
    with pytest.raises(HelmRenderError, match=r"storage\.volume"):
        render(storage={"url": "/srv/blobs"})


def test_dev_values_run_one_worker_on_a_volume_the_chart_creates():
    documents = render(**DEV_VALUES)
    worker = deployment(documents, "worker")
    assert worker["spec"]["replicas"] == 1
    [container] = worker["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["worker"]
    [claim] = by_kind(documents, "PersistentVolumeClaim")
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    url = DEV_VALUES["storage"]["url"]
    for component in ("api", "worker"):
        pod = deployment(documents, component)["spec"]["template"]["spec"]
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        assert volumes["blobs"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
        assert {"name": "blobs", "mountPath": url} in pod["containers"][0]["volumeMounts"]
    budgets = {doc["metadata"]["name"] for doc in by_kind(documents, "PodDisruptionBudget")}
    assert "sr-strongroom-worker" not in budgets


def test_prometheus_scrapes_the_api_the_worker_and_the_operator():
    documents = render(metrics={"serviceMonitor": True})
    [monitor] = by_kind(documents, "ServiceMonitor")
    [endpoint] = monitor["spec"]["endpoints"]
    [expression] = monitor["spec"]["selector"]["matchExpressions"]
    assert expression["operator"] == "In"
    assert set(expression["values"]) == {"api", "worker", "operator"}
    services = {doc["metadata"]["name"]: doc for doc in by_kind(documents, "Service")}
    assert set(services) == {"sr-strongroom-api", "sr-strongroom-worker", "sr-strongroom-operator"}
    for service in services.values():
        component = service["metadata"]["labels"]["app.kubernetes.io/component"]
        assert component in expression["values"]
        assert service["spec"]["selector"]["app.kubernetes.io/component"] == component
        assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
        # The monitor's own selector picks the Service by its labels.
        labels = service["metadata"]["labels"]
        assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    operator = deployment(documents, "operator")["spec"]["template"]["spec"]["containers"][0]
    assert env_of(operator)["STRONGROOM_OPERATOR_METRICS_PORT"] == "9090"
    # The worker's Service forwards its `metrics` port to the container's, which serves on
    # the port the worker is told.
    [port] = services["sr-strongroom-worker"]["spec"]["ports"]
    assert port == {"name": "metrics", "port": 9090, "targetPort": "metrics"}
    worker = deployment(documents, "worker")["spec"]["template"]["spec"]["containers"][0]
    assert env_of(worker)["STRONGROOM_WORKER_METRICS_PORT"] == "9090"
    assert {"name": "metrics", "containerPort": 9090} in worker["ports"]


def test_the_worker_metrics_port_follows_its_value():
    documents = render(worker={"metricsPort": 9191})
    container = deployment(documents, "worker")["spec"]["template"]["spec"]["containers"][0]
    assert env_of(container)["STRONGROOM_WORKER_METRICS_PORT"] == "9191"
    assert container["ports"] == [{"name": "metrics", "containerPort": 9191}]
    [service] = [doc for doc in by_kind(documents, "Service")
                 if doc["metadata"]["name"] == "sr-strongroom-worker"]  # fmt: skip
    assert service["spec"]["ports"][0]["port"] == 9191


def test_worker_alerts_come_with_the_worker():
    def alerts(**values) -> set[str]:
        [rule] = by_kind(render(metrics={"serviceMonitor": True}, **values), "PrometheusRule")
        return {item["alert"] for group in rule["spec"]["groups"] for item in group["rules"]}

    assert {"StrongroomWorkerDown", "StrongroomJobsStalled"} <= alerts()
    assert not {"StrongroomWorkerDown", "StrongroomJobsStalled"} & alerts(worker={"enabled": False})
    assert "StrongroomWorkerDown" not in alerts(worker={"replicas": 0})


OPENAI_AND_OIDC = VARIANTS["openai chat and oidc"]


def chat_and_oidc_env(container: dict) -> dict[str, object]:
    return {name: value for name, value in env_of(container).items()
            if "_CHAT_" in name or "_OIDC_" in name}  # fmt: skip


def test_chat_and_oidc_are_off_by_default():
    documents = render()
    [config] = by_kind(documents, "ConfigMap")
    assert config["data"]["STRONGROOM_CHAT_ENGINE"] == "extractive"
    assert not [key for key in config["data"] if "_OPENAI_" in key or "_OIDC_" in key]
    for doc in by_kind(documents, "Deployment"):
        for container in doc["spec"]["template"]["spec"]["containers"]:
            assert chat_and_oidc_env(container) == {}, doc["metadata"]["name"]


def test_openai_chat_reaches_the_api_and_the_worker_and_its_key_only_through_a_secret():
    documents = render(chat={"engine": "openai",
                             "openai": {"baseUrl": "https://llm.example/v1", "model": "m",
                                        "timeoutSeconds": 12.5, "maxRetries": 0}})  # fmt: skip
    [config] = by_kind(documents, "ConfigMap")
    assert {key: value for key, value in config["data"].items() if "_CHAT_" in key} == {
        "STRONGROOM_CHAT_ENGINE": "openai",
        "STRONGROOM_CHAT_OPENAI_BASE_URL": "https://llm.example/v1",
        "STRONGROOM_CHAT_OPENAI_MODEL": "m",
        "STRONGROOM_CHAT_OPENAI_TIMEOUT_SECONDS": "12.5",
        "STRONGROOM_CHAT_OPENAI_MAX_RETRIES": "0",
    }
    for component in ("api", "worker"):
        [container] = deployment(documents, component)["spec"]["template"]["spec"]["containers"]
        assert chat_and_oidc_env(container) == {
            "STRONGROOM_CHAT_OPENAI_API_KEY": ("strongroom-chat", "api-key"),
        }
    operator = deployment(documents, "operator")["spec"]["template"]["spec"]["containers"][0]
    assert chat_and_oidc_env(operator) == {}
    # An upstream that needs no key: no Authorization header, no Secret.
    documents = render(chat={"engine": "openai", "openai": {
        "baseUrl": "http://vllm.models:8000/v1", "model": "m", "apiKeySecret": ""}})  # fmt: skip
    for component in ("api", "worker"):
        [container] = deployment(documents, component)["spec"]["template"]["spec"]["containers"]
        assert chat_and_oidc_env(container) == {}


DATABASE_POOLS = ("STRONGROOM_DATABASE_POOL_SIZE", "STRONGROOM_DATABASE_READ_POOL_SIZE",
                  "STRONGROOM_DATABASE_QUEUE_POOL_SIZE")  # fmt: skip


def without_api_pools(env: dict[str, object]) -> dict[str, object]:
    """A process's environment but its database pools, sized for each kind of pod."""
    return {name: value for name, value in env.items() if name not in DATABASE_POOLS}


def test_oidc_reaches_only_the_api_and_its_client_secret_only_through_a_secret():
    documents = render(**OPENAI_AND_OIDC)
    [api] = deployment(documents, "api")["spec"]["template"]["spec"]["containers"]
    env = env_of(api)
    assert env["STRONGROOM_OIDC_ISSUER"] == "https://id.example"
    assert env["STRONGROOM_OIDC_CLIENT_ID"] == "strongroom"
    assert env["STRONGROOM_OIDC_CLIENT_SECRET"] == ("strongroom-oidc", "client-secret")
    assert env["STRONGROOM_CHAT_OPENAI_API_KEY"] == ("strongroom-chat", "api-key")
    # The worker and the operator get none of it: with the issuer but not the client secret
    # they would refuse to start (the three settings go together).
    for component in ("worker", "operator"):
        [container] = deployment(documents, component)["spec"]["template"]["spec"]["containers"]
        assert not [name for name in env_of(container) if "_OIDC_" in name], component
    # The worker's settings are the API's but for the OIDC sign-in and its own.
    [worker] = deployment(documents, "worker")["spec"]["template"]["spec"]["containers"]
    worker_env = env_of(worker)
    for name in (
        "STRONGROOM_WORKER_CONCURRENCY",
        "STRONGROOM_WORKER_METRICS_PORT",
        "STRONGROOM_JOB_SHUTDOWN_GRACE_SECONDS",
        "STRONGROOM_JOB_SLOTS_KEPT_FOR_OTHER_TENANTS",
    ):
        worker_env.pop(name)
    assert without_api_pools(worker_env) == {
        name: value for name, value in without_api_pools(env).items() if "_OIDC_" not in name
    }
    # An OIDC change rolls the API: its settings are in the pod template itself.
    before = deployment(render(), "api")["spec"]["template"]
    assert before != deployment(documents, "api")["spec"]["template"]


def test_no_secret_is_rendered_or_put_in_a_configmap():
    documents = render(**OPENAI_AND_OIDC)
    assert by_kind(documents, "Secret") == []
    [config] = by_kind(documents, "ConfigMap")
    assert config["data"]["STRONGROOM_CHAT_ENGINE"] == "openai"
    for doc in by_kind(documents, "ConfigMap"):
        for key, value in doc["data"].items():
            assert not any(word in key for word in ("API_KEY", "SECRET", "OIDC", "PEPPER")), key
            assert "strongroom-chat" not in value and "strongroom-oidc" not in value, key
    # Every secret setting is a secretKeyRef, in every container.
    for doc in by_kind(documents, "Deployment"):
        for container in doc["spec"]["template"]["spec"]["containers"]:
            for item in container["env"]:
                if item["name"].endswith(("_API_KEY", "_CLIENT_SECRET")):
                    assert "value" not in item and "secretKeyRef" in item["valueFrom"], item


def test_every_process_accepts_the_settings_the_chart_gives_it(monkeypatch):
    """The rendered ConfigMap and env, with stand-ins for the Secrets' values, pass
    strongroom.settings' own checks in each Deployment's container."""
    from strongroom.settings import Settings

    documents = render(**OPENAI_AND_OIDC)
    [config] = by_kind(documents, "ConfigMap")
    found = {}
    for component in ("api", "worker", "operator"):
        [container] = deployment(documents, component)["spec"]["template"]["spec"]["containers"]
        with monkeypatch.context() as patch:
            for name in [name for name in os.environ if name.startswith("STRONGROOM_")]:
                patch.delenv(name)
            for name, value in {**config["data"], **env_of(container)}.items():
                patch.setenv(name, f"from-{value[0]}" if isinstance(value, tuple) else value)
            found[component] = Settings()
    for component in ("api", "worker"):
        settings = found[component]
        assert settings.chat_engine == "openai"
        assert settings.chat_openai_base_url == "https://llm.example/v1"
        assert settings.chat_openai_model == "gpt-4o-mini"
        assert settings.chat_openai_timeout_seconds == 30
        assert settings.chat_openai_max_retries == 2
        assert settings.chat_openai_api_key.get_secret_value() == "from-strongroom-chat"
    assert found["api"].oidc_issuer == "https://id.example"
    assert found["api"].oidc_client_id == "strongroom"
    assert found["api"].oidc_client_secret.get_secret_value() == "from-strongroom-oidc"
    assert found["worker"].oidc_issuer is None and found["operator"].oidc_issuer is None
    # Each process's pools as the chart sized them, its job queue's included (issue 52).
    from strongroom.jobs.queue import procrastinate_app

    def queue_pool(settings: Settings) -> int:
        url = {"database_url": "postgresql+psycopg://u:p@db/strongroom"}
        return procrastinate_app(settings.model_copy(update=url)).connector._pool_args["max_size"]

    pools = {
        component: (settings.database_pool_size, settings.database_read_pool_size,
                    queue_pool(settings))
        for component, settings in found.items()
    }  # fmt: skip
    assert pools == {"api": (3, 2, 1), "worker": (4, 2, 2), "operator": (2, 1, 1)}
    assert queue_pool(Settings(worker_concurrency=4)) == 5  # unset: the worker's slots + 1


def test_the_api_and_the_worker_reach_the_chat_upstream_and_the_oidc_issuer():
    # Egress is not restricted by the chart's NetworkPolicies, so the configured upstream
    # LLM and OIDC issuer are reachable wherever they run.
    policies = by_kind(render(**OPENAI_AND_OIDC), "NetworkPolicy")
    assert len(policies) == 2
    for policy in policies:
        assert "Egress" not in policy["spec"]["policyTypes"]
        assert "egress" not in policy["spec"]


# -- the operator on real clusters (issue 17) ------------------------------------------------


def operator_rules(documents: list[dict]) -> dict[tuple[str, str], set[str]]:
    [role] = [doc for doc in by_kind(documents, "ClusterRole")
              if doc["metadata"]["name"] == "sr-strongroom-operator"]  # fmt: skip
    return {(group, resource): set(rule["verbs"]) for rule in role["rules"]
            for group in rule["apiGroups"] for resource in rule["resources"]}  # fmt: skip


def test_the_operator_may_update_the_finalizers_of_the_owners_of_its_secrets():
    rules = operator_rules(render())
    assert rules[("strongroom.io", "apikeys/finalizers")] == {"update"}
    assert rules[("strongroom.io", "oauthclients/finalizers")] == {"update"}


def test_one_operator_replica_runs_standalone_and_recreated():
    documents = render()
    operator = deployment(documents, "operator")
    assert operator["spec"]["replicas"] == 1
    assert operator["spec"]["strategy"]["type"] == "Recreate"
    assert operator["spec"]["template"]["spec"]["containers"][0]["args"] == ["operator"]
    assert by_kind(documents, "ClusterKopfPeering") == []


def test_two_operator_replicas_peer_so_that_one_is_active():
    documents = render(operator={"replicas": 2})
    operator = deployment(documents, "operator")
    container = operator["spec"]["template"]["spec"]["containers"][0]
    [peering] = by_kind(documents, "ClusterKopfPeering")
    assert operator["spec"]["replicas"] == 2
    assert container["args"] == ["operator", "--peering", peering["metadata"]["name"]]
    assert env_of(container)["POD_ID"] == ("field", "metadata.name")  # distinct peer names
    assert peering["apiVersion"] == "kopf.dev/v1"
    crds = yaml.safe_load_all((CHART / "crds" / "peering.kopf.dev.yaml").read_text())
    assert "ClusterKopfPeering" in {crd["spec"]["names"]["kind"] for crd in crds}
    assert operator_rules(documents)[("kopf.dev", "clusterkopfpeerings")] >= {
        "get", "list", "watch", "patch"}  # fmt: skip


def test_mcp_has_an_ingress_of_its_own_with_streaming_timeouts():
    """Issue 20: /mcp through the same host, unbuffered and with long proxy timeouts."""
    documents = render(ingress={"annotations": {"cert-manager.io/cluster-issuer": "le"},
                                "tlsSecretName": "strongroom-tls"})  # fmt: skip
    ingresses = {doc["metadata"]["name"]: doc for doc in by_kind(documents, "Ingress")}
    main, mcp = ingresses["sr-strongroom"], ingresses["sr-strongroom-mcp"]
    [path] = mcp["spec"]["rules"][0]["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/mcp", "Exact")
    assert path["backend"] == main["spec"]["rules"][0]["http"]["paths"][0]["backend"]
    assert mcp["spec"]["rules"][0]["host"] == main["spec"]["rules"][0]["host"]
    assert mcp["spec"]["tls"] == main["spec"]["tls"]
    assert mcp["metadata"]["annotations"] == {
        "cert-manager.io/cluster-issuer": "le",
        "nginx.ingress.kubernetes.io/proxy-buffering": "off",
        "nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
        "nginx.ingress.kubernetes.io/proxy-send-timeout": "3600",
    }
    assert main["metadata"]["annotations"] == {"cert-manager.io/cluster-issuer": "le"}
    without = render(ingress={"mcp": {"enabled": False}})
    assert [doc["metadata"]["name"] for doc in by_kind(without, "Ingress")] == ["sr-strongroom"]


def embeddings_env(container: dict) -> dict[str, object]:
    return {name: value for name, value in env_of(container).items() if "_EMBEDDINGS_" in name}


def test_search_and_answers_are_by_meaning_by_default_with_the_fusion_settings_in_the_config():
    """Issue 40: `minilm` by default, offline, its model in the image; `none` is the lexical
    fallback a values file may choose."""
    documents = render()
    [config] = by_kind(documents, "ConfigMap")
    assert config["data"]["STRONGROOM_EMBEDDINGS_PROVIDER"] == "minilm"
    assert not [key for key in config["data"] if "_EMBEDDINGS_OPENAI_" in key]
    assert config["data"]["STRONGROOM_SEARCH_FUSION"] == "blend"
    assert config["data"]["STRONGROOM_SEARCH_LEXICAL_WEIGHT"] == "0.4"
    assert config["data"]["STRONGROOM_SEARCH_VECTOR_WEIGHT"] == "0.6"
    for doc in by_kind(documents, "Deployment"):
        for container in doc["spec"]["template"]["spec"]["containers"]:
            assert embeddings_env(container) == {}, doc["metadata"]["name"]
    [lexical] = by_kind(render(embeddings={"provider": "none"}), "ConfigMap")
    assert lexical["data"]["STRONGROOM_EMBEDDINGS_PROVIDER"] == "none"


def test_openai_embeddings_reach_the_api_and_the_worker_and_the_key_only_through_a_secret():
    documents = render(embeddings={"provider": "openai", "openai": {
        "baseUrl": "http://tei.models:8080/v1", "model": "bge-small",
        "apiKeySecret": "strongroom-embeddings", "answerFloor": 0.61}})  # fmt: skip
    [config] = by_kind(documents, "ConfigMap")
    assert {key: value for key, value in config["data"].items() if "_EMBEDDINGS_" in key} == {
        "STRONGROOM_EMBEDDINGS_PROVIDER": "openai",
        "STRONGROOM_EMBEDDINGS_OPENAI_BASE_URL": "http://tei.models:8080/v1",
        "STRONGROOM_EMBEDDINGS_OPENAI_MODEL": "bge-small",
        "STRONGROOM_EMBEDDINGS_OPENAI_ANSWER_FLOOR": "0.61",
    }
    for component in ("api", "worker"):
        [container] = deployment(documents, component)["spec"]["template"]["spec"]["containers"]
        assert embeddings_env(container) == {
            "STRONGROOM_EMBEDDINGS_OPENAI_API_KEY": ("strongroom-embeddings", "api-key"),
        }


def test_the_search_memory_bounds_reach_the_service_and_fit_the_api_pod():
    [config] = by_kind(render(), "ConfigMap")
    terms = int(config["data"]["STRONGROOM_SEARCH_TERM_MEMORY_MB"])
    vectors = int(config["data"]["STRONGROOM_SEARCH_VECTOR_MEMORY_MB"])
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    limit = values["api"]["resources"]["limits"]["memory"]
    limit_mib = int(limit.removesuffix("Gi")) * 1024 if limit.endswith("Gi") else int(limit[:-2])
    # Each worker process may hold both, besides its own ~200 MiB.
    assert values["api"]["workers"] * (terms + vectors + 200) <= limit_mib
    [config] = by_kind(render(search={"termMemoryMb": 0}), "ConfigMap")
    assert config["data"]["STRONGROOM_SEARCH_TERM_MEMORY_MB"] == "0"
    with pytest.raises(HelmValuesError):
        render(search={"termMemoryMb": -1})


@pytest.mark.parametrize(
    "embeddings",
    [{"provider": "bert"}, {"provider": "openai"}, {"provider": "openai", "openai": {"model": "m"}},
     {"fusion": "max"}, {"vectorWeight": -1}],
)  # fmt: skip
def test_embeddings_values_the_service_would_refuse_are_refused_by_the_chart(embeddings):
    with pytest.raises(HelmValuesError):
        render(embeddings=embeddings)


def test_an_api_pods_database_connections_are_shared_by_its_processes():
    """Issue 44: each API process opened up to 30 connections whatever the pod's process
    count, and two setups on one default PostgreSQL (max_connections 100) ran out. Issue
    52: its queue's pool counts too."""
    for workers, connections, pool, reads in ((2, 40, 12, 7), (4, 48, 7, 4), (8, 24, 1, 1),
                                              (2, 12, 3, 2)):  # fmt: skip
        documents = render(api={"workers": workers, "databaseConnections": connections},
                           database={"maxConnections": 1000})  # fmt: skip
        [container] = deployment(documents, "api")["spec"]["template"]["spec"]["containers"]
        env = env_of(container)
        assert env["STRONGROOM_DATABASE_QUEUE_POOL_SIZE"] == "1"
        assert env["STRONGROOM_DATABASE_POOL_SIZE"] == str(pool)
        assert env["STRONGROOM_DATABASE_READ_POOL_SIZE"] == str(reads)
        assert workers * (1 + pool + reads) <= connections
    with pytest.raises(HelmRenderError, match="fewer than the 3 one needs"):
        render(api={"workers": 8, "databaseConnections": 16})


def most_connections(documents: list[dict]) -> int:
    """The most PostgreSQL connections the rendered release may hold at once, counted from
    what each process is told (its STRONGROOM_DATABASE_* pools, the settings' defaults where
    it is told none): per process its pool, its read pool and its job queue's pool, and for
    `strongroom worker` a second queue pool (the runtime's, for the jobs it queues) and the
    connection that listens for jobs (procrastinate's, outside its pool); a pod's processes
    (`serve --workers`); a Deployment's most pods (its autoscaler's maxReplicas, else its
    replicas) plus a rollout's surge beside them (none with Recreate); the migration Job."""
    fields = Settings.model_fields
    autoscaled = {doc["spec"]["scaleTargetRef"]["name"]: doc["spec"]["maxReplicas"]
                  for doc in by_kind(documents, "HorizontalPodAutoscaler")}  # fmt: skip
    total = 0
    for doc in by_kind(documents, "Deployment") + by_kind(documents, "Job"):
        [container] = doc["spec"]["template"]["spec"]["containers"]
        args = container.get("args") or []
        if not args or args[0] not in ("serve", "worker", "operator", "migrate"):
            continue  # the development PostgreSQL and Redis
        env = env_of(container)
        concurrency = int(env.get("STRONGROOM_WORKER_CONCURRENCY", fields["worker_concurrency"]
                                  .default))  # fmt: skip
        pool = int(env.get("STRONGROOM_DATABASE_POOL_SIZE", fields["database_pool_size"].default))
        if args[0] == "migrate":  # Alembic on one connection of its engine's pool
            total += min(pool, 1)
            continue
        reads = int(env.get("STRONGROOM_DATABASE_READ_POOL_SIZE",
                            fields["database_read_pool_size"].default))  # fmt: skip
        queue = int(env.get("STRONGROOM_DATABASE_QUEUE_POOL_SIZE", max(2, concurrency + 1)))
        per_process = pool + reads + queue + ((queue + 1) if args[0] == "worker" else 0)
        processes = int(args[args.index("--workers") + 1]) if "--workers" in args else 1
        pods = autoscaled.get(doc["metadata"]["name"], doc["spec"].get("replicas", 1))
        strategy = doc["spec"].get("strategy", {"type": "RollingUpdate"})
        if strategy["type"] == "RollingUpdate":
            surge = strategy.get("rollingUpdate", {}).get("maxSurge", "25%")
            pods += -(-pods * int(surge[:-1]) // 100) if isinstance(surge, str) else surge
        total += pods * processes * per_process
    return total


# The replica counts the chart documents: its defaults (the API's autoscaler at its most),
# a standby operator, the scale-out of `make test-cluster` (3 API and 3 worker pods), and
# the development values.
DOCUMENTED_REPLICAS = {
    "defaults": {},
    "operator standby": {"operator": {"replicas": 2}},
    "3 API and 3 worker pods": {
        "api": {"autoscaling": {"enabled": False}, "replicas": 3},
        "worker": {"replicas": 3},
    },
    "3 to 3 autoscaled, 3 workers, a standby operator": {
        "api": {"autoscaling": {"minReplicas": 3, "maxReplicas": 3}},
        "worker": {"replicas": 3},
        "operator": {"replicas": 2},
    },
    "development": yaml.safe_load((CHART / "values-dev.yaml").read_text()),
}


@pytest.mark.parametrize("values", DOCUMENTED_REPLICAS.values(), ids=DOCUMENTED_REPLICAS.keys())
def test_every_documented_replica_count_fits_a_default_postgresql(values):
    """Issue 52: 2 API pods of 40 connections and a worker's 32 exceeded PostgreSQL's default
    max_connections (100), 3 API pods far more; two setups held 62-64 and other clients got
    "too many clients". Every pod's connections, at the most pods the release may run at
    once, fit max_connections less the reserve, and the chart's own sum is no lower."""
    documents = render(**values)
    budget = 100 - 8  # database.maxConnections less database.reservedConnections
    counted = most_connections(documents)
    assert counted <= budget
    annotation = deployment(documents, "api")["metadata"]["annotations"]
    assert int(annotation["strongroom.io/database-connections"]) >= counted


def test_a_release_that_may_open_more_connections_than_postgresql_holds_is_refused():
    with pytest.raises(HelmRenderError, match=r"may open 11\d PostgreSQL connections at once"):
        render(api={"autoscaling": {"maxReplicas": 6}})  # 7 API pods of 12: 84 + 22 + 4 + 1
    with pytest.raises(HelmRenderError, match=r"database\.maxConnections"):
        render(worker={"replicas": 8})
    # A larger PostgreSQL, said so: the same values render.
    documents = render(api={"autoscaling": {"maxReplicas": 6}},
                       database={"maxConnections": 200})  # fmt: skip
    assert most_connections(documents) <= 200 - 8
    # Each pool is bounded in every pod, the queue's included (issue 52: a worker held 30 +
    # 2 queue pools + its listener, whatever its API pods were given).
    for component in ("api", "worker", "operator"):
        [container] = deployment(documents, component)["spec"]["template"]["spec"]["containers"]
        assert set(DATABASE_POOLS) <= env_of(container).keys(), component
    assert deployment(documents, "worker")["spec"]["strategy"] == {"type": "Recreate"}

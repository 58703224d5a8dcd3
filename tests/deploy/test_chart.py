"""The Helm chart (issue 6), rendered and linted offline with Helm's own library
(helm-python-sdk ships it; no helm binary or cluster is needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helm_python.chart import Chart, lint
from helm_python.errors import HelmValuesError

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
    assert len(by_kind(documents, "Secret")) == 3 and not by_kind(documents, "Ingress")
    # They exist before the migration Job runs: hooks of a lower weight.
    [job] = by_kind(documents, "Job")
    job_weight = int(job["metadata"]["annotations"]["helm.sh/hook-weight"])
    for doc in by_kind(documents, "Secret"):
        assert int(doc["metadata"]["annotations"]["helm.sh/hook-weight"]) < job_weight


def test_the_chart_ships_the_same_crds_and_operator_rules_as_crds():
    for crd in (ROOT / "crds").glob("*.strongroom.io.yaml"):
        assert (CHART / "crds" / crd.name).read_text() == crd.read_text()
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

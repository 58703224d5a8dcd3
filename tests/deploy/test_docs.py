"""docs/deploy.md and docs/observability.md against what they describe: every Secret the
chart reads, every metric strongroom/metrics.py defines, every alert of the chart's
PrometheusRule. A new metric, alert or Secret fails here until the docs name it."""

from __future__ import annotations

import re

from prometheus_client.metrics import MetricWrapperBase

from strongroom import metrics
from tests.deploy.test_chart import ROOT, by_kind, render

DEPLOY = (ROOT / "docs" / "deploy.md").read_text()
OBSERVABILITY = (ROOT / "docs" / "observability.md").read_text()


def defined_metrics() -> dict[str, str]:
    """Exported name -> type of every metric in strongroom.metrics."""
    found = {}
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            suffix = "_total" if value._type == "counter" else ""
            found[value._name + suffix] = value._type
    return found


def alert_rules() -> list[dict]:
    [rule] = by_kind(render(metrics={"serviceMonitor": True}), "PrometheusRule")
    return [item for group in rule["spec"]["groups"] for item in group["rules"]]


def test_deploy_doc_names_every_secret_and_key_the_chart_reads():
    documents = render(ingress={"tlsSecretName": "strongroom-tls"})
    wanted: set[tuple[str, str | None]] = set()
    for doc in documents:
        spec = doc.get("spec", {}).get("template", {}).get("spec", {})
        for container in spec.get("containers", []):
            for item in container.get("env", []):
                ref = item.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    wanted.add((ref["name"], ref["key"]))
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                wanted.add((volume["secret"]["secretName"], "jwks.json"))
        for tls in doc.get("spec", {}).get("tls", []) if doc["kind"] == "Ingress" else []:
            wanted.add((tls["secretName"], None))
    assert len(wanted) >= 8
    for name, key in wanted:
        assert f"`{name}`" in DEPLOY, name
        assert key is None or f"`{key}`" in DEPLOY, key


def test_deploy_doc_lists_the_values_to_set():
    for value in ("image.repository", "image.tag", "baseUrl", "ingress.host",
                  "ingress.tlsSecretName", "networkPolicy.ingressNamespaceLabels",
                  "storage.url", "storage.s3.region", "storage.s3.credentialsSecret",
                  "secrets.signingKeys"):  # fmt: skip
        assert f"`{value}`" in DEPLOY, value


def test_observability_doc_lists_every_metric_with_its_type():
    found = defined_metrics()
    assert len(found) >= 7
    for name, kind in found.items():
        assert re.search(rf"^\| `{name}` \| {kind} \|", OBSERVABILITY, re.MULTILINE), name


def test_alerts_use_metrics_that_exist_and_the_doc_lists_each():
    known = set(defined_metrics()) | {"up"}
    rules = alert_rules()
    assert len(rules) >= 5
    for rule in rules:
        used = set(re.findall(r"\b(strongroom_[a-z_]+|up)\{", rule["expr"]))
        used = {re.sub(r"_(bucket|sum|count)$", "", name) for name in used}
        assert used and used <= known, (rule["alert"], used - known)
        severity = rule["labels"]["severity"]
        row = rf"^\| `{rule['alert']}` \|.*\| {rule['for']} \| {severity} \|"
        assert re.search(row, OBSERVABILITY, re.MULTILINE), rule["alert"]


def test_the_readme_links_both_docs():
    readme = (ROOT / "README.md").read_text()
    assert "(docs/deploy.md)" in readme and "(docs/observability.md)" in readme


def test_observability_doc_names_every_metrics_service_and_port_setting():
    documents = render()
    services = [doc["metadata"]["name"] for doc in by_kind(documents, "Service")
                if "metrics" in {port["name"] for port in doc["spec"]["ports"]}]  # fmt: skip
    assert len(services) == 3  # api, worker, operator
    for name in services:
        assert f"`{name}`" in OBSERVABILITY, name
    for setting in ("STRONGROOM_OPERATOR_METRICS_PORT", "STRONGROOM_WORKER_METRICS_PORT"):
        assert f"`{setting}`" in OBSERVABILITY, setting

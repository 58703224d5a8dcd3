"""The CustomResourceDefinitions in crds/ and the sample manifests in examples/: well-formed,
complete (status subresource, printer columns, short names), in step with the code's enums,
and the samples valid against the schemas (issue 5, tests)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from strongroom.auth.scopes import ALL_SCOPES
from strongroom.tenants.models import RateLimitTier

ROOT = Path(__file__).parents[2]
CRDS = {
    path.name: yaml.safe_load(path.read_text())
    for path in (ROOT / "crds").glob("*.strongroom.io.yaml")
}
RBAC = list(yaml.safe_load_all((ROOT / "crds" / "operator-rbac.yaml").read_text()))
EXAMPLES = [yaml.safe_load(path.read_text()) for path in (ROOT / "examples").glob("*.yaml")]


def schema_of(kind: str) -> dict:
    [crd] = [crd for crd in CRDS.values() if crd["spec"]["names"]["kind"] == kind]
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def find(schema: dict, key: str) -> list:
    """Every value under `key` anywhere in `schema`."""
    found = []
    if isinstance(schema, dict):
        for name, value in schema.items():
            if name == key:
                found.append(value)
            found += find(value, key)
    elif isinstance(schema, list):
        for value in schema:
            found += find(value, key)
    return found


def test_the_three_kinds_are_defined():
    kinds = {crd["spec"]["names"]["kind"]: crd for crd in CRDS.values()}
    assert set(kinds) == {"Tenant", "ApiKey", "OAuthClient"}
    assert kinds["Tenant"]["spec"]["scope"] == "Cluster"
    assert kinds["ApiKey"]["spec"]["scope"] == kinds["OAuthClient"]["spec"]["scope"] == "Namespaced"


@pytest.mark.parametrize("name", sorted(CRDS))
def test_each_crd_is_complete(name):
    crd = CRDS[name]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["spec"]["group"] == "strongroom.io"
    assert crd["metadata"]["name"] == f"{crd['spec']['names']['plural']}.strongroom.io"
    assert crd["spec"]["names"]["shortNames"]
    [version] = crd["spec"]["versions"]
    assert version["name"] == "v1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    columns = {column["name"] for column in version["additionalPrinterColumns"]}
    assert "Age" in columns
    jsonschema.Draft7Validator.check_schema(version["schema"]["openAPIV3Schema"])


def test_apikey_columns_tell_what_matters():
    [version] = CRDS["apikeys.strongroom.io.yaml"]["spec"]["versions"]
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns == ["Tenant", "Environment", "Prefix", "State", "Age"]


def test_scope_and_tier_enums_match_the_code():
    for name, crd in CRDS.items():
        for enum in find(crd, "enum"):
            if "vault:read" in enum:
                assert tuple(enum) == ALL_SCOPES, name
            if "enterprise" in enum:
                assert enum == [tier.value for tier in RateLimitTier], name


@pytest.mark.parametrize("manifest", EXAMPLES, ids=lambda manifest: manifest["kind"])
def test_examples_are_valid(manifest):
    jsonschema.validate(manifest, schema_of(manifest["kind"]))


@pytest.mark.parametrize(
    ("kind", "spec"),
    [("Tenant", {}),
     ("Tenant", {"displayName": "x", "rateLimitTier": "platinum"}),
     ("Tenant", {"displayName": "x", "users": [{"email": "not-an-email"}]}),
     ("Tenant", {"displayName": "x", "creditsGranted": -1}),
     ("ApiKey", {"tenant": "t", "userEmail": "a@b.c", "name": "n", "environment": "prod",
                 "scopes": ["vault:read"]}),
     ("ApiKey", {"tenant": "t", "userEmail": "a@b.c", "name": "n", "environment": "test",
                 "scopes": ["vault:admin"]}),
     ("OAuthClient", {"clientName": "x", "redirectUris": ["http://evil.example/cb"]}),
     ("OAuthClient", {"clientName": "x", "redirectUris": ["https://a.example/cb#f"]}),
     ("OAuthClient", {"clientName": "x", "redirectUris": ["http://evil\\\\@127.0.0.1/cb"]})],
)  # fmt: skip
def test_bad_manifests_are_refused_by_the_schema(kind, spec):
    manifest = {"apiVersion": "strongroom.io/v1", "kind": kind, "metadata": {"name": "x"},
                "spec": spec}  # fmt: skip
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(manifest, schema_of(kind))


def test_the_operator_role_grants_only_what_the_handlers_use():
    [role] = [document for document in RBAC if document["kind"] == "ClusterRole"]
    verbs = {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert verbs[("", "secrets")] == {"get", "create", "update"}  # never list, never delete
    assert verbs[("strongroom.io", "apikeys")] == {"get", "list", "watch", "patch"}
    assert all("delete" not in granted and "*" not in granted for granted in verbs.values())

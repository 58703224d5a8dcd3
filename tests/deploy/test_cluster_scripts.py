"""scripts/cluster/ (`make cluster-cache`, `make test-cluster`, issue 45): a one-node
Kubernetes made on the machine, which needs root, a prepared cache and minutes, so it runs
only by hand or in `make test-cluster` itself. Here: the scripts parse and pass shellcheck, and
without a cache `make test-cluster` stops at once and says how to make one, having started
nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
SCRIPTS = ROOT / "scripts" / "cluster"
SHELLCHECK = Path(sys.executable).with_name("shellcheck")
ENTRY_POINTS = ["cache.sh", "check-cache.sh", "down.sh", "images.sh", "pki.sh", "test-cluster.sh",
                "up.sh", "upgrade.sh", "dns-sync.sh"]  # fmt: skip


# And the kind runner's, which has no Docker here to run on.
KIND_SCRIPTS = [ROOT / "scripts" / "e2e-kind.sh", ROOT / "scripts" / "kind-upgrade.sh"]


@pytest.mark.parametrize(
    "script", sorted(SCRIPTS.glob("*.sh")) + KIND_SCRIPTS, ids=lambda p: p.name
)
def test_scripts_parse_and_pass_shellcheck(script):
    if script.name != "env.sh":  # sourced, not run
        assert os.access(script, os.X_OK), f"{script.name} is not executable"
    subprocess.run(["bash", "-n", str(script)], check=True)
    result = subprocess.run([str(SHELLCHECK), "--severity=style", "-x", str(script)],
                            capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert result.returncode == 0, result.stdout


def test_every_entry_point_is_a_script_here():
    assert sorted(ENTRY_POINTS) == sorted(
        p.name for p in SCRIPTS.glob("*.sh") if p.name != "env.sh"
    )


def test_without_a_cache_test_cluster_stops_at_once_and_says_how_to_make_one(tmp_path):
    cache = tmp_path / "no-cache"
    env = {**os.environ, "CLUSTER_CACHE": str(cache)}
    result = subprocess.run([str(SCRIPTS / "test-cluster.sh")], capture_output=True, text=True,
                            env=env, timeout=60)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"no complete cluster cache in CLUSTER_CACHE={cache}" in result.stderr
    assert "bin/kube-all" in result.stderr and "images/base.tar" in result.stderr
    assert "make cluster-cache LITEKUBE_GIT=" in result.stderr
    assert not cache.exists()  # nothing made, nothing started


def test_make_targets_run_the_scripts():
    makefile = (ROOT / "Makefile").read_text()
    for target, script in (("cluster-cache", "cache.sh"), ("test-cluster", "test-cluster.sh")):
        recipe = textwrap.dedent(makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0])
        assert f"scripts/cluster/{script}" in recipe

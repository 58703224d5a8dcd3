"""The container image's Dockerfile (issue 6): hadolint-clean, multi-stage, locked
dependencies, a non-root user, no HEALTHCHECK (the chart's probes do that). No Docker engine
runs here, so the image itself is built elsewhere; this is what can be checked here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
HADOLINT = str(Path(sys.executable).with_name("hadolint"))


def test_hadolint_finds_nothing():
    result = subprocess.run([HADOLINT, str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dependencies_come_from_the_lock_file():
    assert "uv sync --frozen --no-dev" in DOCKERFILE
    assert "COPY pyproject.toml uv.lock" in DOCKERFILE


def test_the_image_runs_as_a_non_root_user_without_healthcheck():
    stages = DOCKERFILE.count("\nFROM ") + DOCKERFILE.startswith("FROM ")
    assert stages == 2
    last_stage = DOCKERFILE.rsplit("\nFROM ", 1)[1]
    assert "USER 10001:10001" in last_stage
    assert "HEALTHCHECK" not in DOCKERFILE.replace("# No HEALTHCHECK", "")
    assert 'ENTRYPOINT ["strongroom"]' in last_stage

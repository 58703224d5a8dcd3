"""The container image's Dockerfile (issue 6): hadolint-clean, multi-stage, locked
dependencies, a non-root user, no HEALTHCHECK (the chart's probes do that). No Docker engine
runs here, so the image itself is built elsewhere; this is what can be checked here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


# Issue 44.11: buildah and podman build in the OCI image format by default, which has no SHELL
# field: SHELL is refused there and every RUN runs under /bin/sh -c, dash on Debian (no `<<<`,
# no arrays). So no SHELL instruction, and each RUN's text must be POSIX sh.
def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction: comment lines dropped, continuations joined."""
    result, pending = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not (pending or line.strip()):
            continue
        if line.endswith("\\"):
            pending += line[:-1]  # as Docker does: backslash and newline removed
            continue
        keyword, _, arguments = (pending + line).strip().partition(" ")
        result.append((keyword.upper(), arguments.strip()))
        pending = ""
    return result


INSTRUCTIONS = _instructions(DOCKERFILE)
SHELL_RUNS = [
    args for keyword, args in INSTRUCTIONS if keyword == "RUN" and not args.startswith("[")
]
DASH = shutil.which("dash")
needs_dash = pytest.mark.skipif(DASH is None, reason="dash (Debian's /bin/sh) is not installed")


def test_no_instruction_the_oci_image_format_lacks():
    keywords = {keyword for keyword, _ in INSTRUCTIONS}
    assert {"FROM", "RUN", "COPY", "ENTRYPOINT"} <= keywords  # the parser found the instructions
    assert not keywords & {"SHELL", "ONBUILD", "HEALTHCHECK"}


@needs_dash
@pytest.mark.parametrize("script", SHELL_RUNS)
def test_every_run_is_posix_sh(script):
    result = subprocess.run([DASH, "-n", "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@needs_dash
@pytest.mark.parametrize(
    ("extras", "expected"),
    [("", []), ("wordllama  minilm", ["--extra=wordllama", "--extra=minilm"])],
)
def test_extras_become_one_extra_flag_each_under_dash(tmp_path, extras, expected):
    # Each `uv sync` RUN executed by dash with a stand-in uv that records its arguments.
    uv = tmp_path / "uv"
    uv.write_text('#!/bin/sh\nprintf "%s\\n" "$@" >> "$UV_ARGS"\necho --- >> "$UV_ARGS"\n')
    uv.chmod(0o755)
    syncs = [script for script in SHELL_RUNS if "uv sync" in script]
    assert len(syncs) == 2
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "EXTRAS": extras, "UV_ARGS": str(tmp_path / "args")}
    for script in syncs:
        result = subprocess.run(
            [DASH, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
    calls = [call.split() for call in (tmp_path / "args").read_text().split("---\n")[:-1]]
    assert calls == [
        ["sync", "--frozen", "--no-dev", "--no-install-project", *expected],
        ["sync", "--frozen", "--no-dev", "--no-editable", *expected],
    ]

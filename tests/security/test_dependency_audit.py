"""The dependency audit's verdicts (scripts/dependency_audit.py, run by `make audit` and the
CI workflow's `audit` job, never by the suite: it needs the internet, the suite is hermetic,
issue 19). Here, on reports written by hand, what passes and what fails it; and that an
unreachable vulnerability service fails it (a closed local proxy: no internet needed)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml

from scripts import dependency_audit
from scripts.dependency_audit import (
    AuditUnavailable,
    fill_in_from_newest_releases,
    judge,
    run_pip_audit,
)

ROOT = Path(__file__).resolve().parents[2]


# -- the audit can fail ----------------------------------------------------------------------


def report(*dependencies: dict) -> dict:
    return {"dependencies": list(dependencies), "fixes": []}


def test_a_vulnerability_with_a_fix_fails_the_audit():
    verdict = judge(report(
        {"name": "quart", "version": "0.1.0", "vulns": [
            {"id": "PYSEC-0000-1", "fix_versions": ["0.2.0"], "aliases": ["CVE-0000-1"]},
        ]},
        {"name": "idna", "version": "3.20", "vulns": []},
    ))  # fmt: skip
    assert verdict.audited == 2
    assert verdict.failures() == [
        "known vulnerability with a fix: quart==0.1.0: PYSEC-0000-1 (CVE-0000-1), fixed in 0.2.0"
    ]


def test_a_vulnerability_without_a_fix_is_reported_but_does_not_fail_the_audit():
    verdict = judge(report({"name": "ecdsa", "version": "0.19.1", "vulns": [
        {"id": "GHSA-0000-0000-0000", "fix_versions": []},
    ]}))  # fmt: skip
    assert verdict.failures() == []
    assert verdict.unfixable == ["ecdsa==0.19.1: GHSA-0000-0000-0000, no fix released"]


def test_a_package_the_service_did_not_audit_fails_the_audit():
    verdict = judge(report(
        {"name": "idna", "version": "3.20", "vulns": []},
        {"name": "quart", "skip_reason": "Dependency not found on PyPI and could not be "
                                         "audited: quart (0.22.0)"},
    ))  # fmt: skip
    failures = verdict.failures()
    assert failures[0].startswith("1 of 2 locked packages could not be audited")
    assert failures[1].startswith("  quart==0.22.0: Dependency not found on PyPI")


def test_a_few_unaudited_packages_are_reported_not_failed():
    audited = [{"name": f"package{i}", "version": "1.0", "vulns": []} for i in range(19)]
    verdict = judge(report(
        *audited,
        {"name": "quart", "skip_reason": "Dependency not found on PyPI and could not be "
                                         "audited: quart (0.22.0)"},
    ))  # fmt: skip
    assert list(verdict.unaudited) == ["quart==0.22.0"]
    assert verdict.failures() == []


def test_the_newest_release_stands_in_only_for_the_locked_version(monkeypatch):
    newest = {"quart": "0.22.0", "boto3": "1.44.5"}

    def project_json(name, version):
        if newest[name] != version:
            return f"newest is {newest[name]}"
        return [{"id": "GHSA-1111-2222-3333", "fixed_in": ["0.22.1"], "aliases": []}]

    monkeypatch.setattr(dependency_audit, "newest_release_vulnerabilities", project_json)
    verdict = judge(report(
        {"name": "quart", "skip_reason": "Dependency not found on PyPI and could not be "
                                         "audited: quart (0.22.0)"},
        {"name": "boto3", "skip_reason": "Dependency not found on PyPI and could not be "
                                         "audited: boto3 (1.43.117)"},
    ))  # fmt: skip
    fill_in_from_newest_releases(verdict)
    assert verdict.audited == 1
    assert verdict.fixable == ["quart==0.22.0: GHSA-1111-2222-3333, fixed in 0.22.1"]
    assert list(verdict.unaudited) == ["boto3==1.43.117"]
    assert verdict.unaudited["boto3==1.43.117"].endswith("no stand-in: newest is 1.44.5")


def test_an_unreachable_vulnerability_service_fails_the_audit_with_a_clear_message(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("idna==3.20\n")
    closed = f"http://127.0.0.1:{_closed_port()}"
    env = os.environ | {"HTTPS_PROXY": closed, "https_proxy": closed, "NO_PROXY": ""}
    with pytest.raises(AuditUnavailable, match="produced no report, so nothing was audited"):
        run_pip_audit(requirements, tmp_path, env=env)


def _closed_port() -> int:
    from tests.processes import free_port

    return free_port()  # bound and released: nothing listens there


# -- where it runs ----------------------------------------------------------------------------


def test_make_audit_runs_the_audit_and_make_test_does_not():
    makefile = (ROOT / "Makefile").read_text()
    audit = textwrap.dedent(makefile.split("\naudit:", 1)[1].split("\n\n", 1)[0])
    assert "scripts/dependency_audit.py" in audit
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "audit" not in test


def test_the_ci_workflow_runs_make_audit():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "e2e-kind.yml").read_text())
    job = workflow["jobs"]["audit"]
    run = "\n".join(step.get("run", "") for step in job["steps"])
    assert run.index("make install") < run.index("make audit")

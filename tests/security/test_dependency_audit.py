"""Known vulnerabilities in the locked dependencies (issue 10 item 6).

`uv export --frozen` writes every package of uv.lock (all groups and extras) as pinned
requirements, and pip-audit checks each against its `pypi` vulnerability service (PyPI's
per-release JSON API, whose `vulnerabilities` come from the OSV database). The audit fails
on a known vulnerability with a fixed version; one without a fix is printed, not failed.

An audit that could not look is a failure, never a pass: if the service cannot be reached,
or answers "not found" for more than MAX_UNAUDITED_SHARE of the packages (pip-audit then
skips them and still says "No known vulnerabilities found"), the test fails and names them;
a few unaudited packages are printed, not failed. Only one stand-in is
accepted for pip-audit's per-release lookup: when a locked version is PyPI's newest release,
PyPI's per-project JSON carries the very same `vulnerabilities` of that release, and the test
reads them there (some PyPI mirrors and proxies serve only per-project JSON). A package locked
older than PyPI's newest release has no such stand-in and stays unaudited.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UV = ROOT / ".tools" / "bin" / "uv"
PIP_AUDIT = Path(sys.executable).with_name("pip-audit")
PYPI_PROJECT = "https://pypi.org/pypi/{name}/json"
# Some packages cannot be looked up from some networks (a proxy without PyPI's per-release
# JSON, and a version older than the newest): a few are reported, more fail the audit.
MAX_UNAUDITED_SHARE = 0.10


class AuditUnavailable(AssertionError):
    """The audit could not run or could not reach its vulnerability service."""


@dataclass
class Verdict:
    fixable: list[str] = field(default_factory=list)  # fail the audit
    unfixable: list[str] = field(default_factory=list)  # reported only
    unaudited: dict[str, str] = field(default_factory=dict)  # "name==version" -> reason
    audited: int = 0

    def add_vulnerabilities(self, name: str, version: str, vulnerabilities: list[dict]) -> None:
        for vulnerability in vulnerabilities:
            if vulnerability.get("withdrawn"):
                continue
            ident = vulnerability.get("id")
            aliases = ", ".join(vulnerability.get("aliases") or [])
            fixes = vulnerability.get("fix_versions") or vulnerability.get("fixed_in") or []
            line = f"{name}=={version}: {ident}" + (f" ({aliases})" if aliases else "")
            if fixes:
                self.fixable.append(f"{line}, fixed in {', '.join(fixes)}")
            else:
                self.unfixable.append(f"{line}, no fix released")

    @property
    def mostly_unaudited(self) -> bool:
        total = self.audited + len(self.unaudited)
        return not total or len(self.unaudited) > total * MAX_UNAUDITED_SHARE

    def failures(self) -> list[str]:
        lines = [f"known vulnerability with a fix: {line}" for line in self.fixable]
        if self.mostly_unaudited:
            lines.append(
                f"{len(self.unaudited)} of {self.audited + len(self.unaudited)} locked packages "
                "could not be audited (an audit that cannot look is not a pass):"
            )
            lines += [f"  {package}: {reason}" for package, reason in self.unaudited.items()]
            lines.append(
                "(pip-audit's `pypi` service reads https://pypi.org/pypi/<name>/<version>/json: "
                "'not found' means that API gave nothing for the release, not that the package "
                "is unknown)"
            )
        return lines


def judge(report: dict) -> Verdict:
    """pip-audit's JSON report as a verdict."""
    verdict = Verdict()
    for dependency in report["dependencies"]:
        name, version = dependency["name"], dependency.get("version")
        if "skip_reason" in dependency or version is None:
            reason = dependency.get("skip_reason", "no version")
            # A skipped package's version is only in the reason: "... could not be audited:
            # name (1.2.3)".
            if version is None and (named := re.search(r"\(([^()\s]+)\)\s*$", reason)):
                version = named.group(1)
            verdict.unaudited[f"{name}=={version or '?'}"] = reason
            continue
        verdict.audited += 1
        verdict.add_vulnerabilities(name, version, dependency.get("vulns", []))
    return verdict


def newest_release_vulnerabilities(name: str, version: str) -> list[dict] | str:
    """PyPI's vulnerabilities of `name`'s newest release if that is `version`; otherwise why
    it cannot stand in for pip-audit's per-release lookup."""
    try:
        with urllib.request.urlopen(PYPI_PROJECT.format(name=name), timeout=30) as response:  # noqa: S310
            project = json.load(response)
    except (OSError, ValueError) as error:
        return f"PyPI's project JSON is not reachable either ({error})"
    newest = project.get("info", {}).get("version")
    if newest != version:
        return f"PyPI's project JSON has the vulnerabilities of its newest release ({newest}) only"
    vulnerabilities = project.get("vulnerabilities")
    if not isinstance(vulnerabilities, list):
        return "PyPI's project JSON has no vulnerabilities list"
    return vulnerabilities


def fill_in_from_newest_releases(verdict: Verdict) -> None:
    """For packages pip-audit skipped, the stand-in above where it applies."""
    packages = list(verdict.unaudited)
    pinned = [tuple(package.split("==", 1)) for package in packages]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda pair: newest_release_vulnerabilities(*pair), pinned))
    for package, (name, version), answer in zip(packages, pinned, answers, strict=True):
        if isinstance(answer, str):
            verdict.unaudited[package] += f"; no stand-in: {answer}"
            continue
        del verdict.unaudited[package]
        verdict.audited += 1
        verdict.add_vulnerabilities(
            name,
            version,
            [v | {"fix_versions": v.get("fixed_in") or []} for v in answer],
        )


def export_lock(directory: Path) -> Path:
    if not UV.exists():
        raise AuditUnavailable(f"{UV} is missing: run `make install` first")
    exported = subprocess.run(
        [str(UV), "export", "--frozen", "--format", "requirements-txt", "--no-hashes",
         "--no-emit-project", "--all-groups", "--all-extras"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if exported.returncode != 0:
        raise AuditUnavailable(f"uv export failed: {exported.stderr}")
    path = directory / "requirements.txt"
    path.write_text(exported.stdout)
    return path


def run_pip_audit(requirements: Path, directory: Path, env: dict[str, str] | None = None) -> dict:
    """pip-audit's JSON report; raises AuditUnavailable when there is none."""
    output = directory / "audit.json"
    completed = subprocess.run(
        [str(PIP_AUDIT), "--requirement", str(requirements), "--no-deps", "--disable-pip",
         "--vulnerability-service", "pypi", "--format", "json", "--progress-spinner", "off",
         "--timeout", "30", "--cache-dir", str(directory / "cache"), "--output", str(output)],
        capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    # 0: nothing found, 1: vulnerabilities found (the report says which). No report at all:
    # the audit itself failed, most often because the service could not be reached.
    if completed.returncode not in (0, 1) or not output.exists():
        last = (completed.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise AuditUnavailable(
            "pip-audit produced no report, so nothing was audited: its `pypi` vulnerability "
            f"service (https://pypi.org/pypi/<name>/<version>/json) failed: {last}"
        )
    return json.loads(output.read_text())


def test_no_locked_dependency_has_a_known_vulnerability_with_a_fix(tmp_path):
    requirements = export_lock(tmp_path)
    pinned = re.findall(r"^[A-Za-z0-9._-]+==", requirements.read_text(), re.MULTILINE)
    assert len(pinned) > 50, "the export of uv.lock looks empty"
    verdict = judge(run_pip_audit(requirements, tmp_path))
    fill_in_from_newest_releases(verdict)
    for line in verdict.unfixable:
        print(f"known vulnerability without a fix (not failed): {line}")
    for package, reason in verdict.unaudited.items():
        print(f"not audited (reported; fails above {MAX_UNAUDITED_SHARE:.0%}): {package}: {reason}")
    assert verdict.audited > 0, "nothing was audited"
    failures = verdict.failures()
    assert not failures, "dependency audit failed:\n" + "\n".join(failures)


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

    monkeypatch.setattr(sys.modules[__name__], "newest_release_vulnerabilities", project_json)
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

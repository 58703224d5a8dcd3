#!/usr/bin/env python3
"""The dependency audit, `make audit` (issue 10 item 6; out of the test suite since issue 19:
it needs the internet, the suite must not).

`uv export --frozen` writes every package of uv.lock (all groups and extras) as pinned
requirements, and pip-audit checks each against its `pypi` vulnerability service (PyPI's
per-release JSON API, whose `vulnerabilities` come from the OSV database). The audit fails
on a known vulnerability with a fixed version; one without a fix is printed, not failed.

An audit that could not look is a failure, never a pass: if the service cannot be reached,
or answers "not found" for more than MAX_UNAUDITED_SHARE of the packages (pip-audit then
skips them and still says "No known vulnerabilities found"), the audit fails and names them;
a few unaudited packages are printed, not failed. Only one stand-in is
accepted for pip-audit's per-release lookup: when a locked version is PyPI's newest release,
PyPI's per-project JSON carries the very same `vulnerabilities` of that release, and the audit
reads them there (some PyPI mirrors and proxies serve only per-project JSON). A package locked
older than PyPI's newest release has no such stand-in and stays unaudited.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
    exported = subprocess.run(  # noqa: S603 (our own uv, fixed arguments)
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
    completed = subprocess.run(  # noqa: S603 (pip-audit of this venv, fixed arguments)
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


def main() -> int:
    """Audit uv.lock; print what was found and what could not be audited. Exit status 1 on
    a known vulnerability with a fix, or an audit that could not look."""
    with tempfile.TemporaryDirectory(prefix="strongroom-audit-") as work:
        directory = Path(work)
        try:
            requirements = export_lock(directory)
            pinned = re.findall(r"^[A-Za-z0-9._-]+==", requirements.read_text(), re.MULTILINE)
            if len(pinned) <= 50:
                raise AuditUnavailable("the export of uv.lock looks empty")
            verdict = judge(run_pip_audit(requirements, directory))
        except AuditUnavailable as error:
            print(f"dependency audit failed: {error}", file=sys.stderr)
            return 1
    fill_in_from_newest_releases(verdict)
    for line in verdict.unfixable:
        print(f"known vulnerability without a fix (not failed): {line}")
    for package, reason in verdict.unaudited.items():
        print(f"not audited (reported; fails above {MAX_UNAUDITED_SHARE:.0%}): {package}: {reason}")
    failures = verdict.failures() or ([] if verdict.audited else ["nothing was audited"])
    if failures:
        print("dependency audit failed:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    print(f"dependency audit passed: {verdict.audited} locked packages audited")
    return 0


if __name__ == "__main__":
    sys.exit(main())

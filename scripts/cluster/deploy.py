"""`helm upgrade --install --wait` of the project's chart with values-dev.yaml, through Helm
v4's Go library (PyPI's helm-sdkpy, Python >= 3.12: there is no helm binary in Debian or
PyPI). Hooks run as with helm: the dev databases and Secrets, then the migration Job.

Usage: deploy.py CHART KUBECONFIG NAMESPACE RELEASE IMAGE_REPOSITORY IMAGE_TAG [TIMEOUT_S]
Prints how long it took; exits 1 (with Helm's error) if the release did not become ready."""

import asyncio
import sys
import time
from pathlib import Path

import helm_sdkpy as helm
import yaml


async def main(chart: str, kubeconfig: str, namespace: str, release: str, repository: str,
               tag: str, timeout: int) -> None:  # fmt: skip
    config = helm.Configuration(namespace=namespace, kubeconfig=kubeconfig)
    values = yaml.safe_load((Path(chart) / "values-dev.yaml").read_text())
    values["image"].update({"repository": repository, "tag": tag})
    installed = False
    try:
        await helm.Status(config).run(release)
        installed = True
    except Exception:  # noqa: BLE001  no such release
        pass
    started = time.monotonic()
    if installed:
        await helm.Upgrade(config).run(release, chart, values=values, wait=True, timeout=timeout)
    else:
        await helm.Install(config).run(release, chart, values=values, create_namespace=True,
                                       wait=True, timeout=timeout)  # fmt: skip
    verb = "upgraded" if installed else "installed"
    print(f"helm: {release} {verb} in {time.monotonic() - started:.0f} s ({repository}:{tag})")


if __name__ == "__main__":
    args = sys.argv[1:]
    try:
        asyncio.run(main(*args[:6], int(args[6]) if len(args) > 6 else 600))
    except Exception as error:  # noqa: BLE001  Helm's own message is the report
        sys.exit(f"helm: {error!r}")

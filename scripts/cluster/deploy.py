"""`helm upgrade --install --wait` of the project's chart with values-dev.yaml, through Helm
v4's Go library (PyPI's helm-sdkpy, Python >= 3.12: there is no helm binary in Debian or
PyPI). Hooks run as with helm: the dev databases and Secrets, then the migration Job.

Usage: deploy.py CHART KUBECONFIG NAMESPACE RELEASE IMAGE_REPOSITORY IMAGE_TAG [TIMEOUT_S]
The environment's VALUES, a JSON object, is merged over values-dev.yaml (e.g.
`{"api": {"replicas": 2}}`). Prints how long it took; exits 1 (with Helm's error) if the
release did not become ready."""

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import helm_sdkpy as helm
import yaml


def merge(into: dict, extra: dict) -> None:
    for name, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(name), dict):
            merge(into[name], value)
        else:
            into[name] = value


async def main(chart: str, kubeconfig: str, namespace: str, release: str, repository: str,
               tag: str, timeout_s: int) -> None:  # fmt: skip
    config = helm.Configuration(namespace=namespace, kubeconfig=kubeconfig)
    values = yaml.safe_load((Path(chart) / "values-dev.yaml").read_text())
    merge(values, json.loads(os.environ.get("VALUES") or "{}"))
    values["image"].update({"repository": repository, "tag": tag})
    started = time.monotonic()
    await helm.Upgrade(config).run(release, chart, values=values, install=True,
                                   create_namespace=True, wait=True, timeout=timeout_s)  # fmt: skip
    print(f"helm: {release} at {repository}:{tag} in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    args = sys.argv[1:]
    try:
        asyncio.run(main(*args[:6], int(args[6]) if len(args) > 6 else 600))
    except Exception as error:  # Helm's own message is the report
        sys.exit(f"helm: {error!r}")

"""kopf peering (issue 17, point 5): `strongroom operator --peering NAME` fails loudly when
peering cannot work, and of two peered operators exactly one is active, the other standing
by until the first goes. Two KopfRunners (threads) against the kmock emulator stand in for
two pods: no cluster runs here. Which operator handled a Tenant is told by the thread that
logged kopf's "succeeded" record for it."""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import os
import uuid
from pathlib import Path

import pytest
from kopf.testing import KopfRunner
from kubernetes_asyncio import client, config

from tests.operator.emulator import EmulatedCluster
from tests.operator.test_operator_e2e import GROUP, VERSION, until
from tests.processes import STRONGROOM, environment_of

PEERING = "strongroom-operator"


@pytest.fixture
def settings_env(monkeypatch, postgres_settings):
    for name, value in environment_of(postgres_settings).items():
        if name.startswith("STRONGROOM_"):
            monkeypatch.setenv(name, value)


def operator(*extra: str, reraise: bool = True) -> KopfRunner:
    return KopfRunner(["run", "--all-namespaces", "--peering", PEERING, *extra,
                       "-m", "strongroom.operator.handlers"], timeout=60,
                      reraise=reraise)  # fmt: skip


def test_peering_without_its_crd_stops_the_operator_with_a_clear_error(
    tmp_path, monkeypatch, settings_env, caplog
):
    with EmulatedCluster(tmp_path) as emulated:  # no kopf.dev resources in this cluster
        monkeypatch.setenv("KUBECONFIG", str(emulated.kubeconfig))
        with operator(reraise=False) as runner:
            result = runner.future.result(timeout=30)  # it stops by itself, not stalls
    assert result.exit_code != 0 and type(result.exception).__name__ == "ActivityError"
    [said] = [record for record in caplog.records if record.levelno == logging.CRITICAL]
    assert f"no ClusterKopfPeering {PEERING!r}" in said.getMessage()


@pytest.fixture
async def peered_cluster(tmp_path, monkeypatch, settings_env):
    with EmulatedCluster(tmp_path, peering=True) as emulated:
        monkeypatch.setenv("KUBECONFIG", str(emulated.kubeconfig))
        await config.load_kube_config(config_file=os.environ["KUBECONFIG"])
        api_client = client.ApiClient()
        custom = client.CustomObjectsApi(api_client)
        await custom.create_cluster_custom_object("kopf.dev", "v1", "clusterkopfpeerings", {
            "apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering",
            "metadata": {"name": PEERING}})  # fmt: skip
        await custom.create_namespaced_custom_object("kopf.dev", "v1", "default", "kopfpeerings", {
            "apiVersion": "kopf.dev/v1", "kind": "KopfPeering",
            "metadata": {"name": PEERING, "namespace": "default"}})  # fmt: skip
        yield custom
        await api_client.close()


async def create_tenant(custom, name: str) -> None:
    await custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": name},
        "spec": {"displayName": "Acme"}})  # fmt: skip


async def ready(custom, name: str) -> bool:
    resource = await custom.get_cluster_custom_object(GROUP, VERSION, "tenants", name)
    conditions = (resource.get("status") or {}).get("conditions") or []
    return any(found["type"] == "Ready" and found["status"] == "True" for found in conditions)


async def peers(custom) -> dict:
    peering = await custom.get_cluster_custom_object("kopf.dev", "v1", "clusterkopfpeerings",
                                                     PEERING)  # fmt: skip
    return peering.get("status") or {}


def handlers_of(caplog, name: str) -> set[int]:
    """The threads (operators) that handled the Tenant `name`."""
    return {record.thread for record in caplog.records
            if record.name == "kopf.objects" and "succeeded" in record.getMessage()
            and getattr(record, "k8s_ref", {}).get("name") == name}  # fmt: skip


async def test_of_two_peered_operators_exactly_one_is_active_and_the_other_takes_over(
    peered_cluster, caplog
):
    """As the chart's two replicas: the same arguments, no priority given."""
    custom = peered_cluster
    caplog.set_level(logging.INFO, logger="kopf.objects")
    prefix = f"peer-{uuid.uuid4().hex[:6]}"
    running = [operator().__enter__(), operator().__enter__()]
    try:
        assert await until(lambda: _count_at_least(peers(custom), 2))
        await create_tenant(custom, f"{prefix}-one")
        assert await until(lambda: ready(custom, f"{prefix}-one"))
        [handler] = handlers_of(caplog, f"{prefix}-one")  # one operator, not both
        [active] = [runner for runner in running if runner._thread.ident == handler]
        running.remove(active)
        active.__exit__(None, None, None)  # the active pod goes: the standby resumes
        await create_tenant(custom, f"{prefix}-two")
        assert await until(lambda: ready(custom, f"{prefix}-two"))
        assert handlers_of(caplog, f"{prefix}-two") == {running[0]._thread.ident}
        for name in (f"{prefix}-one", f"{prefix}-two"):
            await custom.delete_cluster_custom_object(GROUP, VERSION, "tenants", name)
    finally:
        for runner in running:
            runner.__exit__(None, None, None)


async def _count_at_least(probe, count: int) -> bool:
    return len(await probe) >= count


def test_the_priority_option_reaches_kopf(monkeypatch):
    """Issue 31 D: docs/operator.md documents `--priority`. kopf.run is replaced by a
    recorder: this test checks the option reaches kopf; the peering itself is tested above."""
    import kopf
    from click.testing import CliRunner

    from strongroom.cli import main

    given: dict = {}
    monkeypatch.setattr(kopf, "run", lambda **kwargs: given.update(kwargs))
    monkeypatch.setenv("POD_ID", "a-pod")  # as the chart sets it; restored afterwards
    result = CliRunner().invoke(main, ["operator", "--peering", PEERING, "--priority", "5"])
    assert result.exit_code == 0, result.output
    assert given["priority"] == 5 and given["peering_name"] == PEERING


def _peering_times(log: Path, what: str) -> list[datetime.datetime]:
    """When the operator whose JSON log is `log` logged kopf's "<what> operations"."""
    times = []
    for line in log.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("message", "").startswith(f"{what} operations"):
            times.append(datetime.datetime.fromisoformat(record["time"]))
    return times


@pytest.mark.parametrize("scope", [(), ("--namespace", "default")], ids=["cluster", "namespace"])
async def test_a_replica_pauses_before_a_newcomer_of_higher_priority_resumes(
    peered_cluster, tmp_path, scope
):
    """Issue 31 C: kopf resumes a replica on its first peering event, so a newcomer of higher
    priority was active before the running replica had seen it (both active ~200 ms on a
    real cluster). The newcomer now writes its record and settles first: the running replica
    pauses, then the newcomer resumes. Two `strongroom operator` processes (real ones: each
    its own identity) against the emulator. With `--namespace` (issue 44, item 8) the record
    goes to the namespace's KopfPeering: only the cluster-wide one was written, and two
    replicas were both active for 0.25 s on a real server, 30 ApiKeys handled twice."""
    env = os.environ | {"STRONGROOM_LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1"}
    env.pop("POD_ID", None)
    logs, processes = [tmp_path / "first.log", tmp_path / "second.log"], []
    try:
        for priority, log in zip((1, 2), logs, strict=True):
            with log.open("w") as out:
                processes.append(await asyncio.create_subprocess_exec(
                    STRONGROOM, "operator", "--peering", PEERING, "--priority", str(priority),
                    *scope, env=env, stdout=out, stderr=asyncio.subprocess.STDOUT))  # fmt: skip

            async def resumed(log=log) -> bool:
                return bool(_peering_times(log, "Resuming"))

            assert await until(resumed)
        first_paused = _peering_times(logs[0], "Pausing")
        [second_resumed] = _peering_times(logs[1], "Resuming")
        assert first_paused and first_paused[-1] < second_resumed
        assert (second_resumed - first_paused[-1]).total_seconds() > 1  # not a race
    finally:
        for process in processes:
            process.terminate()
            await process.wait()

"""What a failed or repeated reconcile shows (issue 17, points 3 and 7), without a cluster:
conditions keep their transition time while their status stands, failure messages never
carry a secret, Events are news only once, retries back off briefly, and kopf's settings
stay out of the log lines."""

from __future__ import annotations

import io
import json
import logging
from types import SimpleNamespace

import kopf
import pytest
from kubernetes_asyncio.client.exceptions import ApiException
from sqlalchemy.exc import IntegrityError

from strongroom.logs import JsonFormatter
from strongroom.operator import handlers
from strongroom.operator.conditions import is_news, keep_transition_times, not_ready, ready
from strongroom.operator.failures import backoff, describe
from strongroom.operator.logs import WithoutKopfInternals
from strongroom.operator.turns import Turns
from strongroom.tenants.service import NotFoundError

RAW_KEY = "ak_test_" + "s" * 52


def test_last_transition_time_moves_only_when_the_status_changes():
    before = {"conditions": [ready() | {"lastTransitionTime": "2026-01-01T00:00:00+00:00"}]}
    same = keep_transition_times(before, {"conditions": [ready(message="again")]})
    assert same["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00+00:00"
    assert same["conditions"][0]["message"] == "again"
    flipped = keep_transition_times(before, {"conditions": [not_ready("Broken", "x")]})
    assert flipped["conditions"][0]["lastTransitionTime"] != "2026-01-01T00:00:00+00:00"


def test_a_warning_is_news_once_while_its_reason_stands():
    assert is_news({}, "TenantNotFound")
    waiting = {"conditions": [not_ready("TenantNotFound", "no Tenant 'a' yet")]}
    assert not is_news(waiting, "TenantNotFound")
    assert is_news(waiting, "KubernetesError")
    assert is_news({"conditions": [ready()]}, "TenantNotFound")


def test_a_database_error_is_described_without_its_parameters():
    error = IntegrityError("INSERT INTO api_keys (key_hash) VALUES (%s)", {"key_hash": RAW_KEY},
                           Exception("duplicate key"))  # fmt: skip
    assert RAW_KEY in str(error)  # what kopf would have logged and shown
    reason, message = describe(error)
    assert reason == "DatabaseError" and RAW_KEY not in message and "INSERT" not in message


def test_a_kubernetes_refusal_says_what_the_api_server_said_but_not_the_request():
    error = ApiException(status=403, reason="Forbidden")
    error.body = json.dumps({"kind": "Status", "message": 'secrets "k" is forbidden: cannot set '
                             "blockOwnerDeletion", "details": {"data": RAW_KEY}})  # fmt: skip
    reason, message = describe(error)
    assert reason == "KubernetesError"
    assert message.startswith("the Kubernetes API answered 403 Forbidden: secrets")
    assert RAW_KEY not in message


def test_an_unexpected_error_names_its_type_only():
    reason, message = describe(ValueError(f"bad key {RAW_KEY}"))
    assert reason == "ReconcileFailed" and "ValueError" in message and RAW_KEY not in message


def test_an_unexpected_error_of_our_own_says_what_happened():
    """Issue 44, item 7: "unexpected NotFoundError; see the operator's log" told nothing."""
    reason, message = describe(NotFoundError("no API key 0c5e"))
    assert reason == "ReconcileFailed" and "NotFoundError: no API key 0c5e" in message


async def test_an_unexpected_failure_is_logged_with_its_traceback_where_the_status_says(
    monkeypatch, caplog
):
    """The status points to the operator's log: the log has the error, not only kopf's
    one-line retry notice."""
    written = []

    async def write_status(api_client, body, status) -> None:
        written.append(status)

    async def failing(runtime, secrets, body):
        raise NotFoundError("no API key 0c5e")

    monkeypatch.setattr(handlers, "write_status", write_status)
    monkeypatch.setattr(handlers, "_post", lambda *args: None)
    memo = SimpleNamespace(parts=None, secrets=SimpleNamespace(api_client=None), warned={},
                           turns=Turns())  # fmt: skip
    meta = {"name": "ci", "namespace": "default", "uid": "u-1", "generation": 1}
    with pytest.raises(kopf.TemporaryError):
        await handlers._reconcile(failing, {"kind": "ApiKey", "metadata": meta}, meta, {}, memo, 0)
    condition = written[-1]["conditions"][0]
    assert condition["reason"] == "ReconcileFailed" and "no API key 0c5e" in condition["message"]
    [record] = [found for found in caplog.records if found.name == handlers.logger.name]
    assert record.levelno == logging.ERROR and record.exc_info
    assert "ApiKey default/ci" in record.getMessage()


def test_retries_back_off_from_one_second_to_at_most_thirty():
    delays = [backoff(retry) for retry in range(12)]
    assert delays[:4] == [1, 2, 4, 8] and max(delays) == 30 and delays == sorted(delays)


def test_kopf_settings_are_dropped_from_log_records():
    import kopf
    from kopf._core.actions.loggers import ObjectLogger

    body = {"apiVersion": "strongroom.io/v1", "kind": "ApiKey",
            "metadata": {"name": "ci", "namespace": "default", "uid": "u"}}  # fmt: skip

    def line(filtered: bool) -> str:
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.setFormatter(JsonFormatter())
        if filtered:
            handler.addFilter(WithoutKopfInternals())
        objects, level = logging.getLogger("kopf.objects"), logging.getLogger().level
        objects.addHandler(handler)
        logging.getLogger().setLevel(logging.INFO)
        try:
            ObjectLogger(body=kopf.Body(body), settings=kopf.OperatorSettings()).info("done")
        finally:
            objects.removeHandler(handler)
            logging.getLogger().setLevel(level)
        return stream.getvalue()

    unfiltered, filtered = line(False), line(True)
    assert "settings" in json.loads(unfiltered) and "settings" not in json.loads(filtered)
    assert json.loads(filtered)["k8s_ref"]["name"] == "ci"  # which object stays
    assert len(filtered) < len(unfiltered) / 3  # measured: the settings are most of a line


async def test_a_failing_deletion_warns_once_per_reason_and_retries_soon(monkeypatch):
    """The deletion path alone: kopf's Event queue exists only in a running operator, so the
    Events are recorded here instead of posted."""
    import kopf
    import pytest

    from strongroom.operator import handlers

    posted = []
    monkeypatch.setattr(handlers, "_post", lambda body, kind, reason, message:
                        posted.append((kind, reason, message)))  # fmt: skip
    memo = kopf.Memo(warned={}, turns=Turns())
    body = {"metadata": {"uid": "u", "name": "ci"}}

    async def broken():
        raise ConnectionRefusedError(f"cannot reach the database with {RAW_KEY}")

    delays = []
    for retry in range(3):
        with pytest.raises(kopf.TemporaryError) as retried:
            await handlers._release(broken, body, memo, retry)
        delays.append(retried.value.delay)
    assert delays == [1, 2, 4]
    assert posted == [("Warning", "ConnectionError",
                       "deletion waits: a dependency could not be reached "
                       "(ConnectionRefusedError)")]  # fmt: skip

    async def fine():
        return None

    await handlers._release(fine, body, memo, 3)
    assert memo.warned == {}


def test_api_failures_are_retried_without_end_so_no_timer_or_watch_gives_up():
    """Issue 31 B: kopf's default retries (54 s) ran out during an API server outage and
    killed a resync timer for good, and ran out on 403s while RBAC was applied, leaving the
    CRD watch off. Every request now waits for the API server, never more than 30 s apart."""
    import itertools

    import kopf

    from strongroom.operator.kopf_settings import configure

    settings = kopf.OperatorSettings()
    configure(settings)
    backoffs = settings.networking.error_backoffs
    first = list(itertools.islice(backoffs, 1000))
    assert len(first) == 1000 and max(first) == 30 and first[:3] == [1, 1, 2]
    assert sum(first) > 8 * 3600  # hours of outage, and more
    assert list(itertools.islice(backoffs, 3)) == [1, 1, 2]  # each request starts afresh


def test_a_standby_replica_takes_over_within_fifteen_seconds_of_a_kill():
    """Issue 31 C: takeover after kill -9 of the active replica waits for its peering record
    to lapse: 38-43 s with kopf's 60 s lifetime."""
    import kopf

    from strongroom.operator.kopf_settings import configure

    settings = kopf.OperatorSettings()
    configure(settings)
    assert settings.peering.lifetime == 15


def test_a_tenant_waiting_for_its_erasure_is_logged_at_info_not_as_an_error():
    """Issue 42, item 5: kopf logs the handler's wait (a TemporaryError) at ERROR, once a
    minute for 30 days; the operator's log says INFO. Other temporary failures stay errors."""
    from strongroom.operator.logs import WAITING_FOR_ERASURE

    def level_of(message: str) -> str:
        record = logging.LogRecord("kopf.objects", logging.ERROR, __file__, 1, message, None, None)
        WithoutKopfInternals().filter(record)
        return record.levelname

    waiting = f"Handler 'erasure' failed temporarily: {WAITING_FOR_ERASURE}, due at 2026-12-29"
    assert level_of(waiting) == "INFO"
    assert level_of("Handler 'tenant' failed temporarily: the database refused") == "ERROR"


def test_a_handler_held_while_its_replica_was_paused_is_retried_at_info_not_as_an_error():
    """Issue 52, point 10: a handler invoked while its replica was paused waits for the
    resume and is retried (pausing.while_active); kopf logs that retry at ERROR."""
    from strongroom.operator.logs import HELD_RETRY

    message = f"Handler 'api_key' failed temporarily: {HELD_RETRY}"
    record = logging.LogRecord("kopf.objects", logging.ERROR, __file__, 1, message, None, None)
    WithoutKopfInternals().filter(record)
    assert record.levelname == "INFO"

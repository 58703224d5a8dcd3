"""kopf handlers: small decorated functions that call the reconcile functions and write
their results to `status` and to Events. Every handler is idempotent; a timer runs each
reconcile again now and then, which repairs drift (a Secret deleted by hand, a row changed
outside the operator) and says so in an Event.

Every failure shows on the resource (issue 17): `Ready=False` with a reason and a message
that never carry a secret, one Warning Event while that reason stands, and a retry after a
short backoff. The operator posts its own Events only (kopf's log-to-Event bridge is off:
it would post one per retry). It writes status itself (`statuses`), inside the handler, so
that whatever fails, the reconcile or the status, ends as a retry and shows on the resource
(issue 44, item 6); an unexpected error is logged with its traceback."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from datetime import datetime

import kopf
from prometheus_client import start_http_server

from strongroom.db.types import utcnow
from strongroom.metrics import OPERATOR_RECONCILIATIONS
from strongroom.operator import dependents, failures, kopf_settings, pausing
from strongroom.operator.apikeys import reconcile_api_key, release_api_key
from strongroom.operator.conditions import is_news, keep_transition_times, not_ready
from strongroom.operator.kube import KubernetesSecretStore, announce_peer, peering_problem
from strongroom.operator.logs import WAITING_FOR_ERASURE, drop_kopf_internals
from strongroom.operator.oauthclients import reconcile_oauth_client, release_oauth_client
from strongroom.operator.outcome import NotReady, Outcome
from strongroom.operator.parts import OperatorParts
from strongroom.operator.secrets import SecretStore
from strongroom.operator.statuses import write_status
from strongroom.operator.tenants import (
    ErasureNotStarted,
    erasure_of,
    reconcile_tenant,
    release_tenant,
)
from strongroom.operator.turns import Turns
from strongroom.runtime import Runtime
from strongroom.settings import Settings

GROUP, VERSION = "strongroom.io", "v1"
RESYNC_SECONDS = Settings().operator_resync_seconds  # read once: decorators need it at import
# A Tenant waiting for its erasure is looked at again at most this long apart (so it goes
# within a minute of `strongroom tenants erase`), and when it falls due; past its due date
# (the processes that run jobs check every 30 s at most), after these waits, then the last.
ERASURE_RECHECK_SECONDS = 60
ERASURE_DUE_RECHECKS = (1, 2, 4, 8, 15)


# The reconcile function of each resource (tenants, apikeys, oauthclients): the status and
# Events of its body.
Reconcile = Callable[[OperatorParts, SecretStore, dict], Awaitable[Outcome]]


def _erasure_recheck(retry: int) -> float:
    return ERASURE_DUE_RECHECKS[min(retry, len(ERASURE_DUE_RECHECKS) - 1)]


logger = logging.getLogger(__name__)

# A paused replica runs no handler (issue 52, point 10): kopf's processing of an event is
# gated on its pause state, and every handler below is `pausing.while_active`.
pausing.install()


@kopf.on.login()
def login(**kwargs) -> kopf.ConnectionInfo | None:
    """In a pod its service account, elsewhere KUBECONFIG read now (kopf would otherwise
    log in through kubernetes_asyncio, which reads KUBECONFIG once, at import)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
async def start(memo: kopf.Memo, settings: kopf.OperatorSettings, **_) -> None:
    """Settings, the operator's parts (`memo.parts`) and Secrets; /metrics when
    STRONGROOM_OPERATOR_METRICS_PORT is set (the chart sets it); and, with --peering, a check
    that peering can work."""
    configured = Settings()
    if configured.operator_metrics_port:
        start_http_server(configured.operator_metrics_port)
    drop_kopf_internals()
    kopf_settings.configure(settings)
    memo.warned = {}  # resource uid -> the reason of the last Warning posted
    memo.turns = Turns()  # one handler of a resource at a time
    memo.secrets = await KubernetesSecretStore.connect()
    if not settings.peering.standalone:
        # Replicas of equal priority all pause: unless told one (--priority), a random one
        # makes exactly one replica active.
        settings.peering.priority = settings.peering.priority or 1 + secrets.randbelow(2**31)
        # kopf peers in a ClusterKopfPeering, or with --namespace in a KopfPeering of each
        # namespace (`memo.namespaces`, given by `strongroom operator`; unknown otherwise).
        scopes = [None] if settings.peering.clusterwide else memo.get("namespaces") or []
        for namespace in scopes:
            problem = await peering_problem(memo.secrets.api_client, settings.peering.name,
                                            namespace)  # fmt: skip
            if problem:
                await memo.secrets.close()
                logger.critical("peering cannot work: %s", problem)
                raise kopf.PermanentError(f"peering cannot work: {problem}")
        identity = os.environ.get("POD_ID")  # kopf's identity of this replica, when known
        if scopes and identity:
            # kopf resumes a replica on its first peering event: a peer whose record is not
            # there yet is not seen, and two replicas are both active for a moment (issue
            # 31 C; with --namespace, issue 44 item 8). Announced now and settled, every
            # replica started meanwhile is seen.
            for namespace in scopes:
                await announce_peer(memo.secrets.api_client, settings.peering.name, identity,
                                    settings.peering.priority, settings.peering.lifetime,
                                    namespace)  # fmt: skip
            await asyncio.sleep(kopf_settings.PEERING_SETTLE_SECONDS)
    # The composition root builds the process; the handlers use of it what OperatorParts says.
    parts: OperatorParts = Runtime.create(configured)
    memo.parts = parts


@kopf.on.cleanup()
async def stop(memo: kopf.Memo, **_) -> None:
    await memo.secrets.close()
    await memo.parts.close()


def _post(body, kind: str, reason: str, message: str) -> None:
    kopf.event(body, type=kind, reason=reason, message=message)


async def _fail(body, meta, previous: dict, memo, reason: str, message: str,
                fields: dict | None = None) -> None:  # fmt: skip
    """Ready=False on the resource (beside `fields` of the status still true), and a
    Warning Event if the reason is new: new to the resource's status, and to this operator
    (a handler and the timer may fail at once, both reading the same status)."""
    await _write(body, meta, previous, memo,
                 (fields or {}) | {"conditions": [not_ready(reason, message)]})  # fmt: skip
    if memo.warned.get(meta["uid"]) != reason and is_news(previous, reason):
        _post(body, "Warning", reason, message)
    memo.warned[meta["uid"]] = reason


async def _write(body, meta, previous: dict, memo, status: dict) -> None:
    """The status written by the operator itself, not left in kopf's patch: kopf applies
    that after the handler returns, where a refusal (422) escaped every handler and killed a
    timer for good (issue 44, item 6; `statuses`)."""
    status = keep_transition_times(previous, status)
    try:
        await write_status(memo.secrets.api_client, dict(body),
                           status | {"observedGeneration": meta.get("generation")})  # fmt: skip
    except Exception as error:  # unreachable or 5xx: the handler's retry writes it again
        raise kopf.TemporaryError(f"status not written: {failures.describe(error)[1]}",
                                  delay=failures.backoff(0)) from error  # fmt: skip


async def _reconcile(reconcile: Reconcile, body, meta, status, memo, retry: int) -> None:
    """Run `reconcile` and write what came of it to status. Whatever fails (the reconcile,
    or writing its status) ends as a kopf.TemporaryError, retried after a short backoff: a
    handler, and a timer, survive any error and say it in status."""
    async with memo.turns.of(meta["uid"]):  # one at a time (turns)
        kind, previous = body.get("kind", "unknown"), dict(status or {})
        try:
            outcome = await reconcile(memo.parts, memo.secrets, dict(body))
        except NotReady as refusal:
            await _fail(body, meta, previous, memo, refusal.reason, refusal.message, refusal.fields)
            if refusal.retry:
                OPERATOR_RECONCILIATIONS.labels(kind, "waiting").inc()
                raise kopf.TemporaryError(refusal.message, delay=failures.backoff(retry)) from None
            OPERATOR_RECONCILIATIONS.labels(kind, "waiting" if refusal.told else "refused").inc()
            return
        except pausing.Paused:  # not a failure: the replica paused meanwhile (while_active)
            raise
        except Exception as error:
            OPERATOR_RECONCILIATIONS.labels(kind, "failed").inc()
            reason, message = failures.describe(error)
            # The log line the status points to, with the error's traceback (kopf logs only the
            # TemporaryError's message).
            logger.error("reconciling %s %s/%s failed: %s", kind, meta.get("namespace", ""),
                         meta.get("name"), message, exc_info=error)  # fmt: skip
            await _fail(body, meta, previous, memo, reason, message)
            raise kopf.TemporaryError(message, delay=failures.backoff(retry)) from error
        OPERATOR_RECONCILIATIONS.labels(kind, "succeeded").inc()
        memo.warned.pop(meta["uid"], None)
        for event in outcome.events:
            _post(body, "Normal", "Reconciled", event)
        await _write(body, meta, previous, memo, outcome.status)


async def _release(release, body, memo, retry: int) -> None:
    """A deletion handler: on failure, a Warning Event once per reason (the condition cannot
    help: the resource is going) and a retry after a short backoff; the finalizer holds
    meanwhile."""
    uid = body["metadata"]["uid"]
    async with memo.turns.of(uid):  # one at a time (turns)
        try:
            await release()
        except pausing.Paused:  # not a failure: the replica paused meanwhile (while_active)
            raise
        except Exception as error:
            reason, message = failures.describe(error)
            meta = body["metadata"]
            logger.error("deleting %s %s/%s waits: %s", body.get("kind"), meta.get("namespace", ""),
                         meta.get("name"), message, exc_info=error)  # fmt: skip
            if memo.warned.get(uid) != f"deletion:{reason}":
                _post(body, "Warning", reason, f"deletion waits: {message}")
            memo.warned[uid] = f"deletion:{reason}"
            raise kopf.TemporaryError(message, delay=failures.backoff(retry)) from error
        memo.warned.pop(uid, None)


@kopf.index(GROUP, VERSION, "apikeys")
def apikeys_by_tenant(namespace, name, spec, annotations, **_) -> dict:
    """Each ApiKey under the name of its tenant, with the tenant state it was last told."""
    return {spec.get("tenant"): (namespace, name, annotations.get(dependents.TENANT_STATE))}


@kopf.on.resume(GROUP, VERSION, "tenants")
@kopf.on.create(GROUP, VERSION, "tenants")
@kopf.on.update(GROUP, VERSION, "tenants", field="spec")
@kopf.timer(GROUP, VERSION, "tenants", interval=RESYNC_SECONDS, idle=RESYNC_SECONDS)
@pausing.while_active
async def tenant(body, meta, status, memo, retry, apikeys_by_tenant, **_) -> None:
    async def reconcile(parts: OperatorParts, secrets, body: dict) -> Outcome:
        outcome = await reconcile_tenant(parts, secrets, body)
        state = dependents.active(outcome.status["tenantId"], body["spec"])
        await dependents.tell(secrets.api_client, apikeys_by_tenant.get(meta["name"], ()), state)
        return outcome

    await _reconcile(reconcile, body, meta, status, memo, retry)


@kopf.on.delete(GROUP, VERSION, "tenants")
@pausing.while_active
async def tenant_deleted(name, status, body, memo, retry, apikeys_by_tenant, **_) -> None:
    """End the tenant's access (keys, OAuth grants) before the finalizer lets it go, and
    tell its ApiKeys."""

    async def release() -> None:
        revoked = await release_tenant(memo.parts, name, dict(status or {}))
        if revoked is not None:
            _post(body, "Normal", "Deleted", f"tenant suspended and kept for audit; revoked "
                  f"{revoked['keys']} API keys and {revoked['grants']} OAuth grants")  # fmt: skip
            await dependents.tell(memo.secrets.api_client, apikeys_by_tenant.get(name, ()),
                                  dependents.DELETED)  # fmt: skip

    await _release(release, body, memo, retry)


@kopf.on.delete(GROUP, VERSION, "tenants", id="erasure")
@pausing.while_active
async def tenant_erasure(status, body, meta, memo, retry, **_) -> None:
    """After `tenant_deleted` (kopf runs a cause's handlers in order, each once it has
    succeeded): the finalizer stays until the tenant's data is erased (issue 42, item 5), so
    that `status.erasure` shows when it is due and when it was done. The erasure itself is
    the processes that run jobs' (strongroom.tenant_erasure); this handler reads the row,
    posts an Event when it is scheduled and one when it is done, and waits meanwhile."""
    previous = dict(status or {})
    found: list[dict | None] = []
    not_started: list[str] = []

    async def look() -> None:
        try:
            found.append(await erasure_of(memo.parts, previous))
        except ErasureNotStarted as waiting:  # not a failure: the first handler's turn
            not_started.append(str(waiting))

    await _release(look, body, memo, retry)  # a failure warns once and is retried
    if not_started:
        raise kopf.TemporaryError(not_started[0], delay=_erasure_recheck(retry))
    erasure = found[0]
    if erasure is None:
        return
    told = previous.get("erasure") or {}
    shown = {name: at for name, at in erasure.items() if at}  # a merge patch drops a null
    if told != shown:
        await _write(body, meta, previous, memo, {"erasure": shown})
    if erasure["erasedAt"] is not None:
        if told.get("erasedAt") is None:
            _post(body, "Normal", "Erased", f"the tenant's data was erased at "
                  f"{erasure['erasedAt']}; its record, users, API key records and credit "
                  "ledger are kept for audit")  # fmt: skip
        return
    if not told:
        _post(body, "Normal", "ErasureScheduled", f"the tenant's data is erased at "
              f"{erasure['dueAt']} (STRONGROOM_TENANT_ERASURE_DAYS); the Tenant stays until "
              "then, or until `strongroom tenants erase` erases it at once")  # fmt: skip
    due_in = (datetime.fromisoformat(erasure["dueAt"]) - utcnow()).total_seconds()
    delay = min(due_in + 1, ERASURE_RECHECK_SECONDS) if due_in > 0 else _erasure_recheck(retry)
    raise kopf.TemporaryError(f"{WAITING_FOR_ERASURE}, due at {erasure['dueAt']}", delay=delay)


@kopf.on.resume(GROUP, VERSION, "apikeys")
@kopf.on.create(GROUP, VERSION, "apikeys")
@kopf.on.update(GROUP, VERSION, "apikeys", field="spec")
@kopf.on.update(GROUP, VERSION, "apikeys", id="tenant-state",
                field=("metadata", "annotations", dependents.TENANT_STATE))  # fmt: skip
@kopf.timer(GROUP, VERSION, "apikeys", interval=RESYNC_SECONDS, idle=RESYNC_SECONDS)
@pausing.while_active
async def api_key(body, meta, status, memo, retry, **_) -> None:
    await _reconcile(reconcile_api_key, body, meta, status, memo, retry)


@kopf.on.delete(GROUP, VERSION, "apikeys")
@pausing.while_active
async def api_key_deleted(body, memo, retry, **_) -> None:
    """Revoke before the finalizer lets the resource go."""
    await _release(lambda: release_api_key(memo.parts, memo.secrets, dict(body)), body, memo, retry)


@kopf.on.resume(GROUP, VERSION, "oauthclients")
@kopf.on.create(GROUP, VERSION, "oauthclients")
@kopf.on.update(GROUP, VERSION, "oauthclients", field="spec")
@kopf.timer(GROUP, VERSION, "oauthclients", interval=RESYNC_SECONDS, idle=RESYNC_SECONDS)
@pausing.while_active
async def oauth_client(body, meta, status, memo, retry, **_) -> None:
    await _reconcile(reconcile_oauth_client, body, meta, status, memo, retry)


@kopf.on.delete(GROUP, VERSION, "oauthclients")
@pausing.while_active
async def oauth_client_deleted(body, memo, retry, **_) -> None:
    await _release(lambda: release_oauth_client(memo.parts, dict(body)), body, memo, retry)

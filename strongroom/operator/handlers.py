"""kopf handlers: small decorated functions that call the reconcile functions and write
their results to `status` and to Events. Every handler is idempotent; a timer runs each
reconcile again now and then, which repairs drift (a Secret deleted by hand, a row changed
outside the operator) and says so in an Event."""

from __future__ import annotations

import kopf
from prometheus_client import start_http_server

from strongroom.metrics import OPERATOR_RECONCILIATIONS
from strongroom.operator.apikeys import NotReady, reconcile_api_key, release_api_key
from strongroom.operator.kube import KubernetesSecretStore
from strongroom.operator.oauthclients import reconcile_oauth_client, release_oauth_client
from strongroom.operator.tenants import reconcile_tenant
from strongroom.runtime import Runtime
from strongroom.settings import Settings

GROUP, VERSION = "strongroom.io", "v1"
RESYNC_SECONDS = Settings().operator_resync_seconds  # read once: decorators need it at import
RETRY_SECONDS = 3  # a Tenant applied with its ApiKeys usually lands within seconds


@kopf.on.login()
def login(**kwargs) -> kopf.ConnectionInfo | None:
    """In a pod its service account, elsewhere KUBECONFIG read now (kopf would otherwise
    log in through kubernetes_asyncio, which reads KUBECONFIG once, at import)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
async def start(memo: kopf.Memo, settings: kopf.OperatorSettings, **_) -> None:
    """Settings, the database and Secrets; and /metrics when STRONGROOM_OPERATOR_METRICS_PORT
    is set (the chart sets it)."""
    configured = Settings()
    if configured.operator_metrics_port:
        start_http_server(configured.operator_metrics_port)
    settings.persistence.finalizer = "strongroom.io/finalizer"
    settings.posting.level = 20  # INFO: every reconcile worth an Event
    memo.runtime = Runtime.create(configured)
    memo.secrets = await KubernetesSecretStore.connect()


@kopf.on.cleanup()
async def stop(memo: kopf.Memo, **_) -> None:
    await memo.secrets.close()
    await memo.runtime.close()


def _write(patch: kopf.Patch, meta, status: dict) -> None:
    patch.status.update(status | {"observedGeneration": meta.get("generation")})


async def _reconcile(reconcile, body, meta, patch, memo) -> None:
    kind = body.get("kind", "unknown")
    try:
        outcome = await reconcile(memo.runtime, memo.secrets, dict(body))
    except NotReady as refusal:
        _write(patch, meta, refusal.status())
        kopf.warn(body, reason=refusal.reason, message=refusal.message)
        if refusal.retry:
            OPERATOR_RECONCILIATIONS.labels(kind, "waiting").inc()
            raise kopf.TemporaryError(refusal.message, delay=RETRY_SECONDS) from refusal
        OPERATOR_RECONCILIATIONS.labels(kind, "refused").inc()
        return
    except Exception:
        OPERATOR_RECONCILIATIONS.labels(kind, "failed").inc()
        raise
    OPERATOR_RECONCILIATIONS.labels(kind, "succeeded").inc()
    for event in outcome.events:
        kopf.info(body, reason="Reconciled", message=event)
    _write(patch, meta, outcome.status)


@kopf.on.resume(GROUP, VERSION, "tenants")
@kopf.on.create(GROUP, VERSION, "tenants")
@kopf.on.update(GROUP, VERSION, "tenants", field="spec")
@kopf.timer(GROUP, VERSION, "tenants", interval=RESYNC_SECONDS, idle=RESYNC_SECONDS)
async def tenant(name, spec, meta, body, patch, memo, **_) -> None:
    try:
        status = await reconcile_tenant(memo.runtime, name, dict(spec))
    except Exception:
        OPERATOR_RECONCILIATIONS.labels("Tenant", "failed").inc()
        raise
    OPERATOR_RECONCILIATIONS.labels("Tenant", "succeeded").inc()
    _write(patch, meta, status)


@kopf.on.resume(GROUP, VERSION, "apikeys")
@kopf.on.create(GROUP, VERSION, "apikeys")
@kopf.on.update(GROUP, VERSION, "apikeys", field="spec")
@kopf.timer(GROUP, VERSION, "apikeys", interval=RESYNC_SECONDS, idle=RESYNC_SECONDS)
async def api_key(body, meta, patch, memo, **_) -> None:
    await _reconcile(reconcile_api_key, body, meta, patch, memo)


@kopf.on.delete(GROUP, VERSION, "apikeys")
async def api_key_deleted(body, memo, **_) -> None:
    """Revoke before the finalizer lets the resource go."""
    await release_api_key(memo.runtime, memo.secrets, dict(body))


@kopf.on.resume(GROUP, VERSION, "oauthclients")
@kopf.on.create(GROUP, VERSION, "oauthclients")
@kopf.on.update(GROUP, VERSION, "oauthclients", field="spec")
@kopf.timer(GROUP, VERSION, "oauthclients", interval=RESYNC_SECONDS, idle=RESYNC_SECONDS)
async def oauth_client(body, meta, patch, memo, **_) -> None:
    await _reconcile(reconcile_oauth_client, body, meta, patch, memo)


@kopf.on.delete(GROUP, VERSION, "oauthclients")
async def oauth_client_deleted(body, memo, **_) -> None:
    await release_oauth_client(memo.runtime, dict(body))

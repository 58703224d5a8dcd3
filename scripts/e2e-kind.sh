#!/usr/bin/env bash
# End to end on kind (issue 6): a kind cluster, the image built with docker and loaded into
# it, the chart installed with the dev values (its own PostgreSQL, Redis and Secrets), the
# sample Tenant and ApiKey of examples/ applied and Ready, then the tests of tests/kind
# (pytest -m kind) run against it through KUBECONFIG: whoami, projects, an idempotent retry,
# revocation through the ApiKey resource, metrics scraped, scale-out and an upgrade under load
# (through scripts/kind-upgrade.sh). `make test-kind` runs this; so does
# .github/workflows/e2e-kind.yml.
#
# Needs docker (with a running engine), kind, helm 3, kubectl, and `make install` done (it
# runs .venv/bin/pytest). Arguments are passed on to pytest, e.g. `-k metrics -x`.
#
# Variables:
#   KIND_CLUSTER_NAME  the cluster (default strongroom-e2e); one of that name is reused
#   KEEP_CLUSTER=1     keep the cluster at the end (default: delete it, pass or fail)
#   KIND_NODE_IMAGE    kindest/node image for a new cluster (default: kind's own)
#   IMAGE              image to build and load (default strongroom:dev, as values-dev.yaml)
#   RELEASE            Helm release (default sr); NAMESPACE its namespace (default strongroom)
#   PYTEST             the pytest to run (default .venv/bin/pytest of this checkout)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER=${KIND_CLUSTER_NAME:-strongroom-e2e}
IMAGE=${IMAGE:-strongroom:dev}
RELEASE=${RELEASE:-sr}
NAMESPACE=${NAMESPACE:-strongroom}
PYTEST=${PYTEST:-$ROOT/.venv/bin/pytest}
CHART=$ROOT/charts/strongroom
TIMEOUT=10m

log() { printf '\n==> %s\n' "$*" >&2; }

missing=()
for tool in docker kind helm kubectl; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[[ -x $PYTEST ]] || missing+=("$PYTEST (run make install)")
if ((${#missing[@]})); then
  echo "e2e-kind: missing ${missing[*]}" >&2
  exit 2
fi
if [[ $IMAGE != *:* || ${IMAGE##*:} == */* ]]; then
  echo "e2e-kind: IMAGE needs a tag (repository:tag), not $IMAGE" >&2
  exit 2
fi

# The cluster's credentials go to a file of this run's own, never into ~/.kube/config.
WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/strongroom-e2e.XXXXXX")
export KUBECONFIG=$WORKDIR/kubeconfig

diagnostics() {
  log "diagnostics (the run failed)"
  kubectl get pods,services,jobs -A -o wide || true
  kubectl get tenants,apikeys -A -o wide || true
  kubectl describe pods -n "$NAMESPACE" || true
  for deployment in $(kubectl get deployments -n "$NAMESPACE" -o name 2>/dev/null); do
    echo "--- logs of $deployment" >&2
    kubectl logs -n "$NAMESPACE" "$deployment" --all-containers --tail=200 || true
  done
  kubectl get events -A --sort-by=.lastTimestamp | tail -n 60 || true
}

finish() {
  local status=$?
  trap - EXIT
  ((status == 0)) || diagnostics
  if [[ ${KEEP_CLUSTER:-0} == 1 ]]; then
    log "keeping cluster $CLUSTER: export KUBECONFIG=$KUBECONFIG (kind delete cluster --name $CLUSTER to remove it)"
  else
    log "deleting cluster $CLUSTER"
    kind delete cluster --name "$CLUSTER" || true
    rm -rf "$WORKDIR"
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  log "reusing kind cluster $CLUSTER"
  kind export kubeconfig --name "$CLUSTER" --kubeconfig "$KUBECONFIG"
  # Helm installs CRDs once and never upgrades them.
  kubectl apply -f "$CHART/crds/"
else
  log "creating kind cluster $CLUSTER"
  kind create cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG" --wait 180s \
    ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
fi

log "building $IMAGE"
docker build -t "$IMAGE" "$ROOT"
kind load docker-image "$IMAGE" --name "$CLUSTER"

# A release left by an earlier run (KEEP_CLUSTER=1) goes first, with the samples: the dev
# values make a new database and pepper on every install, so keys made before would be
# unknown to it. The operator is still running then, to release the samples' finalizers.
if helm status "$RELEASE" --namespace "$NAMESPACE" >/dev/null 2>&1; then
  log "removing the release $RELEASE an earlier run left"
  kubectl delete -f "$ROOT/examples/apikey.yaml" -f "$ROOT/examples/tenant.yaml" \
    --ignore-not-found --wait --timeout=120s || true
  helm uninstall "$RELEASE" --namespace "$NAMESPACE" --wait --timeout "$TIMEOUT"
fi

log "installing the chart as $RELEASE in $NAMESPACE with the dev values"
helm upgrade --install "$RELEASE" "$CHART" \
  --namespace "$NAMESPACE" --create-namespace \
  --values "$CHART/values-dev.yaml" \
  --set-string image.repository="${IMAGE%:*}" --set-string image.tag="${IMAGE##*:}" \
  --wait --timeout "$TIMEOUT"
kubectl rollout status deployment --namespace "$NAMESPACE" \
  --selector "app.kubernetes.io/instance=$RELEASE" --timeout=300s

log "applying the sample Tenant and ApiKey"
samples=(-f "$ROOT/examples/tenant.yaml" -f "$ROOT/examples/apikey.yaml")
kubectl apply "${samples[@]}"
kubectl wait --for=condition=Ready "${samples[@]}" --timeout=180s
# Ready: the operator has written the raw key into the Secret the ApiKey names.
secret=$(kubectl get -f "$ROOT/examples/apikey.yaml" \
  -o jsonpath='{.metadata.namespace}/{.status.secretName}')
kubectl get secret "${secret#*/}" --namespace "${secret%%/*}" -o name

log "running the kind tests"
cd "$ROOT"
# The upgrade and scale-out tests upgrade the release with scripts/kind-upgrade.sh.
export IMAGE RELEASE NAMESPACE CHART KIND_CLUSTER=$CLUSTER
STRONGROOM_E2E_RELEASE=$RELEASE STRONGROOM_E2E_NAMESPACE=$NAMESPACE \
  STRONGROOM_E2E_UPGRADE=$ROOT/scripts/kind-upgrade.sh \
  "$PYTEST" -m kind tests/kind "$@"

#!/bin/bash
# `make test-cluster`: what scripts/e2e-kind.sh does on kind, on a one-node Kubernetes v1.24
# made here from $CLUSTER_CACHE (`make cluster-cache`), without docker or kind:
#   up.sh      the node (network namespace, containerd, control plane, kubelet, kube-proxy, DNS)
#   images.sh  the image built from the working tree's Dockerfile, loaded with the cached ones
#   the chart with values-dev.yaml (helm-sdkpy), a hostPath volume for its blobs claim (there
#   is no dynamic provisioner), the sample Tenant and ApiKey of examples/, Ready
#   pytest -m kind tests/kind, against it through KUBECONFIG (arguments go to pytest)
#   down.sh    everything torn down, pass or fail (KEEP_CLUSTER=1 keeps the node up: then
#              `scripts/cluster/down.sh` when done)
# Without a complete cache it stops at once and says how to make one. Needs root, `make install`.
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
PYTEST="${PYTEST:-$ROOT/.venv/bin/pytest}"
"$HERE/check-cache.sh"
[ -x "$PYTEST" ] || { echo "test-cluster: $PYTEST missing: run make install" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "test-cluster: needs root (network namespace, containerd, cgroups)" >&2; exit 2; }
if [ -e "/run/netns/$NODE" ] || [ -d "$STATE/pids" ]; then
  log "a node is up already (an earlier KEEP_CLUSTER=1?): taking it down first"
  "$HERE/down.sh"
fi

diagnostics() {
  log "diagnostics (the run failed)"
  kubectl get nodes,pods,services,jobs,pvc -A -o wide
  kubectl get tenants,apikeys -A -o wide
  kubectl describe pods -n "$NAMESPACE" | grep -vE '^\s+(Mounts|/var/run|[a-z-]+ from)'
  for d in $(kubectl get deployments,jobs -n "$NAMESPACE" -o name 2>/dev/null); do
    echo "--- logs of $d" >&2; kubectl logs -n "$NAMESPACE" "$d" --all-containers --tail=100
  done
  kubectl get events -A --sort-by=.lastTimestamp | tail -n 40
  echo "node logs: $STATE/logs" >&2
}
finish() {
  local status=$?
  trap - EXIT
  ((status == 0)) || diagnostics
  if [ "${KEEP_CLUSTER:-0}" = 1 ]; then
    log "keeping the node: export KUBECONFIG=$KUBECONFIG; scripts/cluster/down.sh when done"
  else
    "$HERE/down.sh"
  fi
  log "test-cluster: $( ((status == 0)) && echo passed || echo "FAILED ($status)") in $(( $(date +%s)-t0 )) s"
  exit "$status"
}
t0=$(date +%s)
trap finish EXIT
trap 'exit 130' INT TERM

rm -rf "$STATE/logs"   # the last run's, kept by down.sh until now
"$HERE/up.sh"
"$HERE/images.sh"

log "the chart as $RELEASE in $NAMESPACE with values-dev.yaml"
# kind's local-path provisioner has no counterpart here: a hostPath volume for the blobs claim,
# owned by the image's user
BLOBS="$STATE/node/pv-blobs"; mkdir -p "$BLOBS"
chown "$(awk -F'[ :]' '/^USER/{print $2; exit}' "$ROOT/Dockerfile")" "$BLOBS"
kubectl apply -f - <<Y
apiVersion: v1
kind: PersistentVolume
metadata: {name: $APP-blobs}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: $BLOBS, type: Directory}
Y
"$CACHE/helm/bin/python" "$HERE/deploy.py" "$CHART_DIR" "$KUBECONFIG" "$NAMESPACE" "$RELEASE" \
  "${IMAGE%:*}" "${IMAGE##*:}" 600
kubectl rollout status deployment -n "$NAMESPACE" --selector "app.kubernetes.io/instance=$RELEASE" --timeout=300s

log "the sample Tenant and ApiKey"
samples=(-f "$ROOT/examples/tenant.yaml" -f "$ROOT/examples/apikey.yaml")
kubectl apply "${samples[@]}"
kubectl wait --for=condition=Ready "${samples[@]}" --timeout=180s

log "pytest -m kind tests/kind"
cd "$ROOT"
env "${ENV_PREFIX}_E2E_RELEASE=$RELEASE" "${ENV_PREFIX}_E2E_NAMESPACE=$NAMESPACE" \
  "${ENV_PREFIX}_E2E_UPGRADE=$HERE/upgrade.sh" "${ENV_PREFIX}_E2E_LOGS=$STATE/logs/pods" "$PYTEST" -m kind tests/kind -p no:cacheprovider -rP "$@"

#!/bin/bash
# A bare Kubernetes API server (v1.24: etcd + kube-apiserver, no nodes, no controllers) on
# loopback, for running the operator against a real API server (shared notes:
# real-apiserver.md). Needs Debian's etcd-server and a kube-apiserver binary: KUBE_APISERVER,
# default the cluster cache's (`make cluster-cache` builds it: bin/kube-apiserver).
# State (certificates, etcd data, logs, PIDs) in STATE (default /tmp/strongroom-apiserver);
# writes $STATE/admin.kubeconfig and applies crds/. Stop with scripts/apiserver/down.sh.
#   PORT (16443) the API server's, ETCD_PORT (23790) etcd's client port (+10: its peer port).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE="${STATE:-/tmp/strongroom-apiserver}"
PORT="${PORT:-16443}"
ETCD_PORT="${ETCD_PORT:-23790}"
KUBE_APISERVER="${KUBE_APISERVER:-${XDG_CACHE_HOME:-$HOME/.cache}/strongroom-cluster/bin/kube-apiserver}"
[ -x "$KUBE_APISERVER" ] || { echo "no kube-apiserver at $KUBE_APISERVER (make cluster-cache, or set KUBE_APISERVER)" >&2; exit 1; }
command -v etcd >/dev/null || { echo "no etcd: apt-get install etcd-server" >&2; exit 1; }
P="$STATE/pki"; mkdir -p "$P" "$STATE/etcd" "$STATE/logs"; chmod 700 "$STATE/etcd"

if [ ! -f "$P/admin.crt" ]; then  # a CA, the serving cert, an admin client cert, the SA keys
  ( cd "$P"
    openssl genrsa -out ca.key 2048 2>/dev/null
    openssl req -x509 -new -key ca.key -subj /CN=strongroom-test-ca -days 30 -out ca.crt
    cert() {  # name subject [SANs]
      openssl genrsa -out "$1.key" 2048 2>/dev/null
      openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
      { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
        if [ -n "${3:-}" ]; then echo "extendedKeyUsage=serverAuth"; echo "subjectAltName=$3"
        else echo "extendedKeyUsage=clientAuth"; fi; } > "$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
        -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    }
    cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc"
    cert admin "/CN=admin/O=system:masters"
    openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null )
fi
cat > "$STATE/admin.kubeconfig" <<K
apiVersion: v1
kind: Config
clusters: [{name: bare, cluster: {server: "https://127.0.0.1:$PORT", certificate-authority: $P/ca.crt}}]
users: [{name: admin, user: {client-certificate: $P/admin.crt, client-key: $P/admin.key}}]
contexts: [{name: bare, context: {cluster: bare, user: admin}}]
current-context: bare
K

etcd --name bare --data-dir "$STATE/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
  --initial-cluster "bare=http://127.0.0.1:$((ETCD_PORT + 10))" \
  > "$STATE/logs/etcd.log" 2>&1 &
echo $! > "$STATE/etcd.pid"

"$KUBE_APISERVER" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --secure-port "$PORT" --advertise-address 127.0.0.1 \
  --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
  --client-ca-file "$P/ca.crt" \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
  --authorization-mode Node,RBAC --service-cluster-ip-range 10.96.0.0/16 \
  --endpoint-reconciler-type none \
  --enable-admission-plugins NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,ResourceQuota,NodeRestriction,OwnerReferencesPermissionEnforcement,MutatingAdmissionWebhook,ValidatingAdmissionWebhook \
  > "$STATE/logs/kube-apiserver.log" 2>&1 &
echo $! > "$STATE/kube-apiserver.pid"

export KUBECONFIG="$STATE/admin.kubeconfig"
t0=$(date +%s)
until kubectl get --raw /readyz >/dev/null 2>&1; do
  sleep 1
  if [ $(( $(date +%s) - t0 )) -gt 300 ]; then echo "the API server is not ready after 300 s: $STATE/logs" >&2; exit 1; fi
done
echo "API server ready after $(( $(date +%s) - t0 )) s: KUBECONFIG=$KUBECONFIG"
until kubectl get namespace default >/dev/null 2>&1; do sleep 1; done
kubectl apply -f "$ROOT/crds/" >/dev/null
kubectl wait --for condition=established --timeout=120s crd --all >/dev/null
echo "crds/ applied"

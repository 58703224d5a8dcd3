#!/bin/bash
# The node's certificates (openssl, valid 2 days: made anew by every `up.sh`): a CA; the API
# server's serving cert; client certs for admin (system:masters), the kubelet
# (system:node:$NODE), controller-manager, scheduler, kube-proxy and the API server's kubelet
# client; the service-account key pair; a kubeconfig for each client.
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
P="$STATE/pki"; rm -rf "$P"; mkdir -p "$P"; cd "$P"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -subj "/CN=$APP-node-ca" -days 2 -out ca.crt 2>/dev/null
cert() { # name CN O [SANs]
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -subj "/CN=$2${3:+/O=$3}" -out "$1.csr" 2>/dev/null
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
    if [ -n "$4" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$4"
    else echo "extendedKeyUsage=clientAuth"; fi; } > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
cert apiserver kube-apiserver "" "IP:$NODE_IP,IP:127.0.0.1,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
cert admin node-admin system:masters
cert apiserver-kubelet kube-apiserver-kubelet-client system:masters
cert kubelet "system:node:$NODE" system:nodes
cert kcm system:kube-controller-manager
cert scheduler system:kube-scheduler
cert proxy system:kube-proxy
openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
for user in admin kubelet kcm scheduler proxy; do
  cat > "$user.kubeconfig" <<K
apiVersion: v1
kind: Config
clusters: [{name: $NODE, cluster: {server: "https://$NODE_IP:$APISERVER_PORT", certificate-authority: $P/ca.crt}}]
users: [{name: $user, user: {client-certificate: $P/$user.crt, client-key: $P/$user.key}}]
contexts: [{name: $NODE, context: {cluster: $NODE, user: $user}}]
current-context: $NODE
K
done

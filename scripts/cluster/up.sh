#!/bin/bash
# Bring up a one-node Kubernetes v1.24 from $CLUSTER_CACHE, kind-like but without docker.
# Everything runs in network namespace $NODE, joined to the host by a veth pair (host
# $HOST_IP/30 <-> node $NODE_IP/30): containerd (runc, overlayfs, CNI bridge 10.244.0.0/24),
# etcd, kube-apiserver, controller-manager, scheduler, kubelet, kube-proxy (iptables: only the
# namespace's) and dnsmasq for cluster.local names. The host's iptables and sysctls are never
# touched; with the host's ip_forward=0 nothing from a pod leaves the machine. Processes are
# started with `nsenter --net` (not `ip netns exec`, whose own mount namespace would hide the
# kubelet's volume mounts from runc). State under $STATE, sockets under $RUN; PIDs in
# $STATE/pids for down.sh. About 15 s.
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$HERE/check-cache.sh"
B="$CACHE/bin"; P="$STATE/pki"; N="$STATE/node"; L="$STATE/logs"; E="$STATE/etc"
mkdir -p "$N" "$L" "$E/cni" "$STATE/pids" "$STATE/dns" "$RUN"
storage_conf
"$HERE/pki.sh"

# --- configuration
cat > "$E/containerd.toml" <<T
# the node's own containerd: its own root, state and socket (nothing in /var/lib or /run/containerd);
# its root outlives down.sh, so the images stay imported (about 90 s a run)
version = 2
root = "$STATE/containerd"
state = "$RUN/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$RUN/containerd.sock"
[ttrpc]
  address = "$RUN/containerd.sock.ttrpc"
[debug]
  address = "$RUN/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "18910"
  enable_selinux = false
  # required on these VMs: a negative oom_score_adj is refused even to root, and without this
  # every RunPodSandbox fails with "can't get final child's PID from pipe: EOF"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$E/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
T
cat > "$E/cni/10-pods.conflist" <<T
{"cniVersion": "0.4.0", "name": "pods", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24", "gateway": "10.244.0.1"}]],
            "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$RUN/cni-ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
T
echo "# no upstream resolver: cluster names only, answered by the node's dnsmasq" > "$E/pod-resolv.conf"
cat > "$E/kubelet.yaml" <<T
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 18950
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 18948
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $P/ca.crt}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: /$NODE
cgroupsPerQOS: true
clusterDomain: cluster.local
clusterDNS: [$NODE_IP]
resolvConf: $E/pod-resolv.conf
failSwapOn: false
protectKernelDefaults: false
makeIPTablesUtilChains: true
serializeImagePulls: false
evictionHard: {memory.available: "200Mi", nodefs.available: "2%", imagefs.available: "2%"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
maxPods: 50
containerLogMaxSize: 5Mi
T
cat > "$E/kube-proxy.yaml" <<T
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $P/proxy.kubeconfig}
mode: iptables
clusterCIDR: 10.244.0.0/24
bindAddress: $NODE_IP
hostnameOverride: $NODE
healthzBindAddress: 127.0.0.1:18956
metricsBindAddress: 127.0.0.1:18949
# zeros: leave the machine-wide conntrack sysctls alone
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
T

# --- network namespace and veth
if [ ! -e "/run/netns/$NODE" ]; then
  ip netns add "$NODE"
  ip link add knh0 type veth peer name knn0
  ip link set knn0 netns "$NODE"
  ip addr add "$HOST_IP/30" dev knh0; ip link set knh0 up
  ip -n "$NODE" addr add "$NODE_IP/30" dev knn0
  ip -n "$NODE" link set knn0 up; ip -n "$NODE" link set lo up
  ip -n "$NODE" route add default via "$HOST_IP"
  ip netns exec "$NODE" sysctl -qw net.ipv4.ip_forward=1   # the namespace's own, not the host's
fi

NS=(nsenter "--net=/run/netns/$NODE")
start() { # name command...: in the node's namespace, in the background, PID recorded
  local name=$1; shift
  if [ -f "$STATE/pids/$name.pid" ] && kill -0 "$(cat "$STATE/pids/$name.pid")" 2>/dev/null; then
    echo "$name already running"; return; fi
  nohup "${NS[@]}" "$@" > "$L/$name.log" 2>&1 &
  echo $! > "$STATE/pids/$name.pid"
}
start containerd containerd --config "$E/containerd.toml"
start etcd etcd --name node --data-dir "$N/etcd" --listen-client-urls http://127.0.0.1:18979 \
  --advertise-client-urls http://127.0.0.1:18979 --listen-peer-urls http://127.0.0.1:18980 \
  --initial-advertise-peer-urls http://127.0.0.1:18980 --initial-cluster node=http://127.0.0.1:18980
start apiserver "$B/kube-apiserver" --etcd-servers=http://127.0.0.1:18979 \
  --bind-address="$NODE_IP" --secure-port="$APISERVER_PORT" --advertise-address="$NODE_IP" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
  --kubelet-client-certificate="$P/apiserver-kubelet.crt" --kubelet-client-key="$P/apiserver-kubelet.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement \
  --allow-privileged=true --profiling=false
for _ in $(seq 1 120); do kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 1; done
kubectl get --raw /readyz >/dev/null || { tail -20 "$L/apiserver.log" >&2; exit 1; }
log "apiserver ready"
start kcm "$B/kube-controller-manager" --kubeconfig="$P/kcm.kubeconfig" \
  --authentication-kubeconfig="$P/kcm.kubeconfig" --authorization-kubeconfig="$P/kcm.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=18957 --leader-elect=false \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --use-service-account-credentials=true --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --controllers='*,-cloud-node-lifecycle,-route,-service,-nodeipam'
start scheduler "$B/kube-scheduler" --kubeconfig="$P/scheduler.kubeconfig" \
  --authentication-kubeconfig="$P/scheduler.kubeconfig" --authorization-kubeconfig="$P/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=18959 --leader-elect=false
# the kubelet's cgroupRoot must exist in every cgroup v1 hierarchy (cpuset seeded from its parent)
for h in /sys/fs/cgroup/*/; do case $h in */unified/) continue;; esac; mkdir -p "${h}$NODE"; done
cat /sys/fs/cgroup/cpuset/cpuset.cpus > "/sys/fs/cgroup/cpuset/$NODE/cpuset.cpus"
cat /sys/fs/cgroup/cpuset/cpuset.mems > "/sys/fs/cgroup/cpuset/$NODE/cpuset.mems"
mkdir -p "$N/kubelet"
start kubelet "$B/kubelet" --config="$E/kubelet.yaml" --kubeconfig="$P/kubelet.kubeconfig" \
  --container-runtime=remote --container-runtime-endpoint="unix://$RUN/containerd.sock" \
  --node-ip="$NODE_IP" --hostname-override="$NODE" --root-dir="$N/kubelet" --cert-dir="$N/kubelet/pki" --v=1
start proxy "$B/kube-proxy" --config="$E/kube-proxy.yaml"
touch "$STATE/dns/hosts"
start dnsmasq dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
  --addn-hosts="$STATE/dns/hosts" --listen-address="$NODE_IP" --bind-interfaces --local=/cluster.local/ \
  --pid-file="$RUN/dnsmasq.pid" --user=root --log-facility=-
start dns-sync "$HERE/dns-sync.sh"
for _ in $(seq 1 180); do
  [ "$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
  sleep 1
done
kubectl get nodes -o wide
[ "$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] \
  || { echo "node $NODE not Ready: logs in $L" >&2; exit 1; }
log "node Ready: export KUBECONFIG=$KUBECONFIG"

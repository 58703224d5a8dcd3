#!/bin/bash
# Tear down what up.sh made, whatever state it is in: the pods (through the kubelet, which
# removes their network namespaces and CNI state), then the processes by their recorded PIDs,
# this containerd's shims and containers, mounts under the node's directories, the kubelet's
# cgroups, the network namespace and veth, the kubelet's log directories, and the node's state.
# What stays: the cache, state/buildah (the image build's layer cache), state/containerd (the
# images imported into the node's containerd; its containers are gone) and state/logs (the
# last run's logs, for a look after a failure); CLEAN=1 removes the first two as well. Safe to
# run twice.
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
set +e
stop() { # name [seconds]: SIGTERM, then SIGKILL after that many seconds
  local f="$STATE/pids/$1.pid" p
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if kill -0 "$p" 2>/dev/null; then
    kill "$p"
    for _ in $(seq 1 "${2:-20}"); do kill -0 "$p" 2>/dev/null || break; sleep 1; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p"
  fi
  rm -f "$f"
}
running() { [ -f "$STATE/pids/$1.pid" ] && kill -0 "$(cat "$STATE/pids/$1.pid")" 2>/dev/null; }

# 1. pods, through the kubelet while it runs
if running kubelet && kubectl get --raw /readyz >/dev/null 2>&1; then
  kubectl get ns -o name | grep -vE '^namespace/(default|kube-system|kube-public|kube-node-lease)$' \
    | xargs -r kubectl delete --wait=false >/dev/null 2>&1
  kubectl delete pods -A --all --grace-period=1 --wait=false >/dev/null 2>&1
  for _ in $(seq 1 45); do
    [ -z "$($CTR tasks ls -q 2>/dev/null)" ] && break
    sleep 2
  done
fi
stop dns-sync 5; stop dnsmasq 5; stop proxy; stop kubelet

# 2. whatever is left in containerd: kill the tasks, note their pod network namespaces
NETNS=""
if running containerd; then
  for c in $($CTR containers ls -q 2>/dev/null); do
    n=$($CTR containers info "$c" 2>/dev/null | python3 -c '
import json, sys
try:
    for ns in json.load(sys.stdin)["Spec"]["linux"]["namespaces"]:
        if ns["type"] == "network" and ns.get("path", "").startswith("/var/run/netns/cni-"):
            print(ns["path"])
except Exception:
    pass')
    NETNS="$NETNS $n"
    $CTR tasks kill -s KILL "$c" >/dev/null 2>&1; sleep 0.2
    $CTR tasks rm -f "$c" >/dev/null 2>&1; $CTR containers rm "$c" >/dev/null 2>&1
  done
fi
# the API server takes a minute to stop while watches stay open; its state goes anyway
stop scheduler 5; stop kcm 5; stop apiserver 5; stop etcd 10; stop containerd
# shims of this containerd only (matched by its socket), by PID
for p in $(pgrep -f "containerd-shim.*-address $RUN/containerd.sock"); do kill -9 "$p"; done

# 3. mounts: the pods' network namespaces, then everything under this node's directories
for n in $NETNS; do umount "$n" 2>/dev/null; rm -f "$n"; done
buildah rm --all >/dev/null 2>&1
awk '{print $5}' /proc/self/mountinfo | grep -E "^($STATE/node|$STATE/containerd|$RUN)" | sort -r \
  | while read -r m; do umount -l "$m"; done

# 4. cgroups made by the kubelet (cgroupRoot /$NODE): rmdir removes only empty ones
for h in /sys/fs/cgroup/*/; do
  [ -d "$h$NODE" ] && find "$h$NODE" -depth -type d -exec rmdir {} \; 2>/dev/null
done

# 5. network
ip netns del "$NODE" 2>/dev/null
ip link del knh0 2>/dev/null
# the first `ip netns add` bind-mounts /run/netns onto itself: undo that once it is empty
mountpoint -q /run/netns && [ -z "$(ls -A /run/netns)" ] && umount /run/netns

# 6. the kubelet's fixed log directories (it made them), and the node's state
rm -rf /var/log/pods /var/log/containers
rm -rf "${STATE:?}"/{node,pki,pids,dns,etc,image-tars} "${RUN:?}"
if [ "${CLEAN:-0}" = 1 ]; then buildah rmi --all >/dev/null 2>&1; rm -rf "$STATE/containerd" "$STATE/buildah" "$RUN-buildah"; fi
left=$(pgrep -f "$CACHE/bin/|$STATE/|$RUN/" | tr '\n' ' ')
[ -z "$left" ] || echo "down: processes still running: $left" >&2
log "down: done"

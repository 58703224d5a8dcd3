#!/bin/bash
# Is $CLUSTER_CACHE complete? Exit 0 if so; otherwise say what is missing and how to make it.
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
missing=()
[ -x "$CACHE/bin/kube-all" ] || missing+=("bin/kube-all")
for t in base pause $(dev_images | cut -d' ' -f1); do [ -f "$CACHE/images/$t.tar" ] || missing+=("images/$t.tar"); done
[ -f "$CACHE/helm/.ready" ] || missing+=("helm/ (helm-sdkpy)")
for tool in containerd runc etcd buildah dnsmasq ctr kubectl iptables nsenter; do
  command -v "$tool" >/dev/null || missing+=("the command $tool")
done
[ -x /usr/lib/cni/bridge ] || missing+=("/usr/lib/cni (containernetworking-plugins)")
if ((${#missing[@]})); then
  echo "no complete cluster cache in CLUSTER_CACHE=$CACHE: missing ${missing[*]}." >&2
  echo "Make one first (as root on Debian 12; 10-40 min, see docs/development.md):" >&2
  echo "    make cluster-cache LITEKUBE_GIT=<bare git dir of github.com/kubegc/liteKube>" >&2
  exit 2
fi

#!/bin/bash
# Cluster DNS without CoreDNS (neither Debian nor PyPI ships it): keeps dnsmasq's hosts file
# equal to the cluster's Services (<name>.<namespace>.svc.cluster.local -> ClusterIP), every
# 2 s, and tells dnsmasq to reread it. up.sh starts it; Service names only (no pod, SRV records).
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
set +e
H="$STATE/dns/hosts"
while true; do
  kubectl get svc -A -o jsonpath='{range .items[?(@.spec.clusterIP!="None")]}{.spec.clusterIP} {.metadata.name}.{.metadata.namespace}.svc.cluster.local{"\n"}{end}' \
    > "$H.new" 2>/dev/null
  if [ -s "$H.new" ] && ! cmp -s "$H.new" "$H"; then
    mv "$H.new" "$H"; kill -HUP "$(cat "$STATE/pids/dnsmasq.pid")" 2>/dev/null
  fi
  sleep 2
done

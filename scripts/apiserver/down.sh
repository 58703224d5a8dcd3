#!/bin/bash
# Stop what scripts/apiserver/up.sh started (by the PIDs it wrote); KEEP=1 keeps $STATE.
set -u
STATE="${STATE:-/tmp/strongroom-apiserver}"
for name in kube-apiserver etcd; do  # kill -9: the API server takes ~1 min on SIGTERM with watches open
  if [ -f "$STATE/$name.pid" ]; then kill -9 "$(cat "$STATE/$name.pid")" 2>/dev/null; rm -f "$STATE/$name.pid"; fi
done
[ "${KEEP:-}" = 1 ] || rm -rf "$STATE"

#!/bin/bash
# The upgrade tests/kind makes (their STRONGROOM_E2E_UPGRADE): the release upgraded to the
# image test-cluster.sh built, under tag $TAG (made here in containerd when missing: the same
# build under another name, so every pod is replaced), as `helm upgrade --wait` does it:
# migrations first (the chart's pre-upgrade hook), then the rolling update; returns once every
# Deployment is rolled out. VALUES (JSON) goes over values-dev.yaml, e.g.
# VALUES='{"api": {"replicas": 2}}'.
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
TAG="${TAG:?the image tag to upgrade to}"
$CTR images tag --force "$IMAGE" "${IMAGE%:*}:$TAG" >/dev/null
"$CACHE/helm/bin/python" "$HERE/deploy.py" "$CHART_DIR" "$KUBECONFIG" "$NAMESPACE" "$RELEASE" \
  "${IMAGE%:*}" "$TAG" 600
kubectl rollout status deployment -n "$NAMESPACE" --selector "app.kubernetes.io/instance=$RELEASE" --timeout=300s

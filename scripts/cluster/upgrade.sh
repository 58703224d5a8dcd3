#!/bin/bash
# The upgrade tests/kind/test_upgrade.py makes (its STRONGROOM_E2E_UPGRADE): the release
# upgraded to the image under tag $TAG (default `upgrade`: test-cluster.sh tags the image it
# built so), as `helm upgrade --wait` does it: migrations first (the
# chart's pre-upgrade hook), then the rolling update; returns once every Deployment is rolled out.
# VALUES (JSON) goes over values-dev.yaml, e.g. VALUES='{"api": {"replicas": 2}}'.
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
TAG="${TAG:-upgrade}"
"$CACHE/helm/bin/python" "$HERE/deploy.py" "$CHART_DIR" "$KUBECONFIG" "$NAMESPACE" "$RELEASE" \
  "${IMAGE%:*}" "$TAG" 600
kubectl rollout status deployment -n "$NAMESPACE" --selector "app.kubernetes.io/instance=$RELEASE" --timeout=300s

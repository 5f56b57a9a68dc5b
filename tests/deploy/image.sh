#!/usr/bin/env bash
# Checks deploy/Dockerfile's runtime stage as far as these machines allow: no image registry is
# reachable and containers cannot run here (crun cannot set rlimits), so the test makes its own
# Debian base image with debootstrap (Debian's packages are reachable), builds the runtime stage
# with podman (`--isolation chroot`, Docker format so the health check is kept) around a binary built on the host (BINARY_STAGE=prebuilt),
# checks the image's configuration (non-root user, /data volume, port, health check, CA
# certificates), then mounts the image and runs the binary from its root filesystem on loopback
# until /readyz answers. The builder stage (rust:1.95-bookworm) is not built here.
#
#   tests/deploy/image.sh <switchyard binary>
set -euo pipefail
bin=$(realpath "${1:?usage: image.sh <switchyard binary>}")
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=${SWITCHYARD_TOOLS:-$HOME/.cache/switchyard-tools}
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then
  printf '\n*** SKIPPED: the container image check needs root here (debootstrap, podman image mount). ***\n\n' >&2
  exit 0
fi
for tool in podman debootstrap; do
  if ! command -v "$tool" >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing $tool from Debian packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$tool" >/dev/null
  fi
  command -v "$tool" >/dev/null || die "$tool not found: apt-get install podman debootstrap"
done

base=localhost/switchyard-test-base:bookworm
image=localhost/switchyard:test-$$
if ! podman image exists "$base"; then
  rootfs=$tools/rootfs-bookworm
  if [ ! -x "$rootfs/bin/bash" ]; then
    echo "debootstrap: a minimal Debian bookworm into $rootfs"
    rm -rf "$rootfs.tmp"
    debootstrap --variant=minbase bookworm "$rootfs.tmp" http://deb.debian.org/debian >/dev/null \
      || die "debootstrap failed (is deb.debian.org reachable?)"
    mv "$rootfs.tmp" "$rootfs"
  fi
  tar -C "$rootfs" -c . | podman import -q - "$base" >/dev/null
fi

work=$(mktemp -d /tmp/switchyard-image.XXXXXX)
gw_pid=
mounted=
cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
  [ -n "$mounted" ] && podman image unmount "$image" >/dev/null 2>&1
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/context" && cp "$bin" "$work/context/switchyard"
echo "podman build: the runtime stage on $base with the host's binary"
podman build -q --format docker --isolation chroot -f "$root/deploy/Dockerfile" --target runtime \
  --build-arg RUNTIME_BASE="$base" --build-arg BINARY_STAGE=prebuilt -t "$image" "$work/context" >/dev/null \
  || die "podman build of the runtime stage failed"

check() { if eval "$2"; then echo "ok: $1"; else die "$1"; fi; }
cfg=$(podman image inspect "$image" --format '{{json .Config}}')
field() { python3 -c "import json,sys; c=json.loads(sys.argv[1]); print(json.dumps(c.get(sys.argv[2])))" "$cfg" "$1"; }
check "runs as a non-root user (10001)" '[ "$(field User)" = "\"10001:10001\"" ]'
check "exposes 8787/tcp" 'field ExposedPorts | grep -q "8787/tcp"'
check "declares the /data volume" 'field Volumes | grep -q "\"/data\""'
check "has a health check on /healthz" 'podman image inspect "$image" --format "{{json .HealthCheck}}" | grep -q healthz'
check "starts the gateway" 'field Entrypoint | grep -q /usr/local/bin/switchyard'

mnt=$(podman image mount "$image") && mounted=1
check "carries CA certificates" '[ -s "$mnt/etc/ssl/certs/ca-certificates.crt" ]'
check "has the switchyard user" 'grep -q "^switchyard:x:10001:" "$mnt/etc/passwd"'
check "the binary in the image is the one built" 'cmp -s "$mnt/usr/local/bin/switchyard" "$bin"'

"$mnt/usr/local/bin/switchyard" serve --listen 127.0.0.1:0 --data-dir "$work/data" >"$work/out" 2>"$work/err" &
gw_pid=$!
base_url=
for _ in $(seq 100); do
  base_url=$(sed -n 's/^switchyard ready: listening on //p' "$work/out")
  [ -n "$base_url" ] && break
  sleep 0.1
done
[ -n "$base_url" ] || { cat "$work/err" >&2; die "the binary from the image did not start"; }
ready=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1] + '/readyz', timeout=5).read().decode().strip())" "$base_url")
check "the binary from the image's root filesystem answers /readyz ($base_url)" '[ "$ready" = ready ]'

#!/usr/bin/env bash
# Builds and runs sluice's images with podman where no public registry is reachable, and holds every
# quirk of such hosts in one place. Usage (from anywhere; as root when something must be installed):
#
#   deploy/podman.sh image            build the sluice image; prints its name (deno task image)
#   deploy/podman.sh images           build the sluice and the PostgreSQL image
#   deploy/podman.sh run ARGS...      podman run --network=host ARGS... (e.g. IMAGE funnel)
#   deploy/podman.sh compose ARGS...  podman-compose -f deploy/compose.yaml ARGS... (`up` builds first)
#   deploy/podman.sh podman ARGS...   any podman command, with the host settings below
#   deploy/podman.sh check            exits 0 when podman and podman-compose can run here, else says why
#
# Inputs that a public registry would give (debian:bookworm-slim, the Deno binary) are made from
# Debian's packages (debootstrap --variant=minbase) and the npm registry (the Deno pinned in
# tools/deno) and kept as local images, so a rebuild reuses them and every cached layer.
#
# Host quirks, seen on our machines (cgroup v1 in hybrid mode, no systemd as PID 1, a hard limit
# of 20,000 open files):
#   - Debian's default runtime (crun) fails to start containers: runc is used instead;
#   - no systemd to manage cgroups: cgroupfs;
#   - podman asks for 1,048,576 open files per container, more than the hard limit allows, and runc
#     then fails with "error setting rlimits": the container gets the host's hard limits instead
#     (nproc at most 4096);
#   - no systemd either to run health checks on a timer: podman logs "unable to get systemd
#     connection" at each container start and stop, harmless; `podman healthcheck run NAME` checks;
#   - egress that needs extra roots: the host's CA bundle is handed to the build (DENO_CERT) so the
#     npm packages download inside it.
# These go into a containers.conf of our own (CONTAINERS_CONF), so podman-compose's podman calls
# get them too. Override the image names with SLUICE_IMAGE, SLUICE_PG_IMAGE, SLUICE_BASE_IMAGE and
# SLUICE_DENO_IMAGE.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deno_version=$(sed -n 's/^DENO_VERSION=//p' "$root/tools/deno")
sluice_version=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$root/deno.json" | head -n1)
image=${SLUICE_IMAGE:-localhost/sluice:$sluice_version}
# compose.yaml's default name for the image, so it needs no version of its own.
latest=${SLUICE_IMAGE:-localhost/sluice:latest}
pg_image=${SLUICE_PG_IMAGE:-localhost/sluice-postgres:15}
base_image=${SLUICE_BASE_IMAGE:-localhost/sluice-base:bookworm}
deno_image=${SLUICE_DENO_IMAGE:-localhost/sluice-deno:$deno_version}
export SLUICE_IMAGE=$image SLUICE_PG_IMAGE=$pg_image

say() { echo "podman.sh: $*" >&2; }

# --- host settings ---------------------------------------------------------------------------
host_settings() {
  local conf=${TMPDIR:-/tmp}/sluice-containers-$(id -u).conf nofile nproc
  nofile=$(ulimit -Hn)
  [ "$nofile" = unlimited ] || [ "$nofile" -gt 1048576 ] && nofile=1048576
  nproc=$(ulimit -Hu)
  [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ] && nproc=4096
  {
    echo "[containers]"
    echo "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
    echo "[engine]"
    if command -v runc >/dev/null 2>&1; then echo 'runtime = "runc"'; fi
    if [ ! -d /run/systemd/system ]; then echo 'cgroup_manager = "cgroupfs"'; fi
  } >"$conf.new"
  mv "$conf.new" "$conf"
  export CONTAINERS_CONF=$conf
}

# --- tools from Debian's packages ---------------------------------------------------------------
apt_updated=""
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    say "cannot install $* (not root): install them with apt-get and run again"
    return 1
  fi
  if [ -z "$apt_updated" ]; then apt-get update -qq >&2; apt_updated=1; fi
  say "installing $* from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

need_tools() {
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
}

# --- base inputs --------------------------------------------------------------------------------
has_image() { podman image exists "$1"; }

# Debian 12 minbase, imported as the build base (what debian:bookworm-slim is elsewhere).
base() {
  has_image "$base_image" && return 0
  need_tools debootstrap
  local dir mirror
  dir=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-base.XXXXXX")
  # The host's own Debian mirror, when it names one.
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
    grep -v security | head -n1 || true)
  say "debootstrap --variant=minbase bookworm (about a minute)"
  debootstrap --variant=minbase bookworm "$dir/rootfs" ${mirror:+"$mirror"} >"$dir/log" 2>&1 ||
    { tail -n 20 "$dir/log" >&2; rm -rf "$dir"; return 1; }
  rm -rf "$dir/rootfs"/var/cache/apt/archives/*.deb "$dir/rootfs"/var/lib/apt/lists/* \
    "$dir/rootfs"/usr/share/doc "$dir/rootfs"/usr/share/man "$dir/rootfs"/usr/share/locale
  tar -C "$dir/rootfs" -c --numeric-owner . | podman import -q - "$base_image" >/dev/null
  rm -rf "$dir"
}

# The pinned Deno from the npm registry, as an image holding /deno (as denoland/deno:bin does).
deno_bin() {
  has_image "$deno_image" && return 0
  local dir bin arch
  dir=$(mktemp -d "${TMPDIR:-/var/tmp}/sluice-deno.XXXXXX")
  bin=$(command -v deno || true)
  if [ -n "$bin" ] && [ "$("$bin" --version | head -n1 | cut -d' ' -f2)" = "$deno_version" ]; then
    cp "$(readlink -f "$bin")" "$dir/deno"
  else
    case "$(uname -m)" in
      x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) say "no Deno package for $(uname -m)"; return 1 ;;
    esac
    (cd "$dir" && npm pack -q "@deno/linux-$arch-glibc@$deno_version" >/dev/null &&
      tar -xzf ./*.tgz && mv package/deno deno)
  fi
  tar -C "$dir" -c --numeric-owner deno | podman import -q - "$deno_image" >/dev/null
  rm -rf "$dir"
}

# --- builds -------------------------------------------------------------------------------------
build() { # build <Dockerfile> <image> [<another name>]
  local file=$1 name=$2 args=(-t "$2")
  if [ -n "${3:-}" ]; then args+=(-t "$3"); fi
  local ca=${DENO_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
  if [ -f "$ca" ]; then args+=(-v "$ca:/run/host-ca.crt:ro" --build-arg DENO_CERT=/run/host-ca.crt); fi
  local start=$SECONDS
  if ! podman build -q --network=host "${args[@]}" --build-arg "BASE=$base_image" \
    --build-arg "DENO_IMAGE=$deno_image" -f "$root/$file" "$root" >/dev/null; then
    say "building $name from $file failed"
    return 1
  fi
  say "built $name in $((SECONDS - start)) s ($(podman image inspect -f '{{.Size}}' "$name" |
    awk '{printf "%.0f MB", $1 / 1e6}'))"
}

image() {
  need_tools
  base
  deno_bin
  build deploy/Dockerfile "$image" "$latest"
}

pg_image() {
  need_tools
  base
  build deploy/postgres.Dockerfile "$pg_image"
}

check() {
  local tool
  for tool in podman runc podman-compose; do
    command -v "$tool" >/dev/null 2>&1 || { echo "$tool is not installed"; return 1; }
  done
  podman info >/dev/null 2>&1 || { echo "podman info fails: $(podman info 2>&1 | tail -n1)"; return 1; }
}

host_settings
command=${1:-image}
[ $# -gt 0 ] && shift
case "$command" in
  image) image && echo "$image" ;;
  images) image && pg_image && echo "$image" && echo "$pg_image" ;;
  run) need_tools && exec podman run --network=host "$@" ;;
  compose)
    need_tools podman-compose
    # Images first for `up` (a rebuild is cached: seconds).
    for arg in "$@"; do
      if [ "$arg" = up ]; then image >/dev/null && pg_image && break; fi
    done
    exec podman-compose -f "$root/deploy/compose.yaml" "$@"
    ;;
  podman) exec podman "$@" ;;
  check) check ;;
  *)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac

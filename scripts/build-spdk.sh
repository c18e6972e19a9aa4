#!/usr/bin/env bash
# scripts/build-spdk.sh [--force] [--print-dir]
# Builds (or restores from the cache) SPDK v24.01's spdk_tgt, spdk_nvme_perf and rpc.py: the
# real JSON-RPC peer of the `spdk` test tier (tests/tests/spdk). v24.01 is the SPDK line that
# DOCA SNAP 4 is built on.
#
# Source: ../shared/third_party/spdk-v24.01.tar.gz when present (unmodified, with its ISA-L
# submodules), otherwise `git clone --branch v24.01` of SPDK with those two submodules.
# DPDK comes from Debian's libdpdk-dev (22.11). Two adjustments, both for this test build only:
#   - CONFIG_IPSEC_MB=n after configure (Debian's DPDK carries the ipsec_mb driver, which makes
#     configure ask for a submodule that is not needed);
#   - SPDK's refusal of DPDK 22.11 LTS minors above .4 is relaxed: that check only selects the
#     PCI ABI table, and --no-huge runs without PCI devices never use it.
#
# Cache ($SPDK_CACHE, default ~/.cache/dpu-spdk): <key>/ holds the built tree, keyed by a hash
# of the source's identity (the tag and the pinned tarball checksum below: the same source
# whichever way it arrives), the build packages' versions and the text of the build
# function; `current` points at the last good one. A rebuild happens only when the key
# changed, so a cached build serves a checkout that has neither the tarball nor a network.
# A tarball whose checksum is not the pinned one is refused (it is not v24.01 as pinned).
# Prints the wall time of each step; --print-dir prints only the built tree's path.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
SPDK_TAG=v24.01
SPDK_GIT=${SPDK_GIT:-https://github.com/spdk/spdk.git}
SPDK_CACHE=${SPDK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpu-spdk}
TARBALL=${SPDK_TARBALL:-$REPO/../shared/third_party/spdk-$SPDK_TAG.tar.gz}
# sha256 of spdk-v24.01.tar.gz: SPDK at tag v24.01 with its isa-l (bd226375) and
# isa-l-crypto (08297dc3) submodules, unmodified.
TARBALL_SHA256=d028a7b852ee5e02ceff68ea01d6cfa11d459acfcff167f528ea7d5167ef33c3
FORCE=0
PRINT_DIR=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) FORCE=1; shift ;;
    --print-dir) PRINT_DIR=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "build-spdk.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { [ "$PRINT_DIR" -eq 1 ] || echo "$@"; }
die() { echo "build-spdk.sh: $*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

PACKAGES=(libdpdk-dev libnuma-dev uuid-dev libssl-dev libaio-dev libncurses-dev python3-pyelftools
          meson ninja-build pkg-config make gcc nasm autoconf automake libtool git)

ensure_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "[spdk] installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
      die "apt-get install ${missing[*]} failed"
  fi
}

# The source, unpacked into $1.
fetch_source() {
  local dst=$1
  mkdir -p "$dst"
  if [ -f "$TARBALL" ]; then
    tar -xzf "$TARBALL" -C "$dst" --strip-components=1
  else
    log "[spdk] $TARBALL absent: cloning $SPDK_GIT at $SPDK_TAG"
    git clone -q --depth 1 --branch "$SPDK_TAG" "$SPDK_GIT" "$dst"
    git -C "$dst" submodule update -q --init --depth 1 isa-l isa-l-crypto
  fi
}

# Configures and builds the tree in $1 (the text of this function is part of the cache key).
build_tree() {
  local src=$1
  (
    cd "$src"
    ./configure --with-dpdk --without-vhost --without-crypto --disable-tests --disable-unit-tests \
      --disable-examples --without-idxd --without-fuse --without-nvme-cuse --without-iscsi-initiator \
      --without-rbd --without-vfio-user --without-usdt --without-xnvme --without-virtio >configure.log 2>&1 ||
      { tail -20 configure.log >&2; exit 1; }
    sed -i 's/^CONFIG_IPSEC_MB?=y/CONFIG_IPSEC_MB?=n/' mk/config.mk
    grep -q '^CONFIG_IPSEC_MB?=n' mk/config.mk
    # Relax the DPDK 22.11 LTS minor check (see the header): the PCI ABI table stays 22.11's.
    sed -i 's/if (minor > 4) {/if (minor > 4 \&\& 0) {/' lib/env_dpdk/pci_dpdk.c
    grep -q 'if (minor > 4 && 0) {' lib/env_dpdk/pci_dpdk.c
    make -j"$(nproc)" >make.log 2>&1 || { tail -40 make.log >&2; exit 1; }
    test -x build/bin/spdk_tgt && test -x build/bin/spdk_nvme_perf
  )
}

cache_key() {
  local src_id pkg_versions
  src_id="$SPDK_TAG $TARBALL_SHA256"
  pkg_versions=$(dpkg-query -W -f='${Package}=${Version}\n' "${PACKAGES[@]}" 2>/dev/null | sort)
  printf '%s\n%s\n%s\n' "$src_id" "$pkg_versions" "$(declare -f build_tree)" | sha256sum | cut -c1-16
}

t0=$(date +%s.%N)
if [ -f "$TARBALL" ] && [ "$(sha256sum "$TARBALL" | cut -d' ' -f1)" != "$TARBALL_SHA256" ]; then
  die "$TARBALL is not the pinned SPDK $SPDK_TAG source (sha256 differs from $TARBALL_SHA256)"
fi
ensure_packages
key=$(cache_key)
dir="$SPDK_CACHE/$key"
mkdir -p "$SPDK_CACHE"
if [ "$FORCE" -eq 1 ]; then rm -rf "$dir"; fi
if [ -x "$dir/build/bin/spdk_tgt" ] && [ -f "$dir/KEY" ]; then
  log "[spdk] cached $SPDK_TAG build $key ($(elapsed "$t0") s)"
else
  log "[spdk] building $SPDK_TAG (key $key; about 9 minutes on 2 cores)"
  tmp="$SPDK_CACHE/tmp-$key"
  rm -rf "$tmp"
  fetch_source "$tmp"
  log "[spdk] source unpacked ($(elapsed "$t0") s)"
  build_tree "$tmp"
  # Keep what the tests run; drop the object files.
  find "$tmp" -name '*.o' -delete
  echo "$key" >"$tmp/KEY"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  log "[spdk] built in $(elapsed "$t0") s"
fi
ln -sfn "$key" "$SPDK_CACHE/current"
if [ "$PRINT_DIR" -eq 1 ]; then echo "$dir"; else log "[spdk] tree: $dir"; fi

#!/usr/bin/env bash
# lab/build.sh [--bin-dir DIR] [--force]
# Builds (or restores from the cache) everything the lab boots: Debian's stock kernel, a busybox
# initramfs, and one raw ext4 root image serving both VMs (role chosen by `lab.role=` on the
# kernel command line). Everything comes from Debian's registry through apt.
#
# Cache ($LAB_CACHE, default ~/.cache/dpu-lab), one layer per directory, each keyed by a hash of
# its inputs (package versions, package list, and the text of the shell function that builds it):
#   kernel/<key>/   vmlinuz + pruned /lib/modules tree (depmod'ed)
#   initrd/<key>/   initrd.img
#   base/<key>.tar.zst   debootstrap --variant=minbase output
#   image/<key>/    rootfs.img (raw ext4, sparse) + vmlinuz + initrd.img + KEY
#   current -> image/<key>       what lab.sh boots
# A rebuild of a layer happens only when its key changed. Prints per-step wall times.
set -euo pipefail

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=topology.env
. "$LAB_DIR/topology.env"
LAB_CACHE=${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpu-lab}
BIN_DIR=""
FORCE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) BIN_DIR=$(cd "$2" && pwd); shift 2 ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

mkdir -p "$LAB_CACHE"/{kernel,initrd,base,image,tmp,hosttools}
T_ALL=$(date +%s.%N)
step_t0=0
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
step() { step_t0=$(date +%s.%N); printf '[build] %-28s ' "$1"; }
done_step() { printf '%6ss  %s\n' "$(elapsed "$step_t0")" "${1:-}"; }
die() { echo; echo "build.sh: $*" >&2; exit 1; }
h() { sha256sum | cut -c1-16; }
fn_hash() { declare -f "$@" | h; }

# ---------------------------------------------------------------------------------------------
# Host tools. apt only when missing. qemu-system-x86 from bookworm conflicts with a newer
# qemu-utils some machines carry (it would remove it), so in that case the QEMU binary and its
# firmware are unpacked into $LAB_CACHE/hosttools instead (only its libraries get installed).
ensure_host_tools() {
  local need=() c p
  for c in busybox:busybox-static cpio:cpio mkfs.ext4:e2fsprogs debootstrap:debootstrap \
           depmod:kmod zstd:zstd qemu-img:qemu-utils openssl:openssl; do
    command -v "${c%%:*}" >/dev/null 2>&1 || need+=("${c#*:}")
  done
  [ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx switch_root || need+=(busybox-static)
  if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null ||
      die "apt-get install ${need[*]} failed"
  fi
  if command -v qemu-system-x86_64 >/dev/null 2>&1; then QEMU=$(command -v qemu-system-x86_64); QEMU_L=(); return; fi
  local ht="$LAB_CACHE/hosttools"
  if [ ! -f "$ht/root/usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so" ]; then
    if apt-get install -s qemu-system-x86 2>/dev/null | grep -q '^Remv'; then
      local libs
      libs=$(apt-cache depends qemu-system-x86 | awk '/ Depends: lib|Depends: zlib/{print $2}' | tr -d '<>' | sort -u)
      # shellcheck disable=SC2086
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $libs >/dev/null ||
        die "installing QEMU's libraries failed"
      rm -rf "$ht/dl" "$ht/root"; mkdir -p "$ht/dl" "$ht/root"
      (cd "$ht/dl" && apt-get download -q qemu-system-x86 qemu-system-common qemu-system-data seabios ipxe-qemu >/dev/null 2>&1) ||
        die "apt-get download qemu-system-x86 failed"
      for p in "$ht"/dl/*.deb; do dpkg -x "$p" "$ht/root"; done
      rm -rf "$ht/dl"
    else
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-system-x86 >/dev/null ||
        die "apt-get install qemu-system-x86 failed"
      QEMU=$(command -v qemu-system-x86_64); QEMU_L=(); return
    fi
  fi
  QEMU="$ht/root/usr/bin/qemu-system-x86_64"
  # lab.sh sets QEMU_MODULE_DIR (accel-tcg lives in a module) and -L (firmware) for this QEMU
  "$QEMU" --version >/dev/null || die "unpacked QEMU does not run (missing library?): $("$QEMU" --version 2>&1 | head -1)"
}

# ---------------------------------------------------------------------------------------------
kernel_pkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'; }
pkg_ver() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/{print $2; exit}'; }

build_kernel() { # $1 = out dir; uses KPKG KVER
  local out=$1 tmp="$LAB_CACHE/tmp/kernel.$$"
  rm -rf "$tmp"; mkdir -p "$tmp/x"
  (cd "$tmp" && apt-get download -q "$KPKG" >/dev/null 2>&1) || die "apt-get download $KPKG failed"
  dpkg -x "$tmp"/*.deb "$tmp/x"
  mkdir -p "$out/modules/lib/modules"
  cp "$tmp/x/boot/vmlinuz-$KVER" "$out/vmlinuz"
  # Prune what a VM never needs (GPU, sound, media, wireless, physical NICs/HCAs...).
  tar -C "$tmp/x/lib/modules" \
      --exclude="$KVER/kernel/drivers/gpu" --exclude="$KVER/kernel/sound" \
      --exclude="$KVER/kernel/drivers/media" --exclude="$KVER/kernel/drivers/net/wireless" \
      --exclude="$KVER/kernel/net/wireless" --exclude="$KVER/kernel/net/mac80211" \
      --exclude="$KVER/kernel/drivers/staging" --exclude="$KVER/kernel/drivers/bluetooth" \
      --exclude="$KVER/kernel/net/bluetooth" --exclude="$KVER/kernel/drivers/infiniband/hw" \
      --exclude="$KVER/kernel/drivers/net/ethernet" --exclude="$KVER/kernel/drivers/iio" \
      --exclude="$KVER/kernel/drivers/input" --exclude="$KVER/kernel/drivers/hid" \
      --exclude="$KVER/kernel/drivers/usb" --exclude="$KVER/kernel/drivers/scsi" \
      --exclude="$KVER/kernel/fs/ocfs2" --exclude="$KVER/kernel/fs/xfs" --exclude="$KVER/kernel/fs/btrfs" \
      -cf - "$KVER" | tar -C "$out/modules/lib/modules" -xf -
  depmod -b "$out/modules" "$KVER"
  rm -rf "$tmp"
}

# The initramfs: busybox-static + the modules needed to mount the ext4 root on virtio-blk, then
# switch_root into busybox init on the image.
build_initrd() { # $1 = out dir; uses KDIR KVER
  local out=$1 tmp="$LAB_CACHE/tmp/initrd.$$" m l
  rm -rf "$tmp"; mkdir -p "$tmp"/{bin,dev,proc,sys,newroot,mods}
  cp /bin/busybox "$tmp/bin/busybox"
  : > "$tmp/mods/order"
  for m in virtio_pci virtio_blk crc32c_generic ext4; do
    modprobe -d "$KDIR/modules" -S "$KVER" --show-depends "$m" | while read -r kind path _; do
      [ "$kind" = insmod ] || continue
      l=$(basename "$path")
      grep -qx "$l" "$tmp/mods/order" && continue
      cp "$path" "$tmp/mods/$l"; echo "$l" >> "$tmp/mods/order"
    done
  done
  cat > "$tmp/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
echo "lab-initrd: loading $(wc -l < /mods/order) modules"
while read -r m; do insmod "/mods/$m" 2>/dev/null || echo "lab-initrd: insmod $m failed (builtin?)"; done < /mods/order
i=0; while [ ! -b /dev/vda ]; do i=$((i+1)); [ $i -gt 300 ] && break; usleep 100000; done
fail() { echo "LAB-BOOT-FAILED initramfs: $*"; sleep 1; poweroff -f; }
[ -b /dev/vda ] || fail "no /dev/vda after 30s"
mount -t ext4 /dev/vda /newroot || fail "cannot mount /dev/vda as ext4"
[ -x /newroot/bin/busybox ] || fail "root image has no /bin/busybox"
mount --move /dev /newroot/dev; umount /proc /sys
echo "lab-initrd: switch_root"
exec switch_root /newroot /bin/busybox init
EOF
  chmod +x "$tmp/init"
  (cd "$tmp" && find . | cpio -o -H newc --quiet | zstd -q -3 > "$out/initrd.img")
  rm -rf "$tmp"
}

build_base() { # $1 = out .tar.zst; uses PKGS
  local out=$1 tmp="$LAB_CACHE/tmp/base.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  debootstrap --variant=minbase --include="$PKGS" "$LAB_SUITE" "$tmp/root" "$LAB_MIRROR" \
    > "$LAB_CACHE/tmp/debootstrap.log" 2>&1 || { tail -20 "$LAB_CACHE/tmp/debootstrap.log"; die "debootstrap failed"; }
  rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*_Packages
  tar -C "$tmp/root" --numeric-owner -cf - . | zstd -q -T0 -3 > "$out.tmp"
  mv "$out.tmp" "$out"
  rm -rf "$tmp"
}

# Deterministic namespace content: the AES-256-CTR keystream of NVME_SEED.
gen_backing() {
  openssl enc -aes-256-ctr -nosalt -pbkdf2 -iter 1 -pass "pass:$NVME_SEED" < /dev/zero 2>/dev/null |
    head -c $((NVME_BACKING_MIB * 1048576)) || true   # openssl dies of SIGPIPE: expected
}

build_image() { # $1 = out dir; uses BASE KDIR KVER INITRD BIN_DIR
  local out=$1 tmp="$LAB_CACHE/tmp/image.$$" r mib
  rm -rf "$tmp"; mkdir -p "$tmp/root"; r="$tmp/root"
  zstd -q -d -c "$BASE" | tar -C "$r" --numeric-owner -xf -
  cp -a "$KDIR/modules/lib/modules" "$r/lib/"
  mkdir -p "$r/lab/guest" "$r/lab/share" "$r/srv/nvmet" "$r$DPU_BIN_DIR" "$r/etc/nvme"
  cp "$LAB_DIR/topology.env" "$r/lab/"
  cp "$LAB_DIR"/guest/*.sh "$r/lab/guest/"; chmod +x "$r"/lab/guest/*.sh
  if [ -n "$BIN_DIR" ]; then
    for f in dpu-agent dpuctl; do [ -f "$BIN_DIR/$f" ] && install -m 0755 --strip "$BIN_DIR/$f" "$r$DPU_BIN_DIR/"; done
  fi
  gen_backing > "$r$NVME_BACKING"
  [ "$(stat -c %s "$r$NVME_BACKING")" = $((NVME_BACKING_MIB * 1048576)) ] || die "backing file generation failed"
  sha256sum < "$r$NVME_BACKING" | cut -d' ' -f1 > "$r$NVME_BACKING.sha256"
  cat > "$r/etc/inittab" <<'EOF'
::sysinit:/lab/guest/init.sh
::once:/lab/guest/bringup.sh
::respawn:/lab/guest/cmdd.sh
::shutdown:/bin/busybox umount -a -r
EOF
  echo "lab" > "$r/etc/hostname"
  # The lab's ssh identity: one key pair for root in the image, trusted by the image's own
  # sshd, so `dpuctl roce perf --peer target` starts its server side over ssh as on real
  # hosts. Host keys are made here too (no first-boot service runs them).
  mkdir -p -m 0700 "$r/root/.ssh"
  chroot "$r" /usr/bin/ssh-keygen -q -A
  chroot "$r" /usr/bin/ssh-keygen -q -t ed25519 -N '' -C dpu-lab -f /root/.ssh/id_ed25519
  cp "$r/root/.ssh/id_ed25519.pub" "$r/root/.ssh/authorized_keys"
  printf 'Host *\n  User root\n  StrictHostKeyChecking accept-new\n  UserKnownHostsFile /root/.ssh/known_hosts\n' > "$r/root/.ssh/config"
  chmod 0600 "$r/root/.ssh/authorized_keys" "$r/root/.ssh/config"
  printf '127.0.0.1 localhost\n' > "$r/etc/hosts"
  : > "$r/etc/fstab"
  mib=$(( $(du -sm "$r" | cut -f1) * 5 / 4 + 384 ))
  rm -f "$out/rootfs.img.tmp"
  mkfs.ext4 -q -F -L labroot -d "$r" "$out/rootfs.img.tmp" "${mib}M" >/dev/null
  mv "$out/rootfs.img.tmp" "$out/rootfs.img"
  cp "$KDIR/vmlinuz" "$out/vmlinuz"; cp "$INITRD/initrd.img" "$out/initrd.img"
  rm -rf "$tmp"
}

# ---------------------------------------------------------------------------------------------
step "host tools"; ensure_host_tools; done_step "$QEMU"
printf '%s\n' "$QEMU" > "$LAB_CACHE/qemu-path"

step "resolve versions"
KPKG=$(kernel_pkg); [ -n "$KPKG" ] || die "apt knows no linux-image-amd64 dependency (apt-get update?)"
KDEB=$(pkg_ver "$KPKG"); KVER=${KPKG#linux-image-}
PKGS=$LAB_PACKAGES
for p in ${LAB_OPTIONAL_PACKAGES//,/ }; do [ -n "$(pkg_ver "$p")" ] && [ "$(pkg_ver "$p")" != "(none)" ] && PKGS="$PKGS,$p"; done
BB_VER=$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null || echo unknown)
K_KEY=$(echo "$KPKG $KDEB $(fn_hash build_kernel)" | h)
I_KEY=$(echo "$K_KEY $BB_VER $(fn_hash build_initrd)" | h)
B_KEY=$(echo "$LAB_SUITE $LAB_MIRROR $PKGS $(fn_hash build_base)" | h)
BIN_HASH=none
[ -n "$BIN_DIR" ] && BIN_HASH=$(cd "$BIN_DIR" && for f in dpu-agent dpuctl; do [ -f "$f" ] && sha256sum "$f"; done | h)
G_HASH=$( (cat "$LAB_DIR/topology.env" "$LAB_DIR"/guest/*.sh; fn_hash build_image gen_backing) | h)
IMG_KEY=$(echo "$K_KEY $I_KEY $B_KEY $G_HASH $BIN_HASH" | h)
KDIR="$LAB_CACHE/kernel/$K_KEY"; INITRD="$LAB_CACHE/initrd/$I_KEY"; BASE="$LAB_CACHE/base/$B_KEY.tar.zst"
IMG="$LAB_CACHE/image/$IMG_KEY"
done_step "$KPKG $KDEB, key $IMG_KEY"

if [ $FORCE = 0 ] && [ -f "$IMG/KEY" ]; then
  ln -sfn "image/$IMG_KEY" "$LAB_CACHE/current"
  printf '[build] cached image %s (%s)  total %ss\n' "$IMG_KEY" "$IMG" "$(elapsed "$T_ALL")"
  exit 0
fi

step "kernel"
if [ $FORCE = 1 ] || [ ! -f "$KDIR/vmlinuz" ]; then rm -rf "$KDIR"; mkdir -p "$KDIR.tmp"; build_kernel "$KDIR.tmp"; mv "$KDIR.tmp" "$KDIR"; done_step "built $KVER"
else done_step "cached $KVER"; fi

step "initramfs"
if [ $FORCE = 1 ] || [ ! -f "$INITRD/initrd.img" ]; then rm -rf "$INITRD" "$INITRD.tmp"; mkdir -p "$INITRD.tmp"; build_initrd "$INITRD.tmp"; mv "$INITRD.tmp" "$INITRD"; done_step "built"
else done_step "cached"; fi

step "root fs (debootstrap)"
if [ $FORCE = 1 ] || [ ! -f "$BASE" ]; then build_base "$BASE"; done_step "built $(du -h "$BASE" | cut -f1)"
else done_step "cached"; fi

step "image"
rm -rf "$IMG.tmp"; mkdir -p "$IMG.tmp"; build_image "$IMG.tmp"
echo "$IMG_KEY kernel=$KPKG/$KDEB packages=$PKGS bin=$BIN_HASH" > "$IMG.tmp/KEY"
rm -rf "$IMG"; mv "$IMG.tmp" "$IMG"
ln -sfn "image/$IMG_KEY" "$LAB_CACHE/current"
done_step "$(du -h --apparent-size "$IMG/rootfs.img" | cut -f1) apparent, $(du -h "$IMG/rootfs.img" | cut -f1) used"

# Keep the cache small: the two newest images, kernels/initrds/bases they (or the newest) use.
step "prune cache"
ls -1dt "$LAB_CACHE"/image/*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
for d in "$LAB_CACHE"/kernel/*/ "$LAB_CACHE"/initrd/*/; do
  [ "$(basename "$d")" = "$K_KEY" ] || [ "$(basename "$d")" = "$I_KEY" ] || rm -rf "$d"
done
ls -1t "$LAB_CACHE"/base/*.tar.zst 2>/dev/null | tail -n +3 | xargs -r rm -f
rm -rf "$LAB_CACHE"/tmp/*.[0-9]*
done_step "$(du -sh "$LAB_CACHE" | cut -f1) in $LAB_CACHE"
printf '[build] total %ss\n' "$(elapsed "$T_ALL")"

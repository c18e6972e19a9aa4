#!/bin/bash
# /lab/guest/role-target.sh -- the `target` VM: remote NVMe-oF storage.
# nvmet subsystem $NVME_NQN, namespace 1 = $NVME_BACKING (file on the root ext4), exported on
# $TARGET_STORAGE_IP:$NVME_PORT over TCP (port 1) and RDMA via soft-RoCE $TARGET_RXE (port 2).
. /lab/guest/lib.sh
set -u

rename_by_mac "$TARGET_STORAGE_MAC" "$TARGET_STORAGE_IF"
rename_by_mac "$TARGET_NET_MAC" "$TARGET_NET_IF"
ip addr replace "$TARGET_STORAGE_IP/$LAB_PREFIX" dev "$TARGET_STORAGE_IF"
ip addr replace "$TARGET_NET_IP/$LAB_PREFIX" dev "$TARGET_NET_IF"
ip link set "$TARGET_STORAGE_IF" up; ip link set "$TARGET_NET_IF" up
add_rxe "$TARGET_RXE" "$TARGET_STORAGE_IF"
log "rxe $TARGET_RXE on $TARGET_STORAGE_IF ($TARGET_STORAGE_IP)"

for m in nvmet nvmet_tcp nvmet_rdma; do modprobe "$m" || fail "modprobe $m"; done
[ -f "$NVME_BACKING" ] || fail "no backing file $NVME_BACKING"
sum=$(sha256sum < "$NVME_BACKING" | cut -d' ' -f1)
[ "$sum" = "$(cat "$NVME_BACKING.sha256")" ] || fail "backing file checksum $sum != recorded"
log "backing $NVME_BACKING sha256 $sum"

mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config || fail "no configfs"
C=/sys/kernel/config/nvmet
S=$C/subsystems/$NVME_NQN
mkdir -p "$S" || fail "mkdir $S"
echo 1 > "$S/attr_allow_any_host"
mkdir -p "$S/namespaces/$NVME_NSID"
echo "$NVME_BACKING" > "$S/namespaces/$NVME_NSID/device_path"
echo 1 > "$S/namespaces/$NVME_NSID/enable" || fail "enable namespace"
pid=1
for tr in tcp rdma; do
  P=$C/ports/$pid
  mkdir -p "$P"
  echo "$tr" > "$P/addr_trtype"
  echo ipv4 > "$P/addr_adrfam"
  echo "$TARGET_STORAGE_IP" > "$P/addr_traddr"
  echo "$NVME_PORT" > "$P/addr_trsvcid"
  ln -s "$S" "$P/subsystems/$NVME_NQN" || fail "enable nvmet $tr port"
  log "nvmet port $pid: $tr $TARGET_STORAGE_IP:$NVME_PORT -> $NVME_NQN"
  pid=$((pid + 1))
done
# The negative control: the same file, exported only where the host namespace can reach
# it directly (through ovsbr1), never through the DPU's storage link.
D=$C/subsystems/$NVME_NQN_DIRECT
mkdir -p "$D" || fail "mkdir $D"
echo 1 > "$D/attr_allow_any_host"
mkdir -p "$D/namespaces/$NVME_NSID"
echo "$NVME_BACKING" > "$D/namespaces/$NVME_NSID/device_path"
echo 1 > "$D/namespaces/$NVME_NSID/enable" || fail "enable direct namespace"
P=$C/ports/$pid
mkdir -p "$P"
echo tcp > "$P/addr_trtype"
echo ipv4 > "$P/addr_adrfam"
echo "$TARGET_NET_IP" > "$P/addr_traddr"
echo "$NVME_PORT" > "$P/addr_trsvcid"
ln -s "$D" "$P/subsystems/$NVME_NQN_DIRECT" || fail "enable nvmet direct port"
log "nvmet port $pid: tcp $TARGET_NET_IP:$NVME_PORT -> $NVME_NQN_DIRECT (host-direct negative control)"

# The management path the host side uses to start benchmark servers here (roce perf).
mkdir -p /run/sshd
/usr/sbin/sshd -p "$TARGET_SSH_PORT" || fail "sshd did not start"
log "sshd on port $TARGET_SSH_PORT"

# --- dpu-agent as the far end's witness (when the image carries it) ---------------------------
# `dpuctl prove storage` asks it for this machine's RDMA counters: what the target sent is a
# second witness beside the DPU's. Served on the network link, which the host namespace
# reaches through ovsbr1 (DPUCTL_TARGET_AGENT); lab only: plaintext, read-only role.
agent=none
if [ -x "$DPU_BIN_DIR/dpu-agent" ]; then
  start_agent "$TARGET_NET_IP" viewer
  agent="$DPUCTL_TARGET_AGENT"
  log "dpu-agent (far-end witness) serving on $agent (log $AGENT_LOG)"
fi

{
  echo "role=target"
  echo "agent=$agent"
  echo "nqn_direct=$NVME_NQN_DIRECT"
  echo "nqn=$NVME_NQN"
  echo "backing_sha256=$sum"
  echo "backing_bytes=$(stat -c %s "$NVME_BACKING")"
} > /lab/share/ready.tmp
mv /lab/share/ready.tmp /lab/share/ready

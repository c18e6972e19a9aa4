#!/usr/bin/env bash
# lab/smoke.sh [--bin-dir DIR] -- bring the lab up, assert real kernel state, take it down.
#   (a) from the bluefield's DPU side: nvme connect over RDMA (rxe) to the target, a block device
#       appears, sha256 of its first NVME_BACKING_MIB MiB (read from netns host) equals the
#       target file's; disconnect. Same over TCP.
#   (b) rxe hw_counters (sent_pkts, rcvd_pkts, rdma_recvs) on the bluefield uplink moved during
#       the RDMA read, and rcvd_pkts moved at least by the bytes read / MTU.
#   (c) ping from netns host through ovsbr1 to the target; dpctl/dump-flows -m type=tc lists
#       `dp:tc` flows; tc -s filter show dev <net uplink> ingress shows not_in_hw.
# Prints each phase's wall time; exits non-zero with both serial logs on any failure. Always
# takes the lab down (trap), also on Ctrl-C.
set -euo pipefail
LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$LAB_DIR/topology.env"
LAB="$LAB_DIR/lab.sh"
T_ALL=$(date +%s.%N)
PHASE=setup; T_PHASE=$T_ALL
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
phase() { [ "$PHASE" = setup ] || echo "[smoke] phase $PHASE: $(elapsed "$T_PHASE")s"; PHASE=$1; T_PHASE=$(date +%s.%N); echo "[smoke] --- $1"; }
FAILED=""
fail() { FAILED="$*"; echo "[smoke] FAIL ($PHASE): $*" >&2; exit 1; }
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [ $rc -ne 0 ]; then
    [ -n "$FAILED" ] || echo "[smoke] FAIL ($PHASE): exit $rc" >&2
    "$LAB" logs >&2 || true
  fi
  echo "[smoke] --- down"; local t; t=$(date +%s.%N)
  "$LAB" down || rc=1
  echo "[smoke] phase down: $(elapsed "$t")s"
  echo "[smoke] $([ $rc -eq 0 ] && echo PASS || echo FAIL) in $(elapsed "$T_ALL")s"
  exit $rc
}
trap finish EXIT
trap 'exit 130' INT TERM

bf() { "$LAB" run --vm bluefield --ns "$1" --timeout 300 -- -; }   # script on stdin

phase up
"$LAB" up "$@" || fail "lab up failed"
READY=$(cat "${LAB_RUN:-${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpu-lab}/run}/target/share/ready")
WANT=$(sed -n 's/^backing_sha256=//p' <<< "$READY")
[ ${#WANT} = 64 ] || fail "target reported no backing_sha256"
echo "[smoke] target backing file sha256 $WANT"

# connect TRANSPORT in the dpu namespace, print the block device
connect() {
  bf "$NS_DPU" <<EOF
set -e
nvme connect -t $1 -a $TARGET_STORAGE_IP -s $NVME_PORT -n $NVME_NQN >&2
deadline=\$((\$(date +%s) + 30))
while :; do
  for b in /sys/block/nvme*n*; do
    case "\$b" in *c[0-9]*n*) continue ;; esac
    [ "\$(cat \$b/device/subsysnqn 2>/dev/null)" = "$NVME_NQN" ] && [ "\$(cat \$b/size)" -gt 0 ] && { echo /dev/\${b##*/}; exit 0; }
  done
  [ \$(date +%s) -lt \$deadline ] || { echo "no block device for $NVME_NQN after 30s" >&2; nvme list >&2; exit 1; }
  sleep 0.2
done
EOF
}
disconnect() {
  bf "$NS_DPU" <<EOF
nvme disconnect -n $NVME_NQN >&2 || exit 1
deadline=\$((\$(date +%s) + 30))
while [ -e "$1" ]; do [ \$(date +%s) -lt \$deadline ] || { echo "$1 still there 30s after disconnect" >&2; exit 1; }; sleep 0.2; done
EOF
}
read_sum() { # from the host namespace: block devices are not namespaced
  bf "$NS_HOST" <<EOF
set -o pipefail
[ -b $1 ] || { echo "$1 is not a block device in netns host" >&2; exit 1; }
dd if=$1 bs=1M count=$NVME_BACKING_MIB iflag=direct status=none | sha256sum | cut -d' ' -f1
EOF
}
counters() {
  bf "$NS_DPU" <<EOF
cd /sys/class/infiniband/$BF_RXE/ports/1/hw_counters && for c in sent_pkts rcvd_pkts rdma_sends rdma_recvs; do echo "\$c=\$(cat \$c)"; done
EOF
}
ctr() { sed -n "s/^$1=//p" <<< "$2"; }

phase "nvme over rdma"
C0=$(counters) || fail "cannot read $BF_RXE hw_counters"
DEV=$(connect rdma) || fail "nvme connect -t rdma failed"
t=$(date +%s.%N)
GOT=$(read_sum "$DEV") || fail "reading $DEV failed"
secs=$(elapsed "$t")
C1=$(counters) || fail "cannot read $BF_RXE hw_counters"
echo "[smoke] rdma: $DEV sha256 $GOT (read ${NVME_BACKING_MIB} MiB in ${secs}s)"
[ "$GOT" = "$WANT" ] || fail "RDMA: $DEV sha256 $GOT != target file $WANT"
disconnect "$DEV" || fail "nvme disconnect (rdma) failed"

phase "rdma counters"
for c in sent_pkts rcvd_pkts rdma_sends rdma_recvs; do
  echo "[smoke] $BF_RXE $c: $(ctr $c "$C0") -> $(ctr $c "$C1") (+$(( $(ctr $c "$C1") - $(ctr $c "$C0") )))"
done
for c in sent_pkts rcvd_pkts rdma_recvs; do
  [ "$(ctr $c "$C1")" -gt "$(ctr $c "$C0")" ] || fail "$BF_RXE $c did not move during the RDMA read"
done
min=$(( NVME_BACKING_MIB * 1048576 / 4096 ))   # rxe payload <= path MTU (<= 4096 bytes)
[ $(( $(ctr rcvd_pkts "$C1") - $(ctr rcvd_pkts "$C0") )) -ge $min ] ||
  fail "$BF_RXE rcvd_pkts moved less than $min packets for ${NVME_BACKING_MIB} MiB"

phase "nvme over tcp"
DEV=$(connect tcp) || fail "nvme connect -t tcp failed"
t=$(date +%s.%N)
GOT=$(read_sum "$DEV") || fail "reading $DEV failed"
echo "[smoke] tcp: $DEV sha256 $GOT (read ${NVME_BACKING_MIB} MiB in $(elapsed "$t")s)"
[ "$GOT" = "$WANT" ] || fail "TCP: $DEV sha256 $GOT != target file $WANT"
disconnect "$DEV" || fail "nvme disconnect (tcp) failed"

phase "ovs tc offload"
bf "$NS_HOST" <<< "ping -q -c 5 -i 0.2 -W 2 $TARGET_NET_IP" || fail "ping $TARGET_NET_IP from netns $NS_HOST through $BF_OVS_BRIDGE failed"
FLOWS=$(bf "$NS_DPU" <<< "ovs-appctl dpctl/dump-flows -m type=tc") || fail "dpctl/dump-flows failed"
n=$(grep -c 'dp:tc' <<< "$FLOWS" || true)
echo "[smoke] dpctl/dump-flows -m type=tc: $n flows with dp:tc"
[ "$n" -gt 0 ] || fail "no dp:tc flows: $FLOWS"
grep -q "in_port($BF_PF_REP).*eth_type(0x0800)" <<< "$FLOWS" || fail "no IPv4 flow from $BF_PF_REP in TC: $FLOWS"
TC=$(bf "$NS_DPU" <<< "tc -s filter show dev $BF_NET_UPLINK ingress") || fail "tc filter show failed"
grep -q not_in_hw <<< "$TC" || fail "tc filter on $BF_NET_UPLINK ingress shows no not_in_hw rule: $TC"
echo "[smoke] tc -s filter show dev $BF_NET_UPLINK ingress: $(grep -c not_in_hw <<< "$TC") not_in_hw rules, $(grep -o 'Sent [0-9]* bytes [0-9]* pkt' <<< "$TC" | head -1)"
LOST=$(bf "$NS_DPU" <<< "ovs-dpctl show | sed -n 's/.*lost:\([0-9]*\).*/\1/p'")
echo "[smoke] datapath lost upcalls: $LOST"

phase done

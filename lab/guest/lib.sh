#!/bin/bash
# /lab/guest/lib.sh -- helpers sourced by the guest scripts.
export PATH=/opt/dpu/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck source=../topology.env
. /lab/topology.env

log() { echo "[lab $(cut -d' ' -f1 /proc/uptime)s] $*"; }
fail() { log "FAILED: $*"; echo "$*" > /lab/share/failed.tmp; mv /lab/share/failed.tmp /lab/share/failed; exit 1; }

# wait_for SECS CMD... : poll CMD every 0.1s until it succeeds or SECS pass.
wait_for() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# rename_by_mac MAC NAME: give the NIC with MAC the name NAME (no udev here).
rename_by_mac() {
  local mac=$1 name=$2 d
  wait_for 20 grep -qix "$mac" /sys/class/net/*/address || fail "no NIC with MAC $mac"
  for d in /sys/class/net/*; do
    if [ "$(cat "$d/address")" = "$mac" ]; then
      [ "$(basename "$d")" = "$name" ] && return 0
      ip link set dev "$(basename "$d")" down
      ip link set dev "$(basename "$d")" name "$name" || fail "rename to $name"
      return 0
    fi
  done
  fail "no NIC with MAC $mac"
}

has_v4_gid() { cat /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null | grep -q ':ffff:'; }

# add_rxe RXE NETDEV: soft-RoCE device on NETDEV (crc32_generic first, else rxe cannot init crc32).
add_rxe() {
  modprobe crc32_generic; modprobe rdma_rxe; modprobe ib_uverbs; modprobe rdma_ucm
  rdma link show "$1/1" >/dev/null 2>&1 || rdma link add "$1" type rxe netdev "$2" || fail "rdma link add $1"
  wait_for 10 test -e "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts" || fail "$1 has no hw_counters"
  # the IPv4-mapped GID shows up once the address is on the netdev
  wait_for 10 has_v4_gid "$1" || fail "$1 has no IPv4 GID"
}

# start_agent TCP_ADDR ROLE: dpu-agent from the image ($DPU_BIN_DIR), kernel storage backend,
# on its Unix socket and tcp:TCP_ADDR:$AGENT_PORT with plaintext granted ROLE. Lab only: the
# links are inside the lab, so plaintext stands in for the mTLS a real fleet uses
# (docs/security.md). Waits until it serves; fails the role if it exits or never does.
start_agent() {
  local addr=$1 role=$2
  mkdir -p "$AGENT_STATE_DIR" /run/dpu-agent /etc/dpu-agent
  printf '[security]\ninsecure_listen = true\ninsecure_role = "%s"\n' "$role" > /etc/dpu-agent/lab.toml
  setsid "$DPU_BIN_DIR/dpu-agent" --config /etc/dpu-agent/lab.toml \
    --listen unix:/run/dpu-agent/dpu-agent.sock \
    --listen "tcp:$addr:$AGENT_PORT" \
    --storage-backend kernel --state-dir "$AGENT_STATE_DIR" \
    --log-level info > "$AGENT_LOG" 2>&1 < /dev/null &
  echo $! > /run/dpu-agent/pid
  for _ in $(seq 300); do
    [ -S /run/dpu-agent/dpu-agent.sock ] && return 0
    kill -0 "$(cat /run/dpu-agent/pid)" 2>/dev/null || fail "dpu-agent exited: $(tail -5 "$AGENT_LOG")"
    sleep 0.1
  done
  fail "dpu-agent not serving after 30 s"
}

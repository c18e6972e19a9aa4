#!/usr/bin/env bash
# The main job on a machine without a DPU: build dpu-agent and dpuctl, boot the built-in
# QEMU lab (lab/README.md: a remote NVMe-oF target VM and a BlueField stand-in VM whose
# DPU side runs dpu-agent with the kernel storage backend), and run the storage, switch
# and RoCE workflows from the lab's host namespace, printing what happened. Needs root
# (the lab installs QEMU with apt on first use). The lab is always taken down.
set -euo pipefail
cd "$(dirname "$0")/.."

# Per-phase wall times, printed at the end (the README quotes them).
phases=()
phase_start=$(date +%s)
job_start=$phase_start
phase_done() {
    local now
    now=$(date +%s)
    phases+=("$1: $((now - phase_start)) s")
    phase_start=$now
}
report_phases() {
    printf '\n== main job phases (%s, %s cores)\n' "$(uname -n)" "$(nproc)"
    printf '   %s\n' "${phases[@]}"
    echo "   total: $(($(date +%s) - job_start)) s"
}

cargo build --release --locked -p dpu-agent -p dpuctl
phase_done "release build"
dpuctl=./target/release/dpuctl
trap '"$dpuctl" lab down >/dev/null 2>&1 || true; report_phases' EXIT
"$dpuctl" lab up --bin-dir target/release
phase_done "lab up (image build when not cached, boot)"

# The target's file, whose checksum the read below must reproduce.
"$dpuctl" lab run --vm target --ns none -- 'echo "target file: $NVME_BACKING, $(grep backing_sha256 /lab/share/ready)"'

# In the lab, dpuctl finds the agent by itself (DPUCTL_AGENT) and the target's NQN is
# $NVME_NQN (lab/topology.env). Each step is echoed before it runs.
"$dpuctl" lab run -- 'set -euo pipefail
step() { printf "\n\$ %s\n" "$*"; "$@"; }
step dpuctl dpu health
step dpuctl dpu info
step dpuctl storage attach --id r0 --transport rdma --traddr "$TARGET_STORAGE_IP" --subnqn "$NVME_NQN"
step dpuctl storage list
disk=$(ls /sys/block | grep -E "^nvme[0-9]+n[0-9]+$" | head -1)
step dpuctl storage read "/dev/$disk" --bs 1m --iodepth 8 --size 64m
printf "\n\$ sha256 of the first 64 MiB of /dev/%s (must equal the target file checksum)\n" "$disk"
head -c $((64 << 20)) "/dev/$disk" | sha256sum
step dpuctl storage stats volumes/r0n1
step dpuctl prove storage
printf "\n# negative control: the host reads the same file over its own network (NVMe/TCP)\n"
step nvme connect -t tcp -a "$TARGET_NET_IP" -s "$NVME_PORT" -n "$NVME_NQN_DIRECT"
for _ in $(seq 100); do [ -e /sys/block/nvme1n1 ] && break; sleep 0.1; done
step grep -H . /sys/block/nvme0n1/uuid /sys/block/nvme1n1/uuid
step dpuctl prove storage --device /dev/nvme1n1 --volume r0n1 || echo "(exit $?: refused, as it must be: /dev/nvme1n1 is another namespace than the volume)"
step nvme disconnect -n "$NVME_NQN_DIRECT"
step dpuctl dpu counters -s rdma:rxe0/1
step dpuctl switch offload
step ping -c 5 -i 0.2 -q 10.20.0.1
step dpuctl switch flows
step dpuctl prove switch
step dpuctl storage detach remoteControllers/r0
printf "\n# RoCE: TCP baseline against RDMA to the target, servers started over ssh; the\n# RDMA port counters decide the path of every run\n"
step dpuctl roce perf --peer target
step dpuctl roce dcb --interface pf0 --duration 1 || echo "(exit $?: a veth has no PFC/ECN counters, as reported)"'
phase_done "storage, switch and RoCE workflows in the lab"

# The demo's plan and every Kubernetes object it would create (no cluster here).
"$dpuctl" demo training-storage --plan demo/src/example_plan.toml --dry-run | tail -n 25
phase_done "demo dry run"

#!/usr/bin/env bash
# The main job on a machine without a DPU: build both binaries, start dpu-agent on a
# private Unix socket against this machine's own /sys and /proc, and ask it through
# dpuctl what it sees and how healthy its backends are. (The real-kernel QEMU lab that
# stands in for a BlueField is built by `dpuctl lab up` once that lands.)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p dpu-agent -p dpuctl
work=$(mktemp -d)
trap 'kill "$agent_pid" 2>/dev/null || true; wait "$agent_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

./target/release/dpu-agent --listen "unix:$work/agent.sock" --state-dir "$work/state" \
    --log-level warn &
agent_pid=$!
for _ in $(seq 100); do
    [ -S "$work/agent.sock" ] && break
    sleep 0.1
done

agent="unix:$work/agent.sock"
./target/release/dpuctl --agent "$agent" dpu info
# Health exits 1 when a backend (SNAP, OVSDB) is missing, as it is on a plain machine.
./target/release/dpuctl --agent "$agent" dpu health || echo "(exit $?: backends missing on this machine, as expected without a DPU)"

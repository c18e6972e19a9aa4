#!/usr/bin/env bash
# scripts/bench.sh [NAME...]
# The benchmarks at full length, the way a developer runs and quotes them (.ci/run runs the
# same ones in a short mode: fewer iterations, 20,000 flows). Builds the x86-64 release
# binaries once and every benchmark harness in one cargo invocation, then runs each harness
# against those binaries (DPU_TEST_BIN_DIR), printing its wall time. NAME selects benchmarks
# (snapshot, metrics_scrape, flow_parse, agent_memory, fleet_scale); none means all.
#
# Needs: root for the snapshot benchmark's network namespace (it says why and exits 0
# otherwise); DPU_BENCH_PYTHON naming a Python with `ovs[flow]` for the flow parser's
# comparison (created in /tmp/dpu-bench-venv when unset); the aarch64 build that ships, in
# target/aarch64-unknown-linux-gnu/dist (cargo build --profile dist), for the Arm binary's
# size (else that line says so).
set -euo pipefail
cd "$(dirname "$0")/.."

all=(snapshot metrics_scrape flow_parse agent_memory fleet_scale)
if [ "$#" -eq 0 ]; then
    set -- "${all[@]}"
fi
for name in "$@"; do
    case " ${all[*]} " in
        *" $name "*) ;;
        *) echo "bench.sh: no benchmark named '$name' (one of: ${all[*]})" >&2; exit 2 ;;
    esac
done

target_dir=$(realpath -m "${CARGO_TARGET_DIR:-target}")
if [ -z "${DPU_BENCH_PYTHON:-}" ]; then
    venv=/tmp/dpu-bench-venv
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'ovs[flow]'
    export DPU_BENCH_PYTHON=$venv/bin/python
fi
arm_dir=$target_dir/aarch64-unknown-linux-gnu/dist
if [ -z "${DPU_TEST_AARCH64_BIN_DIR:-}" ] && [ -x "$arm_dir/dpu-agent" ]; then
    export DPU_TEST_AARCH64_BIN_DIR=$arm_dir
fi

cargo build --release --locked -p dpu-agent -p dpuctl
export DPU_TEST_BIN_DIR=$target_dir/release
benches=$(cargo bench --no-run --locked --message-format=json \
    -p dpu-probe -p dpu-ovs -p dpu-tests \
    --bench snapshot --bench flow_parse --bench metrics_scrape --bench agent_memory --bench fleet_scale |
    jq -r 'select(.reason == "compiler-artifact" and .target.kind == ["bench"] and .executable != null)
           | "\(.target.name) \(.executable) \(.manifest_path)"')
for name in "$@"; do
    line=$(grep "^$name " <<<"$benches") || { echo "bench.sh: $name was not built" >&2; exit 1; }
    read -r _ exe manifest <<<"$line"
    echo "== benchmark $name"
    start=$(date +%s)
    (cd "$(dirname "$manifest")" && "$exe" --bench)
    echo "== benchmark $name ran $(($(date +%s) - start)) s"
done

#!/usr/bin/env bash
# Runs every cargo-fuzz target of the repo for N seconds each and reports exec counts and
# crashes. Not part of `cargo test` or .ci/run: the fuzz crates are their own workspaces
# (ovs/fuzz, jsonrpc/fuzz, probe/fuzz, nvmeof/fuzz, host/fuzz) so CI never builds them.
#
# Usage:
#   bash scripts/fuzz.sh [SECONDS] [FILTER]
#     SECONDS  time per target (default 60; 600+ is a meaningful nightly run)
#     FILTER   only targets whose "<crate>/<target>" contains this string, e.g. "probe/"
#
# Environment:
#   FUZZ_TARGET_DIR  cargo target dir for the (release, sanitizer) fuzz builds
#                    (default target/fuzz under the repo root; ignored by git)
#   FUZZ_WORK        where libFuzzer writes the inputs it finds (default
#                    target/fuzz-work); the kept seed corpora are only read
#   FUZZ_MERGE=1     afterwards, merge what the run found into the kept corpus
#                    (<crate>/fuzz/corpus/<target>), keeping only inputs that add coverage
#
# Needs: cargo-fuzz (`cargo install cargo-fuzz --locked`) and a C++ compiler. The pinned
# toolchain is stable, so RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass -Zsanitizer=address.
#
# The seed corpora live in the repo under <crate>/fuzz/corpus/<target>/ (real samples
# from docs/reference and the crates' unit-test fixtures); ovs/fuzz keeps its seeds in
# ovs/tests/data. A crash leaves its input under <crate>/fuzz/artifacts/<target>/;
# reproduce with `cargo fuzz run <target> <file>` and minimise with `cargo fuzz tmin`.
# A crash is a bug in the parser under test, never in the target: fix the parser.
set -euo pipefail

seconds="${1:-60}"
filter="${2:-}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
target_dir="${FUZZ_TARGET_DIR:-$repo/target/fuzz}"
work="${FUZZ_WORK:-$repo/target/fuzz-work}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
    exit 2
fi

summary=()
failed=0
for manifest in "$repo"/*/fuzz/Cargo.toml; do
    grep -q 'cargo-fuzz = true' "$manifest" || continue
    fuzz_dir="$(dirname "$manifest")"
    crate_dir="$(dirname "$fuzz_dir")"
    crate="$(basename "$crate_dir")"
    for target in $(cd "$crate_dir" && cargo fuzz list); do
        name="$crate/$target"
        [[ -z "$filter" || "$name" == *"$filter"* ]] || continue
        seeds=("$fuzz_dir/corpus/$target")
        [[ "$crate" == ovs && -d "$crate_dir/tests/data" ]] && seeds+=("$crate_dir/tests/data")
        mkdir -p "$work/$crate-$target" "${seeds[0]}"
        log="$work/$crate-$target.log"
        echo "== $name: ${seconds}s (log: $log)"
        status=ok
        if ! (cd "$crate_dir" && cargo fuzz run --target-dir "$target_dir" "$target" \
            "$work/$crate-$target" "${seeds[@]}" -- \
            -max_total_time="$seconds" -print_final_stats=1) >"$log" 2>&1; then
            status="CRASH or error (see $log and $fuzz_dir/artifacts/$target/)"
            failed=1
        fi
        runs="$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
        summary+=("$(printf '%-28s %12s execs  %s' "$name" "${runs:-?}" "$status")")
        if [[ "${FUZZ_MERGE:-0}" == 1 && "$status" == ok ]]; then
            (cd "$crate_dir" && cargo fuzz run --target-dir "$target_dir" "$target" \
                "${seeds[0]}" "$work/$crate-$target" -- -merge=1) >>"$log" 2>&1
        fi
    done
done

# The sysfs targets build their fixture trees per process under tmpfs (or $TMPDIR).
rm -rf /dev/shm/dpu-probe-fuzz-* /dev/shm/dpu-nvmeof-sysfs-* "${TMPDIR:-/tmp}"/dpu-probe-fuzz-* \
    "${TMPDIR:-/tmp}"/dpu-nvmeof-sysfs-* "${TMPDIR:-/tmp}"/dpu-nvmeof-fuzz-*

echo
printf '%s\n' "${summary[@]}"
exit "$failed"

#!/usr/bin/env bash
# Generates what the .deb packages carry beside the binaries, from the binaries themselves
# (so it never drifts from --help): the man pages of dpuctl (dpuctl.1 and one page per
# subcommand) and of dpu-agent (dpu-agent.8), and dpuctl's bash, zsh and fish completions.
#
#   scripts/gen-shell-assets.sh BIN_DIR
#
# BIN_DIR holds a build of `dpuctl` and `dpu-agent` (e.g. target/release, or
# target/aarch64-unknown-linux-gnu/dist: aarch64 binaries run through
# scripts/aarch64-runner, natively or under qemu-aarch64). What they print is the same for
# every architecture, so one run serves the arm64 and the amd64 packages alike.
#
# Output: generated/ at the workspace root (whatever CARGO_TARGET_DIR is), the paths the
# `[package.metadata.deb]` assets of host-cli/ and agent-arm/ name; run it before
# `cargo deb`, which fails on a missing asset. cargo-deb gzips the man pages.
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 BIN_DIR" >&2
    exit 2
fi
bin_dir=$1
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/generated

for bin in dpuctl dpu-agent; do
    if [ ! -x "$bin_dir/$bin" ]; then
        echo "gen-shell-assets: $bin_dir/$bin missing: build it first" >&2
        echo "  (cargo build --release -p dpuctl -p dpu-agent [--target ...])" >&2
        exit 1
    fi
done

# e_machine, the 16-bit little-endian field at offset 18 of an ELF header: 183 = AArch64.
run() {
    local bin=$1
    shift
    local machine
    machine=$(od -An -tu2 -j18 -N2 "$bin" | tr -d ' ')
    if [ "$machine" = 183 ]; then
        "$root/scripts/aarch64-runner" "$bin" "$@"
    else
        "$bin" "$@"
    fi
}

# Start clean, so a removed subcommand's page is not packaged again.
rm -rf "$out/man" "$out/completions"
mkdir -p "$out/man/man1" "$out/man/man8" "$out/completions"

run "$bin_dir/dpuctl" man --out-dir "$out/man/man1"
run "$bin_dir/dpu-agent" --print-man >"$out/man/man8/dpu-agent.8"
run "$bin_dir/dpuctl" completions bash >"$out/completions/dpuctl.bash"
run "$bin_dir/dpuctl" completions zsh >"$out/completions/_dpuctl"
run "$bin_dir/dpuctl" completions fish >"$out/completions/dpuctl.fish"

# Each file must be what it claims: a roff page, a non-empty script.
for page in "$out"/man/man1/*.1 "$out/man/man8/dpu-agent.8"; do
    if ! grep -q '^\.TH ' "$page"; then
        echo "gen-shell-assets: $page has no .TH header" >&2
        exit 1
    fi
done
for script in "$out"/completions/*; do
    if ! grep -q 'dpuctl' "$script"; then
        echo "gen-shell-assets: $script does not complete dpuctl" >&2
        exit 1
    fi
done
echo "gen-shell-assets: $(find "$out/man" -type f | wc -l) man pages and" \
    "$(find "$out/completions" -type f | wc -l) completion scripts in $out"

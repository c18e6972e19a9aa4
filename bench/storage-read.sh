#!/usr/bin/env bash
# Compares `dpuctl storage read` with fio on the same file, in the same run: sequential
# O_DIRECT reads through io_uring, bs 4k and 1m, iodepth 1, 32 and 128. Prints bw_bytes of
# both and the ratio (target: dpuctl >= 0.95x fio). O_DIRECT bypasses the page cache.
#
# Usage: bench/storage-read.sh [DPUCTL] [FILE]
#   DPUCTL  the binary (default: target/release/dpuctl)
#   FILE    the file to read (default: /var/tmp/dpuctl-read-bench.bin, made once, 1 GiB)
# Environment: SIZE_4K / SIZE_1M bytes per run (default 256m / 1g), ROUNDS (default 1).
set -euo pipefail

dpuctl=${1:-target/release/dpuctl}
file=${2:-/var/tmp/dpuctl-read-bench.bin}
size_4k=${SIZE_4K:-256m}
size_1m=${SIZE_1M:-1g}
rounds=${ROUNDS:-1}

command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is not installed" >&2; exit 2; }
[ -x "$dpuctl" ] || { echo "no dpuctl at $dpuctl (cargo build --release -p dpuctl)" >&2; exit 2; }

if [ ! -f "$file" ] || [ "$(stat -c %s "$file")" -lt $((1 << 30)) ]; then
    echo "writing 1 GiB to $file" >&2
    # Real data, not a sparse file or unwritten extents, so reads reach the device.
    dd if=/dev/urandom of="$file" bs=1M count=1024 oflag=direct status=none
fi

run_fio() {
    fio --name=read --filename="$file" --rw=read --direct=1 --ioengine=io_uring \
        --bs="$1" --iodepth="$2" --size="$3" --output-format=json | jq '.jobs[0].read.bw_bytes'
}

run_dpuctl() {
    "$dpuctl" -o json storage read "$file" --bs "$1" --iodepth "$2" --size "$3" |
        jq '.jobs[0].read.bw_bytes'
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
printf '%-5s %-4s %14s %14s %7s\n' bs iodepth fio_bw_bytes dpuctl_bw_bytes ratio
for bs in 4k 1m; do
    size=$size_4k
    [ "$bs" = 1m ] && size=$size_1m
    for q in 1 32 128; do
        for round in $(seq "$rounds"); do
            # Alternate which runs first: a VM host may cache the disk below O_DIRECT.
            if [ $((round % 2)) = 1 ]; then
                fio_bw=$(run_fio "$bs" "$q" "$size")
                ours_bw=$(run_dpuctl "$bs" "$q" "$size")
            else
                ours_bw=$(run_dpuctl "$bs" "$q" "$size")
                fio_bw=$(run_fio "$bs" "$q" "$size")
            fi
            ratio=$(awk -v a="$ours_bw" -v b="$fio_bw" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
            printf '%-5s %-4s %14s %14s %7s\n' "$bs" "$q" "$fio_bw" "$ours_bw" "$ratio"
            echo "$bs $q $fio_bw $ours_bw" >> "$results"
        done
    done
done

# One line per configuration: medians over the rounds, which a single slow round of a
# shared VM disk cannot move.
echo
printf '%-5s %-4s %18s %18s %12s\n' bs iodepth median_fio_bw median_dpuctl_bw median_ratio
for bs in 4k 1m; do
    for q in 1 32 128; do
        awk -v bs="$bs" -v q="$q" '
            function median(a, n,   i, j, t) {
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            }
            $1 == bs && $2 == q { n++; f[n] = $3; o[n] = $4; r[n] = ($3 > 0 ? $4 / $3 : 0) }
            END { printf "%-5s %-4s %18.0f %18.0f %12.3f\n", bs, q, median(f, n), median(o, n), median(r, n) }
        ' "$results"
    done
done

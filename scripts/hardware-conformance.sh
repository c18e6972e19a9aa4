#!/usr/bin/env bash
# The hardware conformance kit (issue 38, docs/hardware.md "Hardware conformance kit").
#
# Runs the command of every UNVERIFIED item of docs/unverified.list that applies to this
# machine, each with a timeout, keeps each one's stdout, stderr and exit status under
# DIR/items/ID/, runs `dpuctl capture --out DIR/capture` when dpuctl is there, and writes
# DIR/summary.txt and DIR/summary.json: per item ran / failed to run / skipped (and why) /
# by hand, and what each printed first. It judges nothing: an item is settled when a person
# reads its output against the item's `look`. It never changes the machine: items marked
# `mutates: yes` run only with --allow-changes (the list's test refuses unmarked changes).
#
# Needs bash 4+, coreutils (timeout) and tar; nothing else.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: scripts/hardware-conformance.sh [--out DIR] [--only ID]... [--where host|dpu-arm]
                                       [--timeout SECONDS] [--allow-changes] [--no-capture]
                                       [--list FILE] [--dry-run]
  --out DIR        the bundle (must not exist or be empty); default ./conformance-WHERE-TIME
  --only ID        run only these items (repeat, or ID,ID)
  --where SIDE     host or dpu-arm; default: detected (aarch64 with a BlueField SoC function
                   or a BlueField DMI product name is dpu-arm)
  --timeout S      per item, default 60
  --allow-changes  also run the items marked `mutates: yes` (they change this machine)
  --no-capture     do not run `dpuctl capture`
  --list FILE      the list to read, default docs/unverified.list beside this script
  --dry-run        say what would run here and why the rest would not; run nothing
Environment: DPU_KIT_SYS_ROOT (a tree read instead of / for the detection, for tests),
DPU_KIT_SNAP_SOCKET (default /var/tmp/spdk.sock).
EOF
}

die() {
    echo "hardware-conformance: $*" >&2
    exit 2
}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIST="$REPO/docs/unverified.list"
OUT=""
WHERE=""
TIMEOUT=60
ALLOW_CHANGES=0
CAPTURE=1
DRY_RUN=0
declare -A ONLY=()
while [ $# -gt 0 ]; do
    case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a directory"; OUT=$2; shift 2 ;;
    --only)
        [ $# -ge 2 ] || die "--only needs an item id"
        IFS=, read -r -a ids <<<"$2"
        for id in "${ids[@]}"; do ONLY[$id]=1; done
        shift 2 ;;
    --where)
        [ $# -ge 2 ] || die "--where needs host or dpu-arm"
        case "$2" in host | dpu-arm) WHERE=$2 ;; *) die "--where: \`$2\` is not host or dpu-arm" ;; esac
        shift 2 ;;
    --timeout)
        if [ $# -lt 2 ] || ! [[ $2 =~ ^[1-9][0-9]*$ ]]; then die "--timeout needs a whole number of seconds above 0"; fi
        TIMEOUT=$2; shift 2 ;;
    --allow-changes) ALLOW_CHANGES=1; shift ;;
    --no-capture) CAPTURE=0; shift ;;
    --dry-run) DRY_RUN=1; CAPTURE=0; shift ;;
    --list) [ $# -ge 2 ] || die "--list needs a file"; LIST=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument \`$1\`" ;;
    esac
done
[ -r "$LIST" ] || die "cannot read the list $LIST"
SYS=${DPU_KIT_SYS_ROOT:-}
SNAP_SOCKET=${DPU_KIT_SNAP_SOCKET:-/var/tmp/spdk.sock}

# ---- the list: stanzas of `key: value`, ` more` continues a key (run: one more line) ----
declare -a IDS=()
declare -A F=() # F[id.key]
declare -A LINE=()
read_list() {
    local id="" key="" raw n=0
    declare -A cur=()
    flush() {
        if [ "${#cur[@]}" -gt 0 ]; then
            id=${cur[id]:-}
            [ -n "$id" ] || die "$LIST: an entry without an id"
            [ -z "${LINE[$id]:-}" ] || die "$LIST: id $id given twice"
            IDS+=("$id")
            LINE[$id]=${cur[_line]}
            local k
            for k in "${!cur[@]}"; do F[$id.$k]=${cur[$k]}; done
        fi
        cur=()
    }
    while IFS= read -r raw || [ -n "$raw" ]; do
        n=$((n + 1))
        [[ $raw == '#'* ]] && continue
        if [[ -z ${raw//[[:space:]]/} ]]; then flush; continue; fi
        [ "${#cur[@]}" -gt 0 ] || cur[_line]=$n
        if [[ $raw == ' '* ]]; then
            [ -n "$key" ] || die "$LIST:$n: continuation without a key"
            if [ "$key" = run ]; then cur[run]+=$'\n'"${raw:1}"; else cur[$key]+=" ${raw:1}"; fi
            continue
        fi
        [[ $raw == *:* ]] || die "$LIST:$n: not \`key: value\`"
        key=${raw%%:*}
        local value=${raw#*:}
        value=${value# }
        cur[$key]=$value
    done <"$LIST"
    flush
}
read_list
for id in "${!ONLY[@]}"; do
    [ -n "${LINE[$id]:-}" ] || die "--only: no item \`$id\` in $LIST"
done

# ---- what this machine has ----
have() { command -v "$1" >/dev/null 2>&1; }
BF_NIC_IDS=" 0xa2d2 0xa2d6 0xa2d9 0xa2dc 0xa2df "     # docs/reference/rdma-bluefield.md §2
BF_SOC_IDS=" 0xa2d0 0xa2d1 0xa2d4 0xa2d5 0xa2d7 0xa2d8 0xa2da 0xa2db 0xa2dd 0xa2de "
MLX_BDF="" BF_BDF="" BF_SOC="" MLX_IF="" RDMA_DEV="" NVME_DISK=""
for dev in "$SYS"/sys/bus/pci/devices/*; do
    [ -r "$dev/vendor" ] || continue
    [ "$(cat "$dev/vendor")" = 0x15b3 ] || continue
    id=$(cat "$dev/device" 2>/dev/null || true)
    class=$(cat "$dev/class" 2>/dev/null || true)
    bdf=${dev##*/}
    if [[ $BF_SOC_IDS == *" $id "* ]]; then BF_SOC=$bdf; fi
    [[ $bdf == *.0 && $class == 0x02* ]] || continue
    [ -n "$MLX_BDF" ] || MLX_BDF=$bdf
    if [[ $BF_NIC_IDS == *" $id "* && -z $BF_BDF ]]; then BF_BDF=$bdf; fi
done
if [ -n "$MLX_BDF" ]; then
    for n in "$SYS/sys/bus/pci/devices/$MLX_BDF"/net/*; do [ -e "$n" ] && { MLX_IF=${n##*/}; break; }; done
    for n in "$SYS/sys/bus/pci/devices/$MLX_BDF"/infiniband/*; do [ -e "$n" ] && { RDMA_DEV=${n##*/}; break; }; done
fi
if [ -z "$RDMA_DEV" ]; then
    for n in "$SYS"/sys/class/infiniband/*; do [ -e "$n" ] && { RDMA_DEV=${n##*/}; break; }; done
fi
for n in "$SYS"/sys/block/nvme*n*; do
    [[ -e $n && ${n##*/} != *c* ]] && { NVME_DISK=${n##*/}; break; }
done
DMI_PRODUCT=$(cat "$SYS/sys/class/dmi/id/product_name" 2>/dev/null || true)
if [ -z "$WHERE" ]; then
    WHERE=host
    if [ "$(uname -m)" = aarch64 ] && { [ -n "$BF_SOC" ] || [[ $DMI_PRODUCT == *BlueField* ]]; }; then
        WHERE=dpu-arm
    fi
fi
# dpuctl: on PATH, else the one built in this checkout
if ! have dpuctl; then
    for b in "$REPO/target/release/dpuctl" "$REPO/target/debug/dpuctl"; do
        [ -x "$b" ] && { PATH="$(dirname "$b"):$PATH"; break; }
    done
fi

# WHY= "" when the need is present, else why not (each need is looked at once)
declare -A NEED_WHY=()
WHY=""
need_why() {
    local need=$1
    if [ -n "${NEED_WHY[$need]+x}" ]; then WHY=${NEED_WHY[$need]}; return; fi
    local why=""
    case "$need" in
    bluefield) [ -n "$BF_BDF$BF_SOC" ] || [[ $DMI_PRODUCT == *BlueField* ]] || why="no PCI function 15b3:a2d0..a2df (BlueField NIC or SoC)" ;;
    connectx) [ -n "$MLX_BDF" ] || why="no Mellanox (15b3) network function" ;;
    rdma) [ -n "$RDMA_DEV" ] || why="no RDMA device under /sys/class/infiniband" ;;
    infiniband) grep -qs InfiniBand "$SYS"/sys/class/infiniband/*/ports/*/link_layer || why="no port with link_layer InfiniBand" ;;
    snap) [ -S "$SYS$SNAP_SOCKET" ] || why="no SNAP socket $SNAP_SOCKET" ;;
    ovs) [ -S "$SYS/var/run/openvswitch/db.sock" ] || [ -S "$SYS/run/openvswitch/db.sock" ] || why="no OVSDB socket (/var/run/openvswitch/db.sock)" ;;
    gpu) [ -e "$SYS/proc/driver/nvidia/version" ] || why="no NVIDIA driver (/proc/driver/nvidia/version)" ;;
    nvme) [ -n "$NVME_DISK" ] || why="no NVMe namespace disk under /sys/block" ;;
    cluster) { have kubectl && timeout 15 kubectl version --request-timeout=10s >/dev/null 2>&1; } || why="no Kubernetes API server reachable with kubectl" ;;
    peer) why="a second node: the kit cannot know one; run by hand" ;;
    vm) { have systemd-detect-virt && systemd-detect-virt -q --vm; } || why="not a virtual machine (systemd-detect-virt --vm)" ;;
    source) { [ -f "$REPO/Cargo.toml" ] && have cargo; } || why="no source checkout with cargo" ;;
    agent) { have dpuctl && timeout 15 dpuctl dpu health >/dev/null 2>&1; } || why="no dpu-agent answering \`dpuctl dpu health\`" ;;
    none) ;;
    *) why="unknown need \`$need\`" ;;
    esac
    NEED_WHY[$need]=$why
    WHY=$why
}

# ---- the bundle ----
[ -n "$OUT" ] || OUT="conformance-$WHERE-$(date -u +%Y%m%dT%H%M%SZ)"
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then die "--out $OUT exists and is not empty"; fi
mkdir -p "$OUT/items"
OUT=$(cd "$OUT" && pwd)
{
    echo "kit: scripts/hardware-conformance.sh, list $LIST"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "uname: $(uname -srm)"
    echo "where: $WHERE"
    echo "MLX_BDF=$MLX_BDF BF_BDF=$BF_BDF BF_SOC=$BF_SOC MLX_IF=$MLX_IF RDMA_DEV=$RDMA_DEV NVME_DISK=$NVME_DISK"
    echo "dmi product: $DMI_PRODUCT"
    echo "dpuctl: $(command -v dpuctl || echo none)"
} >"$OUT/environment.txt"

json_str() {
    local s=$1
    s=${s//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\t'/\\t}; s=${s//$'\r'/}
    printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\010\013-\037')"
}

declare -A STATUS=() REASON=() EXIT=()
run_item() {
    local id=$1 dir="$OUT/items/$1" need tool var
    local where=${F[$id.where]:-} run=${F[$id.run]:-}
    if [ "$where" != both ] && [ "$where" != "$WHERE" ]; then
        STATUS[$id]=skipped REASON[$id]="runs on $where (this is $WHERE)"; return
    fi
    if [ -n "${F[$id.manual]:-}" ]; then
        STATUS[$id]=manual REASON[$id]=${F[$id.manual]}; return
    fi
    if [ "${F[$id.mutates]:-no}" = yes ] && [ "$ALLOW_CHANGES" = 0 ]; then
        STATUS[$id]=skipped REASON[$id]="changes the machine (run with --allow-changes)"; return
    fi
    for need in ${F[$id.needs]:-}; do
        need_why "$need"
        if [ -n "$WHY" ]; then STATUS[$id]=skipped REASON[$id]="needs $need: $WHY"; return; fi
    done
    for tool in ${F[$id.tools]:-}; do
        if ! have "$tool"; then STATUS[$id]=skipped REASON[$id]="needs the tool $tool (not on PATH)"; return; fi
    done
    for var in MLX_BDF BF_BDF MLX_IF RDMA_DEV NVME_DISK; do
        if [[ $run == *"\$$var"* ]] && [ -z "${!var}" ]; then
            STATUS[$id]=skipped REASON[$id]="needs \$$var (none found on this machine)"; return
        fi
    done
    if [ "$DRY_RUN" = 1 ]; then STATUS[$id]=would-run REASON[$id]="--dry-run"; return; fi
    mkdir -p "$dir"
    printf '%s\n' "$run" >"$dir/command.sh"
    local rc=0
    (cd "$REPO" && ITEM_DIR=$dir MLX_BDF=$MLX_BDF BF_BDF=$BF_BDF MLX_IF=$MLX_IF RDMA_DEV=$RDMA_DEV \
        NVME_DISK=$NVME_DISK timeout --kill-after=5 "$TIMEOUT" bash -x "$dir/command.sh" \
        </dev/null >"$dir/stdout" 2>"$dir/stderr") || rc=$?
    echo "$rc" >"$dir/exit_status"
    EXIT[$id]=$rc
    case "$rc" in
    0) STATUS[$id]=ran REASON[$id]="exit 0" ;;
    124 | 137) STATUS[$id]=failed REASON[$id]="timed out after ${TIMEOUT}s" ;;
    126 | 127) STATUS[$id]=failed REASON[$id]="exit $rc: a command was not found or not executable (see stderr)" ;;
    *) STATUS[$id]=ran REASON[$id]="exit $rc (the last command's status: read stderr)" ;;
    esac
}

for id in "${IDS[@]}"; do
    if [ "${#ONLY[@]}" -gt 0 ] && [ -z "${ONLY[$id]:-}" ]; then continue; fi
    if [ "${F[$id.kind]:-claim}" = legend ]; then STATUS[$id]=legend REASON[$id]="explains the marker; nothing to run"; continue; fi
    echo "hardware-conformance: $id" >&2
    run_item "$id"
done

CAPTURE_STATUS="not run (--no-capture)"
if [ "$CAPTURE" = 1 ]; then
    if have dpuctl; then
        rc=0
        timeout --kill-after=5 300 dpuctl capture --out "$OUT/capture" >"$OUT/capture.stdout" 2>"$OUT/capture.stderr" || rc=$?
        CAPTURE_STATUS="dpuctl capture: exit $rc"
    else
        CAPTURE_STATUS="not run: no dpuctl on PATH or in target/"
    fi
fi

# ---- the summary ----
{
    echo "Hardware conformance kit: $(date -u +%Y-%m-%dT%H:%M:%SZ), $WHERE, $(uname -srm)"
    echo "list: $LIST; capture: $CAPTURE_STATUS"
    echo "The kit judges nothing: an item that ran is settled by reading its output"
    echo "(items/ID/stdout, stderr) against its \`look\`."
    echo
    for status in ran failed would-run manual skipped; do
        for id in "${IDS[@]}"; do
            [ "${STATUS[$id]:-}" = "$status" ] || continue
            printf '%-8s %-28s %s\n' "$status" "$id" "${REASON[$id]}"
            if [ "$status" = ran ] || [ "$status" = failed ]; then
                head -n 3 "$OUT/items/$id/stdout" | sed 's/^/           observed: /' | cut -c1-160
                echo "           look: ${F[$id.look]:-}"
            fi
        done
    done
    echo
    for status in ran failed would-run manual skipped legend; do
        n=0
        for id in "${IDS[@]}"; do [ "${STATUS[$id]:-}" = "$status" ] && n=$((n + 1)); done
        echo "$status: $n"
    done
    echo
    echo "send back $OUT.tgz"
} >"$OUT/summary.txt"
{
    echo "{"
    echo "  \"format\": \"dpu-conformance/1\","
    echo "  \"where\": $(json_str "$WHERE"),"
    echo "  \"uname\": $(json_str "$(uname -srm)"),"
    echo "  \"capture\": $(json_str "$CAPTURE_STATUS"),"
    echo "  \"items\": ["
    first=1
    for id in "${IDS[@]}"; do
        [ -n "${STATUS[$id]:-}" ] || continue
        [ "$first" = 1 ] || echo ","
        first=0
        observed=""
        [ -r "$OUT/items/$id/stdout" ] && observed=$(head -c 2000 "$OUT/items/$id/stdout")
        printf '    {"id": %s, "doc": %s, "claim": %s, "where": %s, "needs": %s, "run": %s, "status": %s, "reason": %s, "exit_status": %s, "observed": %s, "look": %s}' \
            "$(json_str "$id")" "$(json_str "${F[$id.doc]:-}")" "$(json_str "${F[$id.claim]:-}")" \
            "$(json_str "${F[$id.where]:-}")" "$(json_str "${F[$id.needs]:-}")" "$(json_str "${F[$id.run]:-}")" \
            "$(json_str "${STATUS[$id]}")" \
            "$(json_str "${REASON[$id]}")" "${EXIT[$id]:-null}" "$(json_str "$observed")" "$(json_str "${F[$id.look]:-}")"
    done
    echo
    echo "  ]"
    echo "}"
} >"$OUT/summary.json"
tar -C "$(dirname "$OUT")" -czf "$OUT.tgz" "$(basename "$OUT")"
cat "$OUT/summary.txt"

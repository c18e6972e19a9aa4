#!/usr/bin/env bash
# lab/lab.sh -- run the two-VM real-kernel lab (QEMU TCG, Debian's stock kernel).
#
#   lab.sh up [--bin-dir DIR] [--no-build]   build if needed, boot target + bluefield, wait (with
#                                            a deadline) until both report ready, check OVS
#   lab.sh run [--vm target|bluefield] [--ns dpu|host|none] [--timeout SECS] -- CMD...
#                                            run CMD (a bash command line, joined like ssh does;
#                                            `-` = read the script from stdin) in a guest; prints
#                                            its stdout/stderr, exits with its exit code
#                                            (255 = lab problem, 124 = timed out).
#                                            Default: --vm bluefield --ns host (target: none).
#   lab.sh status                            which VMs are up/ready (exit 0 = both ready)
#   lab.sh down                              kill the VMs by pidfile, verify no lab QEMU is left
#   lab.sh logs [VM]                         print serial logs
#
# Env: LAB_CACHE, LAB_RUN, LAB_APPEND (extra kernel args, e.g. lab.ovs_workaround=0), and the
# overridable values in topology.env (ports, memory, LAB_BOOT_TIMEOUT).
# State: $LAB_RUN (default $LAB_CACHE/run): <vm>/{serial.log,qemu.pid,disk.qcow2,share/}.
# share/ is the guest's /lab/share (9p): bring-up writes ready|failed there; share/cmd/ is the
# command queue served by the guest's cmdd.sh.
set -euo pipefail
LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$LAB_DIR/topology.env"
LAB_CACHE=${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dpu-lab}
LAB_RUN=${LAB_RUN:-$LAB_CACHE/run}
VMS=(target bluefield)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
msg() { echo "[lab] $*" >&2; }

pid_of() { # prints the pid of VM $1's QEMU if it is alive and ours
  local f="$LAB_RUN/$1/qemu.pid" p
  [ -s "$f" ] || return 1
  p=$(tr -dc 0-9 < "$f")
  [ -n "$p" ] && [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' < "/proc/$p/cmdline" | grep -qF "$LAB_RUN/$1/" && echo "$p"
}
# any QEMU whose command line names our run dir (catches a lost pidfile)
our_qemus() {
  local d p
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    tr '\0' ' ' < "$d/cmdline" 2>/dev/null | grep -q "^[^ ]*qemu-system[^ ]* .*$LAB_RUN/" && echo "$p"
  done
  return 0
}

print_logs() {
  local vm n
  for vm in "${@:-${VMS[@]}}"; do
    local f="$LAB_RUN/$vm/serial.log"
    echo "===== serial log of $vm ($f) ====="
    if [ -f "$f" ]; then
      n=$(wc -l < "$f")
      [ "$n" -gt 400 ] && echo "... (first $((n - 400)) lines omitted)"
      tail -n 400 "$f" | tr -d '\r'
    else echo "(none)"; fi
    [ -s "$LAB_RUN/$vm/qemu.err" ] && { echo "----- qemu stderr of $vm -----"; cat "$LAB_RUN/$vm/qemu.err"; }
  done
  echo "===== end of serial logs ====="
}

cmd_down() {
  local vm p left rc=0 t
  for vm in "${VMS[@]}"; do
    if p=$(pid_of "$vm"); then
      kill -TERM "$p" 2>/dev/null || true
      t=$(( $(date +%s) + 10 ))
      while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$t" ]; do sleep 0.1; done
      if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null || true; sleep 0.2; fi
      kill -0 "$p" 2>/dev/null && { msg "$vm: QEMU $p survived SIGKILL"; rc=1; } || msg "$vm: stopped (pid $p)"
    fi
    rm -f "$LAB_RUN/$vm/qemu.pid"
  done
  left=$(our_qemus)
  if [ -n "$left" ]; then
    msg "stray lab QEMU processes (no pidfile): $left -- killing"
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null || true; sleep 0.5
    left=$(our_qemus)
  fi
  if [ -n "$left" ]; then msg "FAILED: lab QEMU still running: $left"; return 1; fi
  msg "down: no lab QEMU left"
  return $rc
}

cmd_status() {
  local vm p up=0
  for vm in "${VMS[@]}"; do
    if p=$(pid_of "$vm"); then
      if [ -f "$LAB_RUN/$vm/share/ready" ]; then echo "$vm: up, ready (pid $p)"; up=$((up + 1))
      elif [ -f "$LAB_RUN/$vm/share/failed" ]; then echo "$vm: up, bring-up FAILED: $(cat "$LAB_RUN/$vm/share/failed") (pid $p)"
      else echo "$vm: up, booting (pid $p)"; fi
    else echo "$vm: down"; fi
  done
  [ $up -eq 2 ]
}

qemu_cmd() { # $1 = vm; prints nothing, fills QARGS
  local vm=$1 d="$LAB_RUN/$1" mode mem macs
  QEMU=$(cat "$LAB_CACHE/qemu-path")
  QARGS=("$QEMU" -name "lab-$vm" -nodefaults -no-user-config -machine q35 -accel tcg,thread=multi -cpu max
         -smp "$LAB_SMP" -display none -vga none -monitor none -no-reboot
         -serial "file:$d/serial.log" -pidfile "$d/qemu.pid" -daemonize
         -kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.img"
         -append "console=ttyS0 lab.role=$vm net.ifnames=0 panic=-1 loglevel=5 ${LAB_APPEND:-}"
         -drive "file=$d/disk.qcow2,if=virtio,format=qcow2,cache=unsafe,discard=unmap"
         -fsdev "local,id=fs0,path=$d/share,security_model=none"
         -device "virtio-9p-pci,fsdev=fs0,mount_tag=$LAB_SHARE_TAG")
  case "$QEMU" in "$LAB_CACHE"/hosttools/*) # unpacked by build.sh: firmware and modules beside it
    QARGS+=(-L "$LAB_CACHE/hosttools/root/usr/share/qemu")
    export QEMU_MODULE_DIR="$LAB_CACHE/hosttools/root/usr/lib/x86_64-linux-gnu/qemu" ;; esac
  if [ "$vm" = target ]; then mode=listen; mem=$LAB_MEM_TARGET; macs=("$TARGET_STORAGE_MAC" "$TARGET_NET_MAC")
  else mode=connect; mem=$LAB_MEM_BLUEFIELD; macs=("$BF_UPLINK_MAC" "$BF_NET_UPLINK_MAC"); fi
  QARGS+=(-m "$mem"
    -netdev "socket,id=n0,$mode=127.0.0.1:$LAB_PORT_STORAGE" -device "virtio-net-pci,netdev=n0,mac=${macs[0]},romfile="
    -netdev "socket,id=n1,$mode=127.0.0.1:$LAB_PORT_NET" -device "virtio-net-pci,netdev=n1,mac=${macs[1]},romfile=")
}

port_listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

UP_OK=0
up_cleanup() {
  local rc=$?
  [ "$UP_OK" = 1 ] && return 0
  msg "up failed (rc $rc): stopping the VMs"
  print_logs >&2 || true
  cmd_down || true
}

cmd_up() {
  local build=1 bargs=() vm t_all t p deadline ready
  while [ $# -gt 0 ]; do
    case "$1" in
      --bin-dir) bargs=(--bin-dir "$2"); shift 2 ;;
      --no-build) build=0; shift ;;
      *) msg "up: unknown argument $1"; exit 2 ;;
    esac
  done
  t_all=$(now)
  if cmd_status >/dev/null; then msg "already up"; cmd_status; return 0; fi
  if [ -n "$(our_qemus)" ]; then msg "a half-up lab is running; taking it down first"; cmd_down; fi
  for p in "$LAB_PORT_STORAGE" "$LAB_PORT_NET"; do
    port_listening "$p" && { msg "127.0.0.1:$p is already in use (set LAB_PORT_STORAGE/LAB_PORT_NET)"; exit 1; }
  done
  if [ $build = 1 ]; then
    t=$(now); "$LAB_DIR/build.sh" "${bargs[@]}" >&2 || { msg "build failed"; exit 1; }
    msg "phase build: $(elapsed "$t")s"
  fi
  IMG=$(readlink -f "$LAB_CACHE/current") || true
  [ -f "$IMG/rootfs.img" ] || { msg "no image in $LAB_CACHE/current: run lab/build.sh"; exit 1; }
  trap up_cleanup EXIT
  trap 'exit 130' INT TERM
  t=$(now)
  for vm in "${VMS[@]}"; do
    rm -rf "${LAB_RUN:?}/$vm"; mkdir -p "$LAB_RUN/$vm/share/cmd"
    qemu-img create -q -f qcow2 -b "$IMG/rootfs.img" -F raw "$LAB_RUN/$vm/disk.qcow2"
    qemu_cmd "$vm"
    printf '%q ' "${QARGS[@]}" > "$LAB_RUN/$vm/qemu.cmdline"
    "${QARGS[@]}" 2> "$LAB_RUN/$vm/qemu.err" || { msg "$vm: QEMU did not start: $(cat "$LAB_RUN/$vm/qemu.err")"; exit 1; }
    if [ "$vm" = target ]; then # bluefield connects to target's listening sockets
      deadline=$(( $(date +%s) + 20 ))
      until port_listening "$LAB_PORT_STORAGE" && port_listening "$LAB_PORT_NET"; do
        [ "$(date +%s)" -lt "$deadline" ] || { msg "target QEMU does not listen on $LAB_PORT_STORAGE/$LAB_PORT_NET"; exit 1; }
        sleep 0.1
      done
    fi
  done
  msg "phase start qemu: $(elapsed "$t")s (target pid $(pid_of target), bluefield pid $(pid_of bluefield))"
  t=$(now); deadline=$(( $(date +%s) + LAB_BOOT_TIMEOUT ))
  declare -A readyat=()
  while :; do
    ready=0
    for vm in "${VMS[@]}"; do
      if [ -f "$LAB_RUN/$vm/share/ready" ]; then
        ready=$((ready + 1))
        [ -n "${readyat[$vm]:-}" ] || { readyat[$vm]=$(elapsed "$t"); msg "$vm ready after ${readyat[$vm]}s"; }
        continue
      fi
      [ -f "$LAB_RUN/$vm/share/failed" ] && { msg "$vm bring-up FAILED: $(cat "$LAB_RUN/$vm/share/failed")"; exit 1; }
      pid_of "$vm" >/dev/null || { msg "$vm: QEMU exited during boot"; exit 1; }
      grep -q 'LAB-BOOT-FAILED' "$LAB_RUN/$vm/serial.log" 2>/dev/null &&
        { msg "$vm: $(grep -a -m1 'LAB-BOOT-FAILED' "$LAB_RUN/$vm/serial.log" | tr -d '\r')"; exit 1; }
    done
    [ $ready -eq 2 ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then
      for vm in "${VMS[@]}"; do [ -f "$LAB_RUN/$vm/share/ready" ] || msg "BOOT TIMEOUT: $vm did not report ready within ${LAB_BOOT_TIMEOUT}s (LAB_BOOT_TIMEOUT)"; done
      exit 1
    fi
    sleep 0.2
  done
  msg "phase boot: $(elapsed "$t")s"
  t=$(now)
  cmd_run --vm bluefield --ns none --timeout 180 -- /lab/guest/ovs-check.sh 60 >&2 ||
    { msg "OVS upcall check failed"; exit 1; }
  msg "phase ovs check: $(elapsed "$t")s"
  UP_OK=1
  trap - EXIT INT TERM
  msg "lab up in $(elapsed "$t_all")s (image $(basename "$IMG"))"
}

cmd_run() {
  local vm=bluefield ns="" tmo=600 id q t0 script deadline p rc
  while [ $# -gt 0 ]; do
    case "$1" in
      --vm) vm=$2; shift 2 ;;
      --ns) ns=$2; shift 2 ;;
      --timeout) tmo=$2; shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  case "$vm" in target|bluefield) ;; *) msg "run: --vm target|bluefield"; return 255 ;; esac
  [ -n "$ns" ] || { [ "$vm" = bluefield ] && ns=$NS_HOST || ns=none; }
  [ $# -gt 0 ] || { msg "run: no command (use -- CMD... or -- - for stdin)"; return 255; }
  if [ "$#" = 1 ] && [ "$1" = - ]; then script=$(cat); else script="$*"; fi
  p=$(pid_of "$vm") || { msg "run: $vm is not up"; return 255; }
  [ -f "$LAB_RUN/$vm/share/ready" ] || msg "run: warning: $vm has not reported ready"
  q="$LAB_RUN/$vm/share/cmd"; id="$(date +%s%N)-$$-$RANDOM"
  printf '%s %s\n%s\n' "$ns" "$tmo" "$script" > "$q/$id.req.tmp"
  mv "$q/$id.req.tmp" "$q/$id.req"
  deadline=$(( $(date +%s) + tmo + 30 ))
  # The guest writes the exit code in one write: present and non-empty means done. The
  # wait checks its QEMU by pid (a builtin test, no fork: the host's cores run the VMs).
  while [ ! -s "$q/$id.rc" ]; do
    if [ ! -d "/proc/$p" ]; then msg "run: $vm died while running the command"; return 255; fi
    if [ "$EPOCHSECONDS" -ge "$deadline" ]; then
      [ -f "$q/$id.req" ] && { rm -f "$q/$id.req"; msg "run: the guest command daemon on $vm never picked the command up"; return 255; }
      msg "run: no result from $vm after $((tmo + 30))s"; return 124
    fi
    sleep 0.05
  done
  cat "$q/$id.out" 2>/dev/null || true
  cat "$q/$id.err" >&2 2>/dev/null || true
  rc=$(cat "$q/$id.rc")
  rm -f "$q/$id".*
  # 127: the guest's shell found no such command. The project's binaries are in the image
  # only when `lab up` installed them (dpuctl lab up does by default; lab.sh needs --bin-dir).
  if [ "$rc" = 127 ]; then
    case "$1" in
      dpuctl|dpu-agent|dpuctl\ *|dpu-agent\ *)
        msg "run: this lab has no $1 inside: bring it up with the binaries (dpuctl lab up from a build of both, or lab.sh up --bin-dir DIR)" ;;
      *) msg "run: the command was not found in the $vm VM" ;;
    esac
  fi
  return "$rc"
}

sub=${1:-}; [ $# -gt 0 ] && shift
case "$sub" in
  up) cmd_up "$@" ;;
  run) set +e; cmd_run "$@"; exit $? ;;
  status) cmd_status ;;
  down) cmd_down ;;
  logs) print_logs "$@" ;;
  *) sed -n "2,20p" "$0"; exit 2 ;;
esac

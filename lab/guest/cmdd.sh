#!/bin/bash
# /lab/guest/cmdd.sh -- the guest command daemon (respawned by busybox init).
# Protocol over the 9p share (host dir $LAB_RUN/<vm>/share = guest /lab/share):
#   host writes  cmd/ID.req   line 1: "NS TIMEOUT" (NS = netns name or none), rest: bash script
#   daemon renames it to cmd/ID.taken, runs the script (in `ip netns exec NS` unless none) with
#   stdout -> cmd/ID.out, stderr -> cmd/ID.err, then writes cmd/ID.rc (exit code, one write:
#   the host waits for it to be non-empty). The host removes cmd/ID.* when it has read them.
# Commands run concurrently; topology.env is exported into their environment. Under TCG every
# exec costs a tenth of a second or more, so the daemon's own steps are bash builtins where
# one exists: a command costs its mv, `ip netns exec`, `timeout` and bash, nothing more.
set -a; . /lab/topology.env; set +a
export PATH=/opt/dpu/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
Q=/lab/share/cmd
mkdir -p "$Q" /run/lab-cmd
mkfifo /run/lab-cmd/tick 2>/dev/null
exec 9<> /run/lab-cmd/tick   # `read -t` on it = a sleep without forking
cd /root 2>/dev/null || cd /

run_one() {
  local id=$1 ns tmo s=$Q/$1.sh script
  { read -r ns tmo; mapfile script; } < "$Q/$id.taken"
  printf '%s' "${script[@]}" > "$s"
  case "$tmo" in ''|*[!0-9]*) tmo=600 ;; esac
  if [ -z "$ns" ] || [ "$ns" = none ]; then
    timeout -k 5 "$tmo" bash "$s"
  else
    ip netns exec "$ns" timeout -k 5 "$tmo" bash "$s"
  fi > "$Q/$id.out" 2> "$Q/$id.err" < /dev/null
  echo $? > "$Q/$id.rc"
}

while :; do
  for f in "$Q"/*.req; do
    [ -e "$f" ] || continue
    id=${f##*/}; id=${id%.req}
    mv "$f" "$Q/$id.taken" || continue
    run_one "$id" &
  done
  read -r -t 0.1 -u 9 _
done

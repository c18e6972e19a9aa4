#!/bin/bash
# /lab/guest/cmdd.sh -- the guest command daemon (respawned by busybox init).
# Protocol over the 9p share (host dir $LAB_RUN/<vm>/share = guest /lab/share):
#   host writes  cmd/ID.req   line 1: "NS TIMEOUT" (NS = netns name or none), rest: bash script
#   daemon renames it to cmd/ID.taken, runs the script (in `ip netns exec NS` unless none) with
#   stdout -> cmd/ID.out, stderr -> cmd/ID.err, then writes cmd/ID.rc (exit code) atomically.
# Commands run concurrently; topology.env is exported into their environment.
set -a; . /lab/topology.env; set +a
export PATH=/opt/dpu/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
Q=/lab/share/cmd
mkdir -p "$Q" /run/lab-cmd
mkfifo /run/lab-cmd/tick 2>/dev/null
exec 9<> /run/lab-cmd/tick   # `read -t` on it = a sleep without forking
cd /root 2>/dev/null || cd /

run_one() {
  local id=$1 ns tmo s=/run/lab-cmd/$1.sh
  read -r ns tmo < "$Q/$id.taken"
  tail -n +2 "$Q/$id.taken" > "$s"
  case "$tmo" in ''|*[!0-9]*) tmo=600 ;; esac
  if [ -z "$ns" ] || [ "$ns" = none ]; then
    timeout -k 5 "$tmo" bash "$s"
  else
    ip netns exec "$ns" timeout -k 5 "$tmo" bash "$s"
  fi > "$Q/$id.out" 2> "$Q/$id.err" < /dev/null
  echo $? > "$Q/$id.rc.tmp"
  mv "$Q/$id.rc.tmp" "$Q/$id.rc"
  rm -f "$s" "$Q/$id.taken"
}

while :; do
  for f in "$Q"/*.req; do
    [ -e "$f" ] || continue
    id=$(basename "$f" .req)
    mv "$f" "$Q/$id.taken" || continue
    run_one "$id" &
  done
  read -r -t 0.1 -u 9 _
done

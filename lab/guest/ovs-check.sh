#!/bin/bash
# /lab/guest/ovs-check.sh [SECS] -- prove OVS upcalls work in the bluefield VM (TCG quirk check).
# Ping from netns host through ovsbr1 to the target; assert the datapath's `lost` counter did not
# move while `missed` did (upcalls were handled) and that flows got installed in TC (dp:tc).
# Counters are read with ovs-dpctl (straight from the kernel, works with vswitchd dead).
# If upcalls are lost, restart ovs-vswitchd and check again (at most twice), saying so.
. /lab/guest/lib.sh
SECS=${1:-60}
lost() { ovs-dpctl show | sed -n 's/.*lost:\([0-9]*\).*/\1/p' | head -1; }
missed() { ovs-dpctl show | sed -n 's/.*missed:\([0-9]*\).*/\1/p' | head -1; }
for attempt in 1 2 3; do
  l0=$(lost); m0=$(missed)
  ok=0
  deadline=$(( $(date +%s) + SECS ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if ip netns exec "$NS_HOST" ping -c 3 -i 0.2 -W 2 -q "$TARGET_NET_IP" >/dev/null 2>&1; then ok=1; break; fi
    [ "$(lost)" != "$l0" ] && break
  done
  l1=$(lost); m1=$(missed)
  flows=$(ovs-appctl dpctl/dump-flows -m type=tc 2>/dev/null | grep -c 'dp:tc')
  echo "ovs-check attempt $attempt: ping=$ok lookups missed $m0->$m1 lost $l0->$l1 tc_flows=$flows"
  if [ "$ok" = 1 ] && [ "$l1" = "$l0" ] && [ "$m1" -gt "$m0" ] && [ "$flows" -gt 0 ]; then
    echo "ovs-check: OK (upcalls handled, $flows flows in TC)"
    exit 0
  fi
  if [ "$l1" != "$l0" ]; then
    echo "ovs-check: QUIRK DETECTED: ovs-vswitchd lost $((l1 - l0)) upcalls; restarting it"
  else
    echo "ovs-check: no working path through $BF_OVS_BRIDGE (ping=$ok, tc_flows=$flows); restarting ovs-vswitchd"
  fi
  /lab/guest/ovs-restart.sh || { echo "ovs-check: restart failed"; exit 1; }
done
echo "ovs-check: FAILED after 3 attempts"
ovs-appctl dpctl/show; ovs-appctl upcall/show; ovs-vsctl show
exit 1

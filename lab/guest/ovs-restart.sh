#!/bin/bash
# /lab/guest/ovs-restart.sh -- restart ovs-vswitchd only (keeps ovsdb and the kernel datapath),
# polling for the old daemon to go and the bridge to come back.
. /lab/guest/lib.sh
OVS_CTL=/usr/share/openvswitch/scripts/ovs-ctl
old=$(cat /run/openvswitch/ovs-vswitchd.pid 2>/dev/null)
"$OVS_CTL" --no-ovsdb-server stop >/dev/null || exit 1
[ -n "$old" ] && { wait_for 30 sh -c "! kill -0 $old" || { log "old ovs-vswitchd $old did not exit"; exit 1; }; }
"$OVS_CTL" --no-ovsdb-server --system-id=random --no-full-hostname start >/dev/null || exit 1
wait_for 30 ovs-appctl -t ovs-vswitchd version || { log "ovs-vswitchd does not answer"; exit 1; }
wait_for 30 sh -c "ovs-appctl dpctl/show | grep -q 'port.*$BF_PF_REP'" || { log "bridge ports not back"; exit 1; }
log "ovs-vswitchd restarted (pid $(cat /run/openvswitch/ovs-vswitchd.pid))"

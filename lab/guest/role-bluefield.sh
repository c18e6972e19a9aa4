#!/bin/bash
# /lab/guest/role-bluefield.sh -- the `bluefield` VM.
#   DPU side = the init netns (also named `dpu`): storage uplink p0 + soft-RoCE rxe0, network
#   uplink p1 in OVS bridge ovsbr1 (hw-offload=true -> TC flower, software) with pf0hpf,
#   dpu end of the management link.
#   Host side = netns `host`: pf0 (the other end of pf0hpf), the host end of the management link.
. /lab/guest/lib.sh
set -u

rename_by_mac "$BF_UPLINK_MAC" "$BF_UPLINK"
rename_by_mac "$BF_NET_UPLINK_MAC" "$BF_NET_UPLINK"
ip addr replace "$BF_UPLINK_IP/$LAB_PREFIX" dev "$BF_UPLINK"
ip link set "$BF_UPLINK" up; ip link set "$BF_NET_UPLINK" up
add_rxe "$BF_RXE" "$BF_UPLINK"
log "rxe $BF_RXE on $BF_UPLINK ($BF_UPLINK_IP)"

# --- namespaces: `host` is a real netns; `dpu` names the init netns (rxe needs init netns) ----
ip netns add "$NS_HOST" || fail "ip netns add $NS_HOST"
ip netns attach "$NS_DPU" 1 2>/dev/null || {
  touch "/run/netns/$NS_DPU" && mount --bind /proc/1/ns/net "/run/netns/$NS_DPU"; } ||
  fail "cannot name the init netns $NS_DPU"
ip -n "$NS_HOST" link set lo up

# management link (rshim/OOB stand-in): dpu <-> host
ip link add "$BF_MGMT_IF" type veth peer name mgmt-h netns "$NS_HOST" || fail "mgmt veth"
ip -n "$NS_HOST" link set mgmt-h name "$HOST_MGMT_IF"
ip addr add "$BF_MGMT_IP/$MGMT_PREFIX" dev "$BF_MGMT_IF"
ip -n "$NS_HOST" addr add "$HOST_MGMT_IP/$MGMT_PREFIX" dev "$HOST_MGMT_IF"
ip link set "$BF_MGMT_IF" up; ip -n "$NS_HOST" link set "$HOST_MGMT_IF" up

# host PF stand-in: pf0hpf (dpu, OVS port) <-> pf0 (host)
ip link add "$BF_PF_REP" type veth peer name pf-h netns "$NS_HOST" || fail "pf veth"
ip -n "$NS_HOST" link set pf-h name "$HOST_PF_IF"
ip -n "$NS_HOST" addr add "$HOST_PF_IP/$LAB_PREFIX" dev "$HOST_PF_IF"
ip link set "$BF_PF_REP" up; ip -n "$NS_HOST" link set "$HOST_PF_IF" up

# NVMe host identity (nvme-cli wants one)
mkdir -p /etc/nvme
[ -s /etc/nvme/hostnqn ] || nvme gen-hostnqn > /etc/nvme/hostnqn
[ -s /etc/nvme/hostid ] || cat /proc/sys/kernel/random/uuid > /etc/nvme/hostid
for m in nvme_fabrics nvme_tcp nvme_rdma nvmet nvmet_tcp; do modprobe "$m" || fail "modprobe $m"; done
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config || fail "no configfs"

# --- OVS --------------------------------------------------------------------------------------
OVS_CTL=/usr/share/openvswitch/scripts/ovs-ctl
modprobe openvswitch || fail "modprobe openvswitch"
modprobe sch_ingress; modprobe cls_flower; modprobe act_mirred; modprobe act_gact
t0=$(date +%s.%N)
"$OVS_CTL" --system-id=random --no-full-hostname start || fail "ovs-ctl start"
ovs-vsctl set Open_vSwitch . other_config:hw-offload=true
ovs-vsctl --may-exist add-br "$BF_OVS_BRIDGE" \
  -- --may-exist add-port "$BF_OVS_BRIDGE" "$BF_NET_UPLINK" \
  -- --may-exist add-port "$BF_OVS_BRIDGE" "$BF_PF_REP" || fail "ovs-vsctl add-br/add-port"
ip link set "$BF_OVS_BRIDGE" up
# Workaround for the TCG first-start quirk: the ovs-vswitchd that created the ovs-system datapath
# loses every upcall. Restart it once (this also makes hw-offload=true take effect). lab.sh up
# then runs /lab/guest/ovs-check.sh, which proves upcalls work (ping through the bridge, lost
# unchanged, flows in TC) and restarts again if they do not.
if grep -qw 'lab.ovs_workaround=0' /proc/cmdline; then
  log "lab.ovs_workaround=0: NOT restarting ovs-vswitchd (to exercise the check)"
else
  /lab/guest/ovs-restart.sh || fail "ovs-vswitchd restart"
fi
log "OVS up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')s: $(ovs-vsctl list-ports "$BF_OVS_BRIDGE" | tr '\n' ' ')hw-offload=$(ovs-vsctl get Open_vSwitch . other_config:hw-offload)"

# The remote storage server answers to the name `target` (storage link).
grep -q ' target$' /etc/hosts || echo "$TARGET_STORAGE_IP target" >> /etc/hosts
# In the host namespace the target is reached over the network link through ovsbr1
# (`ip netns exec` puts /etc/netns/host/hosts over /etc/hosts).
mkdir -p "/etc/netns/$NS_HOST"
printf '127.0.0.1 localhost\n%s target\n' "$TARGET_NET_IP" > "/etc/netns/$NS_HOST/hosts"

# --- dpu-agent (when the image carries it) --------------------------------------------------
# Kernel storage backend (nvme-fabrics here plays SNAP's part), OVS through the real
# daemons, served on the management link for dpuctl in the host namespace.
agent=none
if [ -x "$DPU_BIN_DIR/dpu-agent" ]; then
  # The management link is a veth inside this VM: plaintext with the operator role.
  start_agent "$BF_MGMT_IP" operator
  agent="$DPUCTL_AGENT"
  log "dpu-agent serving on $agent (log $AGENT_LOG)"
fi

{
  echo "role=bluefield"
  echo "agent=$agent"
  echo "rxe=$BF_RXE"
  echo "hostnqn=$(cat /etc/nvme/hostnqn)"
} > /lab/share/ready.tmp
mv /lab/share/ready.tmp /lab/share/ready

#!/bin/bash
# /lab/guest/bringup.sh -- role bring-up, run once at boot by busybox init after init.sh.
# Writes /lab/share/ready (key=value lines) on success or /lab/share/failed (reason) on failure;
# the host's lab.sh polls for those. Progress goes to the serial console and bringup.log.
. /lab/guest/lib.sh
ROLE=$(cat /run/lab-role)
exec > >(tee /lab/share/bringup.log > /dev/console) 2>&1
log "bring-up role=$ROLE kernel=$(uname -r)"
case "$ROLE" in
  target) /lab/guest/role-target.sh ;;
  bluefield) /lab/guest/role-bluefield.sh ;;
  *) fail "unknown lab.role '$ROLE' on the kernel command line" ;;
esac
rc=$?
if [ $rc -eq 0 ] && [ ! -e /lab/share/failed ]; then
  log "LAB-READY role=$ROLE"
else
  [ -e /lab/share/failed ] || echo "role-$ROLE.sh exited $rc" > /lab/share/failed
  log "LAB-BOOT-FAILED role=$ROLE: $(cat /lab/share/failed)"
fi

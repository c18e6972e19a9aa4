#!/bin/bash
# /lab/guest/init.sh -- busybox init's sysinit step (PID 1 is busybox init; no systemd/udev).
# Mounts the basics and the 9p share, names the NICs by MAC. Role bring-up is bringup.sh.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -o remount,rw / 2>/dev/null
mount -t proc proc /proc
mount -t sysfs sys /sys
mountpoint -q /dev || mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
ln -sfn /proc/self/fd /dev/fd; ln -sfn fd/0 /dev/stdin; ln -sfn fd/1 /dev/stdout; ln -sfn fd/2 /dev/stderr
modprobe configfs 2>/dev/null
mount -t configfs configfs /sys/kernel/config
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mkdir -p /run/netns /run/lock /var/run
ln -sfn /proc/self/mounts /etc/mtab

ROLE=$(sed -n 's/.*lab\.role=\([a-z]*\).*/\1/p' /proc/cmdline)
echo "${ROLE:-unknown}" > /run/lab-role
hostname "${ROLE:-lab}"
ip link set lo up

for m in virtio_net 9pnet_virtio 9p; do modprobe "$m"; done
mkdir -p /lab/share
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none labshare /lab/share ||
  echo "LAB-BOOT-FAILED: cannot mount the 9p share" > /dev/console
rm -f /lab/share/ready /lab/share/failed
echo "lab-init: role=$ROLE share=$(mountpoint -q /lab/share && echo ok || echo MISSING)" > /dev/console

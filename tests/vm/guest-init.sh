#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Stage 2 of the test VM, PID 1 on the host's root (see initramfs-init).
# Finishes the environment the tests expect, runs the command that
# vm-run.sh left in the run directory with its output on ttyS1, records its
# exit status in the run directory and powers off.  PID 1 must never exit:
# that would panic the kernel.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C.UTF-8 TERM=dumb

for arg in $(</proc/cmdline); do
	case "$arg" in
	kiwivm.root=*) KIWI_ROOT=${arg#kiwivm.root=} ;;
	kiwivm.run=*) run=${arg#kiwivm.run=} ;;
	esac
done
export KIWI_ROOT

halt() {
	sync
	busybox poweroff -f
	echo o > /proc/sysrq-trigger
	sleep 60
}

log() { echo "kiwi-vm: $*" > /dev/kmsg; }

mkdir -p /dev/pts /dev/shm
mount -t devpts -o mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ln -sfn /proc/self/fd /dev/fd
ln -sfn /proc/self/fd/0 /dev/stdin
ln -sfn /proc/self/fd/1 /dev/stdout
ln -sfn /proc/self/fd/2 /dev/stderr
mount -t debugfs debugfs /sys/kernel/debug
modprobe configfs 2>/dev/null
mountpoint -q /sys/kernel/config ||
	mount -t configfs configfs /sys/kernel/config
ip link set lo up
hostname kiwi-vm
# Hung tasks must show up in the log (and fail the run) well before the
# host-side timeout would kill the guest silently.
echo 60 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null

out=/dev/ttyS1
stty -F "$out" raw -echo 2>/dev/null

if [ -z "$run" ] || [ ! -f "$run/cmd" ]; then
	echo "kiwi-vm: no command to run (kiwivm.run=$run)" > /dev/console
	halt
fi

tmo=$(<"$run/timeout")
set -a
# shellcheck disable=SC1091
. "$run/env"
set +a
cd "$KIWI_ROOT" || halt

log "running command (timeout ${tmo}s)"
# Own session so that a timed-out command's whole process group goes.
setsid -w timeout -k 15 "$tmo" bash "$run/cmd" < /dev/null > "$out" 2>&1
rc=$?
log "command exited with status $rc"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	echo "kiwi-vm: command timed out after ${tmo}s" > "$out"
	# Show where it is stuck: blocked tasks and their kernel stacks.
	echo w > /proc/sysrq-trigger
	rc=124
fi
echo "$rc" > "$run/status.tmp" && mv "$run/status.tmp" "$run/status"
halt

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 300
#
# The bench itself: the guest runs the kernel kiwi is built for, with the
# debugging options that make bugs fatal, the file systems the tests use,
# the RDMA core modules, and a veth pair that carries TCP.
. "$(dirname "$0")/lib/lib.sh"

cmdline=$(</proc/cmdline)
for opt in slub_debug=FZPU panic_on_warn=1 oops=panic panic=-1; do
	if [[ " $cmdline " == *" $opt "* ]]; then
		tap_ok "kernel command line has $opt"
	else
		tap_fail "kernel command line has $opt"
		tap_diag "cmdline: $cmdline"
	fi
done
tap_check "panic_on_warn is in force" \
	grep -qx 1 /proc/sys/kernel/panic_on_warn
tap_check "slub_debug is in force (a cache has red zones)" \
	grep -qx 1 /sys/kernel/slab/kmalloc-64/red_zone
# a stalled kernel panics with its stacks instead of going silent
for f in softlockup_panic panic_on_rcu_stall hung_task_panic; do
	tap_check "$f is in force" grep -qx 1 /proc/sys/kernel/$f
done

tap_check "debugfs is mounted at /sys/kernel/debug" \
	bash -c 'grep -q "^debugfs /sys/kernel/debug debugfs" /proc/mounts'
tap_check "configfs is mounted at /sys/kernel/config" \
	bash -c 'grep -q "^configfs /sys/kernel/config configfs" /proc/mounts'
tap_check "/tmp is a tmpfs" \
	bash -c 'grep -q "^tmpfs /tmp tmpfs" /proc/mounts'
tap_check "/dev/fd works" bash -c 'echo x | cat /dev/fd/0 | grep -qx x'
tap_check "the work tree is writable" \
	bash -c 'f=$KIWI_ROOT/tests/vm/out/.sanity.$$; echo y > "$f" && grep -qx y "$f" && rm "$f"'
tap_check "the host's / is read-only" bash -c '! touch /usr/.kiwi-sanity 2>/dev/null'

kv=$(uname -r)
if [ -f "$KIWI_KO" ]; then
	vm=$(modinfo -F vermagic "$KIWI_KO" 2>/dev/null)
	if [ "${vm%% *}" = "$kv" ]; then
		tap_ok "kiwi.ko is built for the running kernel $kv"
	else
		tap_fail "kiwi.ko is built for the running kernel $kv"
		tap_diag "kiwi.ko vermagic: $vm"
	fi
else
	tap_fail "kiwi.ko is built for the running kernel $kv (no $KIWI_KO)"
fi

tap_check "RDMA core modules load (ib_core ib_uverbs iw_cm rdma_cm rdma_ucm)" \
	modprobe -a ib_core ib_uverbs iw_cm rdma_cm rdma_ucm
tap_check "/dev/infiniband/rdma_cm exists" test -c /dev/infiniband/rdma_cm
tap_check "the rdma tool talks to the kernel" rdma dev show

tap_check "veth pair with addresses comes up" veth_setup
tap_check "ping 198.18.0.2" busybox ping -c 1 -W 5 198.18.0.2
# A TCP byte stream between the two addresses, as kiwi's connections use.
tcp_roundtrip() {
	busybox nc -l -p 18515 > /tmp/nc.out &
	wait_for 10 tcp_listening "" 18515 || { kill $!; return 1; }
	exec 3<>/dev/tcp/198.18.0.2/18515 || return 1
	echo kiwi-tcp-check >&3
	exec 3>&-
	wait
	[ "$(cat /tmp/nc.out)" = kiwi-tcp-check ]
}
tap_check "TCP between 198.18.0.1 and 198.18.0.2 carries bytes" tcp_roundtrip
veth_teardown
tap_done

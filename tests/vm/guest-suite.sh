#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Runs inside the test VM (tests/run-tests.sh starts it through vm-run.sh):
# every tests/cases/[0-9]*.sh in order, each under its own time limit
# (case-timeout.sh), each output line prefixed with the case's name.
# A case fails, with an extra "not ok" line, when it exits non-zero, times
# out, prints no TAP or no plan matching its results, leaves a kernel
# warning or BUG in dmesg, leaves kiwi.ko impossible to unload, or leaves
# an rdma link, a daemon, a network namespace or a veth behind.
# Markers "=== begin NAME" / "=== end NAME" let the host tell which case
# was running if the guest dies; "=== abort NAME" means that case hung in
# the kernel and the run stopped there.
# The body is one compound command, read whole before it runs, so that
# editing this file cannot change a run that is under way.
{
cd "${KIWI_ROOT:?}" || exit 1

bad=$(<tests/vm/kernel-bad.ere)
failed=0


# Best-effort return to a clean slate so that one broken case does not
# cascade into the next; whatever it finds is reported.
reset_state() {
	local name=$1 l
	for l in $(rdma link show 2>/dev/null | awk '/^link /{ split($2, a, "/"); print a[1] }'); do
		echo "# $name: left link $l behind; deleting it"
		rdma link del "$l" 2>/dev/null
	done
	# a daemon left behind changes what later cases see (iwpmd: every
	# connect waits on the port mapper)
	for l in iwpmd iscsid ksmbd.mountd rpc.mountd; do
		pgrep -x "$l" > /dev/null || continue
		echo "# $name: left $l running; killing it"
		pkill -9 -x "$l"
	done
	# a namespace or veth left behind keeps its addresses, routes and
	# devices: the next case's veth_setup or netns add meets them
	for l in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		echo "# $name: left network namespace $l behind; deleting it"
	done
	# "7: veth0@if6: <...": this namespace's veths (deleting one takes
	# its peer, wherever it is)
	for l in $(ip -o link show type veth 2>/dev/null |
			awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
		echo "# $name: left veth $l behind; deleting it"
		ip link del "$l" 2>/dev/null
	done
	ip -all netns delete 2>/dev/null
	if [ -d /sys/module/siw ]; then
		rmmod siw 2>/dev/null
	fi
}

# KIWI_CASES_DIR: another directory of cases (to test the bench itself).
for c in "${KIWI_CASES_DIR:-tests/cases}"/[0-9]*.sh; do
	[ -x "$c" ] || continue
	name=$(basename "$c" .sh)
	# "# full-only" in a case's header: the fuller target's alone
	if [ "${KIWI_FULL:-0}" != 1 ] && tests/vm/case-full-only.sh "$c"; then
		echo "# $name: in the fuller target only (KIWI_FULL=1)"
		continue
	fi
	tmo=$(tests/vm/case-timeout.sh "$c")
	before=$(dmesg | wc -l)
	echo "=== begin $name (timeout ${tmo}s)"
	echo "kiwi-suite: begin $name" > /dev/kmsg
	start=$(date +%s)
	out=/tmp/case-$name.out
	rm -f /tmp/case.rc
	{
		timeout -k 15 "$tmo" bash "$c" < /dev/null 2>&1
		echo $? > /tmp/case.rc
	} | tee "$out" | sed -u "s/^/$name: /" &
	pipe=$!
	# A case stuck in the kernel cannot be killed: give up on the whole
	# run (with a dump of the blocked tasks) instead of waiting for the
	# host to kill the guest much later.
	deadline=$((SECONDS + tmo + 30))
	while kill -0 "$pipe" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
		sleep 1
	done
	if kill -0 "$pipe" 2>/dev/null; then
		echo w > /proc/sysrq-trigger
		sleep 2
		echo "$name: not ok - case failed: hung, unkillable ${tmo}s + 30s after it started"
		echo "# $name: blocked tasks:"
		dmesg | tail -n +"$((before + 1))" | tail -n 60 | sed "s/^/# $name: | /"
		echo "=== abort $name"
		exit 1
	fi
	wait "$pipe"
	rc=$(cat /tmp/case.rc 2>/dev/null)
	rc=${rc:-255}
	echo "kiwi-suite: end $name status $rc" > /dev/kmsg
	why=()
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		why+=("timed out after ${tmo}s")
		echo w > /proc/sysrq-trigger
	elif [ "$rc" != 0 ]; then
		why+=("exit status $rc")
	fi
	# TAP: results, and a plan that counts them (a case cut short has none)
	results=$(grep -cE '^(not )?ok\b' "$out")
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$out" | tail -n1)
	if [ "$results" = 0 ]; then
		why+=("printed no TAP result")
	elif [ -z "$plan" ]; then
		why+=("printed no TAP plan")
	elif [ "$plan" != "$results" ]; then
		why+=("plan 1..$plan but $results results")
	fi
	if [ -d /sys/module/kiwi ] && ! rmmod kiwi 2>/dev/null; then
		why+=("kiwi.ko cannot be unloaded afterwards")
	fi
	# a case cleans up after itself: links, daemons, network namespaces
	# or veths it left change what later cases see, so they fail it
	left=$(reset_state "$name")
	if [ -n "$left" ]; then
		printf '%s\n' "$left"
		why+=("left state behind: $(printf '%s' "$left" | grep -c .) item(s)")
	fi
	# Give deferred work (and its warnings) a moment to surface.
	sleep 1
	kmsgs=$(dmesg | tail -n +"$((before + 1))" | grep -E "$bad")
	if [ -n "$kmsgs" ]; then
		why+=("kernel log shows a problem")
		printf '%s\n' "$kmsgs" | head -n 20 | sed "s/^/# $name: kernel: /"
	fi
	if [ ${#why[@]} -gt 0 ]; then
		failed=1
		(IFS=';'; echo "$name: not ok - case failed: ${why[*]}")
		echo "# $name: dmesg during the case:"
		dmesg | tail -n +"$((before + 1))" | tail -n 40 | sed "s/^/# $name: | /"
	fi
	echo "=== end $name (status $rc, $(( $(date +%s) - start ))s)"
done
exit $failed
exit
}

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make demo': build kiwi, boot the test VM and show what a user sees: two
# kiwi devices on a veth pair, as listed by rdma and libibverbs, traffic
# between them (rping -V, which compares the data, and ib_write_bw), then
# their removal.  Every command is printed before its output.
# The body is one compound command, read whole before it runs, so that
# editing this file cannot change a run that is under way.
{
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

if [ "${1:-}" != --guest ]; then
	echo "== demo: installing missing dependencies (scripts/deps.sh)"
	./scripts/deps.sh
	echo "== demo: building kiwi.ko and libkiwi-rdmav34.so (make module provider)"
	make -s module provider
	echo "== demo: booting the test VM ($(KIWI_KVER='' tests/vm/kernel.sh vmlinuz))"
	unset KIWI_KVER
	exec tests/vm/vm-run.sh --timeout 300 -- "$root/tests/vm/demo.sh" --guest
fi

# --- inside the VM ---------------------------------------------------------
# lib.sh's helpers test and report failures themselves.
set +e
. "$root/tests/cases/lib/lib.sh"
. "$root/tests/cases/lib/nvmeof-lib.sh"
. "$root/tests/cases/lib/apps-lib.sh"

run() {
	echo
	echo "\$ $*"
	"$@" || { echo "demo: '$*' failed (status $?)"; exit 1; }
}

echo "== demo: in the VM, kernel $(uname -r)"
echo "== demo: loading the RDMA core and kiwi.ko ($KIWI_KO)"
kiwi_load || { echo "demo: cannot load kiwi.ko"; exit 1; }
# The far end lives in a network namespace: between two local addresses
# Linux would take the loopback, and no RDMA device sits on lo.
ns=$APPS_NS
echo "== demo: a veth pair, veth0 198.18.0.1/24 <-> veth1 198.18.0.2/24 in netns $ns"
veth_setup || { echo "demo: cannot set up the veth pair"; exit 1; }
ip netns del $ns 2> /dev/null
ip netns add $ns && ip link set veth1 netns $ns &&
	ip -n $ns addr add 198.18.0.2/24 dev veth1 &&
	ip -n $ns link set veth1 up && ip -n $ns link set lo up ||
	{ echo "demo: cannot set up netns $ns"; exit 1; }
run ip -br addr show veth0
run ip -n $ns -br addr show veth1

echo
echo "== demo: one kiwi device on each end"
run rdma link add kiwi0 type kiwi netdev veth0
run ip netns exec $ns rdma link add kiwi1 type kiwi netdev veth1
run rdma link
run rdma dev

kiwi_provider_env
if [ -n "${RDMAV_DRIVERS:-}" ]; then
	echo
	echo "== demo: libibverbs loads the provider from the build tree: RDMAV_DRIVERS=$RDMAV_DRIVERS"
else
	echo
	echo "== demo: no $KIWI_PROVIDER_DIR/libkiwi-rdmav34.so; libibverbs must find an installed one"
fi
run ibv_devices
run ibv_devinfo -v

# serve PORT CMD...: CMD in the namespace, in the background, printed;
# returns once it listens on PORT.
serve() {
	local port=$1
	shift
	echo
	echo "\$ ip netns exec $ns $* &"
	ip netns exec $ns timeout 120 "$@" > /tmp/demo-server.log 2>&1 &
	srv=$!
	apps_wait_listen "$port" $srv || {
		cat /tmp/demo-server.log
		echo "demo: the server does not listen on port $port"
		exit 1
	}
}

# server_done: the server's exit status and output.
server_done() {
	wait $srv || { cat /tmp/demo-server.log; echo "demo: server failed"; exit 1; }
	echo
	echo "(server output)"
	cat /tmp/demo-server.log
}

echo
echo "== demo: rping between kiwi0 and kiwi1: Send, RDMA Read and RDMA Write,"
echo "== the client compares every buffer (-V) and prints it (-v)"
serve 7174 rping -s -a 198.18.0.2 -C 5 -S 64 -V
run timeout 120 rping -c -a 198.18.0.2 -C 5 -S 64 -V -v
server_done

echo
echo "== demo: ib_write_bw (perftest) from kiwi0 to kiwi1 over rdma_cm (-R)"
serve 18515 ib_write_bw -R -d kiwi1 -n 500 -F
run timeout 120 ib_write_bw -R -d kiwi0 -n 500 -F 198.18.0.2
server_done

run rdma resource
echo
echo "\$ cat $KIWI_OBJECTS"
cat "$KIWI_OBJECTS"

echo
echo "== demo: removing the devices"
run rdma link del kiwi0
run rdma link del kiwi1
run rdma link
ip netns del $ns
echo
echo "\$ cat $KIWI_OBJECTS"
cat "$KIWI_OBJECTS"
kiwi_counts_zero || { echo "demo: kiwi objects left behind"; exit 1; }
run rmmod kiwi
veth_teardown
echo
echo "== demo: done"
exit
}

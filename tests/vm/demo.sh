#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make demo': build kiwi, boot the test VM and show what a user sees: two
# kiwi devices on a veth pair, as listed by rdma and libibverbs, then their
# removal.  Every command is printed before its output.
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
	echo "== demo: booting the test VM ($(ls -1 /boot/vmlinuz-*-amd64 | sort -V | tail -n1))"
	exec tests/vm/vm-run.sh --timeout 300 -- "$root/tests/vm/demo.sh" --guest
fi

# --- inside the VM ---------------------------------------------------------
# lib.sh's helpers test and report failures themselves.
set +e
. "$root/tests/cases/lib.sh"

run() {
	echo
	echo "\$ $*"
	"$@" || { echo "demo: '$*' failed (status $?)"; exit 1; }
}

echo "== demo: in the VM, kernel $(uname -r)"
echo "== demo: loading the RDMA core and kiwi.ko ($KIWI_KO)"
kiwi_load || { echo "demo: cannot load kiwi.ko"; exit 1; }
echo "== demo: a veth pair, veth0 198.18.0.1/24 <-> veth1 198.18.0.2/24"
veth_setup || { echo "demo: cannot set up the veth pair"; exit 1; }
run ip -br addr show veth0
run ip -br addr show veth1

echo
echo "== demo: one kiwi device on each end"
run rdma link add kiwi0 type kiwi netdev veth0
run rdma link add kiwi1 type kiwi netdev veth1
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
run rdma resource
run rdma resource show
echo
echo "\$ cat $KIWI_OBJECTS"
cat "$KIWI_OBJECTS"

echo
echo "== demo: removing the devices"
run rdma link del kiwi0
run rdma link del kiwi1
run rdma link
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

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 300
#
# The reference peer works on this bench: siw (built by tests/vm/build-siw.sh)
# loads, a siw link on a veth shows up in rdma and in libibverbs through
# Debian's libsiw provider, and it goes away cleanly.
. "$(dirname "$0")/lib/lib.sh"

tap_check "siw.ko loads" siw_load
tap_check "veth pair is up" veth_setup
tap_check "rdma link add siw0 type siw netdev veth0" \
	rdma link add siw0 type siw netdev veth0

links=$(rdma link show 2>&1)
if printf '%s\n' "$links" | grep -qE '^link siw0/1 .*netdev veth0'; then
	tap_ok "rdma link shows siw0/1 on veth0"
else
	tap_fail "rdma link shows siw0/1 on veth0"
	tap_diag "$links"
fi

info=$(ibv_devinfo -d siw0 2>&1)
if printf '%s\n' "$info" | grep -qE 'hca_id:[[:space:]]+siw0' &&
	printf '%s\n' "$info" | grep -qE 'transport:[[:space:]]+iWARP'; then
	tap_ok "ibv_devinfo -d siw0 reports an iWARP device (libsiw provider)"
else
	tap_fail "ibv_devinfo -d siw0 reports an iWARP device (libsiw provider)"
	tap_diag "$info"
fi
if printf '%s\n' "$info" | grep -qE 'state:[[:space:]]+PORT_ACTIVE'; then
	tap_ok "siw0 port is ACTIVE on an up veth"
else
	tap_fail "siw0 port is ACTIVE on an up veth"
fi

tap_check "rdma link del siw0" rdma link del siw0
if rdma link show 2>/dev/null | grep -q 'siw0'; then
	tap_fail "siw0 is gone after rdma link del"
else
	tap_ok "siw0 is gone after rdma link del"
fi
tap_check "siw unloads" siw_unload
veth_teardown
tap_done

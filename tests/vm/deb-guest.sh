#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Inside a guest booted on a Debian root of its own (deb-test.sh, vm-run.sh
# with KIWI_VM_ROOT): install kiwi's two packages with dpkg as a user would,
# use them with nothing staged by hand (kiwi.ko from DKMS's install path,
# autoloaded by `rdma link add`; the provider from libibverbs' system path),
# then purge them and find none of their files left.  Prints TAP.
#
#   tests/vm/deb-guest.sh DEBDIR     (DEBDIR holds the two .deb files)
set -uo pipefail

. "$KIWI_ROOT/tests/cases/lib/lib.sh"
debdir=$1
kv=$(uname -r)
pkgs="kiwi-dkms ibverbs-provider-kiwi"
export DEBIAN_FRONTEND=noninteractive
tmp=$(mktemp -d)

cleanup() {
	ip netns pids peer 2>/dev/null | xargs -r kill 2>/dev/null
	pkill -x rping 2>/dev/null
	ip netns exec peer rdma link del kiwi1 2>/dev/null
	rdma link del kiwi0 2>/dev/null
	ip netns del peer 2>/dev/null
	ip link del veth0 2>/dev/null
}
trap cleanup EXIT

tap_diag "kernel $kv, $(. /etc/os-release && echo "$PRETTY_NAME"), rdma-core $(dpkg-query -W -f='${Version}' rdma-core)"
tap_check "no kiwi.ko before the packages" \
	sh -c '! modinfo kiwi >/dev/null 2>&1'
tap_check "the headers DKMS needs are there (/lib/modules/$kv/build)" \
	test -e "/lib/modules/$kv/build/Makefile"

debs=$(ls "$debdir"/kiwi-dkms_*_all.deb "$debdir"/ibverbs-provider-kiwi_*_amd64.deb 2>/dev/null)
tap_check "dpkg -i kiwi-dkms ibverbs-provider-kiwi (DKMS builds kiwi.ko)" \
	dpkg -i $debs
dpkg -L $pkgs 2>/dev/null | sort -u > "$tmp/files"
tap_diag "dkms status: $(dkms status 2>&1 | tr '\n' ' ')"
tap_check "dkms status: kiwi installed for $kv" \
	sh -c "dkms status kiwi | grep '^kiwi/' | grep -qF ', $kv, x86_64: installed'"
ko=$(ls /lib/modules/"$kv"/updates/dkms/kiwi.ko* 2>/dev/null | head -n1)
tap_check "kiwi.ko in DKMS's install path (/lib/modules/$kv/updates/dkms)" \
	test -n "$ko"
tap_check "modinfo finds that kiwi.ko, alias rdma-link-kiwi" \
	sh -c "[ \"\$(modinfo -n kiwi)\" = '$ko' ] &&
		modinfo -F alias kiwi | grep -qx rdma-link-kiwi"
tap_check "the provider in the system path, its driver file in /etc/libibverbs.d" \
	sh -c 'ls /usr/lib/x86_64-linux-gnu/libibverbs/libkiwi-rdmav*.so &&
		grep -qx "driver kiwi" /etc/libibverbs.d/kiwi.driver'

# Two hosts: this namespace on veth0, namespace "peer" on veth1.
netns() {
	modprobe veth &&
	ip link add veth0 type veth peer name veth1 &&
	ip netns add peer &&
	ip link set veth1 netns peer &&
	ip addr add 198.18.0.1/24 dev veth0 &&
	ip link set veth0 up &&
	ip netns exec peer ip addr add 198.18.0.2/24 dev veth1 &&
	ip netns exec peer ip link set veth1 up &&
	ip netns exec peer ip link set lo up
}
tap_check "veth pair between this namespace and netns peer" netns
tap_check "rdma link add kiwi0 type kiwi netdev veth0 autoloads kiwi.ko" \
	sh -c '[ ! -d /sys/module/kiwi ] &&
		rdma link add kiwi0 type kiwi netdev veth0 && [ -d /sys/module/kiwi ]'
tap_check "rdma link add kiwi1 type kiwi netdev veth1 (netns peer)" \
	ip netns exec peer rdma link add kiwi1 type kiwi netdev veth1
# modprobe could only have loaded DKMS's build: no other kiwi.ko exists.
tap_check "the only kiwi.ko under /lib/modules is DKMS's" \
	sh -c "[ \"\$(find /lib/modules -name 'kiwi.ko*')\" = '$ko' ]"

# ibv_devinfo with no RDMAV_DRIVERS: libibverbs finds the provider itself.
unset RDMAV_DRIVERS
devinfo() {
	LD_DEBUG=files ibv_devinfo -d kiwi0 > "$tmp/devinfo" 2> "$tmp/ld" || return 1
	cat "$tmp/devinfo"
	grep -q 'transport:.*iWARP' "$tmp/devinfo" &&
	grep -q 'file=/usr/lib/x86_64-linux-gnu/libibverbs/libkiwi-rdmav[0-9]*\.so' "$tmp/ld"
}
tap_check "ibv_devinfo -d kiwi0: iWARP, through the installed provider" devinfo

rping_pair() {
	ip netns exec peer rping -s -a 198.18.0.2 -p 7001 -C 10 -S 4096 -V \
		> "$tmp/server" 2>&1 &
	local spid=$!
	wait_for 30 tcp_listening peer 7001 || { cat "$tmp/server"; return 1; }
	timeout 120 rping -c -a 198.18.0.2 -p 7001 -C 10 -S 4096 -V -v > "$tmp/client" 2>&1
	local crc=$?
	wait "$spid"
	local src=$?
	tail -n 3 "$tmp/client"
	cat "$tmp/server"
	[ $crc = 0 ] && [ $src = 0 ] &&
		[ "$(grep -c 'ping data' "$tmp/client")" = 10 ]
}
tap_check "rping -V, 10 verified pings kiwi0 -> kiwi1 across the veth pair" rping_pair

tap_check "rdma link del kiwi0, kiwi1; rmmod kiwi" \
	sh -c 'rdma link del kiwi0 && ip netns exec peer rdma link del kiwi1 &&
		rmmod kiwi'
tap_check "dpkg --purge kiwi-dkms ibverbs-provider-kiwi" dpkg --purge $pkgs
tap_check "dpkg knows neither package any more" \
	sh -c "! dpkg-query -W -f='\${db:Status-Status}\n' $pkgs 2>/dev/null | grep -qv not-installed"
left() {
	local f bad=0
	while read -r f; do
		# Directories others share (/usr, /etc) stay; only ours must go.
		[ -d "$f" ] && [ ! -L "$f" ] && case "$f" in
			*/kiwi-dkms|*/ibverbs-provider-kiwi|/usr/src/kiwi-*) ;;
			*) continue ;;
		esac
		[ -e "$f" ] || [ -L "$f" ] || continue
		echo "left behind: $f"
		bad=1
	done < "$tmp/files"
	for f in /lib/modules/*/updates/dkms/kiwi.ko* /var/lib/dkms/kiwi; do
		[ -e "$f" ] && { echo "left behind: $f"; bad=1; }
	done
	[ "$(wc -l < "$tmp/files")" -gt 10 ] || { echo "dpkg -L listed too little"; bad=1; }
	return $bad
}
tap_check "no file of either package left ($(wc -l < "$tmp/files") paths listed), no kiwi.ko, no /var/lib/dkms/kiwi" left
tap_check "modinfo kiwi finds nothing" sh -c '! modinfo kiwi >/dev/null 2>&1'
rm -rf "$tmp"
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Inside a guest booted on a Debian root of its own (deb-test.sh, vm-run.sh
# with KIWI_VM_ROOT): install kiwi's two packages with dpkg as a user would,
# use them with nothing staged by hand (kiwi.ko from DKMS's install path,
# autoloaded by `rdma link add`; the provider from libibverbs' system path),
# then create links from /etc/kiwi/links with the command kiwi-links.service
# runs, then with systemd itself booting (in a PID namespace of its own) and
# udev starting the unit for a late netdev, then purge them and find none of
# their files left.  Prints TAP.
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
	sd_stop
	ip netns pids peer 2>/dev/null | xargs -r kill 2>/dev/null
	pkill -x rping 2>/dev/null
	ip netns exec peer rdma link del kiwi1 2>/dev/null
	rdma link del kiwi0 2>/dev/null
	rdma link del kiwiboot0 2>/dev/null
	rdma link del kiwiboot1 2>/dev/null
	ip link del vethlate0 2>/dev/null
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
# Links at boot, as after a reboot (kiwi not loaded), first the command
# alone, where every outcome can be checked: the installed unit's
# ExecStart, word-split as systemd does for a line with no quotes, in
# systemd's clean environment.  systemd itself runs the unit below.
unit=$(dpkg -L kiwi-dkms | grep '/systemd/system/kiwi-links\.service$')
execstart=$(sed -n 's/^ExecStart=//p' "$unit" 2>/dev/null)
read -ra boot_cmd <<< "$execstart"
links_conf=${boot_cmd[1]:-}
tap_diag "$unit: ExecStart=$execstart"
unit_ok() {
	[ "$(grep -c '^ExecStart=' "$unit")" = 1 ] &&
	[[ $execstart != *[\"\'\$%\\]* ]] && [[ $execstart == /* ]] &&
	[ -x "${boot_cmd[0]}" ] && [ -f "$links_conf" ] &&
	[ -L /etc/systemd/system/multi-user.target.wants/kiwi-links.service ]
}
tap_check "kiwi-links.service: one plain ExecStart on the shipped links file, enabled (multi-user.target)" unit_ok
# the template a netdev's arrival starts: the same command, not enabled
tunit=$(dpkg -L kiwi-dkms | grep '/systemd/system/kiwi-links@\.service$')
tunit_ok() {
	[ -n "$tunit" ] &&
	[ "$(sed -n 's/^ExecStart=//p' "$tunit")" = "$execstart" ] &&
	! grep -q '^\[Install\]' "$tunit"
}
tap_check "kiwi-links@.service: the same ExecStart, a template not enabled" tunit_ok
udev_ok() {
	dpkg -L kiwi-dkms | grep '/rules\.d/[0-9]*-kiwi-links\.rules$' |
		xargs grep -E '^ACTION=="add", SUBSYSTEM=="net",.*ENV\{SYSTEMD_WANTS\}\+="kiwi-links@\$attr\{ifindex\}\.service"'
}
tap_check "its udev rule starts kiwi-links@IFINDEX.service when a netdev appears" udev_ok

# boot_run: the unit's command; its exit status in boot_rc, its output in
# boot.out (stdout) and boot.err (stderr, where errors go).
boot_run() {
	env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		"${boot_cmd[@]}" > "$tmp/boot.out" 2> "$tmp/boot.err"
	boot_rc=$?
	cat "$tmp/boot.out" "$tmp/boot.err"
	echo "exit status $boot_rc"
}
link_on() { # link_on NAME NETDEV: rdma shows kiwi device NAME on NETDEV
	rdma link show "$1/1" | grep -qE " netdev $2( |$)"
}
cp "$links_conf" "$tmp/links.orig"
cat >> "$links_conf" <<'CONF'
kiwiboot0 veth0
kiwibad0 veth0 extra
kiwi/bad veth0
kiwiboot1 vethlate0   # not there yet
kiwidup0 veth0
CONF
boot_first() {
	[ ! -d /sys/module/kiwi ] || { echo "kiwi is loaded already"; return 1; }
	boot_run
	[ "$boot_rc" = 1 ] && [ -d /sys/module/kiwi ] && link_on kiwiboot0 veth0 &&
	[ "$(rdma link show | grep -c ' netdev ')" = 1 ]
}
tap_check "boot run: loads kiwi, creates kiwiboot0 on veth0, only it, exits 1" boot_first
# errors: the error lines of the last run
errors() { grep -c '^kiwi-links: ' "$tmp/boot.err"; }
bad_lines() {
	local n0
	n0=$(wc -l < "$tmp/links.orig")
	cat "$tmp/boot.err"
	grep -qF "$links_conf:$((n0 + 2)): expected \"NAME NETDEV\"" "$tmp/boot.err" &&
	grep -qF "$links_conf:$((n0 + 3)): \"kiwi/bad\" is not a device name" "$tmp/boot.err" &&
	grep -qF "$links_conf:$((n0 + 5)): rdma link add kiwidup0 type kiwi netdev veth0: " "$tmp/boot.err" &&
	[ "$(errors)" = 3 ] && grep -q 'vethlate0 is not there yet' "$tmp/boot.out"
}
tap_check "boot run: the 3 bad lines on stderr with file:line (2 malformed, 1 refused by rdma), nothing else; vethlate0 waits" bad_lines
boot_again() {
	boot_run
	[ "$boot_rc" = 1 ] && link_on kiwiboot0 veth0 &&
	[ "$(rdma link show | grep -c ' netdev ')" = 1 ] &&
	grep -q 'kiwiboot0 on veth0 is already there' "$tmp/boot.out" &&
	[ "$(errors)" = 3 ]
}
tap_check "boot run again: harmless, kiwiboot0 left alone, the same 3 errors" boot_again
# What the udev rule does when a netdev appears: the same unit, again.
boot_late() {
	ip link add vethlate0 type veth peer name vethlate1 || return 1
	boot_run
	link_on kiwiboot1 vethlate0 && link_on kiwiboot0 veth0 &&
	[ "$(rdma link show | grep -c ' netdev ')" = 2 ]
}
tap_check "netdev vethlate0 appears, the unit runs again: kiwiboot1 on it" boot_late
boot_clean() {
	grep -v -e kiwibad0 -e kiwi/bad -e kiwidup0 "$links_conf" > "$tmp/links.good" &&
	cat "$tmp/links.good" > "$links_conf" || return 1
	boot_run
	[ "$boot_rc" = 0 ] && [ ! -s "$tmp/boot.err" ] &&
	[ "$(rdma link show | grep -c ' netdev ')" = 2 ]
}
tap_check "without the bad lines: exit status 0, nothing on stderr" boot_clean
tap_check "rdma link del kiwiboot0, kiwiboot1; rmmod kiwi" \
	sh -c 'rdma link del kiwiboot0 && rdma link del kiwiboot1 && rmmod kiwi &&
		ip link del vethlate0'
# The same under systemd itself, as a reboot would run it: this guest's PID 1
# is guest-init.sh, so systemd boots as PID 1 of a PID namespace of its own
# (and a mount namespace, with its own /run and /tmp), in this network
# namespace with /sys writable, so that it runs systemd-udevd and follows
# udev's devices as on a host.  It boots multi-user.target with kiwi not
# loaded and veth0 there; then vethlate0 appears, udev's rule asks for
# kiwi-links.service again, and systemd starts it.
sd_up=
sd_pid=
sd() { nsenter -t "$sd_pid" -m -p "$@"; }
sd_found() { sd_pid=$(pgrep -P "$sd_up" -x systemd) && [ -n "$sd_pid" ]; }
sd_state() {
	local s
	s=$(sd systemctl is-system-running 2>&1)
	echo "$s"
	[ "$s" = running ] || [ "$s" = degraded ]
}
sd_stop() {
	[ -n "$sd_up" ] || return 0
	# Not SIGTERM to unshare: with --fork it blocks SIGTERM and SIGINT
	# (they are its child's), so it would wait on for ever.  SIGKILL to
	# systemd, from outside its PID namespace, ends it and with it the
	# whole namespace, and unshare returns once that is empty.  If systemd
	# was never found, SIGKILL to unshare: --kill-child passes it on.
	kill -KILL "${sd_pid:-$sd_up}" 2>/dev/null
	wait "$sd_up" 2>/dev/null
	sd_up=
	sd_pid=
}
sd_verify() {
	command -v systemd-analyze >/dev/null || { echo "no systemd-analyze"; return 1; }
	systemd-analyze verify "$unit" "${tunit%@.service}@1.service"
}
tap_check "systemd-analyze verify $unit and an instance of kiwi-links@.service" sd_verify
udev_test() {
	local ifx
	ip link add vethlate0 type veth peer name vethlate1 || return 1
	ifx=$(cat /sys/class/net/vethlate0/ifindex)
	udevadm test --action=add /sys/class/net/vethlate0 > "$tmp/udev" 2>&1
	ip link del vethlate0
	grep -E 'kiwi-links|SYSTEMD_WANTS|TAGS' "$tmp/udev"
	grep -qE "^ *SYSTEMD_WANTS=(.* )?kiwi-links@$ifx\\.service( |\$)" "$tmp/udev"
}
tap_check "udevadm test: a netdev's add event gets SYSTEMD_WANTS=kiwi-links@IFINDEX.service" udev_test
sd_boot() {
	[ ! -d /sys/module/kiwi ] || { echo "kiwi is loaded already"; return 1; }
	[ -x /lib/systemd/systemd ] || { echo "no /lib/systemd/systemd"; return 1; }
	unshare --pid --fork --mount-proc --kill-child sh -c '
		mount -t tmpfs -o mode=755 tmpfs /run &&
		mount -t tmpfs -o mode=1777 tmpfs /tmp &&
		exec /lib/systemd/systemd --system --unit=multi-user.target --show-status=false' \
		< /dev/null > "$tmp/systemd.out" 2>&1 &
	sd_up=$!
	wait_for 60 sd_found || { cat "$tmp/systemd.out"; return 1; }
	echo "systemd: PID $sd_pid"
	if ! wait_for 900 sd_state; then
		sd systemctl list-jobs --no-pager
		return 1
	fi
	sd systemctl --failed --no-pager
}
tap_check "systemd boots multi-user.target (PID 1 of its own PID namespace)" sd_boot
# journal: the messages of kiwi-links.service and its instances in this boot.
journal() {
	sd journalctl -b -u kiwi-links.service -u 'kiwi-links@*' --no-pager -o cat \
		> "$tmp/journal" 2>&1
}
sd_at_boot() {
	[ -n "$sd_pid" ] || return 1
	journal
	cat "$tmp/journal"
	sd systemctl show -p Result -p ExecMainStatus -p WantedBy kiwi-links.service |
		tee "$tmp/show"
	grep -qx 'Result=success' "$tmp/show" && grep -qx 'ExecMainStatus=0' "$tmp/show" &&
	grep -q 'multi-user\.target' "$tmp/show" &&
	[ -d /sys/module/kiwi ] && link_on kiwiboot0 veth0 &&
	[ "$(rdma link show | grep -c ' netdev ')" = 1 ] &&
	grep -q 'created kiwiboot0 on veth0' "$tmp/journal" &&
	grep -q 'vethlate0 is not there yet' "$tmp/journal"
}
tap_check "at boot systemd ran kiwi-links.service: kiwi loaded, kiwiboot0 on veth0, Result=success" sd_at_boot
sd_late() {
	[ -n "$sd_pid" ] || return 1
	ip link add vethlate0 type veth peer name vethlate1 || return 1
	wait_for 300 link_on kiwiboot1 vethlate0
	local rc=$? u
	u=kiwi-links@$(cat /sys/class/net/vethlate0/ifindex).service
	journal
	cat "$tmp/journal"
	sd systemctl show -p Result -p WantedBy "$u" | tee "$tmp/show"
	[ $rc = 0 ] && link_on kiwiboot0 veth0 &&
	[ "$(rdma link show | grep -c ' netdev ')" = 2 ] &&
	grep -q 'created kiwiboot1 on vethlate0' "$tmp/journal" &&
	grep -qx 'Result=success' "$tmp/show" &&
	grep -q 'vethlate0\.device' "$tmp/show"
}
tap_check "vethlate0 appears: udev's rule has systemd start its kiwi-links@ instance, kiwiboot1 on it" sd_late
# Netdevs one right after another, each of them a link's: each arrival
# starts its own instance, so none is merged into a run that looked at
# its line before it was there; the runs take turns (the lock).
sd_burst() {
	local i
	[ -n "$sd_pid" ] || return 1
	for i in 0 1 2 3; do
		echo "kiwiburst$i vethburst$i" >> "$links_conf" || return 1
	done
	for i in 0 1 2 3; do
		ip link add "vethburst$i" type veth peer name "vethbpeer$i" ||
			return 1
	done
	for i in 0 1 2 3; do
		wait_for 300 link_on "kiwiburst$i" "vethburst$i" || {
			journal
			cat "$tmp/journal"
			return 1
		}
	done
	journal
	! grep -q 'kiwiburst.*exists already\|rdma link add kiwiburst' "$tmp/journal"
}
tap_check "4 netdevs in a row, each a link's: all 4 created, no run got in another's way" sd_burst
sd_stop
tap_check "rdma link del kiwiboot0, kiwiboot1, kiwiburst0-3; rmmod kiwi (after systemd)" \
	sh -c 'for l in kiwiboot0 kiwiboot1 kiwiburst0 kiwiburst1 kiwiburst2 kiwiburst3; do
			rdma link del $l || exit 1
		done && rmmod kiwi && ip link del vethlate0 &&
		for i in 0 1 2 3; do ip link del vethburst$i || exit 1; done'
tap_check "dpkg --purge kiwi-dkms ibverbs-provider-kiwi" dpkg --purge $pkgs
tap_check "dpkg knows neither package any more" \
	sh -c "! dpkg-query -W -f='\${db:Status-Status}\n' $pkgs 2>/dev/null | grep -qv not-installed"
left() {
	local f bad=0
	while read -r f; do
		# Directories others share (/usr, /etc, /lib which is a link to
		# usr/lib on a merged /usr) stay; only ours must go.
		[ -d "$f" ] && case "$f" in
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

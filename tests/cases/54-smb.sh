#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
# timeout-full: 1800
# full-only: the modules and the ksmbd-tools root take minutes to build
#
# SMB Direct (SMB3 over RDMA) on kiwi: the kernel SMB server ksmbd serving
# a tmpfs share on the RDMA device nvt0 (veth1, 198.18.0.2), the kernel SMB
# client (cifs) mounting it with `rdma` from nvh0 (veth0, 198.18.0.1): the
# veth pair of nvmeof-lib.sh (as 50-nvmeof), both ends in init_net with
# their routes crossed, so that every byte goes out of one veth end and in
# at the other (ksmbd's listener and cifs's connection are rdma_cm IDs of
# init_net, so no namespace).  Debian builds neither module with SMB
# Direct: tests/vm/build-smb.sh builds both from linux-source
# (KIWI_SMB_DIR), and this case loads them instead of the distribution's.
#
# ksmbd's user space: Debian 13's ksmbd-tools (3.5.3), which build-smb.sh
# installs with mmdebstrap in a root of its own (KIWI_SMB_TOOLS_ROOT); its
# programs run chrooted there, in a mount namespace of their own that
# binds the guest's /dev, /proc, /sys and /run (so paths under /run are
# the same inside and out).  Debian 12's (3.4.7, the host's) cannot serve
# a share to these kernels (smb_tools_mismatch below): it is used only
# when that root is missing (or KIWI_SMB_TOOLS_ROOT is set empty), and
# then the data checks are skipped with that reason.
#
# Each pairing: ksmbd.mountd started after both devices exist (ksmbd picks
# its SMB Direct port when it starts: 5445 when an iWARP device is present,
# else 445); mount with `rdma`; the mount is SMB Direct (DebugData) over
# the two devices (their rdma_cm IDs on port 5445); a file created; fio
# random writes with crc32c verify headers by direct I/O; a file tree
# copied and compared (after the client's cache is dropped, and in the
# server's tmpfs); the bytes crossed the veth, and went through kiwi's
# RDMA (the payload byte counters of each kiwi device in `rdma
# statistic`); unmount; ksmbd stopped; links gone; kiwi's object counts
# at zero.
#
# KIWI_FULL=1: more data, and kiwi against the reference siw both ways.
# KIWI_SMB_PAIRS="server:client ..." runs only those (development).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nvmeof-lib.sh"
# nfs-lib.sh for its generic helpers: nfs_bounded, step, umount_force, nfs_tree_make,
# nfs_tree_check (fio: nvmeof-lib's nvmf_fio_verify)
. "$(dirname "$0")/nfs-lib.sh"

KIWI_SMB_DIR=${KIWI_SMB_DIR:-$(dirname "$(dirname "$KIWI_SIW_KO")")/smb}
SMB_TOOLS_ROOT=${KIWI_SMB_TOOLS_ROOT-${KIWI_ROOT:-.}/tests/vm/out/roots/ksmbd-tools-trixie}
[ -n "$SMB_TOOLS_ROOT" ] && [ ! -x "$SMB_TOOLS_ROOT/usr/sbin/ksmbd.mountd" ] &&
	SMB_TOOLS_MISSING=$SMB_TOOLS_ROOT && SMB_TOOLS_ROOT=
SMB_SRV_IP=$NVMF_TGT_IP
SMB_PORT=5445
SMB_CONF_DIR=/run/kiwi-smb
SMB_SHARE=$SMB_CONF_DIR/share
SMB_MNT=$SMB_CONF_DIR/mnt
SMB_USER=root
SMB_PASS=kiwi-smb-test
SMB_LOG=/tmp/smb-mountd.log

full=${KIWI_FULL:-0}
if [ "$full" = 1 ]; then
	fsize=32M
	f4k=8M
	share_mb=192
else
	fsize=4M
	f4k=1M
	share_mb=64
fi

if [ -n "${KIWI_SMB_PAIRS:-}" ]; then
	pairs=$KIWI_SMB_PAIRS
elif [ "$full" = 1 ]; then
	pairs="kiwi:kiwi siw:kiwi kiwi:siw"
else
	pairs="kiwi:kiwi"
fi

# smb_modules_load: the RDMA-enabled builds in place of Debian's modules,
# their dependencies (cifs_arc4, cifs_md4, fscache, dns_resolver, rdma_cm)
# from the distribution.
smb_modules_load() {
	local m ko
	for m in cifs ksmbd; do
		ko=$KIWI_SMB_DIR/$m.ko
		[ -f "$ko" ] || {
			echo "smb: $ko missing (tests/vm/build-smb.sh)" >&2
			return 1
		}
		if [ -d /sys/module/$m ]; then
			# ours has smbdirect in it
			grep -q . /sys/module/$m/srcversion 2>/dev/null &&
			[ "$(cat /sys/module/$m/srcversion)" = "$(modinfo -F srcversion "$ko")" ] &&
				continue
			rmmod $m || return 1
		fi
		for d in $(modinfo -F depends "$ko" | tr ',' ' '); do
			modprobe "$d" || return 1
		done
		insmod "$ko" || return 1
	done
}

smb_modules_unload() {
	local m rc=0
	for m in cifs ksmbd; do
		[ -d /sys/module/$m ] || continue
		rmmod $m || rc=1
	done
	return $rc
}

# smb_tool PROG ARGS...: a ksmbd-tools program, the root's (chrooted, in a
# mount namespace of its own: the root's /etc/ksmbd and /tmp are tmpfs
# there, so the cached root is never written; the process keeps its PID,
# for ksmbd.control) or else the host's.
smb_tool() {
	[ -n "$SMB_TOOLS_ROOT" ] || { "$@"; return; }
	unshare --mount --propagation private -- sh -c '
		r=$1
		shift
		for d in dev proc sys run; do
			mount --rbind /$d "$r/$d" || exit 1
		done
		mount -t tmpfs -o size=1m kiwiksmbdetc "$r/etc/ksmbd" &&
		mount -t tmpfs -o size=8m kiwiksmbdtmp "$r/tmp" &&
		exec chroot "$r" "$@"' sh "$SMB_TOOLS_ROOT" "$@"
}

smb_tools_version() {
	smb_tool ksmbd.mountd -V 2>&1 | sed -n 's/.*version : *//p' | head -n1
}

# smb_tools_which: which ksmbd-tools the case runs
smb_tools_which() {
	if [ -n "$SMB_TOOLS_ROOT" ]; then
		echo "ksmbd-tools $(smb_tools_version), Debian 13's, chrooted in $SMB_TOOLS_ROOT"
	else
		echo "ksmbd-tools $(smb_tools_version), the host's${SMB_TOOLS_MISSING:+ (no Debian 13 root at $SMB_TOOLS_MISSING: tests/vm/build-smb.sh)}"
	fi
}

# smb_server_start: a tmpfs share and ksmbd.mountd with a configuration
# and user database of the case's own (the guest's /etc is read-only).
# SMB user root: ksmbd maps a user to the local account of that name.
# 3.5 names the configuration and the database -C and -P, 3.4 -c and -u
# (ksmbd.adduser: -c and -i).
smb_server_start() {
	mkdir -p $SMB_SHARE $SMB_MNT || return 1
	mountpoint -q $SMB_SHARE ||
		mount -t tmpfs -o size=${share_mb}m kiwismb $SMB_SHARE || return 1
	cat > $SMB_CONF_DIR/ksmbd.conf <<-EOC || return 1
	[global]
		netbios name = KIWI
	[kiwi]
		path = $SMB_SHARE
		read only = no
	EOC
	rm -f $SMB_CONF_DIR/ksmbdpwd.db
	: > $SMB_LOG
	if [ -n "$SMB_TOOLS_ROOT" ]; then
		smb_tool ksmbd.adduser -a -p $SMB_PASS -C $SMB_CONF_DIR/ksmbd.conf \
			-P $SMB_CONF_DIR/ksmbdpwd.db $SMB_USER || return 1
		smb_tool ksmbd.mountd -n -v -C $SMB_CONF_DIR/ksmbd.conf \
			-P $SMB_CONF_DIR/ksmbdpwd.db >> $SMB_LOG 2>&1 &
	else
		ksmbd.adduser -a $SMB_USER -p $SMB_PASS -c $SMB_CONF_DIR/ksmbd.conf \
			-i $SMB_CONF_DIR/ksmbdpwd.db || return 1
		ksmbd.mountd -n -v -c $SMB_CONF_DIR/ksmbd.conf \
			-u $SMB_CONF_DIR/ksmbdpwd.db >> $SMB_LOG 2>&1 &
	fi
	SMB_MOUNTD_PID=$!
	# ksmbd's SMB Direct listener: one rdma_cm ID on 5445 per device
	wait_for 30 sh -c "rdma res show cm_id | grep -q ':$SMB_PORT '" || {
		cat $SMB_LOG
		rdma res show cm_id
		dmesg | tail -n 20
		return 1
	}
}

# smb_server_stop: ksmbd.control -s ends ksmbd.mountd and the server
# (its listener and connections).
smb_server_stop() {
	local rc=0
	if [ -n "${SMB_MOUNTD_PID:-}" ]; then
		smb_tool ksmbd.control -s || rc=1
		_nfs_gone_within 30 $SMB_MOUNTD_PID || {
			kill $SMB_MOUNTD_PID
			rc=1
		}
		SMB_MOUNTD_PID=
	fi
	mountpoint -q $SMB_SHARE && { umount $SMB_SHARE || rc=1; }
	return $rc
}

smb_mount() {
	mount -t cifs //$SMB_SRV_IP/kiwi $SMB_MNT \
		-o rdma,vers=3.1.1,username=$SMB_USER,password=$SMB_PASS,mfsymlinks || {
		echo "--- ksmbd.mountd"
		cat $SMB_LOG
		echo "--- kernel log"
		dmesg | tail -n 25
		return 1
	}
	grep " $SMB_MNT cifs" /proc/mounts | grep -q ",rdma" || {
		grep " $SMB_MNT " /proc/mounts
		return 1
	}
}

smb_mounted() { mountpoint -q $SMB_MNT; }

smb_dmesg_mark() { SMB_DMESG_LINE=$(dmesg | wc -l); }
smb_dmesg_new() { dmesg | tail -n +"$((SMB_DMESG_LINE + 1))"; }

# smb_tools_mismatch: (the host's tools only) the mount failed the way
# Debian 12's ksmbd-tools (3.4.7) fails against ksmbd of Linux 6.1.y
# (since the stable backport of "ksmbd: validate payload size in ipc
# response") and 6.12: ksmbd.mountd never fills payload_sz of a share
# config response, so ipc_validate_msg() finds the message size wrong and
# drops the answer; every share, IPC$ first, is then unknown
# (STATUS_BAD_NETWORK_NAME).  That answer comes after the SMB Direct
# negotiation and the session setup, over RDMA.
smb_tools_mismatch() {
	[ -z "$SMB_TOOLS_ROOT" ] || return 1
	case "$(smb_tools_version)" in 3.4.*) ;; *) return 1 ;; esac
	smb_dmesg_new | grep -q "CIFS: VFS: RDMA transport established" &&
	smb_dmesg_new | grep -F "BAD_NETWORK_NAME:" | grep -qF "$SMB_SRV_IP\\IPC\$"
}

# smb_is_direct: cifs reports the SMB Direct connection of the session
# (protocol version 0x100, its credits and sizes), and both devices hold
# rdma_cm IDs on the SMB Direct port: the mount runs over them.
smb_is_direct() {
	local d=/proc/fs/cifs/DebugData
	grep -q "SMBDirect (in hex) protocol version: 100" $d &&
	! grep -q "SMBDirect transport not available" $d &&
	rdma res show cm_id | grep "link $NVMF_HOST_DEV/" | grep -q ":$SMB_PORT " &&
	rdma res show cm_id | grep "link $NVMF_TGT_DEV/" | grep -q ":$SMB_PORT " || {
		cat $d
		rdma res show cm_id
		return 1
	}
}

# smb_kiwi_bytes DEV: "tx rx", the payload bytes kiwi device DEV sent and
# received (its tx_bytes and rx_bytes in `rdma statistic`)
smb_kiwi_bytes() {
	rdma statistic show link "$1/1" | awk '{
		for (i = 3; i < NF; i += 2) {
			if ($i == "tx_bytes") t = $(i + 1)
			if ($i == "rx_bytes") r = $(i + 1)
		}
	} END { if (t != "" && r != "") print t, r }'
}

# smb_share_check SRC DIR: the server's copy DIR holds what SRC does.  The
# mount's mfsymlinks stores a symlink as a regular file in the
# Minshall+French format: "XSym", the target's length (4 digits), its MD5,
# the target, one a line; the rest is compared as it is.
smb_share_check() {
	local l t x=
	for l in $(cd "$1" && find . -type l); do
		t=$(readlink "$1/$l")
		[ -f "$2/$l" ] && [ ! -L "$2/$l" ] &&
		[ "$(head -n 4 "$2/$l")" = "$(printf 'XSym\n%04d\n%s\n%s' ${#t} \
			"$(printf %s "$t" | md5sum | cut -c1-32)" "$t")" ] || {
			echo "$2/$l: not an mfsymlink to $t"
			head -c 128 "$2/$l" | od -c | head -n 8
			return 1
		}
		x="$x -x $(basename "$l")"
	done
	# shellcheck disable=SC2086 # one -x NAME per link
	diff -r $x "$1" "$2"
}

smb_umount_force() { umount_force $SMB_MNT; }

smb_cleanup_all() {
	smb_umount_force
	smb_server_stop > /dev/null 2>&1
	smb_modules_unload > /dev/null 2>&1
	nvmf_cleanup_all
}


trap smb_cleanup_all EXIT
trap 'exit 143' TERM INT
nvmf_dmesg_mark
tap_check "veth pair with cross-wired routes" nvmf_net_setup
tap_check "cifs.ko and ksmbd.ko with SMB Direct loaded ($KIWI_SMB_DIR)" \
	smb_modules_load
tree=/tmp/smb-tree
tap_check "a file tree to copy" nfs_tree_make $tree
tools=$(smb_tools_which)
tap_check "ksmbd-tools: $tools" eval '[ -n "$(smb_tools_version)" ]'

run_pairing() {
	local s=$1 c=$2 label ok=1 b0 k0s k0c
	label="$s server <- $c client"

	step "$label: RDMA links on both ends" \
		eval "nvmf_link_add $NVMF_TGT_DEV $s veth1 &&
		      nvmf_link_add $NVMF_HOST_DEV $c veth0" || ok=0
	[ $ok = 1 ] && { step "$label: ksmbd listening on rdma $SMB_PORT" \
		smb_server_start || ok=0; }
	if [ $ok = 1 ]; then
		smb_dmesg_mark
		if _tap_run nfs_bounded 120 smb_mount; then
			tap_ok "$label: mount -t cifs -o rdma"
		elif smb_tools_mismatch; then
			# what kiwi carries works; the host's ksmbd-tools cannot
			# name a share (see smb_tools_mismatch)
			tap_ok "$label: SMB Direct connection and SMB3 session over kiwi (cifs: RDMA transport established; the tree connect reached)"
			tap_skip "$label: mount -t cifs -o rdma and its data checks" \
				"no Debian 13 ksmbd-tools root (tests/vm/build-smb.sh), and the host's ksmbd-tools $(smb_tools_version) leaves payload_sz of its share config responses 0, which this ksmbd drops: no share can be connected (Documentation/storage.md)"
			ok=0
		else
			tap_fail "$label: mount -t cifs -o rdma"
			tap_diag "$(sed 's/^/  /' "$_tap_out")"
			ok=0
		fi
	fi
	[ $ok = 1 ] && { step "$label: the mount is SMB Direct over $NVMF_HOST_DEV and $NVMF_TGT_DEV" \
		smb_is_direct || ok=0; }
	if [ $ok = 1 ]; then
		b0=$(nvmf_veth_bytes)
		[ "$s" = kiwi ] && k0s=$(smb_kiwi_bytes $NVMF_TGT_DEV)
		[ "$c" = kiwi ] && k0c=$(smb_kiwi_bytes $NVMF_HOST_DEV)
		step "$label: create a file" \
			nfs_bounded 90 sh -c "echo kiwi > $SMB_MNT/first && sync &&
				[ \"\$(cat $SMB_SHARE/first)\" = kiwi ]" || ok=0
	fi
	if [ $ok = 1 ]; then
		step "$label: fio 4 KiB random write + crc32c verify ($f4k)" \
			nfs_bounded 600 nvmf_fio_verify v4k $SMB_MNT/fio-4k "$f4k" 4k \
				--ioengine=psync
		step "$label: fio 4-512 KiB random write + crc32c verify ($fsize)" \
			nfs_bounded 600 nvmf_fio_verify vmix $SMB_MNT/fio-mix "$fsize" \
				4k-512k --ioengine=psync
		step "$label: a file tree copied and compared" \
			nfs_bounded 600 eval "cp -a $tree $SMB_MNT/tree &&
				nfs_tree_check $tree $SMB_MNT/tree &&
				smb_share_check $tree $SMB_SHARE/tree"
		nvmf_veth_crossed "$label: the I/O crossed the veth" "$b0" \
			"$(nvmf_veth_bytes)" $((${fsize%M} * 1048576))
		# the data was RDMA payload: fio wrote and read back at least
		# $fsize each way
		[ "$s" = kiwi ] && nvmf_veth_crossed \
			"$label: kiwi $NVMF_TGT_DEV's RDMA payload counters (rdma statistic)" \
			"$k0s" "$(smb_kiwi_bytes $NVMF_TGT_DEV)" $((${fsize%M} * 1048576))
		[ "$c" = kiwi ] && nvmf_veth_crossed \
			"$label: kiwi $NVMF_HOST_DEV's RDMA payload counters (rdma statistic)" \
			"$k0c" "$(smb_kiwi_bytes $NVMF_HOST_DEV)" $((${fsize%M} * 1048576))
		step "$label: unmount" nfs_bounded 120 umount $SMB_MNT
	fi
	smb_umount_force
	step "$label: ksmbd stopped" nfs_bounded 60 smb_server_stop
	nvmf_links_del > /dev/null 2>&1
	pairing_gone "$label" "mount and links" smb_mounted "$s" "$c"
}

for p in $pairs; do
	IFS=: read -r s c <<< "$p"
	t0=$SECONDS
	run_pairing "$s" "$c"
	tap_diag "pairing $p took $((SECONDS - t0)) s"
done

tap_check "cifs and ksmbd unload" smb_modules_unload
nvmf_net_teardown
tap_check "kiwi unloads" kiwi_unload
siw_unload
tap_check "no kernel warnings in dmesg" nvmf_dmesg_clean
tap_done

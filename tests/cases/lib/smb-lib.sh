# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# SMB Direct helpers for 54-smb and the two-host bench: cifs.ko and
# ksmbd.ko built with SMB Direct (tests/vm/build-smb.sh, KIWI_SMB_DIR),
# Debian 13's ksmbd-tools chrooted (KIWI_SMB_TOOLS_ROOT; see 54-smb.sh), a
# tmpfs share of SMB_SHARE_MB MiB, the cifs mount with `rdma`.  Source
# lib.sh, nvmeof-lib.sh and nfs-lib.sh (umount_force, _nfs_gone_within)
# first; the server's address is nvmeof-lib's $NVMF_TGT_IP unless
# SMB_SRV_IP is set after sourcing.

KIWI_SMB_DIR=${KIWI_SMB_DIR:-$(dirname "$(dirname "$KIWI_SIW_KO")")/smb}
SMB_TOOLS_ROOT=${KIWI_SMB_TOOLS_ROOT-${KIWI_ROOT:-.}/tests/vm/out/roots/ksmbd-tools-trixie}
[ -n "$SMB_TOOLS_ROOT" ] && [ ! -x "$SMB_TOOLS_ROOT/usr/sbin/ksmbd.mountd" ] &&
	SMB_TOOLS_MISSING=$SMB_TOOLS_ROOT && SMB_TOOLS_ROOT=
SMB_SRV_IP=$NVMF_TGT_IP
SMB_SHARE_MB=${SMB_SHARE_MB:-64}
SMB_PORT=5445
SMB_CONF_DIR=/run/kiwi-smb
SMB_SHARE=$SMB_CONF_DIR/share
SMB_MNT=$SMB_CONF_DIR/mnt
SMB_USER=root
SMB_PASS=kiwi-smb-test
SMB_LOG=/tmp/smb-mountd.log

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
		mount -t tmpfs -o size=${SMB_SHARE_MB}m kiwismb $SMB_SHARE || return 1
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
	mkdir -p $SMB_MNT || return 1
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

# smb_is_direct [DEV...]: cifs reports the SMB Direct connection of the
# session (protocol version 0x100, its credits and sizes), and each DEV
# (both of nvmeof-lib's devices unless told) holds rdma_cm IDs on the SMB
# Direct port: the mount runs over them.
smb_is_direct() {
	local d=/proc/fs/cifs/DebugData dev
	grep -q "SMBDirect (in hex) protocol version: 100" $d &&
	! grep -q "SMBDirect transport not available" $d || {
		cat $d
		return 1
	}
	for dev in ${*:-$NVMF_HOST_DEV $NVMF_TGT_DEV}; do
		rdma res show cm_id | grep "link $dev/" | grep -q ":$SMB_PORT " || {
			rdma res show cm_id
			return 1
		}
	done
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

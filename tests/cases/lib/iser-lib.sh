# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# iSER helpers for 53-iser and the storage bench (tests/bench/storage.sh):
# LIO's iSCSI target through configfs with a ramdisk LUN and one portal
# ($NP, iSCSI/TCP, iSER switched on beside it), the iWARP port mapper,
# open-iscsi's iscsid and iscsiadm.  Source lib.sh and nvmeof-lib.sh first
# (the target listens on nvmeof-lib's $NVMF_TGT_IP).

ISER_IQN=iqn.2026-12.org.kiwi:iser-test
ISER_INIT_IQN=iqn.2026-12.org.kiwi:iser-initiator
ISER_PORT=3260
ISER_MB=${ISER_MB:-32}
LIO=/sys/kernel/config/target
TPG=$LIO/iscsi/$ISER_IQN/tpgt_1
NP=$TPG/np/$NVMF_TGT_IP:$ISER_PORT
RD=$LIO/core/rd_mcp_7/kiwi_iser

# --- the port mapper ----------------------------------------------------------

iwpmd_start() {
	modprobe iw_cm || return 1
	iwpmd -f > /tmp/iwpmd.log 2>&1 &
	# its UDP socket for the peer's queries is the last thing it opens
	wait_for 30 sh -c "ss -Hunl 'sport = :3935' | grep -q ." || {
		cat /tmp/iwpmd.log
		return 1
	}
}

# stack_has PID PATTERN: one of PID's threads sleeps in a kernel function
# matching PATTERN.
stack_has() {
	cat /proc/"$1"/task/*/stack 2> /dev/null | grep -Eq "$2"
}

# iwpmd_register ADDR: make iw_cm's port-mapper registration happen while
# iwpmd is stopped.  Every iw_cm listen and connect first registers with
# iwpmd (iwpm_register_pid, 6.1 and 6.12 alike), which multicasts its
# request and only then records the request's buffer; an iwpmd answering
# in that window makes the kernel dereference NULL in
# iwpm_register_pid_cb (it did: the 6.1 initiator oopsed at the iSER
# login in the two-host bench, storage.md).  So: wait until iwpmd has
# announced itself (its main thread waits in select), stop it, start a
# listener on ADDR (an iWARP device's address; rdma_server, one thread,
# synchronous), wait until it sleeps in iwpm_wait_complete_req (the
# buffer is recorded by then) and let iwpmd go on.  Once registered,
# later listens and connects do not register again while this iwpmd runs.
iwpmd_register() {
	local addr=$1 pid rp rv=0
	# the daemon itself: iwpmd forks away from the shell's child
	pid=$(pgrep -xo iwpmd) || return 1
	kiwi_provider_env
	wait_for 30 stack_has "$pid" 'do_select|core_sys_select' || return 1
	kill -STOP "$pid" || return 1
	rdma_server -s "$addr" -p 7998 &
	rp=$!
	# the registration; else, already registered, the listen's own
	# mapping request (iwpmd answers that too); else the listen done (the
	# kernel knows no port mapper: nothing to race with)
	wait_for 20 stack_has $rp 'iwpm_wait_complete_req|ucma_get_event' || rv=1
	kill -CONT "$pid"
	# listening: the registration went through
	wait_for 20 stack_has $rp 'ucma_get_event' || rv=1
	kill $rp 2> /dev/null
	wait $rp 2> /dev/null
	return $rv
}

# Every iwpmd, not only the last one started.  One left running keeps the
# kernel's port-mapper client registered, and every later rdma_cm connect
# then waits 10 s for a mapping that the peer's (absent) iwpmd never
# answers: 65-apps ran out of time after 53-iser on 6.12.
iwpmd_stop() {
	pkill -x iwpmd 2>/dev/null || return 0
	wait_for 10 sh -c '! pgrep -x iwpmd' && return 0
	echo "iwpmd_stop: iwpmd outlived SIGTERM; SIGKILL" >&2
	pkill -9 -x iwpmd
	wait_for 10 sh -c '! pgrep -x iwpmd'
}

# --- the LIO target -----------------------------------------------------------

lio_setup() {
	modprobe -a target_core_mod iscsi_target_mod || return 1
	mkdir -p "$RD" &&
	echo "rd_pages=$((ISER_MB * 256))" > "$RD/control" &&
	echo 1 > "$RD/enable" &&
	mkdir -p "$NP" "$TPG/lun/lun_0" &&
	ln -s "$RD" "$TPG/lun/lun_0/kiwi_iser" &&
	echo 0 > "$TPG/attrib/authentication" &&
	echo 1 > "$TPG/attrib/generate_node_acls" &&
	echo 1 > "$TPG/attrib/cache_dynamic_acls" &&
	echo 0 > "$TPG/attrib/demo_mode_write_protect" &&
	echo 1 > "$TPG/enable"
}

# lio_iser 0|1: switch the portal's iSER listener (ib_isert).
lio_iser() {
	modprobe ib_isert || return 1
	echo "$1" > "$NP/iser" || return 1
	[ "$(cat "$NP/iser")" = "$1" ]
}

lio_teardown() {
	[ -e "$NP/iser" ] && [ "$(cat "$NP/iser")" = 1 ] && echo 0 > "$NP/iser"
	[ -e "$TPG/enable" ] && echo 0 > "$TPG/enable"
	[ -L "$TPG/lun/lun_0/kiwi_iser" ] && rm -f "$TPG/lun/lun_0/kiwi_iser"
	[ -d "$TPG/lun/lun_0" ] && rmdir "$TPG/lun/lun_0"
	[ -d "$NP" ] && rmdir "$NP"
	[ -d "$TPG" ] && rmdir "$TPG"
	[ -d "$LIO/iscsi/$ISER_IQN" ] && rmdir "$LIO/iscsi/$ISER_IQN"
	[ -d "$RD" ] && rmdir "$RD"
	[ -d "${RD%/*}" ] && rmdir "${RD%/*}"
	! [ -d "$LIO/iscsi/$ISER_IQN" ] && ! [ -d "${RD%/*}" ]
}

# --- the open-iscsi initiator -------------------------------------------------

ISCSID_PID=
# The root is the host's, read-only: iscsid's configuration and node
# database go to a writable copy mounted over /etc/iscsi.
iscsi_start() {
	modprobe -a iscsi_tcp ib_iser sd_mod || return 1
	mkdir -p /tmp/iscsi-etc /run/lock/iscsi || return 1
	cp -a /etc/iscsi/. /tmp/iscsi-etc/ 2>/dev/null
	mountpoint -q /etc/iscsi || mount --bind /tmp/iscsi-etc /etc/iscsi ||
		return 1
	echo "InitiatorName=$ISER_INIT_IQN" > /etc/iscsi/initiatorname.iscsi
	# a lost connection fails the I/O in seconds, not minutes
	sed -i -e '/replacement_timeout/d' -e '/^node.startup/d' \
		/etc/iscsi/iscsid.conf 2>/dev/null
	printf '%s\n' "node.startup = manual" \
		"node.session.timeo.replacement_timeout = 15" \
		>> /etc/iscsi/iscsid.conf
	# its own session: on SIGTERM iscsid kills its whole process group
	setsid iscsid -f > /tmp/iscsid.log 2>&1 &
	ISCSID_PID=$!
	# iscsiadm -m session: 21 (no sessions) once iscsid answers
	wait_for 30 sh -c 'iscsiadm -m session > /dev/null 2>&1; [ $? = 21 ]' ||
		{ cat /tmp/iscsid.log; return 1; }
}

iscsi_stop() {
	iscsiadm -m node -u > /dev/null 2>&1
	iscsiadm -m node -o delete > /dev/null 2>&1
	iscsiadm -m discoverydb -t st -p "$NVMF_TGT_IP:$ISER_PORT" -o delete \
		> /dev/null 2>&1
	if [ -n "$ISCSID_PID" ]; then
		kill "$ISCSID_PID" 2>/dev/null
		wait "$ISCSID_PID" 2>/dev/null
		ISCSID_PID=
	fi
	mountpoint -q /etc/iscsi && umount /etc/iscsi
	return 0
}

# iscsi_discover: sendtargets over the TCP portal, records for both
# interfaces (default = iscsi_tcp, iser = ib_iser).
iscsi_discover() {
	iscsiadm -m discovery -t st -p "$NVMF_TGT_IP:$ISER_PORT" -I iser -I default |
		tee /tmp/iscsi-disc.log &&
		grep -q "$ISER_IQN" /tmp/iscsi-disc.log
}

# iscsi_login IFACE [PORT] / iscsi_logout IFACE [PORT]
iscsi_login() {
	iscsiadm -m node -T "$ISER_IQN" -p "$NVMF_TGT_IP:${2:-$ISER_PORT}" \
		-I "$1" --login
}

iscsi_logout() {
	iscsiadm -m node -T "$ISER_IQN" -p "$NVMF_TGT_IP:${2:-$ISER_PORT}" \
		-I "$1" --logout
}

# iscsi_session_is TRANSPORT: exactly one session, over TRANSPORT.
iscsi_session_is() {
	iscsiadm -m session 2>&1 | tee /tmp/iscsi-sess.log
	[ "$(grep -c . /tmp/iscsi-sess.log)" = 1 ] &&
		grep -q "^$1: .*$ISER_IQN" /tmp/iscsi-sess.log
}

# iscsi_disk: the block device of the (one) session's LUN 0, as iscsiadm
# reports it.
iscsi_disk() {
	local d
	d=$(iscsiadm -m session -P 3 2>/dev/null |
		sed -n 's/.*Attached scsi disk \([a-z]*\).*/\1/p' | head -n1)
	[ -n "$d" ] && [ -b "/dev/$d" ] && echo "/dev/$d"
}

# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# NVMe over Fabrics (RDMA) helpers for the cases 50-nvmeof and
# 55-nvmeof-teardown and for tests/bench/nvmeof.sh and nvmeof-wire.sh.
# Source lib.sh first.
#
# The cases and nvmeof.sh: a veth pair veth0 198.18.0.1 (host side, RDMA
# link "nvh0") <-> veth1 198.18.0.2 (target side, RDMA link "nvt0"); an
# nvmet subsystem with one namespace on a memory-backed null_blk disk,
# exported on an rdma port at 198.18.0.2:4420 to any host; the kernel
# nvme-rdma host connects to it.  (nvmeof-wire.sh and two-host-guest.sh
# put host and target in two guests, with their own addresses.)
#
# Why no network namespace: nvmet-rdma and nvme-rdma create their rdma_cm
# IDs in init_net (6.1), and rdma_cm maps an incoming connection's local
# address to a netdev in the listener's namespace, so both addresses must
# live in init_net.  To make the traffic still cross the veth instead of
# the loopback shortcut Linux takes between local addresses, the "local"
# routing rule is moved behind rules that route each address out of the
# other end (with static neighbours and accept_local); nvmf_veth_bytes lets
# a case prove that the bytes went over the wire.

# What the kernel consumers ask of the provider (6.1), for reading failures:
# - rdma_connect()/rdma_accept() move the QP INIT -> RTR (mask STATE and
#   ACCESS_FLAGS) before iw_connect/iw_accept (cma_modify_qp_rtr).
# - nvmet-rdma reads the host's data (and the admin Connect data) with
#   rdma_rw: on iWARP an IB_WR_REG_MR then IB_WR_RDMA_READ_WITH_INV.  Its
#   ex.invalidate_rkey is the MR's lkey as it was at rdma_rw_ctx_init(); the
#   key is bumped afterwards in rdma_rw_ctx_wrs() (ib_inc_rkey), so it names
#   the previous key of the same STag index; siw invalidates sge[0].lkey
#   and looks STags up by index only.
# - nvme-rdma uses the local DMA lkey for Sends, REG_MR for the data it
#   exposes, and Send with Invalidate comes back from the target.

NVMF_HOST_IP=198.18.0.1
NVMF_TGT_IP=198.18.0.2
NVMF_HOST_NETDEV=veth0
NVMF_TGT_NETDEV=veth1
NVMF_HOST_DEV=nvh0
NVMF_TGT_DEV=nvt0
NVMF_PORT=4420
NVMF_PORTID=1
NVMF_NQN=nqn.2026-11.org.kiwi:nvmeof-test
NVMF_HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:6b697769-0000-4000-8000-000000000001
NVMF_HOSTID=6b697769-0000-4000-8000-000000000001
NVMF_NS_UUID=6b697769-0000-4000-8000-0000000000aa
NVMF_NULLB=kiwinvmf
NVMF_SIZE_MB=${NVMF_SIZE_MB:-64}
# The fabric: rdma for the cases; tcp (nvmet-tcp, nvme-tcp over the same
# veth and crossed routes, no RDMA link) for the bench's comparison.
NVMF_TRTYPE=${NVMF_TRTYPE:-rdma}
NVMET_CFG=/sys/kernel/config/nvmet
NULLB_CFG=/sys/kernel/config/nullb
# A siw built with mpa_crc_required = true (tests/bench/build-siw-crc.sh):
# siw 6.1 has no module parameter for CRC, only compile-time constants.
KIWI_SIW_CRC_KO=${KIWI_SIW_CRC_KO:-$KIWI_ROOT/tests/vm/out/siw-crc/siw.ko}

# nvmf_wait SECONDS CMD...: lib.sh's wait_for.
nvmf_wait() {
	wait_for "$@"
}

# --- network ----------------------------------------------------------------

nvmf_net_setup() {
	local m0 m1 i
	veth_setup || return 1
	m0=$(cat /sys/class/net/veth0/address)
	m1=$(cat /sys/class/net/veth1/address)
	for i in all default veth0 veth1; do
		sysctl -qw net.ipv4.conf.$i.rp_filter=0 || return 1
	done
	for i in veth0 veth1; do
		sysctl -qw net.ipv4.conf.$i.accept_local=1 || return 1
	done
	ip neigh replace $NVMF_TGT_IP lladdr "$m1" dev veth0 nud permanent &&
	ip neigh replace $NVMF_HOST_IP lladdr "$m0" dev veth1 nud permanent &&
	ip route replace $NVMF_TGT_IP/32 dev veth0 src $NVMF_HOST_IP table 4420 &&
	ip route replace $NVMF_HOST_IP/32 dev veth1 src $NVMF_TGT_IP table 4421 &&
	ip rule add pref 10 iif veth0 lookup local &&
	ip rule add pref 11 iif veth1 lookup local &&
	ip rule add pref 20 to $NVMF_TGT_IP lookup 4420 &&
	ip rule add pref 21 to $NVMF_HOST_IP lookup 4421 &&
	ip rule add pref 100 lookup local || return 1
	ip rule del pref 0 lookup local 2>/dev/null
	# The route from one address to the other must leave through the veth.
	ip route get $NVMF_TGT_IP from $NVMF_HOST_IP | grep -q "dev veth0" || {
		echo "nvmf_net_setup: $NVMF_TGT_IP is not routed via veth0:" >&2
		ip route get $NVMF_TGT_IP from $NVMF_HOST_IP >&2
		return 1
	}
}

nvmf_net_teardown() {
	ip rule show | grep -q '^0:.*lookup local' ||
		ip rule add pref 0 lookup local
	ip rule del pref 100 lookup local 2>/dev/null
	ip rule del pref 10 2>/dev/null
	ip rule del pref 11 2>/dev/null
	ip rule del pref 20 2>/dev/null
	ip rule del pref 21 2>/dev/null
	ip route flush table 4420 2>/dev/null
	ip route flush table 4421 2>/dev/null
	veth_teardown
}

# posts_direct_moved DEV: kernel posts DEV's engine ran in the poster's
# context since the link was added (tx_direct; read by 52-nfs, 53-iser)
posts_direct_moved() {
	local n
	n=$(cat /sys/class/infiniband/$1/ports/1/hw_counters/posts_direct)
	echo "$1: posts_direct $n"
	[ "$n" -gt 0 ]
}

# nvmf_veth_bytes [NETDEV]: "tx rx" byte counters of NETDEV (veth0, the
# host's end, by default).
nvmf_veth_bytes() {
	local d=/sys/class/net/${1:-veth0}/statistics
	echo "$(cat $d/tx_bytes)" "$(cat $d/rx_bytes)"
}

# nvmf_veth_crossed DESC "TX0 RX0" "TX1 RX1" MIN [MIN_RX]: a TAP test, ok
# when between two nvmf_veth_bytes snapshots (or any "tx rx" pair) the
# counters grew by MIN bytes sent and MIN_RX (default MIN) received: I/O
# over the loopback would count next to nothing.
nvmf_veth_crossed() {
	local desc=$1 tx rx
	set -- $2 $3 "$4" "${5:-$4}"
	tx=$(($3 - $1))
	rx=$(($4 - $2))
	if [ $tx -ge "$5" ] && [ $rx -ge "$6" ]; then
		tap_ok "$desc (tx $tx, rx $rx bytes)"
	else
		tap_fail "$desc (tx $tx, rx $rx bytes, want >= $5 and $6)"
	fi
}

# nvmf_io_moving "TX0 RX0" MIN: veth0 has carried MIN bytes more, both ways
# together, than at that nvmf_veth_bytes snapshot: I/O started in the
# background is under way (for nvmf_wait).
nvmf_io_moving() {
	set -- $1 "$2" $(nvmf_veth_bytes)
	[ $(($4 + $5 - $1 - $2)) -ge "$3" ] ||
		{ echo "veth0 carried $(($4 + $5 - $1 - $2)) bytes, want $3"; return 1; }
}

# --- RDMA providers ---------------------------------------------------------

# Providers: kiwi, siw (Debian source, CRC only when the peer asks), siwcrc
# (the same siw asking for CRC itself).  siw and siwcrc are one module name,
# so they cannot be loaded together.
nvmf_provider_load() {
	case $1 in
	kiwi) kiwi_load ;;
	siw)
		if [ -d /sys/module/siw ] && [ "$(cat /run/nvmf-siw 2>/dev/null)" != siw ]; then
			rmmod siw || return 1
		fi
		siw_load && echo siw > /run/nvmf-siw
		;;
	siwcrc)
		if [ -d /sys/module/siw ] && [ "$(cat /run/nvmf-siw 2>/dev/null)" != siwcrc ]; then
			rmmod siw || return 1
		fi
		[ -f "$KIWI_SIW_CRC_KO" ] || {
			echo "nvmf: $KIWI_SIW_CRC_KO missing (tests/bench/build-siw-crc.sh)" >&2
			return 1
		}
		KIWI_SIW_KO=$KIWI_SIW_CRC_KO siw_load && echo siwcrc > /run/nvmf-siw
		;;
	*) echo "nvmf: unknown provider $1" >&2; return 1 ;;
	esac
}

nvmf_provider_type() {
	case $1 in siwcrc) echo siw ;; *) echo "$1" ;; esac
}

# nvmf_link_add NAME PROVIDER NETDEV [CRC]: an RDMA link; for kiwi, CRC
# (off|preferred|required) is written to the device's mpa_crc policy.
nvmf_link_add() {
	local name=$1 prov=$2 nd=$3 crc=${4:-}
	nvmf_provider_load "$prov" || return 1
	rdma link add "$name" type "$(nvmf_provider_type "$prov")" netdev "$nd" ||
		return 1
	nvmf_wait 10 test -e "/sys/class/infiniband/$name" || return 1
	if [ "$prov" = kiwi ] && [ -n "$crc" ]; then
		echo "$crc" > "/sys/class/infiniband/$name/mpa_crc" || return 1
		[ "$(cat "/sys/class/infiniband/$name/mpa_crc")" = "$crc" ] || {
			echo "nvmf: $name mpa_crc reads back" \
				"'$(cat "/sys/class/infiniband/$name/mpa_crc")', want $crc" >&2
			return 1
		}
	fi
	# rdma_cm needs the port up before it resolves addresses over it.
	nvmf_wait 10 grep -q ACTIVE "/sys/class/infiniband/$name/ports/1/state"
}

nvmf_links_del() {
	local l
	for l in $NVMF_HOST_DEV $NVMF_TGT_DEV; do
		[ -e /sys/class/infiniband/$l ] && rdma link del $l
	done
	nvmf_wait 10 test ! -e /sys/class/infiniband/$NVMF_HOST_DEV &&
		nvmf_wait 10 test ! -e /sys/class/infiniband/$NVMF_TGT_DEV
}

# nvmf_requests_crc PROVIDER CRC ROLE: 1 when this end, as the initiator
# (host) or responder (target), sets the C bit in its MPA frame.  siw only
# asks as the initiator: as the responder it mirrors the request's C bit
# whatever its own setting (seen on the wire, siw_cm.c of 6.1).
nvmf_requests_crc() {
	case $1 in
	siw) echo 0 ;;
	siwcrc) [ "$3" = host ] && echo 1 || echo 0 ;;
	kiwi) case $2 in preferred|required) echo 1 ;; *) echo 0 ;; esac ;;
	esac
}

# --- target -----------------------------------------------------------------

nvmf_target_setup() {
	nvmf_nullb_setup && nvmf_nvmet_setup
}

# Always leaves configfs empty of our objects, whatever state it is in.
nvmf_target_teardown() {
	local rc=0
	nvmf_nvmet_teardown || rc=1
	nvmf_nullb_teardown || rc=1
	return $rc
}

# nvmf_nullb_setup: the memory-backed disk; sets NVMF_BDEV.
nvmf_nullb_setup() {
	local n=$NULLB_CFG/$NVMF_NULLB
	# no default disk: ours is made through configfs
	[ -d /sys/module/null_blk ] || modprobe null_blk nr_devices=0 || return 1
	[ -d $NULLB_CFG ] || { echo "nvmf: no $NULLB_CFG" >&2; return 1; }
	mkdir $n || return 1
	echo "$NVMF_SIZE_MB" > $n/size &&
	echo 1 > $n/memory_backed &&
	echo 4096 > $n/blocksize &&
	echo 1 > $n/power || return 1
	# 6.1 names a configfs-made disk after its directory (older kernels
	# nullb<index>)
	NVMF_BDEV=/dev/$NVMF_NULLB
	[ -e /sys/block/$NVMF_NULLB ] || NVMF_BDEV=/dev/nullb$(cat $n/index)
	nvmf_wait 10 test -b "$NVMF_BDEV"
}

nvmf_nullb_teardown() {
	[ -d $NULLB_CFG/$NVMF_NULLB ] || return 0
	echo 0 > $NULLB_CFG/$NVMF_NULLB/power
	rmdir $NULLB_CFG/$NVMF_NULLB
}

# nvmf_nvmet_setup: subsystem (any host), namespace 1 on $NVMF_BDEV, rdma
# port on $NVMF_TGT_IP:$NVMF_PORT.
nvmf_nvmet_setup() {
	local s=$NVMET_CFG/subsystems/$NVMF_NQN p=$NVMET_CFG/ports/$NVMF_PORTID
	modprobe -a nvmet nvmet-$NVMF_TRTYPE || return 1
	[ -d $NVMET_CFG ] || { echo "nvmf: no $NVMET_CFG" >&2; return 1; }
	[ -n "${NVMF_BDEV:-}" ] || { echo "nvmf: no backing disk" >&2; return 1; }
	mkdir "$s" &&
	echo 1 > "$s/attr_allow_any_host" &&
	mkdir "$s/namespaces/1" &&
	echo -n "$NVMF_BDEV" > "$s/namespaces/1/device_path" &&
	echo "$NVMF_NS_UUID" > "$s/namespaces/1/device_uuid" &&
	echo 1 > "$s/namespaces/1/enable" || return 1

	mkdir "$p" &&
	echo $NVMF_TRTYPE > "$p/addr_trtype" &&
	echo ipv4 > "$p/addr_adrfam" &&
	echo $NVMF_TGT_IP > "$p/addr_traddr" &&
	echo $NVMF_PORT > "$p/addr_trsvcid" || return 1
	# Linking the subsystem enables the port: nvmet-rdma binds and
	# listens through rdma_cm, on the device that owns the address.
	ln -s "$s" "$p/subsystems/$NVMF_NQN"
}

# nvmf_port_reenable: nvmet-rdma drops its listener for good when the RDMA
# device under it is removed (DEVICE_REMOVAL; it retries only after
# ADDR_CHANGE), so an administrator re-enables the port by unlinking and
# linking the subsystem again.
nvmf_port_reenable() {
	local s=$NVMET_CFG/subsystems/$NVMF_NQN p=$NVMET_CFG/ports/$NVMF_PORTID
	rm "$p/subsystems/$NVMF_NQN" && ln -s "$s" "$p/subsystems/$NVMF_NQN"
}

nvmf_nvmet_teardown() {
	local s=$NVMET_CFG/subsystems/$NVMF_NQN p=$NVMET_CFG/ports/$NVMF_PORTID
	local rc=0
	[ -d $NVMET_CFG ] || return 0
	if [ -L "$p/subsystems/$NVMF_NQN" ]; then
		rm "$p/subsystems/$NVMF_NQN" || rc=1
	fi
	if [ -d "$p" ]; then
		rmdir "$p" || rc=1
	fi
	if [ -d "$s/namespaces/1" ]; then
		echo 0 > "$s/namespaces/1/enable"
		rmdir "$s/namespaces/1" || rc=1
	fi
	if [ -d "$s" ]; then
		rmdir "$s" || rc=1
	fi
	return $rc
}

# --- host -------------------------------------------------------------------

# nvmf_ctrl: the name (nvmeN) of the $NVMF_TRTYPE controller connected to our NQN.
nvmf_ctrl() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn")" = "$NVMF_NQN" ] || continue
		[ "$(cat "$c/transport" 2>/dev/null)" = $NVMF_TRTYPE ] || continue
		basename "$c"
		return 0
	done
	return 1
}

nvmf_ctrl_state() {
	local c
	c=$(nvmf_ctrl) || { echo none; return 0; }
	cat /sys/class/nvme/$c/state 2>/dev/null || echo none
}

# nvmf_ns_bdev: /dev/nvmeXnY of our namespace (by its UUID), not a hidden
# per-path node.
nvmf_ns_bdev() {
	local b n
	for b in /sys/block/nvme*n*; do
		n=$(basename "$b")
		[[ $n =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
		[ "$(cat "$b/uuid" 2>/dev/null)" = "$NVMF_NS_UUID" ] || continue
		[ -b "/dev/$n" ] || continue
		echo "/dev/$n"
		return 0
	done
	return 1
}

# nvmf_connect [EXTRA nvme connect OPTIONS]: connect and wait for the
# namespace's block device; sets NVMF_DEV.
nvmf_connect() {
	modprobe -a nvme-$NVMF_TRTYPE nvme-fabrics || return 1
	nvme connect -t $NVMF_TRTYPE -a $NVMF_TGT_IP -s $NVMF_PORT -n $NVMF_NQN \
		--hostnqn=$NVMF_HOSTNQN --hostid=$NVMF_HOSTID \
		--nr-io-queues=2 "$@" || return 1
	nvmf_wait 30 nvmf_ns_bdev || return 1
	NVMF_DEV=$(nvmf_ns_bdev)
	# Zero size would mean the namespace is not (yet) usable.
	[ "$(blockdev --getsize64 "$NVMF_DEV")" -gt 0 ]
}

nvmf_disconnect() {
	local c
	c=$(nvmf_ctrl) || return 0
	nvme disconnect -n $NVMF_NQN > /dev/null || return 1
	nvmf_wait 30 nvmf_no_ctrl
}

nvmf_no_ctrl() { ! nvmf_ctrl > /dev/null; }

# nvmf_cleanup_all: whatever a case left, gone (for an EXIT trap: a case
# that fails or is killed half-way leaves no rules, links or configfs items
# to the next one).
nvmf_cleanup_all() {
	nvmf_sniff_stop
	nvmf_disconnect > /dev/null 2>&1
	nvmf_target_teardown > /dev/null 2>&1
	nvmf_links_del > /dev/null 2>&1
	nvmf_net_teardown > /dev/null 2>&1
}

nvmf_trap_cleanup() {
	trap nvmf_cleanup_all EXIT
	trap 'exit 143' TERM INT
}

# --- checks -----------------------------------------------------------------

# nvmf_fio_verify NAME DEV SIZE BS [EXTRA fio OPTIONS]: random writes of
# SIZE by direct I/O with crc32c verify headers, then every block read back
# and checked; fio exits non-zero on any mismatch (verify_fatal) or I/O
# error.  DEV is a block device, or a file on a mounted file system (NFS);
# a name under /dev that is no block device (a disk gone) fails rather
# than fio writing a file there.
nvmf_fio_verify() {
	local name=$1 dev=$2 size=$3 bs=$4
	shift 4
	case $dev in
	/dev/*|'')
		[ -b "$dev" ] || { echo "nvmf_fio_verify: '$dev' is no block device"; return 1; } ;;
	esac
	fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio \
		--rw=randwrite --bs="$bs" --size="$size" --iodepth=8 \
		--verify=crc32c --do_verify=1 --verify_fatal=1 \
		--randseed=4420 --verify_state_save=0 --output-format=terse \
		--terse-version=3 "$@" > /tmp/nvmf-fio.out 2>&1 || {
		cat /tmp/nvmf-fio.out
		return 1
	}
}

# nvmf_fio_reverify NAME DEV SIZE BS: only read back and check what an
# earlier nvmf_fio_verify with the same arguments wrote.
nvmf_fio_reverify() {
	nvmf_fio_verify "$@" --verify_only
}

# nvmf_dmesg_mark / nvmf_dmesg_clean: no kernel complaint since the mark.
nvmf_dmesg_mark() {
	NVMF_DMESG_LINE=$(dmesg | wc -l)
}

nvmf_dmesg_clean() {
	local bad out
	bad=$(<"$KIWI_ROOT/tests/vm/kernel-bad.ere")
	out=$(dmesg | tail -n +"$((NVMF_DMESG_LINE + 1))" | grep -E -- "$bad")
	[ -z "$out" ] && return 0
	printf '%s\n' "$out" | head -n 20
	return 1
}

nvmf_dmesg_since_mark() {
	dmesg | tail -n +"$((NVMF_DMESG_LINE + 1))"
}

# nvmf_finish: the end of an NVMe-oF case: the network gone, nvme-rdma and
# nvmet-rdma unloaded (a test), siw unloaded, no kernel complaint since
# nvmf_dmesg_mark (a test), then the plan.
nvmf_finish() {
	nvmf_net_teardown
	rmmod nvme-rdma nvmet-rdma 2>/dev/null
	tap_check "nvme-rdma and nvmet-rdma unload" eval \
		"[ ! -d /sys/module/nvme_rdma ] && [ ! -d /sys/module/nvmet_rdma ]"
	siw_unload
	tap_check "no kernel warnings in dmesg" nvmf_dmesg_clean
	tap_done
}

# nvmf_sniff_start: record every MPA Request and Reply frame crossing veth0
# (the wire truth of what was negotiated) in /tmp/nvmf-mpa.log, for the
# rest of the case (python starts slowly under TCG: once is enough).
nvmf_sniff_start() {
	nvmf_sniff_launch veth0
	# The raw socket must be bound before the first SYN.
	nvmf_sniff_ready 90
}

# nvmf_sniff_launch NETDEV: the capture on NETDEV, without waiting for it;
# nvmf_sniff_ready SECONDS: it listens.
nvmf_sniff_launch() {
	: > /tmp/nvmf-mpa.log
	python3 -u -c "$_NVMF_SNIFF_PY" "$1" > /tmp/nvmf-mpa.log 2>&1 &
	NVMF_SNIFF_PID=$!
	NVMF_SNIFF_MARK=0
}

nvmf_sniff_ready() {
	nvmf_wait "$1" grep -q '^ready' /tmp/nvmf-mpa.log || {
		cat /tmp/nvmf-mpa.log
		return 1
	}
}

nvmf_sniff_stop() {
	[ -n "${NVMF_SNIFF_PID:-}" ] || return 0
	kill "$NVMF_SNIFF_PID" 2>/dev/null
	wait "$NVMF_SNIFF_PID" 2>/dev/null
	NVMF_SNIFF_PID=
}

# nvmf_sniff_mark: frames from now on are the next check's.
nvmf_sniff_mark() {
	NVMF_SNIFF_MARK=$(wc -l < /tmp/nvmf-mpa.log)
}

_nvmf_sniff_new() {
	tail -n +"$((NVMF_SNIFF_MARK + 1))" /tmp/nvmf-mpa.log
}

_nvmf_sniff_has_rep() { _nvmf_sniff_new | grep -q '^rep '; }

# nvmf_sniff_check CRC [rejects]: since the mark, every MPA Reply accepted
# the connection with the C bit equal to CRC (0|1), and at least one
# request/reply pair was seen.  With "rejects", Replies that refuse the
# connection are allowed too (their C bit still CRC), and at least one
# accepting Reply is needed (libfabric's ofi_rxm refuses one of two
# crossing requests between a pair of ranks).
nvmf_sniff_check() {
	local want=$1 nreq nrep bad re=" crc=$want .*reject=0"
	[ "${2:-}" = rejects ] && re=" crc=$want "
	# the capture may lag behind under load
	nvmf_wait 20 _nvmf_sniff_has_rep
	nreq=$(_nvmf_sniff_new | grep -c '^req ')
	nrep=$(_nvmf_sniff_new | grep '^rep ' | grep -c 'reject=0')
	bad=$(_nvmf_sniff_new | grep '^rep ' | grep -v -- "$re")
	if [ "$nreq" -gt 0 ] && [ "$nrep" -gt 0 ] && [ -z "$bad" ]; then
		return 0
	fi
	echo "MPA frames seen (want crc=$want in every accepted reply):"
	_nvmf_sniff_new | head -n 20
	return 1
}

# nvmf_sniff_check_refused: since the mark, an MPA Reply with R (rejected)
# and C (the responder wants CRC) was seen, and no accepting one.
nvmf_sniff_check_refused() {
	nvmf_wait 20 _nvmf_sniff_has_rep
	if _nvmf_sniff_new | grep -q '^rep .* crc=1 .*reject=1' &&
		! _nvmf_sniff_new | grep -q '^rep .*reject=0'; then
		return 0
	fi
	echo "MPA frames seen (want a Reply with C and R, none accepting):"
	_nvmf_sniff_new | head -n 20
	return 1
}

# A passive capture on one netdev: Ethernet/IPv4/TCP, payloads that start
# with an MPA Request or Reply key (RFC 5044 7.1): print its flags.
_NVMF_SNIFF_PY='
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0))
print("ready", flush=True)
keys = {b"MPA ID Req Frame": "req", b"MPA ID Rep Frame": "rep"}
seen = set()
while True:
	pkt = s.recv(262144)
	if len(pkt) < 34 or pkt[12:14] != b"\x08\x00":
		continue
	ip = pkt[14:]
	ihl = (ip[0] & 15) * 4
	if ip[9] != 6:
		continue
	tcp = ip[ihl:]
	if len(tcp) < 20:
		continue
	doff = (tcp[12] >> 4) * 4
	pay = tcp[doff:]
	kind = keys.get(bytes(pay[:16]))
	if kind is None or len(pay) < 20:
		continue
	sport, dport = struct.unpack("!HH", tcp[:4])
	seq = struct.unpack("!I", tcp[4:8])[0]
	src = socket.inet_ntoa(ip[12:16]); dst = socket.inet_ntoa(ip[16:20])
	# a frame seen twice (out and in on the same capture) counts once
	if (src, sport, seq) in seen:
		continue
	seen.add((src, sport, seq))
	f = pay[16]
	rev = pay[17]
	pdlen = struct.unpack("!H", pay[18:20])[0]
	print("%s %s:%d>%s:%d markers=%d crc=%d rev=%d reject=%d pd=%d" % (
		kind, src, sport, dst, dport, f >> 7 & 1, f >> 6 & 1, rev,
		f >> 5 & 1, pdlen), flush=True)
'

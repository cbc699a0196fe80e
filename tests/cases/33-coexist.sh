#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 600
# timeout-full: 1200
#
# kiwi beside other RDMA providers (issue 14, point 4): wildcard listeners
# of unmodified programs (rping -s -P, ib_write_bw -R, rcopy) with kiwi's
# device on veth1 (198.18.0.2), siw's on veth0 (198.18.0.1) and an rxe
# device on a dummy netdev (198.18.1.1), created in either order.  rdma_cm
# asks every device to listen: siw binds 0.0.0.0 (or ::) to its netdev in
# the listening process's namespace, kiwi binds each of its netdev's
# addresses to its netdev, rxe opens no TCP socket (Documentation/cm.md,
# "Wildcard listeners beside siw and rxe").  Layouts:
#   (a) all in one namespace.  Clients to kiwi's address (kiwi to kiwi),
#       siw's (siw to siw) and rxe's (rxe to rxe): between local addresses,
#       the bytes go over the loopback (checked: the veth does not see
#       perftest's 320 KiB).  Also siw's device created while the server
#       already listens on kiwi's (and kiwi's while it listens on siw's,
#       with KIWI_FULL=1).
#   (b) kiwi's device in the namespace "coex", siw's and rxe's in the
#       initial one.  A server in coex with a siw client from the initial
#       namespace (over the veth: checked) and a kiwi client in coex (over
#       the loopback); a server in the initial namespace with a kiwi client
#       from coex (over the veth).
# Data checked: rping -V compares every buffer, perftest prints its result
# line, rcopy's file is compared.  dmesg must show no failed per-device
# listen ("cma_listen_on_dev") and no kernel complaint; kiwi's object
# counts are zero at the end.  KIWI_FULL=1 adds IPv6 wildcard listeners,
# perftest and rcopy in (a) and ib_read_bw/ib_send_bw in (b).
. "$(dirname "$0")/lib/lib.sh"

NS=coex
KIWI_IP=198.18.0.2
SIW_IP=198.18.0.1
RXE_IP=198.18.1.1
LOG=/tmp/coex
T=$((60 * ${KIWI_TIMEOUT_SCALE:-1}))
PORT=19500
SRV_PID=
SRV_LOG=/dev/null
FULL=${KIWI_FULL:-0}
# siw counts pinned memory against RLIMIT_MEMLOCK even for root
ulimit -l unlimited
kiwi_provider_env
mkdir -p $LOG

# in NS CMD...: CMD in namespace NS ("-": the initial one).
nsx() {
	local ns=$1
	shift
	if [ "$ns" = - ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

had_siw=0 had_rxe=0
[ -d /sys/module/siw ] && had_siw=1
[ -d /sys/module/rdma_rxe ] && had_rxe=1

teardown() {
	local d
	srv_stop
	ip netns pids $NS 2> /dev/null | xargs -r kill -9 2> /dev/null
	for d in kiwi0 siw0 rxe0; do
		[ -e /sys/class/infiniband/$d ] || continue
		rdma link del $d 2> /dev/null ||
			ip netns exec $NS rdma link del $d 2> /dev/null
	done
	for d in kiwi0 siw0 rxe0; do
		wait_for 10 test ! -e /sys/class/infiniband/$d
	done
	ip netns del $NS 2> /dev/null
	ip link del dum0 2> /dev/null
	veth_teardown
}

# setup LAYOUT: veth pair (veth1 in coex for b), dum0 for rxe, IPv6
# addresses for the full run; no RDMA device yet.
setup() {
	teardown
	kiwi_load && siw_load && modprobe rdma_rxe && veth_setup &&
	ip link add dum0 type dummy &&
	ip addr add $RXE_IP/24 dev dum0 &&
	ip link set dum0 up &&
	ip link set lo up &&
	ip addr add fd00::1/64 dev veth0 nodad || return 1
	if [ "$1" = b ]; then
		ip netns add $NS &&
		ip link set veth1 netns $NS &&
		nsx $NS ip addr add $KIWI_IP/24 dev veth1 &&
		nsx $NS ip link set veth1 up &&
		nsx $NS ip link set lo up || return 1
	fi
	nsx "$(kiwi_ns "$1")" ip addr add fd00::2/64 dev veth1 nodad
}

kiwi_ns() { if [ "$1" = b ]; then echo $NS; else echo -; fi; }

# dev_add LAYOUT PROVIDER: kiwi0 on veth1 (in coex for b), siw0 on veth0,
# rxe0 on dum0; waits for the port to be up (rdma_cm needs it).
dev_add() {
	local ns=- nd
	case $2 in
	kiwi) nd=veth1; ns=$(kiwi_ns "$1") ;;
	siw) nd=veth0 ;;
	rxe) nd=dum0 ;;
	esac
	nsx $ns rdma link add ${2}0 type "$2" netdev $nd &&
		wait_for 10 grep -q ACTIVE /sys/class/infiniband/${2}0/ports/1/state
}

# devs LAYOUT PROVIDER...: setup, then the devices in that order.
devs() {
	local l=$1 p
	shift
	setup "$l" || return 1
	for p in "$@"; do
		dev_add "$l" "$p" || return 1
	done
}

# srv_start NS NAME CMD...: a server in the background, output in
# $LOG/NAME.srv.
srv_start() {
	local ns=$1 name=$2
	shift 2
	SRV_LOG=$LOG/$name.srv
	# no shell in between: SRV_PID is timeout's, which passes a kill on
	if [ "$ns" = - ]; then
		timeout -k 5 $((T * 3)) stdbuf -oL "$@" > "$SRV_LOG" 2>&1 &
	else
		ip netns exec "$ns" timeout -k 5 $((T * 3)) stdbuf -oL "$@" \
			> "$SRV_LOG" 2>&1 &
	fi
	SRV_PID=$!
}

srv_stop() {
	[ -n "$SRV_PID" ] || return 0
	kill "$SRV_PID" 2> /dev/null
	wait "$SRV_PID" 2> /dev/null
	SRV_PID=
	PORT=$((PORT + 1))
}

# srv_wait: the server's exit status once it ends by itself.
srv_wait() {
	local rc
	wait "$SRV_PID"
	rc=$?
	SRV_PID=
	PORT=$((PORT + 1))
	return $rc
}

# socks NS: the local addresses listening on $PORT in NS, one a line.
socks() {
	nsx "$1" ss -Htln "sport = :$PORT" | awk '{ print $4 }'
}

# listens NS REGEX...: each extended REGEX matches a whole local address
# listening on $PORT in NS ("198.18.0.2%veth1:19500"), while the server
# runs; shows the sockets and the server's output if not within 30 s.
listens() {
	local ns=$1 re end=$((SECONDS + 30))
	shift
	while :; do
		for re in "$@"; do
			socks "$ns" | grep -qxE -- "$re:$PORT" || break
			re=
		done
		[ -z "$re" ] && return 0
		if ! kill -0 "$SRV_PID" 2> /dev/null || [ $SECONDS -ge $end ]; then
			echo "no socket /$re:$PORT/ in namespace $ns; there are:"
			socks "$ns"
			echo "--- server:"
			tail -n 5 "$SRV_LOG"
			return 1
		fi
		sleep 0.3
	done
}

# cli NS NAME CMD...: a client, exit 0 within its limit.
cli() {
	local ns=$1 name=$2 rc
	shift 2
	nsx "$ns" timeout -k 5 $T "$@" > $LOG/$name.cli 2>&1
	rc=$?
	tail -n 6 $LOG/$name.cli
	[ $rc -eq 0 ] || { echo "client exit status $rc"; return 1; }
}

# rping_to NS ADDR: rping -V from NS to ADDR on $PORT (its provider is
# the one that has the source address rdma_cm picks: ADDR's own, between
# local addresses); the client compares every buffer it reads back.
rping_to() {
	cli "$1" rping-$2 rping -c -a "$2" -p $PORT -C 3 -V &&
		! grep -q 'data mismatch' "$LOG/rping-$2.cli"
}

# rping_server NS ADDR: a persistent wildcard rping server (ADDR 0.0.0.0
# or ::), one thread per client.
rping_server() {
	srv_start "$1" rping rping -s -P -a "$2" -p $PORT -C 3 -V
}

# veth_bytes: bytes veth0 sent and received so far.
veth_bytes() {
	echo $(($(cat /sys/class/net/veth0/statistics/tx_bytes) +
		$(cat /sys/class/net/veth0/statistics/rx_bytes)))
}

# sock_of ADDR: the socket that takes connections to ADDR in a wildcard
# server's namespace.  A client must wait for it, not for any: rdma_cm
# listens on the devices one after the other, in the order they were made.
sock_of() {
	case $1 in
	"$KIWI_IP") echo "$KIWI_SOCK" ;;
	"$SIW_IP") echo "$SIW_SOCK_A" ;;
	*) echo '.*' ;;
	esac
}

# perf SRV_NS CLI_NS ADDR PATH [TOOL]: a wildcard perftest server (5
# iterations of 64 KiB) and a client to ADDR, both exit 0 with a result
# line; PATH "lo": the veth carried less than 64 KiB meanwhile, "veth":
# at least the 320 KiB.
perf() {
	local sns=$1 cns=$2 addr=$3 path=$4 tool=${5:-ib_write_bw} b0 d rc
	local gate=/tmp/coexist-perf-gate lib=$KIWI_ROOT/tests/verbs/build/libconnect-gate.so
	b0=$(veth_bytes)
	rm -f $gate
	# the gate: perftest -R's client must not connect its data QPs
	# before the server's second rdma_listen() (see 35-datapath.sh)
	srv_start "$sns" perf env LD_PRELOAD="$lib" KIWI_LISTEN_GATE=$gate \
		KIWI_LISTEN_GATE_SKIP=1 stdbuf -oL $tool -R -p $PORT -n 5 -s 65536 -F
	listens "$sns" "$(sock_of "$addr")" || { srv_stop; return 1; }
	cli "$cns" perf env LD_PRELOAD="$lib" KIWI_CONNECT_GATE=$gate \
		KIWI_CONNECT_GATE_SKIP=1 $tool -R -p $PORT -n 5 -s 65536 -F "$addr"
	rc=$?
	rm -f $gate
	[ $rc -eq 0 ] || srv_stop
	[ $rc -ne 0 ] || srv_wait || { echo "server failed:"; tail -n 5 $LOG/perf.srv; return 1; }
	[ $rc -eq 0 ] || return 1
	grep -qE '^ *65536 +5 ' $LOG/perf.cli || { echo "no result line"; return 1; }
	d=$(($(veth_bytes) - b0))
	echo "veth0 carried $d bytes meanwhile"
	case $path in
	lo) [ $d -lt 65536 ] ;;
	veth) [ $d -ge $((5 * 65536)) ] ;;
	esac
}

# rcopy_to SRV_NS CLI_NS ADDR: rcopy's wildcard server (rsockets) and a
# client copying 256 KiB of random bytes to it; the copy must be identical.
rcopy_to() {
	local sns=$1 cns=$2 addr=$3 rc
	head -c 262144 /dev/urandom > $LOG/src.bin
	rm -f $LOG/dst.bin
	srv_start "$sns" rcopy rcopy -p $PORT
	listens "$sns" "$(sock_of "$addr")" || { srv_stop; return 1; }
	cli "$cns" rcopy rcopy $LOG/src.bin "$addr:$LOG/dst.bin" -p $PORT
	rc=$?
	srv_stop	# rcopy's server does not end by itself
	[ $rc -eq 0 ] && cmp $LOG/src.bin $LOG/dst.bin
}

dmesg_mark() { DMESG_LINE=$(dmesg | wc -l); }

# dmesg_clean: since the mark, no per-device listen failed in rdma_cm and
# no kernel complaint.
dmesg_clean() {
	local out
	out=$(dmesg | tail -n +"$((DMESG_LINE + 1))" |
		grep -E -- "cma_listen_on_dev|$(cat "$KIWI_ROOT/tests/vm/kernel-bad.ere")")
	[ -z "$out" ] && return 0
	printf '%s\n' "$out" | head -n 10
	return 1
}

# The sockets each provider listens with, in the server's namespace.
KIWI_SOCK='198\.18\.0\.2%veth1'
KIWI_SOCK6='\[fd00::2\]%veth1'
SIW_SOCK_A='0\.0\.0\.0%veth0'
SIW_SOCK_B='0\.0\.0\.0%[^:]+'	# siw's netdev is in another namespace

# layout_a ORDER: all devices in one namespace, created in ORDER
# (kiwi: kiwi, rxe, siw; siw: siw, rxe, kiwi).
layout_a() {
	local o=$1 t="(a) one namespace, $1 first:"
	dmesg_mark
	if [ $o = kiwi ]; then set -- kiwi rxe siw; else set -- siw rxe kiwi; fi
	tap_check "$t devices $*" devs a "$@" || return
	rping_server - 0.0.0.0
	if tap_check "$t wildcard rping server: kiwi listens on $KIWI_IP bound to veth1, siw on 0.0.0.0 bound to veth0" \
		listens - "$KIWI_SOCK" "$SIW_SOCK_A"; then
		tap_check "$t rping -V to kiwi's address (kiwi to kiwi, loopback)" rping_to - $KIWI_IP
		tap_check "$t rping -V to siw's address (siw to siw, loopback)" rping_to - $SIW_IP
		tap_check "$t rping -V to rxe's address (rxe to rxe)" rping_to - $RXE_IP
	fi
	srv_stop
	if [ "$FULL" = 1 ]; then
		rping_server - ::
		tap_check "$t IPv6 wildcard rping server: kiwi on fd00::2 and $KIWI_IP, bound to veth1" \
			listens - "$KIWI_SOCK6" "$KIWI_SOCK" '\*%veth0'
		tap_check "$t rping -V to fd00::2 (kiwi to kiwi, loopback)" rping_to - fd00::2
		tap_check "$t rping -V to fd00::1 (siw to siw, loopback)" rping_to - fd00::1
		srv_stop
		tap_check "$t ib_write_bw -R wildcard server, client to siw's address (loopback)" \
			perf - - $SIW_IP lo
		tap_check "$t rcopy wildcard server, client to kiwi's address: file identical" \
			rcopy_to - - $KIWI_IP
	fi
	tap_check "$t ib_write_bw -R wildcard server, client to kiwi's address (loopback)" \
		perf - - $KIWI_IP lo
	tap_check "$t dmesg: every per-device listen succeeded, no kernel complaint" dmesg_clean
	teardown
}

add_listens() { dev_add a "$1" && listens - "$2"; }

# layout_a_late FIRST SECOND: the wildcard server listens on FIRST (and rxe)
# when SECOND's device is created: rdma_cm then asks SECOND to listen too
# (a failure there drops the device from rdma_cm altogether).
layout_a_late() {
	local t="(a) $2 created while the server listens on $1:"
	dmesg_mark
	tap_check "$t devices $1 rxe" devs a "$1" rxe || return
	rping_server - 0.0.0.0
	# the first one's socket, bound or not (this is not what is checked)
	if [ $1 = kiwi ]; then
		set -- '198\.18\.0\.2(%veth1)?' "$SIW_SOCK_A" siw
	else
		set -- "$SIW_SOCK_A" "$KIWI_SOCK" kiwi
	fi
	if tap_check "$t listening" listens - "$1"; then
		tap_check "$t $3 added, listens too" add_listens "$3" "$2"
		tap_check "$t rping -V to kiwi's address" rping_to - $KIWI_IP
		tap_check "$t rping -V to siw's address" rping_to - $SIW_IP
	fi
	srv_stop
	tap_check "$t dmesg: every per-device listen succeeded, no kernel complaint" dmesg_clean
	teardown
}

# layout_b ORDER: kiwi's device in coex, siw's and rxe's in the initial
# namespace, created in ORDER.
layout_b() {
	local o=$1 t="(b) kiwi in netns $NS, $1 first:" tool
	dmesg_mark
	if [ $o = kiwi ]; then set -- kiwi rxe siw; else set -- siw rxe kiwi; fi
	tap_check "$t devices $*" devs b "$@" || return
	rping_server $NS 0.0.0.0
	if tap_check "$t wildcard rping server in $NS: kiwi on $KIWI_IP bound to veth1, siw's 0.0.0.0 bound to its netdev's index" \
		listens $NS "$KIWI_SOCK" "$SIW_SOCK_B"; then
		tap_check "$t rping -V siw to kiwi (over the veth)" rping_to - $KIWI_IP
		tap_check "$t rping -V kiwi to kiwi in $NS (loopback)" rping_to $NS $KIWI_IP
	fi
	srv_stop
	rping_server - 0.0.0.0
	tap_check "$t wildcard rping server in the initial namespace: siw on 0.0.0.0 bound to veth0" \
		listens - "$SIW_SOCK_A" &&
		tap_check "$t rping -V kiwi in $NS to siw (over the veth)" rping_to $NS $SIW_IP
	srv_stop
	tap_check "$t ib_write_bw -R wildcard server in $NS, siw client (over the veth)" \
		perf $NS - $KIWI_IP veth
	if [ "$FULL" = 1 ]; then
		for tool in ib_read_bw ib_send_bw; do
			tap_check "$t $tool -R wildcard server in $NS, siw client (over the veth)" \
				perf $NS - $KIWI_IP veth $tool
		done
		rping_server $NS ::
		tap_check "$t IPv6 wildcard rping server in $NS: kiwi on fd00::2 bound to veth1" \
			listens $NS "$KIWI_SOCK6" "$KIWI_SOCK"
		tap_check "$t rping -V siw to fd00::2 (over the veth)" rping_to - fd00::2
		srv_stop
	fi
	tap_check "$t rcopy wildcard server in $NS, siw client: file identical" \
		rcopy_to $NS - $KIWI_IP
	tap_check "$t dmesg: every per-device listen succeeded, no kernel complaint" dmesg_clean
	teardown
}

layout_a kiwi
layout_a siw
layout_a_late kiwi siw
[ "$FULL" = 1 ] && layout_a_late siw kiwi
layout_b kiwi
layout_b siw

tap_check "kiwi's object counts are zero" kiwi_counts_zero
[ $had_siw = 1 ] || rmmod siw 2> /dev/null
[ $had_rxe = 1 ] || rmmod rdma_rxe 2> /dev/null
tap_done

# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Unmodified RDMA applications (rping, perftest, rdma_server/rdma_client,
# ibv_devinfo) between two RDMA devices, for 65-apps and tests/vm/demo.sh.
# Source lib.sh and nvmeof-lib.sh (providers, dmesg marks) first.
#
# The bench: the client's device on veth0 198.18.0.1 in init_net, the
# server's on veth1 198.18.0.2 in the network namespace "kiwiapp", so the
# traffic crosses the veth (between two local addresses Linux would take
# the loopback, where rdma_cm finds no RDMA device).  Every program runs
# under timeout(1), so a hang fails its check instead of the case.
#
# Providers: kiwi, siw (Debian's source; asks for CRC never, uses it when
# the peer asks), siwcrc (the same siw asking for CRC as the initiator,
# tests/bench/build-siw-crc.sh).  CRC "on" means kiwi devices at
# mpa_crc=required: a kiwi end then connects only with CRC on (it refuses a
# Request without C as the responder, a Reply without C as the initiator),
# so a connection that works proves CRC was negotiated.

APPS_NS=kiwiapp
APPS_CLI_IP=198.18.0.1
APPS_SRV_IP=198.18.0.2
APPS_CLI_DEV=
APPS_SRV_DEV=
# Seconds a program may run (a hang fails its check), and the port the
# next pair uses.  perftest -a -b against siw moves 80 MiB each way and
# took 200 s on a loaded TCG host: the limit is generous.
APPS_TIMEOUT=${APPS_TIMEOUT:-$((300 * ${KIWI_TIMEOUT_SCALE:-1}))}
APPS_PORT=19000
APPS_LOG=/tmp/apps
# siw pins user memory against RLIMIT_MEMLOCK even for root, and perftest
# -a registers 8 MiB buffers: lift the limit, as RDMA users do
ulimit -l unlimited

# apps_ns CMD...: CMD in the server's namespace.
apps_ns() {
	ip netns exec $APPS_NS "$@"
}

# apps_setup CLIENT SERVER CRC: providers (kiwi|siw|siwcrc) for the
# client's and the server's ends, CRC off|on; sets APPS_CLI_DEV and
# APPS_SRV_DEV (named after the provider and role: kiwicli, siwsrv...).
apps_setup() {
	local cp=$1 sp=$2 crc=$3
	apps_teardown
	mkdir -p $APPS_LOG
	APPS_CLI_DEV=$(nvmf_provider_type "$cp")cli
	APPS_SRV_DEV=$(nvmf_provider_type "$sp")srv
	nvmf_provider_load "$cp" && nvmf_provider_load "$sp" &&
	veth_ns_setup $APPS_NS &&
	_apps_link_add "$APPS_CLI_DEV" "$cp" veth0 "$crc" &&
	_apps_link_add "$APPS_SRV_DEV" "$sp" veth1 "$crc" apps_ns
}

# _apps_link_add NAME PROVIDER NETDEV CRC [PREFIX]: the link, made by
# "PREFIX rdma link add" (rdma looks the netdev up in its own namespace);
# a kiwi device gets mpa_crc off or required.
_apps_link_add() {
	local name=$1 prov=$2 nd=$3 crc=$4 pfx=${5:-} want=off
	$pfx rdma link add "$name" type "$(nvmf_provider_type "$prov")" \
		netdev "$nd" || return 1
	nvmf_wait 10 test -e "/sys/class/infiniband/$name" || return 1
	if [ "$prov" = kiwi ]; then
		[ "$crc" = on ] && want=required
		echo $want > "/sys/class/infiniband/$name/mpa_crc" &&
		[ "$(cat "/sys/class/infiniband/$name/mpa_crc")" = $want ] ||
			return 1
	fi
	# rdma_cm needs the port up before it resolves addresses over it
	nvmf_wait 10 grep -q ACTIVE "/sys/class/infiniband/$name/ports/1/state"
}

# apps_teardown: whatever apps_setup made, gone (also after a failure).
apps_teardown() {
	local d
	apps_ns true 2> /dev/null && apps_ns_kill
	for d in $APPS_CLI_DEV $APPS_SRV_DEV; do
		[ -e /sys/class/infiniband/$d ] && rdma link del $d
	done
	for d in $APPS_CLI_DEV $APPS_SRV_DEV; do
		nvmf_wait 10 test ! -e /sys/class/infiniband/$d
	done
	ip netns del $APPS_NS 2> /dev/null
	veth_teardown
}

# apps_ns_kill: no program left running in the server's namespace.
apps_ns_kill() {
	apps_ns true 2> /dev/null || return 0
	ip netns pids $APPS_NS | xargs -r kill -9 2> /dev/null
	return 0
}

# apps_wait_listen PORT PID: a TCP listener on PORT in the server's
# namespace (kiwi and siw listen on kernel TCP sockets, which ss lists
# too), while the server PID still runs.
apps_wait_listen() {
	wait_alive 60 "$2" tcp_listening $APPS_NS "$1"
}

# apps_dmesg_mark / apps_dmesg_clean: since the mark, no kernel complaint
# (tests/vm/kernel-bad.ere) and no line from kiwi or siw that reports an
# error or a warning.
apps_dmesg_mark() {
	nvmf_dmesg_mark
}

apps_dmesg_clean() {
	local out bad
	nvmf_dmesg_clean || return 1
	bad='(kiwi|siw).*([Ee]rror|[Ww]arn|[Ff]ail|[Bb]ad |[Ii]nvalid|[Tt]erminat)'
	out=$(nvmf_dmesg_since_mark | grep -E -- "$bad")
	[ -z "$out" ] && return 0
	printf '%s\n' "$out" | head -n 20
	return 1
}

# apps_pair NAME SERVER_ARGS CLIENT_ARGS: run a server (SERVER_ARGS, a
# command line split on blanks, in the namespace) and, once it listens on
# $APPS_PORT, the client; both must exit 0.  Their outputs are in
# $APPS_LOG/NAME.{srv,cli} and printed.  The server gets a head start of
# the client's time: it must see the client's disconnect to finish.
apps_pair() {
	local name=$1 srv=$2 cli=$3 spid src why=
	local so=$APPS_LOG/$name.srv co=$APPS_LOG/$name.cli
	apps_dmesg_mark
	: > "$co"
	# shellcheck disable=SC2086
	# stdbuf: what a killed program printed is not lost in its buffer
	apps_ns ${APPS_SRV_ENV:+env $APPS_SRV_ENV} \
		timeout -k 5 $((APPS_TIMEOUT + 30)) stdbuf -oL $srv > "$so" 2>&1 &
	spid=$!
	if ! apps_wait_listen $APPS_PORT $spid; then
		why="the server does not listen on port $APPS_PORT;"
	else
		# shellcheck disable=SC2086
		${APPS_CLI_ENV:+env $APPS_CLI_ENV} \
			timeout -k 5 $APPS_TIMEOUT stdbuf -oL $cli > "$co" 2>&1
		src=$?
		[ $src -eq 0 ] || why="$why client exit status $src;"
	fi
	[ -z "$why" ] || kill "$spid" 2> /dev/null
	wait "$spid"
	src=$?
	[ $src -eq 0 ] || why="$why server exit status $src;"
	apps_ns_kill
	APPS_PORT=$((APPS_PORT + 1))
	apps_dmesg_clean > "$APPS_LOG/$name.dmesg" ||
		why="$why kernel log: $(head -n 3 "$APPS_LOG/$name.dmesg")"
	# the verdict first: tap_check shows only the first lines
	[ -z "$why" ] || echo "$name: $why"
	echo "--- client: $cli"
	tail -n 12 "$co"
	echo "--- server: $srv"
	tail -n 12 "$so"
	[ -z "$why" ]
}

# apps_fpdu_long: the client's device (kiwi, in this namespace) sent more
# payload bytes per FPDU than one MSS of the veth (1448) since it was
# created: mpa_fpdu_max took effect with its peer
apps_fpdu_long() {
	local by n
	read -r by n < <(rdma statistic show link "$APPS_CLI_DEV/1" |
		awk '{ for (i = 1; i < NF; i++) {
			if ($i == "tx_bytes") b = $(i + 1)
			if ($i == "tx_fpdus") f = $(i + 1) } }
		     END { print b + 0, f + 0 }')
	echo "$APPS_CLI_DEV: $by payload bytes in $n FPDUs"
	[ "$n" -gt 0 ] && [ $((by / n)) -gt 1448 ]
}

# apps_rping SIZE COUNT: rping -V, the client comparing every buffer it
# reads back from the server (Send, RDMA Read, RDMA Write per ping).
apps_rping() {
	local size=$1 count=$2 name=rping-$1 p=$APPS_PORT
	apps_pair $name "rping -s -a $APPS_SRV_IP -p $p -S $size -C $count -V" \
		"rping -c -a $APPS_SRV_IP -p $p -S $size -C $count -V" || return 1
	! grep -q 'data mismatch' $APPS_LOG/$name.cli
}

# The sizes perftest -a runs: 2 B to 8 MiB, one result line each.
APPS_PERF_ALL=23

# apps_perf TOOL ITERS [OPTIONS...]: perftest TOOL over rdma_cm (-R) on
# our two devices; both sides exit 0 and the client prints one result
# line per size (all of them with -a, else the one -s gives, 65536 by
# default).  The client's data connections wait for the server's second
# rdma_listen() (libconnect-gate.so: perftest -R races itself there, see
# 35-datapath.sh).
apps_perf() {
	local tool=$1 n=$2 name p=$APPS_PORT rows want=1 rc=0
	local gate=/tmp/apps-perf-gate lib=$KIWI_ROOT/tests/verbs/build/libconnect-gate.so
	shift 2
	name=$tool$(echo "$*" | tr -d ' -')
	[ -f "$lib" ] || { echo "no $lib (make -C tests/verbs)"; return 1; }
	rm -f $gate
	APPS_SRV_ENV="LD_PRELOAD=$lib KIWI_LISTEN_GATE=$gate KIWI_LISTEN_GATE_SKIP=1" \
	APPS_CLI_ENV="LD_PRELOAD=$lib KIWI_CONNECT_GATE=$gate KIWI_CONNECT_GATE_SKIP=1" \
		apps_pair "$name" \
		"$tool -R -d $APPS_SRV_DEV -p $p -n $n -F $*" \
		"$tool -R -d $APPS_CLI_DEV -p $p -n $n -F $* $APPS_SRV_IP" || rc=1
	rm -f $gate
	[ $rc -eq 0 ] || return 1
	case " $* " in *" -a "*) want=$APPS_PERF_ALL ;; esac
	# result rows: "bytes iterations numbers...", after the header; a
	# latency test prints "inf" for a size when its get_cpu_mhz() sampling
	# fails, which TCG's clocks can make it do
	rows=$(grep -cE '^ *[0-9]+ +[0-9]+ +([0-9.]+|inf) ' $APPS_LOG/$name.cli)
	[ "$rows" -eq "$want" ] || {
		echo "$name: $rows result lines, want $want"
		return 1
	}
}

# apps_rdma_server_client: librdmacm's rdma_server and rdma_client (an
# endpoint each, a Send each way with inline data).
apps_rdma_server_client() {
	local p=$APPS_PORT
	apps_pair rdma_sc "rdma_server -p $p" \
		"rdma_client -s $APPS_SRV_IP -p $p" || return 1
	grep -q '^rdma_client: end 0' $APPS_LOG/rdma_sc.cli &&
		grep -q '^rdma_server: end 0' $APPS_LOG/rdma_sc.srv
}

# apps_abi NAME: the value of #define NAME in include/uapi/kiwi-abi.h
# (a C constant expression of numbers, shifts and parentheses).
apps_abi() {
	local v
	v=$(sed -nE "s,^#define $1[[:space:]]+([^/]*).*,\1,p" \
		"$KIWI_ROOT/include/uapi/kiwi-abi.h" | head -n1 |
		sed -E 's/([0-9a-fA-Fx]+)[uUlL]+/\1/g')
	[ -n "$v" ] || { echo "apps_abi: no $1" >&2; echo -1; return 1; }
	echo $((v))
}

# apps_devinfo DEV: ibv_devinfo -v on a kiwi device shows an iWARP RNIC
# with kiwi's limits (kiwi-abi.h) and one active port.
apps_devinfo() {
	local dev=$1 out bad=0 line k v t0=$SECONDS
	local -A f
	out=$(timeout 60 ibv_devinfo -v -d "$dev") || {
		echo "ibv_devinfo -v -d $dev failed"
		return 1
	}
	printf '%s\n' "$out"
	echo "(ibv_devinfo took $((SECONDS - t0)) s)"
	# "name: value ..." lines, the first of each name (bash only: forks
	# are slow under TCG)
	while IFS= read -r line; do
		[[ $line =~ ^[[:space:]]*([a-z_]+):[[:space:]]*([^[:space:]]+) ]] ||
			continue
		k=${BASH_REMATCH[1]}
		v=${BASH_REMATCH[2]}
		[ -n "${f[$k]+set}" ] || f[$k]=$v
	done <<< "$out"
	_apps_want() {
		if [ "${f[$1]:-}" != "$2" ]; then
			echo "ibv_devinfo $dev: $1 is '${f[$1]:-}', want '$2'"
			bad=1
		fi
	}
	_apps_want_num() {
		v=${f[$1]:-}
		if ! [[ $v =~ ^(0x[0-9a-fA-F]+|[0-9]+)$ ]] || [ $((v)) -ne $(($2)) ]; then
			echo "ibv_devinfo $dev: $1 is '$v', want $(($2))"
			bad=1
		fi
	}
	_apps_want hca_id "$dev"
	_apps_want transport iWARP
	_apps_want phys_port_cnt 1
	_apps_want state PORT_ACTIVE
	_apps_want link_layer Ethernet
	_apps_want atomic_cap ATOMIC_NONE
	_apps_want_num max_mr_size "$(apps_abi KIWI_MAX_MR_SIZE)"
	_apps_want_num max_qp "$(apps_abi KIWI_MAX_QP)"
	_apps_want_num max_qp_wr "$(apps_abi KIWI_MAX_QP_WR)"
	_apps_want_num max_sge "$(apps_abi KIWI_MAX_SGE)"
	_apps_want_num max_cq "$(apps_abi KIWI_MAX_CQ)"
	_apps_want_num max_cqe "$(apps_abi KIWI_MAX_CQE)"
	_apps_want_num max_mr "$(apps_abi KIWI_MAX_MR)"
	_apps_want_num max_pd "$(apps_abi KIWI_MAX_PD)"
	_apps_want_num max_qp_rd_atom "$(apps_abi KIWI_MAX_ORD)"
	_apps_want_num max_qp_init_rd_atom "$(apps_abi KIWI_MAX_ORD)"
	_apps_want_num max_srq "$(apps_abi KIWI_MAX_SRQ)"
	_apps_want_num max_srq_wr "$(apps_abi KIWI_MAX_SRQ_WR)"
	_apps_want_num max_srq_sge "$(apps_abi KIWI_MAX_SGE)"
	_apps_want_num max_msg_sz "$(apps_abi KIWI_MAX_MSG_SIZE)"
	_apps_want_num gid_tbl_len "$(apps_abi KIWI_GID_TBL_LEN)"
	# node GUID: derived from the netdev's MAC, never zero
	case ${f[node_guid]:-} in
	''|0000:0000:0000:0000)
		echo "ibv_devinfo $dev: node_guid '${f[node_guid]:-}'"
		bad=1
		;;
	esac
	# the node type ibv_devinfo does not print
	v=$(cat /sys/class/infiniband/$dev/node_type)
	[ "$v" = "4: RNIC" ] || { echo "$dev: node_type '$v'"; bad=1; }
	return $bad
}

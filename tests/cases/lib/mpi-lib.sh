# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Open MPI (Debian 12's 4.1.4) jobs for the tests, sourced after lib.sh.
# Four ranks, two on this host and two on another, launched by mpirun
# here through mpi-rsh.sh (no ssh in the guests) and checked by
# mpi-check.py (mpi4py).  Transports:
#   ofi   --mca pml cm --mca mtl ofi, libfabric's verbs;ofi_rxm provider:
#         RDMA over whatever iWARP device each host has (kiwi, siw); the
#         openib BTL cannot connect over iWARP and UCX refuses it
#   tcp   --mca pml ob1 --mca btl tcp,self,vader: Open MPI's own TCP, the
#         comparison
#
# mpi_exec_serve DIR: on the other host, runs what mpi-rsh.sh puts in DIR
# (until killed).  mpi_run TRANSPORT SUBNET HOSTS OUT ARGS...: mpirun of
# mpi-check.py ARGS, its output in OUT.  mpi_left: no rank or orted here.

MPI_CHECK=$KIWI_ROOT/tests/cases/lib/mpi-check.py
MPI_RSH=$KIWI_ROOT/tests/cases/lib/mpi-rsh.sh
# the tests run as root
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# mpi_exec_serve DIR: each DIR/ID.cmd claimed (renamed ID.run) and run by
# bash in the background, its output in ID.out, its status in ID.rc.
mpi_exec_serve() {
	local d=$1 c b
	mkdir -p "$d" || return 1
	while :; do
		for c in "$d"/*.cmd; do
			[ -e "$c" ] || continue
			b=${c%.cmd}
			mv "$c" "$b.run" 2>/dev/null || continue
			( bash -c "$(cat "$b.run")" > "$b.out" 2>&1 < /dev/null
			  echo $? > "$b.rc.tmp" && mv "$b.rc.tmp" "$b.rc" ) &
		done
		sleep 0.2
	done
}

# mpi_run TRANSPORT SUBNET HOSTS OUT ARGS...: mpirun with HOSTS (Open
# MPI's --host, "a:2,b:2") of mpi-check.py ARGS under `python3 -m mpi4py`
# (an exception in a rank aborts the job instead of leaving the others
# waiting), libfabric's warnings in OUT too; out-of-band and TCP traffic
# on SUBNET, no binding, ranks yielding the CPU while they wait (the
# guests' 2 vCPUs are shared with the kernel's own work: kiwi's send
# engine, softirqs), rank output tagged; exits as mpirun, 124 when it
# outlives MPI_TIMEOUT seconds (default 600).
mpi_run() {
	local tr=$1 net=$2 hosts=$3 out=$4 nr
	shift 4
	local -a o=(--host "$hosts" --bind-to none --tag-output
		--mca mpi_yield_when_idle 1
		--mca plm_rsh_agent "$MPI_RSH" --mca oob_tcp_if_include "$net"
		--mca btl_tcp_if_include "$net" -x RDMAV_DRIVERS -x PATH)
	case $tr in
	ofi) o+=(--mca pml cm --mca mtl ofi
		--mca mtl_ofi_provider_include "verbs;ofi_rxm" --mca btl self
		-x FI_LOG_LEVEL=warn) ;;
	tcp) o+=(--mca pml ob1 --mca btl tcp,self,vader) ;;
	*) echo "mpi_run: transport $tr: want ofi or tcp" >&2; return 2 ;;
	esac
	nr=$(echo "$hosts" | tr ',' '\n' | awk -F: '{ n += $2 } END { print n }')
	timeout "${MPI_TIMEOUT:-600}" mpirun -np "$nr" "${o[@]}" \
		/usr/bin/python3 -m mpi4py "$MPI_CHECK" "$@" > "$out" 2>&1
}

# mpi_left: the processes of a job still on this host (none: fails)
mpi_left() {
	pgrep -af 'orted|mpi-check\.py'
}

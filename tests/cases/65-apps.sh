#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 900
# timeout-full: 5400
#
# Unmodified applications on kiwi (apps-lib.sh): kiwi to kiwi, a kiwi
# client against a siw server and a siw client against a kiwi server
# (siw through Debian's own libsiw), MPA CRC off and on:
#  - rping -V (Send, RDMA Read, RDMA Write; the client compares every
#    buffer) from 23 B to 64 KiB - 1 (rping's limits);
#  - perftest ib_{write,read,send}_{bw,lat} -R, all sizes (-a), the
#    bandwidth tests also bidirectional (-b), and with four QPs (-q 4 -b);
#  - librdmacm's rdma_server/rdma_client;
#  - ibv_devinfo -v on every kiwi device: an iWARP RNIC with kiwi's limits.
# A check fails when a program exits non-zero or hangs (timeout), when its
# data check fails, or when dmesg shows a kernel complaint or an error line
# from kiwi or siw.  kiwi's object counts return to zero at the end.
#
# The default run is a subset (every program kiwi to kiwi, the latency
# tests at one size, rping and a perftest each way with siw, CRC on for
# kiwi to kiwi and kiwi to siw);
# KIWI_FULL=1 runs the whole matrix: every pairing x CRC x program x option.
# KIWI_APPS="client:server:crc ..." runs only those pairings, and
# KIWI_APPS_CHECKS="check;check..." only those checks of the plan below
# (development; siw:siw:off is the reference that proves a check right).
# The body is one compound command, read whole before it runs, so that
# editing this file cannot change a run that is under way.
{
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/nvmeof-lib.sh"
. "$(dirname "$0")/lib/apps-lib.sh"

full=${KIWI_FULL:-0}
perf_bw="ib_write_bw ib_read_bw ib_send_bw"
perf_lat="ib_write_lat ib_read_lat ib_send_lat"

# plan CLIENT SERVER CRC: the checks of one pairing, one per line:
# "rping SIZE COUNT", "perf TOOL ITERS OPTIONS...", "rdma_sc", "devinfo",
# "fpdu_long" (a kiwi client against siw: its FPDUs were longer than an
# MSS, siw's Reply having echoed the offer of mpa_fpdu_max).
plan() {
	local c=$1 s=$2 crc=$3 t size
	if [ -n "${KIWI_APPS_CHECKS:-}" ]; then
		echo "$KIWI_APPS_CHECKS" | tr ';' '\n'
		return
	fi
	if [ "$full" = 1 ]; then
		echo devinfo
		for size in 23 64 1000 4096 9000 65535; do
			echo "rping $size 20"
		done
		for t in $perf_bw; do
			echo "perf $t 5 -a"
			echo "perf $t 5 -a -b"
			echo "perf $t 20 -q 4 -b"
		done
		for t in $perf_lat; do
			echo "perf $t 5 -a"
		done
		echo rdma_sc
		[ "$c:$s" != kiwi:siw ] || echo fpdu_long
		return
	fi
	case $c:$s:$crc in
	kiwi:kiwi:off)
		echo devinfo
		echo "rping 23 10"
		echo "rping 65535 10"
		echo "perf ib_write_bw 5 -a -b"
		echo "perf ib_read_bw 5 -a"
		echo "perf ib_send_bw 20 -q 4 -b"
		for t in $perf_lat; do
			echo "perf $t 100"
		done
		echo rdma_sc
		;;
	kiwi:kiwi:on)
		echo "rping 9000 10"
		echo "perf ib_read_bw 20 -q 4 -b"
		;;
	kiwi:siw:off)
		echo devinfo
		echo "rping 1000 10"
		echo "rping 65535 5"
		echo fpdu_long
		echo "perf ib_read_bw 20 -q 4 -b"
		;;
	kiwi:siw:on)
		echo "rping 65535 5"
		echo fpdu_long
		;;
	siw:kiwi:off)
		echo "rping 4096 10"
		echo "perf ib_write_bw 20 -q 4 -b"
		echo rdma_sc
		;;
	esac
}

if [ -n "${KIWI_APPS:-}" ]; then
	pairings=$KIWI_APPS
elif [ "$full" = 1 ]; then
	pairings="kiwi:kiwi:off kiwi:kiwi:on kiwi:siw:off kiwi:siw:on
		  siw:kiwi:off siw:kiwi:on"
else
	pairings="kiwi:kiwi:off kiwi:kiwi:on kiwi:siw:off kiwi:siw:on
		  siw:kiwi:off"
fi

trap 'apps_teardown > /dev/null 2>&1' EXIT
trap 'exit 143' TERM INT

# run_check LABEL CHECK...: one check of the plan.
run_check() {
	local label=$1 what=$2 t0=$SECONDS
	shift 2
	case $what in
	rping) tap_check "$label: rping -V -S $1 -C $2" apps_rping "$@" ;;
	perf)
		local tool=$1
		shift
		tap_check "$label: $tool -R -n $*" apps_perf "$tool" "$@"
		;;
	rdma_sc) tap_check "$label: rdma_server/rdma_client" \
		apps_rdma_server_client ;;
	fpdu_long) tap_check "$label: the kiwi client sent FPDUs longer than one MSS (siw's Reply echoed the offer)" \
		apps_fpdu_long ;;
	devinfo)
		local d
		for d in $APPS_CLI_DEV $APPS_SRV_DEV; do
			case $d in kiwi*) ;; *) continue ;; esac
			tap_check "$label: ibv_devinfo -v $d: iWARP RNIC, kiwi's limits" \
				apps_devinfo "$d"
		done
		# kiwi's provider leaves siw's devices to libsiw
		for d in $APPS_CLI_DEV $APPS_SRV_DEV; do
			case $d in siw*) ;; *) continue ;; esac
			tap_check "$label: ibv_devinfo -v $d through libsiw" eval \
				"timeout 60 ibv_devinfo -v -d $d | grep -q 'transport:.*iWARP'"
		done
		;;
	esac
	tap_diag "took $((SECONDS - t0)) s"
}

kiwi_provider_env
for p in $pairings; do
	IFS=: read -r c s crc <<< "$p"
	# siw asks for CRC only as the initiator built to (siwcrc); as the
	# responder it follows the request's C bit
	cp=$c
	[ "$c" = siw ] && [ "$crc" = on ] && cp=siwcrc
	label="$c -> $s, crc $crc"
	if [ "$cp" = siwcrc ] && [ ! -f "$KIWI_SIW_CRC_KO" ]; then
		tap_skip "$label" "no $KIWI_SIW_CRC_KO (tests/bench/build-siw-crc.sh)"
		continue
	fi
	t0=$SECONDS
	if tap_check "$label: devices $cp client on veth0, $s server on veth1 (netns)" \
		apps_setup "$cp" "$s" "$crc"; then
		# programs must not read the plan as their stdin
		mapfile -t checks < <(plan "$c" "$s" "$crc")
		for chk in "${checks[@]}"; do
			# shellcheck disable=SC2086
			run_check "$label" $chk < /dev/null
		done
	fi
	apps_teardown > /dev/null 2>&1
	tap_check "$label: devices removed" eval \
		"[ ! -e /sys/class/infiniband/$APPS_CLI_DEV ] &&
		 [ ! -e /sys/class/infiniband/$APPS_SRV_DEV ]"
	tap_diag "pairing $p took $((SECONDS - t0)) s"
done

tap_check "kiwi object counts back to zero" nvmf_wait 10 kiwi_counts_zero
tap_done
}

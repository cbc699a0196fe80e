#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Two hosts on one wire: guest A boots Debian's 6.1 kernel, guest B 6.12,
# each under TCG with one virtio-net NIC, both NICs joined by a QEMU socket
# netdev (A listens on a free localhost port, B connects): each kernel has
# only its own device, so every byte of RDMA traffic crosses that virtual
# Ethernet wire.  A is 10.9.0.1/24, B 10.9.0.2/24.
#
#   tests/vm/two-host.sh [--timeout SEC]
#
# Both guests run tests/vm/two-host-guest.sh, A's side and B's side of the
# same pairings in step (rendezvous files in a run directory of the work
# tree, which both mount over 9p): kiwi to kiwi, kiwi to siw and siw to
# kiwi (each guest loads only the module it plays, built for its kernel),
# rping -V, perftest ib_write_bw / ib_read_bw / ib_send_bw -R, NVMe-oF
# (nvmet-rdma target, nvme-rdma host, fio crc32c verify), NFS over RDMA
# (knfsd, proto=rdma mounts), iSER (LIO and open-iscsi, iwpmd on both
# hosts) and, in the fuller run, SMB Direct (ksmbd and cifs as
# build-smb.sh builds them), each with fio crc32c verify, and Open MPI
# over libfabric's verbs;ofi_rxm (4 ranks, 2 a host: a verified ping-pong
# 1 B to 4 MiB, Allreduce, Alltoall, Bcast; a rank killed mid-run), MPA
# CRC off and on (checked on the wire), MTU 1500 and 9000, and each side
# checks that its NIC counted the payload.  The default run takes a subset
# (a few minutes); KIWI_FULL=1 runs the fuller matrix (make
# test-two-host-full, 18 pairings, see full_pairs; KIWI_TH_ALL=1 for all
# 30).  KIWI_TH_PAIRS
# overrides the pairings (see two-host-guest.sh).
#
# Output is TAP: each test prefixed with the guest that saw it, then one
# line per guest for its run (exit status, kernel log).  Both sides' logs
# are in tests/vm/out/two-host/<id>/ (A.out, B.out, the vm-run errors).
# Needs kiwi.ko, siw.ko for both kernels (make module, tests/vm/build-siw.sh,
# and with KIWI_KVER=6.12 tests/vm/build-kiwi.sh and build-siw.sh), the
# provider and tests/verbs built; for SMB Direct (smb), build-smb.sh for
# both kernels.
# The body is one compound command, read whole before it runs.
{
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1

tmo=
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) tmo=$2; shift 2 ;;
	--timeout=*) tmo=${1#*=}; shift ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
	esac
done

# Each guest uses the modules of its own kernel (vm-run.sh's defaults).
unset KIWI_KO KIWI_SIW_KO KIWI_SIW_CRC_KO KIWI_KVER KIWI_VM_NET KIWI_VM_MAC
kver_a=6.1
kver_b=6.12

# Pairings PA:CA:PB:CB:MTU:SERVER:TESTS (two-host-guest.sh).  The default:
# kiwi 6.1 client to kiwi 6.12 server with everything incl. NVMe-oF, NFS
# and iSER; kiwi 6.1 client asking for CRC to siw 6.12 at MTU 9000; siw
# 6.12 client to kiwi 6.1 server preferring CRC.  The MPI job is in the
# fuller run only: after nvme, nfs and iser in one pairing its clean-up
# check saw 4 kiwi CQs left (not yet explained).
pairs_default="kiwi:off:kiwi:off:1500:B:rping,write,nvme,nfs,iser
	kiwi:required:siw:-:9000:B:rping
	kiwi:preferred:siw:-:1500:A:rping"

# storage_tests PA PB SERVER CRC: NFS, iSER and SMB Direct across the
# wire, CRC off: NFSv4.2 where B (6.12) serves, NFSv3 where A (6.1) does,
# iSER wherever kiwi serves (a siw target cannot map its port:
# storage.md), SMB Direct in each (the builds of build-smb.sh).
storage_tests() {
	[ "$4" = off ] || return 0
	case $1:$2:$3 in
	kiwi:kiwi:B|siw:kiwi:B) echo ,nfs,iser,smb ;;
	kiwi:kiwi:A|kiwi:siw:A) echo ,nfs3,iser,smb ;;
	kiwi:siw:B) echo ,nfs,smb ;;
	siw:kiwi:A) echo ,nfs3,smb ;;
	esac
}

# kiwi's CRC "on": required, but preferred as the server of a siw client
# (siw never asks, and kiwi's required responder refuses it, cm.md).
# The fuller run covers provider pairing x serving side x CRC whole, every
# program in each, with the MTU 9000 exactly where either the server is A
# or CRC is on (not both): so every pair of MTU with another dimension,
# and every triple but (serving side, CRC, MTU) together, is run
# (KIWI_TH_ALL=1: all 24 combinations, MTU crossed in full).  Then CRC-asking
# siw against kiwi, and kiwi to kiwi and kiwi to siw both ways through tc
# netem on both NICs.
full_pairs() {
	local pa pb crc mtu srv ca cb mtus
	for p in kiwi:kiwi kiwi:siw siw:kiwi; do
		pa=${p%:*} pb=${p#*:}
		for crc in off on; do
			for srv in B A; do
				if [ "${KIWI_TH_ALL:-0}" = 1 ]; then
					mtus="1500 9000"
				elif [ "$srv:$crc" = A:off ] || [ "$srv:$crc" = B:on ]; then
					mtus=9000
				else
					mtus=1500
				fi
				for mtu in $mtus; do
					ca=- cb=-
					if [ "$crc" = off ]; then
						[ "$pa" = kiwi ] && ca=off
						[ "$pb" = kiwi ] && cb=off
					else
						[ "$pa" = kiwi ] && ca=required
						[ "$pb" = kiwi ] && cb=required
						[ "$pa:$pb:$srv" = kiwi:siw:A ] && ca=preferred
						[ "$pa:$pb:$srv" = siw:kiwi:B ] && cb=preferred
					fi
					echo "$pa:$ca:$pb:$cb:$mtu:$srv:rping,rpingsmall,rpingbig,write,read,send,nvme$(storage_tests $pa $pb $srv $crc)"
				done
			done
		done
	done
	# siw asking for CRC itself (build-siw.sh --crc) against kiwi off
	echo "siwcrc:-:kiwi:off:1500:B:rping,write,nvme"
	# MPI: kiwi to kiwi, the same job on siw to siw (the baseline) and
	# over Open MPI's TCP BTL (the comparison)
	echo "kiwi:off:kiwi:off:1500:B:mpi,mpikill,mpitcp"
	echo "siw:-:siw:-:1500:B:mpi,mpikill,mpitcp"
	# a lossy, reordering, duplicating, rate-limited wire
	echo "kiwi:off:kiwi:off:1500:B:netem,rping,write,read,nvme"
	echo "kiwi:off:siw:-:1500:B:netem,rping,write,read,nvme"
	echo "siw:-:kiwi:off:1500:B:netem,rping,write,read,nvme"
}

if [ -n "${KIWI_TH_PAIRS:-}" ]; then
	pairs=$KIWI_TH_PAIRS
elif [ "${KIWI_FULL:-0}" = 1 ]; then
	pairs=$(full_pairs)
else
	pairs=$pairs_default
fi
pairs=$(echo $pairs)
npairs=$(echo "$pairs" | wc -w)
[ -n "$tmo" ] || tmo=$((600 + 420 * npairs))

n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; failed=1; }
failed=0

# What each guest needs, built for its kernel.
missing=
for k in $kver_a $kver_b; do
	kv=$(KIWI_KVER=$k "$here/kernel.sh" kv) || { missing+=" kernel-$k"; continue; }
	ko=$(KIWI_KVER=$k "$here/kernel.sh" kiwi_ko)
	sd=$(KIWI_KVER=$k "$here/kernel.sh" siw_dir)
	[ -f "$ko" ] || missing+=" $ko"
	[ -f "$sd/siw/siw.ko" ] || missing+=" $sd/siw/siw.ko"
done
[ -f tests/verbs/build/libconnect-gate.so ] || missing+=" tests/verbs/build/libconnect-gate.so"
if [ -n "$missing" ]; then
	notok "modules and tools built for both kernels; missing:$missing"
	echo "1..$n"
	exit 1
fi
kv_a=$(KIWI_KVER=$kver_a "$here/kernel.sh" kv)
kv_b=$(KIWI_KVER=$kver_b "$here/kernel.sh" kv)

mkdir -p "$here/out/two-host"
ls -1dt "$here"/out/two-host/*/ 2>/dev/null | tail -n +11 | while read -r d; do
	[ -n "$(find "$d" -maxdepth 0 -mmin +180)" ] && rm -rf "$d"
done
dir=$(mktemp -d "$here/out/two-host/$(date +%Y%m%d-%H%M%S)-XXXX")
echo "# two-host: A $kv_a, B $kv_b, $npairs pairings, limit ${tmo}s, logs in $dir"

# A free localhost port for the wire (A's QEMU listens on it).
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# guest ROLE KVER NETDEV MAC: one guest in the background.
guest() {
	KIWI_KVER=$2 KIWI_VM_NET=$3 KIWI_VM_MAC=$4 KIWI_TH_ROLE=$1 \
		KIWI_TH_DIR=$dir KIWI_TH_PAIRS=$pairs \
		"$here/vm-run.sh" --timeout "$tmo" --run-dir-file "$dir/$1.rundir" \
		-- bash tests/vm/two-host-guest.sh > "$dir/$1.out" 2> "$dir/$1.err" &
}

declare -A pid rc
guest A $kver_a "socket,listen=127.0.0.1:$port" 52:54:00:4b:09:01
pid[A]=$!
# vm-run.sh stops its guest when signalled.
trap 'kill ${pid[A]} ${pid[B]:-} 2>/dev/null; exit 130' INT TERM HUP
# B connects only once A's QEMU listens (it may first build an initramfs).
end=$((SECONDS + 600))
while ! ss -Htln "sport = :$port" | grep -q . && kill -0 "${pid[A]}" 2>/dev/null &&
	[ $SECONDS -lt $end ]; do
	sleep 0.5
done
guest B $kver_b "socket,connect=127.0.0.1:$port" 52:54:00:4b:09:02
pid[B]=$!

# A guest that stopped early (crashed, killed) releases the other from
# its rendezvous.
while kill -0 "${pid[A]}" 2>/dev/null && kill -0 "${pid[B]}" 2>/dev/null; do
	sleep 1
done
echo "one guest stopped" > "$dir/abort"
for r in A B; do
	wait "${pid[$r]}"
	rc[$r]=$?
done

# Both sides' TAP, section by section ("=== KEY"), A's lines then B's,
# renumbered, each description prefixed with its guest; a side whose plan
# is missing or does not count its results fails.
awk -v n=$n -v la="A $kv_a" -v lb="B $kv_b" -v da="$dir/A.out" '
	FNR == 1 { sec = "start"; r = (FILENAME == da) ? "A" : "B" }
	/^=== / { sec = substr($0, 5); if (!(sec in seen)) { seen[sec] = 1; order[++ns] = sec }; next }
	{ if (!(sec in seen)) { seen[sec] = 1; order[++ns] = sec }
	  k = sec SUBSEP r; lines[k] = lines[k] $0 "\n" }
	function emit(r, lab, text,   m, i, l, d) {
		m = split(text, arr, "\n")
		for (i = 1; i < m; i++) {
			l = arr[i]
			if (l ~ /^ok [0-9]+ - /) {
				d = l; sub(/^ok [0-9]+ - /, "", d)
				print "ok " ++n " - " lab ": " d
				cnt[r]++
			} else if (l ~ /^not ok [0-9]+ - /) {
				d = l; sub(/^not ok [0-9]+ - /, "", d)
				print "not ok " ++n " - " lab ": " d
				cnt[r]++
			} else if (l ~ /^1\.\.[0-9]+$/) {
				plan[r] = substr(l, 4); got[r] = 1
			} else if (l ~ /^#/) {
				print l
			} else if (l != "") {
				print "# " r ": " l
			}
		}
	}
	END {
		for (s = 1; s <= ns; s++) {
			if (order[s] != "start") print "# --- " order[s]
			emit("A", la, lines[order[s] SUBSEP "A"])
			emit("B", lb, lines[order[s] SUBSEP "B"])
		}
		# a side cut short has no plan, or one that does not count its TAP
		if (!got["A"])
			print "not ok " ++n " - " la ": printed its plan"
		else if (plan["A"] != cnt["A"] + 0)
			print "not ok " ++n " - " la ": plan 1.." plan["A"] " but " cnt["A"] + 0 " results"
		if (!got["B"])
			print "not ok " ++n " - " lb ": printed its plan"
		else if (plan["B"] != cnt["B"] + 0)
			print "not ok " ++n " - " lb ": plan 1.." plan["B"] " but " cnt["B"] + 0 " results"
		print n > "/dev/stderr"
	}' "$dir/A.out" "$dir/B.out" 2> "$dir/count" | tee "$dir/merged.tap"
n=$(cat "$dir/count")
grep -q '^not ok' "$dir/merged.tap" && failed=1

for r in A B; do
	[ $r = A ] && kv=$kv_a || kv=$kv_b
	if [ "${rc[$r]}" = 0 ]; then
		ok "$r $kv: its side ran to the end, kernel log clean"
	else
		notok "$r $kv: its side ran to the end, kernel log clean (vm-run status ${rc[$r]}; $dir/$r.err)"
		tail -n 30 "$dir/$r.err" | sed 's/^/#   /'
	fi
done
echo "1..$n"
exit $failed
}

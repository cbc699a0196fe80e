#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Run a command as root inside a throw-away QEMU guest that boots an
# installed Debian kernel (KIWI_KVER: 6.1 by default, or 6.12; see
# tests/vm/kernel.sh) with the host's / read-only over 9p and this work
# tree read-write at the same path.  KIWI_KO, KIWI_SIW_KO and
# KIWI_SIW_CRC_KO default to the modules built for that kernel.
#
#   tests/vm/vm-run.sh [--timeout SEC] [--mem MB] [--run-dir-file F] -- CMD [ARGS...]
#
# Prints the command's output (the guest's ttyS1) as it runs and exits with
# the command's status, 124 if it timed out or the guest hung, and non-zero
# (1, or the command's own non-zero status) if the kernel log shows a
# warning, BUG, oops, panic, lockup or list corruption.  The kernel's serial
# log and the command's output are kept in tests/vm/out/runs/<id>/.
# KIWI_* variables of the caller's environment are passed to the command.
# --run-dir-file F writes the run directory's path into F (for the suite).
# KIWI_VM_CPUS (default 2) is the number of vCPUs (more than the host has
# only slows TCG down; for benchmarks of scaling on a larger host).
# KIWI_VM_SLUB_DEBUG (default FZPU) is the guest's slub_debug; "off" boots
# without it (the benchmarks: it inflates slab figures and slows every
# allocation).  KIWI_VM_PANIC_ON_WARN (default 1) is the guest's
# panic_on_warn; 0 boots without it (the benchmarks: a run is measured,
# not judged, and the kernel log is still checked after it).
# KIWI_VM_PIN=1 pins vCPU n's thread to the n-th host CPU this script may
# use; KIWI_VM_PIN_CPUS=LIST (e.g. "1") pins vCPU n to the n-th CPU of
# LIST instead: two guests side by side, each on host CPUs of its own.
# KIWI_VM_MARGIN (default 120) is the host-side allowance in seconds for
# boot and shutdown on top of --timeout before a silent guest is killed.
# KIWI_VM_NET gives the guest one virtio-net NIC on that QEMU -netdev (e.g.
# "socket,listen=127.0.0.1:PORT"), with MAC KIWI_VM_MAC: two guests on one
# virtual wire (tests/vm/two-host.sh).  Without it the guest has no NIC.
# The body is one compound command, read whole before it runs, so that
# editing this file cannot change a run that is under way.
{
set -uo pipefail

usage() {
	sed -n 's/^#   //p' "$0" >&2
	exit 2
}

timeout=300
mem=2048
run_dir_file=
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) timeout=$2; shift 2 ;;
	--timeout=*) timeout=${1#*=}; shift ;;
	--mem) mem=$2; shift 2 ;;
	--mem=*) mem=${1#*=}; shift ;;
	--run-dir-file) run_dir_file=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) usage ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || usage
case "$timeout$mem" in
*[!0-9]*) echo "vm-run: --timeout and --mem take whole numbers" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$here/out
mkdir -p "$out/runs"

# A Debian kernel, not the host's own: KIWI_KVER chooses (tests/vm/kernel.sh;
# the newest 6.1 by default, KIWI_KVER=6.12 for Debian 13's series).
# KIWI_VM_ROOT=DIR (a root made by mkroot.sh) boots DIR's own newest kernel
# with DIR as the guest's root instead of the host's, under a tmpfs overlay:
# what the guest writes there (dpkg -i) is gone when it stops.
vmroot=${KIWI_VM_ROOT:-}
if [ -n "$vmroot" ]; then
	vmroot=$(cd "$vmroot" && pwd) || exit 2
	kernel=$(ls -1 "$vmroot"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n1)
	[ -n "$kernel" ] || { echo "vm-run: no kernel in $vmroot/boot" >&2; exit 2; }
	kv=${kernel##*/vmlinuz-}
	initrd=$out/initramfs-$(basename "$vmroot")-$kv.cpio
else
	. "$here/kernel.sh" || exit 2
	kernel=$kiwi_vmlinuz
	kv=$kiwi_kv
	initrd=$out/initramfs-$kv.cpio
fi
[ -d "$vmroot/lib/modules/$kv" ] || { echo "vm-run: $vmroot/lib/modules/$kv missing" >&2; exit 2; }

# The initramfs is cached per kernel; rebuilt when the kernel, its modules or
# the scripts that make it are newer.  Concurrent runs race harmlessly: the
# builder renames its result into place.
if [ ! -s "$initrd" ] || [ "$kernel" -nt "$initrd" ] ||
	[ "$vmroot/lib/modules/$kv/modules.dep" -nt "$initrd" ] ||
	[ "$here/mkinitramfs.sh" -nt "$initrd" ] ||
	[ "$here/initramfs-init" -nt "$initrd" ]; then
	"$here/mkinitramfs.sh" "$kv" "$initrd" $vmroot || exit 2
fi

# Keep the newest 40 run directories, and any from the last three hours
# (other runs may still be using theirs).
ls -1dt "$out"/runs/*/ 2>/dev/null | tail -n +41 | while read -r d; do
	[ -n "$(find "$d" -maxdepth 0 -mmin +180)" ] && rm -rf "$d"
done

run=$(mktemp -d "$out/runs/$(date +%Y%m%d-%H%M%S)-XXXX")
serial=$run/serial.log
[ -n "$run_dir_file" ] && echo "$run" > "$run_dir_file"
output=$run/output.log
: > "$serial"
: > "$output"

# The command, quoted so that it survives the trip unchanged.
{
	printf '#!/bin/bash\n'
	printf '%q ' "$@"
	printf '\n'
} > "$run/cmd"
echo "$timeout" > "$run/timeout"
env | grep -E '^KIWI_[A-Z0-9_]*=' | grep -vE '^KIWI_(ROOT|VM_MARGIN|VM_NET)=' |
	while IFS='=' read -r k v; do printf '%s=%q\n' "$k" "$v"; done > "$run/env"
# The modules built for this kernel, unless the caller named others (none
# for a root of its own: what it uses comes from its packages).
if [ -z "$vmroot" ]; then
[ -n "${KIWI_KO:-}" ] || printf 'KIWI_KO=%q\n' "$kiwi_kiwi_ko" >> "$run/env"
[ -n "${KIWI_SIW_KO:-}" ] ||
	printf 'KIWI_SIW_KO=%q\n' "$kiwi_siw_dir/siw/siw.ko" >> "$run/env"
[ -n "${KIWI_SIW_CRC_KO:-}" ] ||
	printf 'KIWI_SIW_CRC_KO=%q\n' "$kiwi_siw_dir/siw-crc/siw.ko" >> "$run/env"
fi

cmdline="console=ttyS0,115200 loglevel=7 panic=-1 oops=panic"
# A test guest stops at the first sign of trouble, stalls included: a
# soft lockup, an RCU stall or a task blocked for 120 s panics, so that
# the serial log ends with its stacks and the suite goes on, instead of a
# guest that spins silently until the host's limit (kernel-bad.ere fails
# all of them anyway).
[ "${KIWI_VM_PANIC_ON_WARN:-1}" = 0 ] ||
	cmdline+=" panic_on_warn=1 softlockup_panic=1 sysctl.kernel.panic_on_rcu_stall=1 sysctl.kernel.hung_task_panic=1"
slub=${KIWI_VM_SLUB_DEBUG:-FZPU}
[ "$slub" = off ] || cmdline+=" slub_debug=$slub"
cmdline+=" nokaslr mitigations=off"
cmdline+=" tsc=reliable no_timer_check"
# One CPU until stage 1 onlines the others (initramfs-init): the boot's
# late static-key flips (sched_clock "Marking stable") patch code that
# every interrupt runs, and TCG once let the other vCPU run a stale int3
# from that patch after the patching had ended (6.12, 2026-12-05: "Oops:
# int3" in sched_clock_cpu, a guest that never ran its command).
cmdline+=" maxcpus=1"
# TCG's guest TSC ticks at the host's TSC rate.  The guest measures it at
# boot against the PIT, and a busy host can make that read 45 times too
# low (seen: 46.5 MHz for 2096), so that the guest clock runs 45 times
# fast and every timeout fires early.  Tell it the host's rate instead; the
# kernel still refines it against HPET and keeps the refinement if within
# 1 %.
host_tsc_khz() {
	local mhz
	mhz=$(dmesg 2>/dev/null | sed -n \
		-e 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' \
		-e 's/.*tsc: Detected \([0-9.]*\) MHz processor.*/\1/p' | tail -n 1)
	[ -n "$mhz" ] || grep -qw constant_tsc /proc/cpuinfo &&
		mhz=${mhz:-$(sed -n 's/^cpu MHz[[:space:]]*: \([0-9.]*\)$/\1/p' \
			/proc/cpuinfo | head -n 1)}
	[ -n "$mhz" ] && awk -v m="$mhz" 'BEGIN { printf "%d", m * 1000 }'
}
tsc_khz=${KIWI_VM_TSC_KHZ:-$(host_tsc_khz)}
[ -n "$tsc_khz" ] && cmdline+=" tsc_early_khz=$tsc_khz"
cmdline+=" kiwivm.root=$root kiwivm.run=$run"
[ -n "$vmroot" ] && cmdline+=" kiwivm.overlay=1"

# debug-threads: the vCPU threads are named "CPU <n>/TCG" (KIWI_VM_PIN)
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -M q35 -accel tcg -cpu max
	-name kiwivm,debug-threads=on
	-smp "${KIWI_VM_CPUS:-2}" -m "$mem" -display none -no-reboot
	-kernel "$kernel" -initrd "$initrd" -append "$cmdline"
	-serial "file:$serial" -serial "file:$output"
	-virtfs "local,path=${vmroot:-/},mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$root,mount_tag=kiwiwork,security_model=none,multidevs=remap")
# The QEMU monitor on a socket in the run's directory: a stalled guest's
# vCPUs can be read there ("info registers -a"), against a /proc/kallsyms
# the guest saved (nokaslr: the same addresses every boot; Debian's
# System.map is a stub).
qemu+=(-monitor "unix:$run/monitor,server=on,wait=off")
if [ -n "${KIWI_VM_NET:-}" ]; then
	qemu+=(-netdev "$KIWI_VM_NET,id=wire"
		-device "virtio-net-pci,netdev=wire,mac=${KIWI_VM_MAC:-52:54:00:4b:00:01}")
else
	qemu+=(-nic none)
fi

# Host-side limit: the command's own limit plus time to boot and shut down
# (a slow, shared 2-core host can take a minute to boot a TCG guest).
hard=$((timeout + ${KIWI_VM_MARGIN:-120}))
"${qemu[@]}" < /dev/null > "$run/qemu.log" 2>&1 &
qpid=$!

# KIWI_VM_PIN=1: each vCPU thread on a host CPU of its own, the n-th of
# those this script may use.  Unpinned, spells in which one vCPU runs
# everything at two thirds of its speed were several times more frequent:
# benchmarks pin (Documentation/benchmarks.md, "The send path's
# per-message cost").  Only where there are as many host CPUs as vCPUs; QEMU's own
# threads stay free.
pin_vcpus() {
	local list cpus=() r t c i n=0 want=${KIWI_VM_CPUS:-2}
	if [ -n "${KIWI_VM_PIN_CPUS:-}" ]; then
		list=": $KIWI_VM_PIN_CPUS"
	else
		list=$(taskset -cp $$ 2>/dev/null) || return 0
	fi
	for r in $(echo "${list##*: }" | tr ',' ' '); do
		case "$r" in
		*-*) cpus+=($(seq "${r%-*}" "${r#*-}")) ;;
		*) cpus+=("$r") ;;
		esac
	done
	if [ "${#cpus[@]}" -lt "$want" ]; then
		echo "vm-run: KIWI_VM_PIN: ${#cpus[@]} host CPUs for $want vCPUs, not pinned" >&2
		return 0
	fi
	# the threads appear as QEMU starts the machine
	for _ in $(seq 100); do
		n=0
		for t in /proc/"$qpid"/task/*; do
			c=$(cat "$t/comm" 2>/dev/null) || continue
			case "$c" in
			"CPU "*"/TCG")
				i=${c#CPU }
				i=${i%%/*}
				taskset -pc "${cpus[$i]}" "${t##*/}" > /dev/null &&
					n=$((n + 1)) &&
					echo "$c ${t##*/} ${cpus[$i]}" >> "$run/pin.tmp"
				;;
			esac
		done
		# run/pin: "CPU n/TCG TID HOSTCPU" per vCPU thread, for the
		# benchmarks (which vCPU ran where, whose CPU time to read)
		[ "$n" -ge "$want" ] && { mv -f "$run/pin.tmp" "$run/pin"; return 0; }
		rm -f "$run/pin.tmp"
		sleep 0.1
	done
	echo "vm-run: KIWI_VM_PIN: found $n vCPU threads, pinned those" >&2
	return 1
}
# Never leave a guest behind when interrupted.
trap 'kill "$qpid" 2>/dev/null; exit 130' INT TERM HUP
if [ -n "${KIWI_VM_PIN_CPUS:-}" ] ||
	{ [ -n "${KIWI_VM_PIN:-}" ] && [ "$KIWI_VM_PIN" != 0 ]; }; then
	pin_vcpus
fi

# Stream the command's output while the guest runs.
tail -n +1 -F --pid="$qpid" "$output" 2>/dev/null &
tpid=$!

timed_out=0
deadline=$((SECONDS + hard))
while kill -0 "$qpid" 2>/dev/null; do
	if [ "$SECONDS" -ge "$deadline" ]; then
		timed_out=1
		kill "$qpid" 2>/dev/null
		# QEMU ends on TERM; KILL only if it has not within 5 s
		for _ in $(seq 25); do
			kill -0 "$qpid" 2>/dev/null || break
			sleep 0.2
		done
		kill -9 "$qpid" 2>/dev/null
		break
	fi
	sleep 1
done
wait "$qpid" 2>/dev/null
qrc=$?
wait "$tpid" 2>/dev/null

# Kernel messages that mean the run is broken whatever the command said.
bad=$(<"$here/kernel-bad.ere")
badlines=$(grep -aE "$bad" "$serial" | head -n 20)

if [ -s "$run/status" ]; then
	rc=$(<"$run/status")
elif [ "$timed_out" = 1 ]; then
	echo "vm-run: guest hung, killed after ${hard}s; serial log: $serial" >&2
	tail -n 30 "$serial" | sed 's/^/vm-run: | /' >&2
	rc=124
else
	echo "vm-run: guest stopped without an exit status (qemu status $qrc); serial log: $serial" >&2
	[ -s "$run/qemu.log" ] && sed 's/^/vm-run: qemu: /' "$run/qemu.log" >&2
	[ -z "$badlines" ] && tail -n 30 "$serial" | sed 's/^/vm-run: | /' >&2
	rc=1
fi

if [ -n "$badlines" ]; then
	echo "vm-run: the kernel log shows a failure; serial log: $serial" >&2
	grep -aE -B2 -A25 "$bad" "$serial" | head -n 80 | sed 's/^/vm-run: | /' >&2
	[ "$rc" = 0 ] && rc=1
fi
rm -f "$run/cmd" "$run/env"
exit "$rc"
exit
}

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Which Debian kernel the test VM boots, and where everything built for it
# lives.  KIWI_KVER chooses:
#   unset, "" or 6.1   the newest installed 6.1 kernel (Debian 12's own): the
#                      default, with kiwi.ko in the tree's top directory and
#                      siw in tests/vm/out/siw, as `make module` builds them
#   6.12               the newest installed 6.12 kernel (Debian 12's security
#                      archive carries the series of Debian 13)
#   a full version     exactly that one, e.g. 6.12.117+deb12-amd64
# A kernel other than the default gets its own build directory,
# out/kernel/<version>/ (kiwi.ko, siw/siw.ko, siw-crc/siw.ko).
#
#   tests/vm/kernel.sh [FIELD]   prints FIELD (kv, vmlinuz, kdir, series,
#                                tarball, kiwi_ko, siw_dir), all without one
#   . tests/vm/kernel.sh         sets kiwi_kv, kiwi_vmlinuz, ... (returns
#                                non-zero with a message if none is found)
_kiwi_kernel() {
	local want=${KIWI_KVER:-6.1} root
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	case "$want" in
	*-*) kiwi_vmlinuz=/boot/vmlinuz-$want
	     [ -f "$kiwi_vmlinuz" ] || kiwi_vmlinuz= ;;
	[0-9]*.[0-9]*)
	     # The generic flavour only: not -rt-amd64 or -cloud-amd64.
	     kiwi_vmlinuz=$(ls -1 /boot/vmlinuz-"$want".[0-9]*-amd64 2>/dev/null |
		grep -E '^/boot/vmlinuz-[0-9.]+(-[0-9]+|\+deb[0-9]+)-amd64$' |
		sort -V | tail -n1) ;;
	*) echo "kernel.sh: KIWI_KVER=$want: want 6.1, 6.12 or a full version" >&2
	   return 2 ;;
	esac
	if [ -z "$kiwi_vmlinuz" ]; then
		echo "kernel.sh: no /boot/vmlinuz for KIWI_KVER=$want (scripts/deps.sh installs 6.1 and 6.12)" >&2
		return 2
	fi
	kiwi_kv=${kiwi_vmlinuz#/boot/vmlinuz-}
	kiwi_series=$(echo "$kiwi_kv" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
	kiwi_kdir=/lib/modules/$kiwi_kv/build
	kiwi_tarball=/usr/src/linux-source-$kiwi_series.tar.xz
	# The default kernel keeps the paths every tool used before 6.12.
	if [ "$kiwi_series" = 6.1 ]; then
		kiwi_kiwi_ko=$root/kiwi.ko
		kiwi_siw_dir=$root/tests/vm/out
	else
		kiwi_kiwi_ko=$root/out/kernel/$kiwi_kv/kiwi.ko
		kiwi_siw_dir=$root/out/kernel/$kiwi_kv
	fi
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	_kiwi_kernel
	return
fi
_kiwi_kernel || exit
case "${1:-}" in
"") for f in kv vmlinuz kdir series tarball kiwi_ko siw_dir; do
	v=kiwi_$f; echo "$f=${!v}"; done ;;
kv|vmlinuz|kdir|series|tarball|kiwi_ko|siw_dir) v=kiwi_$1; echo "${!v}" ;;
*) echo "usage: $0 [kv|vmlinuz|kdir|series|tarball|kiwi_ko|siw_dir]" >&2; exit 2 ;;
esac

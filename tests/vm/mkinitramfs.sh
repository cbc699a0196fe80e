#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the test VM's initramfs for kernel version $1 into file $2.
# It holds only busybox and the virtio/9p modules the Debian kernel needs to
# mount the host's root over 9p; everything else comes from the host's /.
# With $3, a root made by mkroot.sh: that root's modules, and overlay too
# (vm-run.sh's KIWI_VM_ROOT).
set -euo pipefail

kv=$1
out=$2
sysroot=${3:-}
mods=(virtio_pci 9pnet_virtio 9p)
[ -z "$sysroot" ] || mods+=(overlay)
here=$(cd "$(dirname "$0")" && pwd)

bb=/bin/busybox
file -L "$bb" 2>/dev/null | grep -q 'statically linked' ||
	{ echo "mkinitramfs: $bb is not static (apt-get install busybox-static)" >&2; exit 1; }

tmp=$(mktemp -d "${out}.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp"/{bin,dev,proc,sys,newroot,mods}
cp "$bb" "$tmp/bin/busybox"
for a in sh mount umount mkdir insmod switch_root cat echo sleep poweroff wc ls ip nc; do
	ln -s busybox "$tmp/bin/$a"
done

# Modules in dependency order, each once; order file drives insmod in /init.
: > "$tmp/mods/order"
for m in "${mods[@]}"; do
	modprobe ${sysroot:+-d "$sysroot"} -S "$kv" --show-depends "$m"
done | awk '$1 == "insmod" { print $2 }' | while read -r ko; do
	# modprobe -d prints paths inside the root.
	case "$ko" in "$sysroot"/*) ;; *) ko=$sysroot$ko ;; esac
	# 6.12 installs modules as .ko.xz: kept decompressed, named .ko.
	base=$(basename "$ko")
	base=${base%.xz}
	base=${base%.zst}
	grep -qx "$base" "$tmp/mods/order" && continue
	case "$ko" in
	*.ko) cp "$ko" "$tmp/mods/$base" ;;
	*.ko.xz) xz -dc "$ko" > "$tmp/mods/$base" ;;
	*.ko.zst) zstd -qdc "$ko" > "$tmp/mods/$base" ;;
	*) echo "mkinitramfs: unknown module format $ko" >&2; exit 1 ;;
	esac
	echo "$base" >> "$tmp/mods/order"
done
[ -s "$tmp/mods/order" ] || { echo "mkinitramfs: no modules found for $kv" >&2; exit 1; }

cp "$here/initramfs-init" "$tmp/init"
chmod 755 "$tmp/init"

(cd "$tmp" && find . -mindepth 1 ! -name "$(basename "$tmp")" | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0) > "$tmp.cpio"
mv -f "$tmp.cpio" "$out"

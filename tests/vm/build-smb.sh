#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the SMB client (cifs.ko) and server (ksmbd.ko) with SMB Direct
# (SMB3 over RDMA) for the kernel the test VM boots (KIWI_KVER: 6.1 by
# default, or 6.12; see tests/vm/kernel.sh), from Debian's linux-source
# tarball of the same series.  Debian builds both modules without it
# (CONFIG_CIFS_SMB_DIRECT and CONFIG_SMB_SERVER_SMBDIRECT unset); these
# builds are a test-only reference for tests/cases/54-smb.sh, which
# loads them in place of the distribution's modules.
#
#   build-smb.sh    tests/vm/out/smb/{cifs,ksmbd}.ko (for a kernel other
#                   than 6.1: out/kernel/<version>/smb/), and
#                   tests/vm/out/roots/ksmbd-tools-trixie
#
# The sources go to tests/vm/out/smb-src (out/kernel/<version>/smb-src),
# git-ignored: they are never part of kiwi.  Runs on the host.
#
# The server's user space: Debian 12's ksmbd-tools (3.4.7) cannot serve a
# share to 6.1.y's or 6.12's ksmbd (it never fills payload_sz of its share
# config answers, which those kernels drop; Documentation/storage.md).
# Debian 13's (3.5.3) does.  It is installed, with what it links against,
# in a minimal Debian 13 root made with mmdebstrap (scripts/deps.sh; needs
# root and a Debian mirror, KIWI_MIRROR, default
# http://deb.debian.org/debian), built once for every kernel and rebuilt
# when its recipe changes; 54-smb runs its programs chrooted there.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/kernel.sh" || exit 1
kv=$kiwi_kv
kdir=$kiwi_kdir
tarball=$kiwi_tarball
src=$kiwi_siw_dir/smb-src
dst=$kiwi_siw_dir/smb
[ -d "$kdir" ] || { echo "build-smb: no headers at $kdir (linux-headers-$kv)" >&2; exit 1; }
[ -f "$tarball" ] || { echo "build-smb: no $tarball (linux-source-$kiwi_series)" >&2; exit 1; }
# Everything else the modules use is as the kernel was built: SMB Direct
# needs the RDMA core with rdma_cm (and the server SG_POOL), which
# Debian's kernels have.
for c in CONFIG_CIFS=m CONFIG_SMB_SERVER=m CONFIG_INFINIBAND=m \
	CONFIG_INFINIBAND_ADDR_TRANS=y CONFIG_SG_POOL=y; do
	grep -qx "$c" "$kdir/.config" ||
		{ echo "build-smb: $kv's config lacks $c" >&2; exit 1; }
done

# tools_root: Debian 13's ksmbd-tools in a root of its own (above).
tools_root() {
	local dir=$here/out/roots/ksmbd-tools-trixie
	local mirror=${KIWI_MIRROR:-http://deb.debian.org/debian}
	local recipe="trixie minbase ksmbd-tools"

	[ "$(cat "$dir/.kiwi-root-done" 2>/dev/null)" = "$recipe" ] && return 0
	command -v mmdebstrap > /dev/null || {
		echo "build-smb: mmdebstrap is missing (scripts/deps.sh installs it)" >&2
		return 1
	}
	[ "$(id -u)" = 0 ] ||
		{ echo "build-smb: the ksmbd-tools root needs root" >&2; return 1; }
	echo "build-smb: Debian 13's ksmbd-tools in $dir (mmdebstrap, under a minute)"
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$(dirname "$dir")"
	mmdebstrap --variant=minbase --mode=root --quiet --include=ksmbd-tools \
		--aptopt='APT::Install-Recommends "false"' \
		trixie "$dir.tmp" "deb $mirror trixie main" >&2 || return 1
	# the case runs ksmbd.mountd and ksmbd.control of this root
	chroot "$dir.tmp" ksmbd.mountd -V || return 1
	mv "$dir.tmp" "$dir"
	echo "$recipe" > "$dir/.kiwi-root-done"
}
tools_root || { echo "build-smb: no Debian 13 ksmbd-tools root" >&2; exit 1; }

# "opinfo_put-null": the fix below (a build without it is rebuilt)
stamp="$kv $(stat -c %Y "$tarball") $(stat -c %Y "$kdir/Makefile" 2>/dev/null) opinfo_put-null"
if [ -f "$dst/cifs.ko" ] && [ -f "$dst/ksmbd.ko" ] && [ -f "$dst/stamp" ] &&
	[ "$(cat "$dst/stamp")" = "$stamp" ]; then
	exit 0
fi

echo "build-smb: building cifs.ko and ksmbd.ko with SMB Direct for $kv from $(basename "$tarball")"
rm -rf "$src"
mkdir -p "$src" "$dst"
top=$(basename "$tarball" .tar.xz)
# fs/smb/{client,server,common} (6.1.y has the 6.4 layout too); ksmbd's
# vfs.c includes fs/internal.h, 6.12's cifs fs/nls/nls_ucs2_utils.h; the
# ASN.1 compiler's source.
tar -xJf "$tarball" -C "$src" --strip-components=1 --wildcards \
	"$top/fs/smb" "$top/fs/internal.h" "$top/fs/nls/*" \
	"$top/scripts/asn1_compiler.c" \
	"$top/include/linux/asn1.h" "$top/include/linux/asn1_ber_bytecode.h"
for d in client server; do
	[ -f "$src/fs/smb/$d/Makefile" ] ||
		{ echo "build-smb: fs/smb/$d not found in $tarball" >&2; exit 1; }
done

# 6.1.y's ksmbd (6.1.192, Debian's 6.1.0-57) ends smb2_open() with
# opinfo_put(opinfo) where opinfo is NULL for every open granted no oplock
# (a directory: the share's root at mount), and its opinfo_put(), unlike
# 6.12's, does not check for NULL: the kernel oopses on the first such
# open, whatever the transport.  The reference server gets that check
# (Documentation/storage.md); a source that has it is left as it is.
f=$src/fs/smb/server/oplock.c
if ! sed -n '/^void opinfo_put(struct oplock_info \*opinfo)$/,/^}/p' "$f" |
	grep -q 'if (!opinfo)'; then
	grep -q '^void opinfo_put(struct oplock_info \*opinfo)$' "$f" ||
		{ echo "build-smb: no opinfo_put() in $f" >&2; exit 1; }
	sed -i '/^void opinfo_put(struct oplock_info \*opinfo)$/{n;s/^{$/{\n\tif (!opinfo)\n\t\treturn;\n/}' "$f"
	sed -n '/^void opinfo_put(struct oplock_info \*opinfo)$/,/^}/p' "$f" |
		grep -q 'if (!opinfo)' ||
		{ echo "build-smb: could not add the NULL check to opinfo_put()" >&2; exit 1; }
	echo "build-smb: ksmbd's opinfo_put() given its NULL check (6.1.y)"
fi

# Both modules decode SPNEGO with parsers generated from .asn1 files by
# scripts/asn1_compiler, which the headers package does not ship: build
# it, generate the parsers, and move the .asn1 files aside so that
# Kbuild's rule (which wants the headers' compiler) does not apply.
gcc -O2 -I "$src/include" -o "$src/asn1_compiler" "$src/scripts/asn1_compiler.c"
for f in "$src"/fs/smb/client/*.asn1 "$src"/fs/smb/server/*.asn1; do
	"$src/asn1_compiler" "$f" "$f.c" "$f.h"
	mv "$f" "$f.src"
done

# The Makefiles select the objects by make variable, the sources by
# #ifdef: the kernel's autoconf.h has neither symbol, so both are given.
make -s -j"$(nproc)" -C "$kdir" M="$src/fs/smb/client" CONFIG_CIFS=m \
	CONFIG_CIFS_SMB_DIRECT=y KCFLAGS=-DCONFIG_CIFS_SMB_DIRECT=1 modules
make -s -j"$(nproc)" -C "$kdir" M="$src/fs/smb/server" CONFIG_SMB_SERVER=m \
	CONFIG_SMB_SERVER_SMBDIRECT=y KCFLAGS=-DCONFIG_SMB_SERVER_SMBDIRECT=1 modules
for m in client/cifs server/ksmbd; do
	cp "$src/fs/smb/$m.ko" "$dst/$(basename $m).ko.tmp"
	mv -f "$dst/$(basename $m).ko.tmp" "$dst/$(basename $m).ko"
done
echo "$stamp" > "$dst/stamp"
echo "build-smb: $dst/cifs.ko $dst/ksmbd.ko"

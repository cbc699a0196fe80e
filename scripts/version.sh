#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Print kiwi's version: dkms.conf's PACKAGE_VERSION, the one place it is
# set (DKMS needs it there literally, debian/rules and `make dist` read it
# from there).  debian/changelog must name the same upstream version with a
# Debian revision (0.1-1 for 0.1); a mismatch fails here, so that neither
# `make dist` nor `make deb` produces files whose names disagree.
#
#   scripts/version.sh            the upstream version (0.1)
#   scripts/version.sh --debian   debian/changelog's version (0.1-1)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
dver=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version 2>/dev/null)
if [ -z "$ver" ]; then
	echo "version: no PACKAGE_VERSION in $top/dkms.conf" >&2
	exit 1
fi
if [ "${dver%-*}" != "$ver" ] || [ "$dver" = "$ver" ]; then
	echo "version: debian/changelog's '$dver' is not dkms.conf's '$ver' with a Debian revision" >&2
	exit 1
fi
if [ "${1:-}" = --debian ]; then echo "$dver"; else echo "$ver"; fi

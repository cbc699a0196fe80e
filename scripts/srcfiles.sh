#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The tree's source files, NUL-separated, relative to the top: what
# `make dist` puts in the tarball and `make deb` builds from.
#
#   scripts/srcfiles.sh
#
# In a git checkout: the files git knows, committed or not (untracked ones
# too, unless ignored), so that a change can be packaged before it is
# committed.  In a tree without .git (an unpacked release tarball): every
# file but what a build or a test run leaves, the same things .gitignore
# names, so that `make dist` and `make deb` work there after `make`.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
	[ "$(git rev-parse --show-toplevel)" = "$top" ]; then
	# Deleted but still tracked files are not there to copy.
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			[ -e "$f" ] && printf '%s\0' "$f"
		done
	exit 0
fi
find . \( -path ./.git -o -path ./out -o -path ./tests/vm/out \
	-o -path ./tests/bench/out -o -path ./tests/unit/build \
	-o -path ./tests/fuzz/build -o -path ./userspace/build \
	-o -path ./debian/.debhelper -o -path './scratch*' \
	-o -name .tmp_versions \) -prune -o \
	-type f ! \( -name '*.o' -o -name '*.ko' -o -name '*.mod' \
	-o -name '*.mod.c' -o -name '*.cmd' -o -name '*.a' -o -name '*.so' \
	-o -name '*.so.*' -o -name '*.gcda' -o -name '*.gcno' -o -name '*.gcov' \
	-o -name Module.symvers -o -name modules.order \
	-o -name '.checkpatch-camelcase.*' -o -name '*-verify.state' \) \
	-printf '%P\0' | sort -z

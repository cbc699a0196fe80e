#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make deb` as the default run checks it: both packages build from the
# tree and lintian reports no error.  Installing them in a guest is
# `make test-deb` (tests/vm/deb-test.sh).  Prints TAP.
exec "$(dirname "$0")/../../scripts/mkdeb.sh"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# sparse and checkpatch as a stage of the suite.
exec "$(dirname "$0")/../../scripts/check.sh" "$@"

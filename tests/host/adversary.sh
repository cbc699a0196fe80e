#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The adversary's self-test: every malformed frame it sends fails the
# protocol core's receive side exactly as intended, and its checker
# rejects any altered answer (the VM case 40-adversary then uses them).
exec make -s -C "$(dirname "$0")/../adversary" test

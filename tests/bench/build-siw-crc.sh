#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The CRC-asking reference siw (tests/vm/out/siw-crc/siw.ko); see
# tests/vm/build-siw.sh --crc.
exec "$(dirname "$0")/../vm/build-siw.sh" --crc "$@"

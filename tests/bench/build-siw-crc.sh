#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The CRC-asking reference siw (tests/vm/out/siw-crc/siw.ko, or
# out/kernel/<version>/siw-crc/siw.ko with KIWI_KVER=6.12); see
# tests/vm/build-siw.sh --crc.
exec "$(dirname "$0")/../vm/build-siw.sh" --crc "$@"

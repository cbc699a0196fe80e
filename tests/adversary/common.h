/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the adversary and its victim agree on besides the wire protocol:
 * the contents of the victim's read-only MR, the line in which the victim
 * announces its memory, and the private data that names each connection.
 */
#ifndef KIWI_ADV_COMMON_H
#define KIWI_ADV_COMMON_H

#include <stdint.h>

/* byte i of the victim's read-only MR, so Read Responses can be checked */
static inline uint8_t kiwi_adv_pattern(uint64_t i)
{
	return (uint8_t)((i * 131) ^ (i >> 9) ^ 0x5a);
}

/* byte i of what the control scenario writes into the writable MR */
static inline uint8_t kiwi_adv_wpattern(uint64_t i, uint8_t seed)
{
	return (uint8_t)(i * 7 + seed);
}

/*
 * The victim prints one line
 *   victim-info stag=0x.. addr=0x.. len=N ro_stag=0x.. ro_addr=0x..
 *   ro_len=N recv_len=N recvs=N ird=N ord=N
 * and the adversary parses it (key=value, any order).
 */
#define KIWI_ADV_INFO_TAG	"victim-info"

/*
 * The adversary's MPA Request carries "NAME recvs=N" as ULP private data:
 * the victim labels its output with NAME and posts N receives (its
 * default when recvs= is absent).  The control scenario's Send asks the
 * victim to check the writable MR: "verify OFF LEN SEED".
 */
#define KIWI_ADV_VICTIM_PD	"kiwi-victim"

#endif /* KIWI_ADV_COMMON_H */

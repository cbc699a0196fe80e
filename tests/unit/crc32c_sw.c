// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * User-space CRC32c (Castagnoli, reflected polynomial 0x82f63b78) for the
 * protocol core's tests, fuzzers and benchmark; the kernel build uses the
 * kernel's accelerated crc32c() instead. Slice-by-8 tables, built once.
 * Same contract as the kernel's: no inversion on entry or exit.
 */
#include "kiwi_shim.h"

static u32 kiwi_crc_tab[8][256];
static int kiwi_crc_ready;

static void kiwi_crc_init(void)
{
	u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (0x82f63b78U & (0U - (c & 1)));
		kiwi_crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			kiwi_crc_tab[j][i] = (kiwi_crc_tab[j - 1][i] >> 8) ^
				kiwi_crc_tab[0][kiwi_crc_tab[j - 1][i] & 0xff];
	kiwi_crc_ready = 1;
}

u32 crc32c(u32 crc, const void *address, unsigned int length)
{
	const u8 *p = address;

	if (!kiwi_crc_ready)
		kiwi_crc_init();
	while (length && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ kiwi_crc_tab[0][(crc ^ *p++) & 0xff];
		length--;
	}
	while (length >= 8) {
		u64 w;
		u32 lo, hi;

		/* one unaligned-safe 8-byte load, bytes in stream order */
		memcpy(&w, p, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		lo = crc ^ (u32)w;
		hi = (u32)(w >> 32);
		crc = kiwi_crc_tab[7][lo & 0xff] ^
		      kiwi_crc_tab[6][(lo >> 8) & 0xff] ^
		      kiwi_crc_tab[5][(lo >> 16) & 0xff] ^
		      kiwi_crc_tab[4][lo >> 24] ^
		      kiwi_crc_tab[3][hi & 0xff] ^
		      kiwi_crc_tab[2][(hi >> 8) & 0xff] ^
		      kiwi_crc_tab[1][(hi >> 16) & 0xff] ^
		      kiwi_crc_tab[0][hi >> 24];
		p += 8;
		length -= 8;
	}
	while (length--)
		crc = (crc >> 8) ^ kiwi_crc_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

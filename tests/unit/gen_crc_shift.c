// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Prints the shift tables that drivers/kiwi/proto/crc.c builds at load
 * (kiwi_crc_init()), for reading: for each block
 * length L, entry [i][v] is what CRC state (v << 4i) becomes after L zero
 * bytes, so that the state after L zeros of any x is the XOR of eight
 * lookups (the CRC without inversion is linear in its state).  Then the
 * constants of its AVX-512 path: x^(8n) mod P for a state (bit-reflected,
 * so x^0 is bit 31) is that state after n zero bytes, shifted left by
 * one for VPCLMULQDQ.  Computed by running the reference CRC over zeros:
 * no algebra to get wrong.
 *   make -C tests/unit crc-tables
 */
#include <stdio.h>
#include <stdlib.h>

#include "kiwi_shim.h"

/* kiwi_crc32c_copy_hw()'s block lengths, in its order */
static const u32 lens[] = { 2048, 680, 224, 96, 32 };

/* the AVX-512 path's fold distances */
static const u32 folds[] = { 256, 64, 16 };


/* x^(8n) mod P as a reflected state: x^0 (bit 31) after n zero bytes */
static u32 xpow(const u8 *zero, u32 n)
{
	u32 c = 0x80000000U;

	for (; n > 8192; n -= 8192)
		c = crc32c(c, zero, 8192);
	return crc32c(c, zero, n);
}

int main(void)
{
	u8 *zero = calloc(1, 8192);
	unsigned int l, i, v;

	if (!zero)
		return 1;
	printf("static const u32 kiwi_crc_shift[KIWI_CRC_NBLK][8][16] = {\n");
	for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		printf("\t{ /* %u bytes */\n", lens[l]);
		for (i = 0; i < 8; i++) {
			printf("\t\t{");
			for (v = 0; v < 16; v++) {
				u32 t = crc32c((u32)v << (4 * i), zero, lens[l]);

				if (v % 4 == 0)
					printf("\n\t\t\t");
				else
					printf(" ");
				printf("0x%08x,", t);
			}
			printf("\n\t\t},\n");
		}
		printf("\t},\n");
	}
	printf("};\n");
	/*
	 * Folding a 16-byte lane forward by D bytes: low quadword times
	 * x^(8D+32), high one times x^(8D-32).
	 */
	for (i = 0; i < sizeof(folds) / sizeof(folds[0]); i++)
		printf("fold by %5u: { 0x%09llx, 0x%09llx }\n", folds[i],
		       (unsigned long long)xpow(zero, folds[i] + 4) << 1,
		       (unsigned long long)xpow(zero, folds[i] - 4) << 1);
	free(zero);
	return 0;
}

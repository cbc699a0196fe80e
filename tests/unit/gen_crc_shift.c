// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Prints the shift tables of drivers/kiwi/proto/crc.c: for each block
 * length L, entry [i][v] is what CRC state (v << 4i) becomes after L zero
 * bytes, so that the state after L zeros of any x is the XOR of eight
 * lookups (the CRC without inversion is linear in its state).  Computed
 * by running the reference CRC over zeros: no algebra to get wrong.
 *   make -C tests/unit crc-tables
 */
#include <stdio.h>
#include <stdlib.h>

#include "kiwi_shim.h"

/* kiwi_crc32c_copy_hw()'s block lengths, in its order */
static const u32 lens[] = { 2048, 680, 224, 96, 32 };

int main(void)
{
	u8 *zero = calloc(1, 2048);
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
	free(zero);
	return 0;
}

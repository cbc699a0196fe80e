// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Writes the seed corpus kept in tests/fuzz/corpus/: valid FPDU streams
 * of every opcode with CRC and Markers on and off, and MPA Requests and
 * Replies of both revisions. Run by "make corpus"; its output is
 * committed so that fuzzing starts from real protocol.
 */
#include <stdio.h>
#include <string.h>

#include "kiwi_proto.h"

static void put(const char *dir, const char *name, const u8 *b, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b, 1, n, f) != n) {
		perror(path);
		return;
	}
	fclose(f);
}

static void fpdu_seeds(const char *dir)
{
	static const char * const names[] = { "write", "rreq", "rresp", "send",
				       "sendinv", "sendse", "sendseinv",
				       "term" };
	int op, mode;

	for (mode = 0; mode < 4; mode++)
		for (op = 0; op < KIWI_RDMAP_MAX; op++) {
			struct kiwi_tx_cfg tc = { .crc = mode & 1,
						  .markers = mode & 2 };
			struct kiwi_tx tx;
			struct kiwi_hdr h;
			u8 out[4096], pl[1200];
			u32 plen = 0, used = 3;
			char name[64];
			int i, n;

			for (i = 0; i < (int)sizeof(pl); i++)
				pl[i] = i * 31;
			/* header: flags, chunk seed, stream position / 4 */
			out[0] = mode;
			out[1] = 7 * op + mode;
			out[2] = mode & 2 ? 120 : 0;
			tc.pos = out[2] * 4;
			kiwi_tx_init(&tx, &tc);
			for (i = 0; i < 3; i++) {
				kiwi_hdr_init(&h, op);
				if (h.tagged) {
					h.stag = 0x100 + i;
					h.to = 0x10000 * i;
					plen = 1 + 500 * i;
				} else if (op == KIWI_RDMAP_READ_REQ) {
					h.msn = 1 + i;
					h.read_size = 4096;
					h.sink_stag = 7;
					h.src_stag = 9;
				} else if (op == KIWI_RDMAP_TERMINATE) {
					u8 bad[64];
					struct kiwi_hdr b;

					kiwi_hdr_init(&b, KIWI_RDMAP_SEND);
					n = kiwi_hdr_encode(&b, 10, bad,
							    sizeof(bad));
					kiwi_term_build(&h, KIWI_ERR_DDP_U_MO,
							bad, n, 1);
					i = 3;
				} else {
					h.msn = 1 + i;
					h.inval_stag = op == KIWI_RDMAP_SEND_INV ||
						       op == KIWI_RDMAP_SEND_SE_INV ?
						       0x55 : 0;
					plen = 3 + 200 * i;
				}
				n = kiwi_fpdu_build(&tx, &h, pl, plen,
						    out + used,
						    sizeof(out) - used);
				if (n < 0)
					return;
				used += n;
			}
			snprintf(name, sizeof(name), "%s-%s%s", names[op],
				 mode & 1 ? "crc" : "nocrc",
				 mode & 2 ? "-markers" : "");
			put(dir, name, out, used);
		}
}

static void mpa_seeds(const char *dir)
{
	static const struct {
		const char *name;
		u8 flags;
		struct kiwi_mpa_cfg cfg;
	} req[] = {
		{ "req-rev1", 0x00, { .rev = 1 } },
		{ "req-rev1-crc-markers", 0x10,
		  { .rev = 1, .crc = 1, .markers = true } },
		{ "req-rev2", 0x02, { .rev = 2, .ird = 16, .ord = 16 } },
		{ "req-rev2-p2p", 0x22,
		  { .rev = 2, .crc = 2, .p2p = true, .rtr = KIWI_RTR_ALL,
		    .ird = 8, .ord = 4 } },
	};
	int i;

	for (i = 0; i < 4; i++) {
		u8 out[600];
		int n;

		/* responder side parses a Request */
		out[0] = req[i].flags | 0x22;
		out[1] = 7;
		out[2] = 32;
		out[3] = 32;
		n = kiwi_mpa_req_build(&req[i].cfg, "seed", 4, out + 4,
				       sizeof(out) - 4);
		if (n > 0)
			put(dir, req[i].name, out, n + 4);
	}
	for (i = 0; i < 4; i++) {
		struct kiwi_mpa_result res = {
			.rev = i & 1 ? 2 : 1, .crc = i & 2, .enhanced = i & 1,
			.p2p = i == 3, .rtr = i == 3 ? KIWI_RTR_READ : 0,
			.ird = 4, .ord = 4,
		};
		u8 out[600];
		char name[32];
		int n;

		/* initiator side parses a Reply */
		out[0] = 0x01 | 0x02 | (i == 3 ? 0x20 : 0);
		out[1] = 5;
		out[2] = 16;
		out[3] = 16;
		n = kiwi_mpa_rep_build(&res, i == 2, "reply", 5, out + 4,
				       sizeof(out) - 4);
		snprintf(name, sizeof(name), "rep-%d", i);
		if (n > 0)
			put(dir, name, out, n + 4);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s FPDU-DIR MPA-DIR\n", argv[0]);
		return 2;
	}
	fpdu_seeds(argv[1]);
	mpa_seeds(argv[2]);
	return 0;
}

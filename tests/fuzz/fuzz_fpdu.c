// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the FPDU stream parser (drivers/kiwi/proto/fpdu.c)
 * on arbitrary bytes in arbitrary chunks. Besides the sanitizers it checks
 * properties: payload spans stay inside the chunk, every valid header
 * re-encodes to the bytes received (reserved bits aside), and a Terminate
 * built for any error encodes and parses back.
 *
 * Input: flags (CRC, Markers, whole-buffer feeding), chunk seed, stream
 * position / 4, then the stream.
 */
#include <stdlib.h>
#include <string.h>

#include "kiwi_proto.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

static void check_term(enum kiwi_err err, const u8 *raw, u32 len)
{
	struct kiwi_rx_cfg rc = { .crc = true };
	struct kiwi_tx_cfg tc = { .crc = true };
	struct kiwi_hdr t;
	struct kiwi_tx tx;
	struct kiwi_rx rx;
	struct kiwi_rx_event ev;
	u8 out[128];
	int n;

	kiwi_term_build(&t, err, raw, len, 1);
	kiwi_tx_init(&tx, &tc);
	n = kiwi_fpdu_build(&tx, &t, NULL, 0, out, sizeof(out));
	check(n > 0);
	kiwi_rx_init(&rx, &rc);
	check(kiwi_rx_feed(&rx, out, n, &ev) > 0 && ev.type == KIWI_RX_HDR);
	check(ev.hdr->opcode == KIWI_RDMAP_TERMINATE &&
	      ev.hdr->term.layer == t.term.layer &&
	      ev.hdr->term.etype == t.term.etype &&
	      ev.hdr->term.ecode == t.term.ecode &&
	      ev.hdr->term.m == t.term.m && ev.hdr->term.d == t.term.d &&
	      ev.hdr->term.r == t.term.r &&
	      ev.hdr->term.seg_len == t.term.seg_len &&
	      !memcmp(ev.hdr->term.ddp_hdr, t.term.ddp_hdr,
		      t.term.ddp_hdr_len));
	check(kiwi_rx_feed(&rx, out + (n - 4), 4, &ev) == 4 &&
	      ev.type == KIWI_RX_DONE);
}

static void check_reencode(const struct kiwi_hdr *h, u32 payload_len,
			   const u8 *raw, u32 len)
{
	u8 b[KIWI_WIRE_HDR_MAX];
	int n;

	if (h->opcode == KIWI_RDMAP_TERMINATE)
		return;	/* decoded leniently: flags may have been dropped */
	n = kiwi_hdr_encode(h, payload_len, b, sizeof(b));
	check(n > 0 && (u32)n == len);
	/* reserved DDP and RDMAP control bits are ignored on receive */
	check(b[0] == raw[0] && b[1] == raw[1] &&
	      b[2] == (raw[2] & 0xc3) && b[3] == (raw[3] & 0xcf) &&
	      !memcmp(b + 4, raw + 4, n - 4));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kiwi_rx_cfg cfg = { 0 };
	struct kiwi_rx rx;
	struct kiwi_rx_event ev;
	u32 seed, off = 0, len;
	bool whole;

	if (size < 3)
		return 0;
	cfg.crc = data[0] & 1;
	cfg.markers = data[0] & 2;
	whole = data[0] & 4;
	seed = data[1] | 1;
	cfg.pos = data[2] * 4U;
	data += 3;
	len = size - 3;
	kiwi_rx_init(&rx, &cfg);

	while (off < len) {
		u32 n = len - off, i = 0;
		u8 *chunk;

		if (!whole) {
			seed = seed * 1103515245 + 12345;
			n = 1 + (seed >> 16) % 97;
			if (n > len - off)
				n = len - off;
		}
		/* a tight heap copy so that ASan sees any overrun */
		chunk = malloc(n);
		check(chunk != NULL);
		memcpy(chunk, data + off, n);
		while (i < n) {
			u32 used = kiwi_rx_feed(&rx, chunk + i, n - i, &ev);
			u32 rlen;
			const u8 *raw;

			check(used <= n - i);
			switch (ev.type) {
			case KIWI_RX_HDR:
				check(used > 0);
				raw = kiwi_rx_raw_hdr(&rx, &rlen);
				check_reencode(ev.hdr, ev.payload_len, raw, rlen);
				check_term(KIWI_ERR_DDP_U_MSN_NOBUF + (seed % 7),
					   raw, rlen);
				break;
			case KIWI_RX_DATA:
				check(ev.len > 0 && ev.off + ev.len == used);
				kiwi_rx_crc_data(&rx, chunk + i + ev.off,
						 ev.len);
				break;
			case KIWI_RX_DONE:
				check(used > 0);
				break;
			case KIWI_RX_MORE:
				check(used == n - i);
				break;
			case KIWI_RX_ERROR:
				check(ev.err > KIWI_OK && ev.err < KIWI_ERR_MAX);
				check(kiwi_err_desc(ev.err)->term);
				raw = kiwi_rx_raw_hdr(&rx, &rlen);
				check_term(ev.err, raw, rlen);
				free(chunk);
				return 0;
			}
			i += used;
		}
		free(chunk);
		off += n;
	}
	return 0;
}

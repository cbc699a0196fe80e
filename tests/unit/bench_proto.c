// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench-proto: throughput of the user-space CRC32c and of the FPDU stream
 * parser over a stream of FPDUs, fed in socket-buffer sized chunks, with
 * payload placed by memcpy as the kernel receive path would. Median of
 * five runs. The kernel build uses the kernel's accelerated crc32c, so
 * the CRC figures here are the portable fallback's, not kiwi.ko's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiwi_proto.h"

#define RUNS 5

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v)
{
	qsort(v, RUNS, sizeof(*v), cmp_d);
	return v[RUNS / 2];
}

static volatile u32 sink;

static void bench_crc(u32 size)
{
	u8 *buf = malloc(size);
	double rate[RUNS];
	u32 i;
	int r;

	for (i = 0; i < size; i++)
		buf[i] = i * 13;
	for (r = 0; r < RUNS; r++) {
		double t0 = now(), t;
		u64 bytes = 0;
		u32 c = ~0U;

		do {
			for (i = 0; i < 64; i++)
				c = crc32c(c, buf, size);
			bytes += (u64)size * 64;
			t = now() - t0;
		} while (t < 0.2);
		sink = c;
		rate[r] = bytes / t;
	}
	printf("crc32c user space (slice-by-8), %6u-byte buffers: %8.1f MB/s\n",
	       size, median(rate) / 1e6);
	free(buf);
}

struct stream {
	u8 *p;
	u32 len;
	u32 fpdus;
	u64 payload;
};

static void make_stream(struct stream *s, u32 plen, bool crc, bool markers)
{
	struct kiwi_tx_cfg tc = { .crc = crc, .markers = markers };
	struct kiwi_tx tx;
	u32 cap = 64u << 20;
	u8 *pl = malloc(plen);
	u32 i;

	for (i = 0; i < plen; i++)
		pl[i] = i;
	s->p = malloc(cap);
	s->len = 0;
	s->fpdus = 0;
	s->payload = 0;
	kiwi_tx_init(&tx, &tc);
	for (;;) {
		struct kiwi_hdr h;
		int n;

		kiwi_hdr_init(&h, KIWI_RDMAP_WRITE);
		h.stag = 1;
		h.to = s->payload;
		n = kiwi_fpdu_build(&tx, &h, pl, plen, s->p + s->len,
				    cap - s->len);
		if (n < 0)
			break;
		s->len += n;
		s->fpdus++;
		s->payload += plen;
	}
	free(pl);
}

static void bench_parse(u32 plen, bool crc, bool markers, u32 chunk)
{
	struct kiwi_rx_cfg rc = { .crc = crc, .markers = markers };
	struct stream s;
	u8 *dst = malloc(64u << 20);
	double rate[RUNS];
	int r;

	make_stream(&s, plen, crc, markers);
	for (r = 0; r < RUNS; r++) {
		struct kiwi_rx rx;
		struct kiwi_rx_event ev;
		u32 off = 0, fpdus = 0;
		u64 placed = 0;
		double t0 = now();

		kiwi_rx_init(&rx, &rc);
		while (off < s.len) {
			u32 n = s.len - off < chunk ? s.len - off : chunk;
			const u8 *c = s.p + off;
			u32 i = 0;

			while (i < n) {
				u32 used = kiwi_rx_feed(&rx, c + i, n - i, &ev);

				if (ev.type == KIWI_RX_DATA) {
					/* place, then CRC what was placed */
					memcpy(dst + placed, c + i + ev.off,
					       ev.len);
					kiwi_rx_crc_data(&rx, dst + placed,
							 ev.len);
					placed += ev.len;
				} else if (ev.type == KIWI_RX_DONE) {
					fpdus++;
				} else if (ev.type == KIWI_RX_ERROR) {
					printf("parse error %d\n", ev.err);
					exit(1);
				}
				i += used;
			}
			off += n;
		}
		rate[r] = s.len / (now() - t0);
		if (fpdus != s.fpdus || placed != s.payload) {
			printf("bench: parsed %u of %u FPDUs\n", fpdus, s.fpdus);
			exit(1);
		}
	}
	printf("FPDU parse+place, %5u-byte Writes, CRC %-3s Markers %-3s, %5u-byte chunks: %8.1f MB/s (%.2f M FPDU/s)\n",
	       plen, crc ? "on" : "off", markers ? "on" : "off", chunk,
	       median(rate) / 1e6,
	       median(rate) / s.len * s.fpdus / 1e6);
	free(s.p);
	free(dst);
}

int main(void)
{
	/* 1454-byte ULPDUs: MULPDU for a 1460-byte MSS, Write header 14 */
	u32 p1500 = kiwi_mpa_mulpdu(1460, false) - KIWI_HDR_TAGGED;
	u32 p9000 = kiwi_mpa_mulpdu(8948, false) - KIWI_HDR_TAGGED;
	u32 pmk = kiwi_mpa_mulpdu(1460, true) - KIWI_HDR_TAGGED;

	bench_crc(64);
	bench_crc(1440);
	bench_crc(65536);
	bench_parse(p1500, false, false, 65536);
	bench_parse(p1500, true, false, 65536);
	bench_parse(pmk, true, true, 65536);
	bench_parse(p1500, true, false, 1448);
	bench_parse(p9000, true, false, 65536);
	bench_parse(64, true, false, 65536);
	return 0;
}

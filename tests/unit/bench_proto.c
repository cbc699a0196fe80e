// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench-proto: throughput of the protocol core in user space, median of
 * RUNS runs:
 *  - 64 KiB messages against memcpy() of the same 64 KiB buffers:
 *    transmit framing (header, payload copied with its CRC in one pass,
 *    trailer) into a wire buffer, and receive parsing with placement into
 *    a 64 KiB destination, CRC on, each with its ratio to memcpy;
 *  - the user-space slice-by-8 crc32c (the fallback where the CPU has no
 *    CRC instruction; kiwi.ko's fallback is the kernel's crc32c());
 *  - the stream parser over a long stream of FPDUs, fed in socket-buffer
 *    sized chunks, payload placed as the kernel receive path does.
 * KIWI_BENCH_SOFT=1 forces the copy-then-crc32c() path everywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

#include "kiwi_proto.h"

#define RUNS 9
#define MSG (64u * 1024)

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
					/* place, CRC in the same pass */
					kiwi_rx_copy_data(&rx, dst + placed,
							  c + i + ev.off,
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

/*
 * The machine is shared (other jobs, virtual machines): a run of these
 * micro-benchmarks takes the fastest of many short bursts of each kind,
 * the bursts of the three kinds alternating so that no kind sees a
 * quieter period than the others; the figure is the median of RUNS runs.
 */
#define BURSTS	200
#define PER_BURST 4

static double burst(void (*fn)(void *), void *arg)
{
	double t0 = now();
	int i;

	for (i = 0; i < PER_BURST; i++)
		fn(arg);
	return (double)PER_BURST * MSG / (now() - t0);
}

struct msg_ctx {
	u8 *msg;		/* the 64 KiB message (send side) */
	u8 *dst;		/* where it is placed (receive side) */
	u8 *wire;		/* its FPDUs */
	u32 wire_len;
	u32 max_ulpdu;
	bool crc;
	struct kiwi_tx tx;
	struct kiwi_rx rx;
	bool pages;		/* in the kernel's pieces (do_tx_pages(), do_rx()) */
};

static void do_memcpy(void *arg)
{
	struct msg_ctx *m = arg;

	memcpy(m->dst, m->msg, MSG);
	__asm__ volatile("" : : "r" (m->dst) : "memory");
}

/*
 * Frame one 64 KiB Write into FPDUs of at most max_ulpdu, copying the
 * payload after each header as a framer that fills socket buffers would
 * (tx.c hands registered pages to TCP instead, which copies them).
 */
static void do_tx(void *arg)
{
	struct msg_ctx *m = arg;
	struct kiwi_hdr h;
	u32 off = 0, used = 0;

	kiwi_hdr_init(&h, KIWI_RDMAP_WRITE);
	h.stag = 1;
	while (off < MSG) {
		u32 len = m->max_ulpdu - KIWI_HDR_TAGGED, take;

		if (len > MSG - off)
			len = MSG - off;
		h.to = off;
		h.last = off + len == MSG;
		if (kiwi_tx_begin(&m->tx, &h, len))
			exit(1);
		while (kiwi_tx_more(&m->tx)) {
			used += kiwi_tx_next(&m->tx, m->wire + used, &take);
			if (take) {
				kiwi_tx_copy_data(&m->tx, m->wire + used,
						  m->msg + off, take);
				off += take;
				used += take;
			}
		}
	}
	m->wire_len = used;
}

/*
 * The kernel's pieces: kiwi.ko frames a CRC-on FPDU into pages of its
 * own, its payload copied from the MR's pages, so each copy stops at a
 * source page and at a destination page (after a 16-byte header: 4080
 * and 16 bytes in turn); framing bytes are copied without CRC, as
 * tx_batch.c's kiwi_frame_add() does.
 */
#define PG 4096u

static u32 piece(u32 soff, u32 doff, u32 left)
{
	u32 n = PG - soff % PG;

	if (n > PG - doff % PG)
		n = PG - doff % PG;
	return n < left ? n : left;
}

static void do_tx_pages(void *arg)
{
	struct msg_ctx *m = arg;
	struct kiwi_hdr h;
	u32 off = 0, used = 0;
	u8 fb[64];

	kiwi_hdr_init(&h, KIWI_RDMAP_WRITE);
	h.stag = 1;
	while (off < MSG) {
		u32 len = m->max_ulpdu - KIWI_HDR_TAGGED, n, k, end;
		int hn;

		if (len > MSG - off)
			len = MSG - off;
		h.to = off;
		h.last = off + len == MSG;
		hn = kiwi_tx_head(&m->tx, &h, len, fb, sizeof(fb));
		if (hn < 0)
			exit(1);
		memcpy(m->wire + used, fb, hn);
		used += hn;
		for (end = off + len; off < end; off += k, used += k) {
			k = piece(off, used, end - off);
			kiwi_tx_copy_data(&m->tx, m->wire + used,
					  m->msg + off, k);
		}
		n = kiwi_tx_tail(&m->tx, fb);
		memcpy(m->wire + used, fb, n);
		used += n;
	}
	kiwi_tx_run_end(&m->tx);
	m->wire_len = used;
}

/*
 * Parse one message's FPDUs, placing the payload as rx.c does; with
 * m->pages as kiwi.ko receives: the socket's data a page at a time (skb
 * fragments), each DATA span placed in pieces that stop at the MR's
 * pages.
 */
static void do_rx(void *arg)
{
	struct msg_ctx *m = arg;
	struct kiwi_rx_event ev;
	u32 i = 0, placed = 0, done = 0;

	while (i < m->wire_len) {
		u32 lim = m->wire_len - i;
		u32 used;

		if (m->pages && lim > PG - i % PG)
			lim = PG - i % PG;
		used = kiwi_rx_feed(&m->rx, m->wire + i, lim, &ev);
		if (ev.type == KIWI_RX_HDR) {
			placed = ev.hdr->to;
		} else if (ev.type == KIWI_RX_DATA) {
			u32 o = 0, k;

			for (; o < ev.len; o += k, placed += k) {
				k = m->pages ? piece(placed, placed, ev.len - o) :
					ev.len;
				kiwi_rx_copy_data(&m->rx, m->dst + placed,
						  m->wire + i + ev.off + o, k);
			}
		} else if (ev.type == KIWI_RX_DONE) {
			done++;
		} else if (ev.type == KIWI_RX_ERROR) {
			printf("parse error %d\n", ev.err);
			exit(1);
		}
		i += used;
	}
	kiwi_rx_run_end(&m->rx);
	if (!done)
		exit(1);
}

/* 64 KiB messages: memcpy, then tx and rx with FPDUs of max_ulpdu */
static void bench_msg(u32 max_ulpdu, bool crc, bool pages)
{
	void (*tx)(void *) = pages ? do_tx_pages : do_tx;
	struct kiwi_tx_cfg tc = { .crc = crc };
	struct kiwi_rx_cfg rc = { .crc = crc };
	struct msg_ctx m = { .max_ulpdu = max_ulpdu, .crc = crc,
			     .pages = pages };
	double rm[RUNS], rt[RUNS], rr[RUNS], mc, t, r;
	u32 i;
	int k;

	m.msg = aligned_alloc(4096, MSG);
	m.dst = aligned_alloc(4096, MSG);
	m.wire = aligned_alloc(4096, 2 * MSG);
	for (i = 0; i < MSG; i++)
		m.msg[i] = i * 7 + (i >> 8);
	kiwi_tx_init(&m.tx, &tc);
	kiwi_rx_init(&m.rx, &rc);
	tx(&m);
	do_rx(&m);
	if (memcmp(m.msg, m.dst, MSG)) {
		printf("bench: the message did not arrive intact\n");
		exit(1);
	}
	for (k = 0; k < RUNS; k++) {
		int b;

		rm[k] = 0;
		rt[k] = 0;
		rr[k] = 0;
		for (b = 0; b < BURSTS; b++) {
			rm[k] = fmax(rm[k], burst(do_memcpy, &m));
			rt[k] = fmax(rt[k], burst(tx, &m));
			rr[k] = fmax(rr[k], burst(do_rx, &m));
		}
	}
	mc = median(rm);
	t = median(rt);
	r = median(rr);
	printf("64 KiB messages, FPDUs of ULPDU <= %5u (%2u per message), CRC %-3s%s:\n",
	       max_ulpdu, (MSG + max_ulpdu - KIWI_HDR_TAGGED - 1) /
	       (max_ulpdu - KIWI_HDR_TAGGED), crc ? "on" : "off",
	       pages ? ", in the kernel's 4 KiB pieces" : "");
	printf("  memcpy 64 KiB                    %8.1f MB/s\n", mc / 1e6);
	printf("  transmit framing (copy%s)    %8.1f MB/s  %.2f x memcpy\n",
	       crc ? "+CRC" : "    ", t / 1e6, t / mc);
	printf("  receive parse+place (copy%s) %8.1f MB/s  %.2f x memcpy\n",
	       crc ? "+CRC" : "    ", r / 1e6, r / mc);
	free(m.msg);
	free(m.dst);
	free(m.wire);
}

int main(void)
{
	/* 1454-byte ULPDUs: MULPDU for a 1460-byte MSS, Write header 14 */
	u32 p1500 = kiwi_mpa_mulpdu(1460, false) - KIWI_HDR_TAGGED;
	u32 p9000 = kiwi_mpa_mulpdu(8948, false) - KIWI_HDR_TAGGED;
	u32 pmk = kiwi_mpa_mulpdu(1460, true) - KIWI_HDR_TAGGED;

	u32 big = kiwi_mpa_mulpdu(0xffff + 8, false);

	if (getenv("KIWI_BENCH_SOFT"))
		kiwi_crc_soft = true;
	kiwi_crc_v512 = !kiwi_crc_soft && kiwi_cpu_has_crc32() &&
		kiwi_cpu_v512_ok();
	printf("CRC32c with a copy: %s\n", kiwi_crc_soft ?
	       "copy, then slice-by-8 (KIWI_BENCH_SOFT)" :
	       kiwi_crc_v512 ? "one pass, AVX-512 VPCLMULQDQ folding from 1 KiB, SSE4.2 crc32 below" :
	       kiwi_cpu_has_crc32() ? "one pass, SSE4.2 crc32, 6 streams" :
	       "copy, then slice-by-8 (no SSE4.2)");
	/* 1442: MULPDU for the 1448-byte MSS of a 1500-byte MTU */
	bench_msg(kiwi_mpa_mulpdu(1448, false), true, false);
	bench_msg(big, true, false);
	bench_msg(big, true, true);
	if (kiwi_crc_v512) {
		kiwi_crc_v512 = false;
		printf("The same without AVX-512 (SSE4.2 crc32, 6 streams):\n");
		bench_msg(kiwi_mpa_mulpdu(1448, false), true, false);
		bench_msg(big, true, false);
		bench_msg(big, true, true);
		kiwi_crc_v512 = true;
	}
	bench_msg(kiwi_mpa_mulpdu(1448, false), false, false);
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

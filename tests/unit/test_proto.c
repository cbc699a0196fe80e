// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the protocol core (drivers/kiwi/proto), built in user
 * space against the same sources as kiwi.ko. Prints TAP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi_proto.h"
#include "kiwi-tap.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))


/* ---- helpers ---- */

static u64 rng_state = 0x9e3779b97f4a7c15ULL;

static u64 rnd64(void)
{
	/* xorshift64*: reproducible across runs and machines */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static u32 rnd(u32 n)
{
	return n ? (u32)(rnd64() % n) : 0;
}

/* bit-at-a-time CRC32c: independent of the table implementation */
static u32 crc_ref(const u8 *p, size_t n)
{
	u32 c = ~0U;
	int k;

	while (n--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78U & (0U - (c & 1)));
	}
	return ~c;
}

static u32 le32_at(const u8 *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (u32)p[3] << 24;
}

static u32 be32_at(const u8 *p)
{
	return (u32)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static u16 be16_at(const u8 *p)
{
	return p[0] << 8 | p[1];
}

struct buf {
	u8 *p;
	u32 len;
	u32 cap;
};

static void buf_put(struct buf *b, const void *src, u32 n)
{
	if (!n)
		return;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

/* transmit one FPDU through the incremental framer */
static int tx_fpdu(struct kiwi_tx *tx, const struct kiwi_hdr *h,
		   const u8 *pl, u32 plen, struct buf *out)
{
	u8 frame[KIWI_TX_FRAME_MAX];
	u32 before = out->len;
	u32 expect = kiwi_tx_wire_len(tx, h, plen);
	int rv = kiwi_tx_begin(tx, h, plen);

	if (rv)
		return rv;
	while (kiwi_tx_more(tx)) {
		u32 take;
		u32 n = kiwi_tx_next(tx, frame, &take);

		if (n > KIWI_TX_FRAME_MAX)
			return -1000;
		buf_put(out, frame, n);
		if (take) {
			buf_put(out, pl, take);
			kiwi_tx_crc_data(tx, pl, take);
			pl += take;
		}
	}
	return out->len - before == expect ? 0 : -1001;
}

#define MAXMSG 256

struct parsed {
	struct kiwi_hdr hdr[MAXMSG];
	u32 plen[MAXMSG];
	int nhdr;
	int ndone;
	int outside;	/* DATA spans outside the fed chunk */
	enum kiwi_err err;
	struct buf payload;
};

/* chunk 0: random chunk sizes; each chunk is a fresh heap copy */
static void rx_stream(const struct kiwi_rx_cfg *cfg, const u8 *s, u32 len,
		      u32 chunk, struct parsed *o)
{
	struct kiwi_rx rx;
	struct kiwi_rx_event ev;
	u32 off = 0;

	memset(o, 0, sizeof(*o));
	kiwi_rx_init(&rx, cfg);
	while (off < len) {
		u32 n = chunk ? chunk : 1 + rnd(rnd(2) ? 16 : 3000);
		u32 i = 0;
		u8 *c;

		if (n > len - off)
			n = len - off;
		c = malloc(n);
		memcpy(c, s + off, n);
		while (i < n) {
			u32 used = kiwi_rx_feed(&rx, c + i, n - i, &ev);

			switch (ev.type) {
			case KIWI_RX_HDR:
				if (o->nhdr < MAXMSG) {
					o->hdr[o->nhdr] = *ev.hdr;
					o->plen[o->nhdr] = ev.payload_len;
				}
				o->nhdr++;
				break;
			case KIWI_RX_DATA:
				if (ev.off + ev.len > n - i || !ev.len)
					o->outside++;
				buf_put(&o->payload, c + i + ev.off, ev.len);
				kiwi_rx_crc_data(&rx, c + i + ev.off, ev.len);
				break;
			case KIWI_RX_DONE:
				o->ndone++;
				break;
			case KIWI_RX_ERROR:
				o->err = ev.err;
				free(c);
				return;
			case KIWI_RX_MORE:
				if (used != n - i)
					o->outside++;
				break;
			}
			i += used;
		}
		free(c);
		off += n;
	}
}

static void parsed_free(struct parsed *o)
{
	free(o->payload.p);
	o->payload.p = NULL;
}

static int hdr_eq(const struct kiwi_hdr *a, const struct kiwi_hdr *b)
{
	const struct kiwi_term_info *x = &a->term, *y = &b->term;

	if (a->opcode != b->opcode || a->dv != b->dv || a->rv != b->rv ||
	    a->tagged != b->tagged || a->last != b->last ||
	    a->stag != b->stag || a->to != b->to || a->qn != b->qn ||
	    a->msn != b->msn || a->mo != b->mo ||
	    a->inval_stag != b->inval_stag || a->sink_stag != b->sink_stag ||
	    a->sink_to != b->sink_to || a->read_size != b->read_size ||
	    a->src_stag != b->src_stag || a->src_to != b->src_to)
		return 0;
	if (x->layer != y->layer || x->etype != y->etype ||
	    x->ecode != y->ecode || x->m != y->m || x->d != y->d ||
	    x->r != y->r || x->seg_len != y->seg_len ||
	    x->ddp_hdr_len != y->ddp_hdr_len ||
	    memcmp(x->ddp_hdr, y->ddp_hdr, x->ddp_hdr_len))
		return 0;
	if (x->r && memcmp(x->rdma_hdr, y->rdma_hdr, KIWI_RREQ_BODY))
		return 0;
	return 1;
}

static const char * const opname[] = {
	"Write", "Read Request", "Read Response", "Send",
	"Send with Invalidate", "Send with SE", "Send with SE and Invalidate",
	"Terminate"
};

/* ---- CRC32c ---- */

static void test_crc(void)
{
	/* RFC 3720 appendix B.4: CRC bytes as they appear on the wire */
	static const u8 scsi_read[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	static const struct {
		const char *name;
		u32 wire;	/* le32 of the four bytes B.4 lists */
	} vec[] = {
		{ "32 bytes of zeroes", 0x8a9136aa },
		{ "32 bytes of ones", 0x62a8ab43 },
		{ "32 incrementing bytes", 0x46dd794e },
		{ "32 decrementing bytes", 0x113fdb5c },
		{ "iSCSI read command PDU", 0xd9963a56 },
	};
	u8 d[32];
	u8 big[4099];
	int i, bad = 0;

	for (i = 0; i < 5; i++) {
		const u8 *p = d;
		u32 n = 32, c;
		u8 wire[4];

		switch (i) {
		case 0:
			memset(d, 0, 32);
			break;
		case 1:
			memset(d, 0xff, 32);
			break;
		case 2:
			for (n = 0; n < 32; n++)
				d[n] = n;
			break;
		case 3:
			for (n = 0; n < 32; n++)
				d[n] = 31 - n;
			break;
		case 4:
			p = scsi_read;
			break;
		}
		n = i == 4 ? 48 : 32;
		c = ~crc32c(~0U, p, n);
		wire[0] = c;
		wire[1] = c >> 8;
		wire[2] = c >> 16;
		wire[3] = c >> 24;
		ok(le32_at(wire) == vec[i].wire && c == crc_ref(p, n),
		   "crc32c RFC 3720 B.4 %s: %02x %02x %02x %02x",
		   vec[i].name, wire[0], wire[1], wire[2], wire[3]);
	}
	ok(~crc32c(~0U, "123456789", 9) == 0xe3069283,
	   "crc32c check value of \"123456789\" is e3069283");
	for (i = 0; i < (int)sizeof(big); i++)
		big[i] = rnd(256);
	for (i = 0; i < 300; i++) {
		u32 off = rnd(16), n = rnd(sizeof(big) - 16);
		u32 split = rnd(n + 1);
		u32 c = crc32c(~0U, big + off, split);

		c = ~crc32c(c, big + off + split, n - split);
		if (c != crc_ref(big + off, n))
			bad++;
	}
	ok(!bad, "slice-by-8 crc32c equals bitwise reference at any offset, length and split");
}

/*
 * The fused copy+CRC against the table CRC: random lengths (every block
 * length of crc.c's six-stream path and the single-stream tail, the
 * AVX-512 path's alignment head, 256-byte turns and rest),
 * source and destination alignments, seeds and splits; the bytes around
 * the destination are left alone.  Both the one-pass path (where the CPU
 * has it) and the copy-then-crc32c() fallback.
 */
static void test_crc_copy(void)
{
	enum { CAP = 6 * (2048 * 5 + 680 + 224 + 96 + 32) + 200 };
	static const u32 edge[] = { 0, 1, 7, 8, 9, 191, 192, 193, 767, 768,
				    3071, 3072, 12287, 12288, 12289, 65536,
				    CAP - 64,
				    /* AVX-512: from 1 KiB, 256-byte turns */
				    1023, 1024, 1087, 1279, 1280, 7167, 7168,
				    7232, 7423, 14336, 14399, 21567,
				    10751, 10752, 10815, 11007, 26879,
				    26880, 53759, 53760, 53823, 64511,
				    65535, 65599 };
	u8 *src = malloc(CAP + 64), *dst = malloc(CAP + 64);
	int mode, i, bad, badcopy, badguard;

	for (i = 0; i < CAP + 64; i++)
		src[i] = rnd(256);
	/* 0: crc32 instruction, 1: copy then crc32c(), 2: AVX-512 folding */
	for (mode = 0; mode < 3; mode++) {
		kiwi_crc_soft = mode == 1;
		kiwi_crc_v512 = mode >= 2;
		if (mode >= 2 && !(kiwi_cpu_has_crc32() && kiwi_cpu_v512_ok())) {
			ok(1, "crc32c copy (AVX-512 folding) # SKIP the CPU has no AVX-512 VPCLMULQDQ");
			continue;
		}
		bad = 0;
		badcopy = 0;
		badguard = 0;
		for (i = 0; i < 2000; i++) {
			u32 so = rnd(64), dof = rnd(64), n, split, seed, c, ref;

			if (i < (int)ARRAY_SIZE(edge))
				n = edge[i];
			else if (i % 4 == 0)
				n = rnd(CAP - 32);
			else
				n = rnd(4096);
			split = rnd(n + 1);
			seed = i & 1 ? ~0U : (u32)rnd64();
			memset(dst, 0xa5, CAP + 64);
			c = kiwi_crc32c_copy(seed, dst + dof, src + so, split);
			c = kiwi_crc32c_copy(c, dst + dof + split,
					     src + so + split, n - split);
			ref = crc32c(seed, src + so, n);
			if (c != ref)
				bad++;
			if (memcmp(dst + dof, src + so, n))
				badcopy++;
			if ((dof && dst[dof - 1] != 0xa5) ||
			    dst[dof + n] != 0xa5)
				badguard++;
		}
		ok(!bad && !badcopy && !badguard,
		   "crc32c copy (%s): CRC equals crc32c(), bytes copied, none beyond (%d, %d, %d bad of 2000)",
		   mode == 1 ? "copy then crc32c" :
		   mode == 2 ? "one pass, AVX-512 folding" :
		   kiwi_cpu_has_crc32() ? "one pass, crc32 instruction" :
		   "no crc32 instruction: fallback", bad, badcopy, badguard);
	}
	kiwi_crc_soft = false;
	kiwi_crc_v512 = false;
	free(src);
	free(dst);
}

/*
 * Runs (kiwi_crc32c_copy_run()): a stream copied in pieces to places that
 * need not follow each other, as the kernel copies an FPDU a page at a
 * time: pieces of random lengths (tiny ones, 4080/16 page turns, longer
 * than a page), the run sometimes ended and re-opened in the middle (a
 * receive chunk ends mid-FPDU), against the table CRC, every byte copied,
 * nothing beyond any piece written, and the run closed at the end.
 */
static void test_crc_run(void)
{
	enum { CAP = 3 * 65536 };
	u8 *src = malloc(CAP + 64), *dst = malloc(2 * CAP);
	int mode, i, bad = 0, badcopy = 0, badguard = 0, open = 0;

	for (i = 0; i < CAP + 64; i++)
		src[i] = rnd(256);
	/* 3: runs held without AVX-512 (kiwi_crc_run_hold) */
	for (mode = 0; mode < 4; mode++) {
		kiwi_crc_soft = mode == 1;
		kiwi_crc_v512 = mode == 2;
		kiwi_crc_run_hold = mode == 3;
		if (mode >= 2 && !(kiwi_cpu_has_crc32() && kiwi_cpu_v512_ok())) {
			ok(1, "crc32c copy runs (AVX-512 folding) # SKIP the CPU has no AVX-512 VPCLMULQDQ");
			continue;
		}
		for (i = 0; i < 600; i++) {
			u32 so = rnd(64), n = rnd(CAP), seed = (u32)rnd64(), c;
			u32 off = 0, doff = rnd(64), k;
			bool fold = false;
			int style = i % 4;

			memset(dst, 0xa5, 2 * CAP);
			c = seed;
			while (off < n) {
				if (style == 0)	/* page turns behind a header */
					k = 4096 - (off + 16) % 4096;
				else if (style == 1)
					k = rnd(64);
				else if (style == 2)
					k = rnd(9000);
				else
					k = rnd(2) ? rnd(300) : 1024 + rnd(5000);
				if (k > n - off)
					k = n - off;
				c = kiwi_crc32c_copy_run(c, dst + doff,
							 src + so + off, k,
							 &fold);
				if (memcmp(dst + doff, src + so + off, k))
					badcopy++;
				if (dst[doff + k] != 0xa5)
					badguard++;
				off += k;
				/* a gap between destinations (at most 8 per 33 bytes) */
				doff += k + 1 + rnd(8);
				if (!rnd(8))
					c = kiwi_crc_run_end(c, &fold);
			}
			c = kiwi_crc_run_end(c, &fold);
			open += fold;
			if (c != crc32c(seed, src + so, n))
				bad++;
		}
		ok(!bad && !badcopy && !badguard && !open,
		   "crc32c copy runs (%s): 600 streams in random pieces: CRC equals crc32c(), bytes copied, none beyond, run closed (%d, %d, %d, %d bad)",
		   mode == 1 ? "copy then crc32c" :
		   mode == 2 ? "AVX-512 folding carried across pieces" :
		   mode == 3 ? "held without AVX-512" :
		   "crc32 instruction", bad, badcopy, badguard, open);
	}
	kiwi_crc_soft = false;
	kiwi_crc_v512 = false;
	kiwi_crc_run_hold = false;
	free(src);
	free(dst);
}

/* ---- the Terminate table, against the RFCs typed in again ---- */

static void test_err_table(void)
{
	static const struct {
		enum kiwi_err e;
		u8 layer, etype, ecode;
		int hdrs;
	} rfc[] = {
		{ KIWI_ERR_MPA_CRC, 2, 0, 0x02, 0 },
		{ KIWI_ERR_MPA_MARKER, 2, 0, 0x03, 0 },
		{ KIWI_ERR_MPA_KEY, 2, 0, 0x04, 0 },
		{ KIWI_ERR_MPA_PDLEN, 2, 0, 0x04, 0 },
		{ KIWI_ERR_MPA_REVISION, 2, 0, 0x04, 0 },
		{ KIWI_ERR_MPA_REQREP, 2, 0, 0x04, 0 },
		{ KIWI_ERR_MPA_NOCRC, 2, 0, 0x04, 0 },
		{ KIWI_ERR_MPA_REJECTED, 2, 0, 0x04, 0 },
		{ KIWI_ERR_MPA_LOCAL, 2, 0, 0x05, 0 },
		{ KIWI_ERR_MPA_IRD, 2, 0, 0x06, 0 },
		{ KIWI_ERR_MPA_RTR, 2, 0, 0x07, 0 },
		{ KIWI_ERR_DDP_T_STAG, 1, 1, 0x00, 1 },
		{ KIWI_ERR_DDP_T_BOUNDS, 1, 1, 0x01, 1 },
		{ KIWI_ERR_DDP_T_STAG_STREAM, 1, 1, 0x02, 1 },
		{ KIWI_ERR_DDP_T_TO_WRAP, 1, 1, 0x03, 1 },
		{ KIWI_ERR_DDP_T_VERSION, 1, 1, 0x04, 0 },
		{ KIWI_ERR_DDP_U_QN, 1, 2, 0x01, 1 },
		{ KIWI_ERR_DDP_U_MSN_NOBUF, 1, 2, 0x02, 1 },
		{ KIWI_ERR_DDP_U_MSN_RANGE, 1, 2, 0x03, 1 },
		{ KIWI_ERR_DDP_U_MO, 1, 2, 0x04, 1 },
		{ KIWI_ERR_DDP_U_TOOLONG, 1, 2, 0x05, 1 },
		{ KIWI_ERR_DDP_U_VERSION, 1, 2, 0x06, 0 },
		{ KIWI_ERR_DDP_LOCAL, 1, 0, 0x00, 0 },
		{ KIWI_ERR_RDMAP_LOCAL, 0, 0, 0x00, 0 },
		{ KIWI_ERR_RDMAP_STAG, 0, 1, 0x00, 2 },
		{ KIWI_ERR_RDMAP_BOUNDS, 0, 1, 0x01, 2 },
		{ KIWI_ERR_RDMAP_ACCESS, 0, 1, 0x02, 2 },
		{ KIWI_ERR_RDMAP_STAG_STREAM, 0, 1, 0x03, 2 },
		{ KIWI_ERR_RDMAP_TO_WRAP, 0, 1, 0x04, 2 },
		{ KIWI_ERR_RDMAP_PROT_INVALIDATE, 0, 1, 0x09, 2 },
		{ KIWI_ERR_RDMAP_PROT_UNSPEC, 0, 1, 0xff, 2 },
		{ KIWI_ERR_RDMAP_VERSION, 0, 2, 0x05, 0 },
		{ KIWI_ERR_RDMAP_OPCODE, 0, 2, 0x06, 0 },
		{ KIWI_ERR_RDMAP_STREAM, 0, 2, 0x07, 1 },
		{ KIWI_ERR_RDMAP_GLOBAL, 0, 2, 0x08, 0 },
		{ KIWI_ERR_RDMAP_INVALIDATE, 0, 2, 0x09, 1 },
		{ KIWI_ERR_RDMAP_UNSPEC, 0, 2, 0xff, 0 },
	};
	int i, bad = 0, named = 0;

	for (i = 0; i < (int)ARRAY_SIZE(rfc); i++) {
		const struct kiwi_err_desc *d = kiwi_err_desc(rfc[i].e);

		if (d->layer != rfc[i].layer || d->etype != rfc[i].etype ||
		    d->ecode != rfc[i].ecode || d->hdrs != rfc[i].hdrs ||
		    d->errnum <= 0) {
			bad++;
			diag("mismatch: %s", d->name);
		}
	}
	for (i = 0; i < KIWI_ERR_MAX; i++)
		named += kiwi_err_desc(i)->name != NULL;
	ok(!bad && i == (int)ARRAY_SIZE(rfc) + 1 &&
	   named == KIWI_ERR_MAX,
	   "Terminate table: all %d errors carry the RFC layer/type/code",
	   KIWI_ERR_MAX - 1);
	ok(kiwi_err_desc(KIWI_ERR_MAX + 5) == kiwi_err_desc(KIWI_ERR_RDMAP_LOCAL),
	   "out-of-range error maps to local catastrophic");
}

/* ---- DDP/RDMAP headers ---- */

static void fill_hdr(struct kiwi_hdr *h, enum kiwi_rdmap_op op)
{
	kiwi_hdr_init(h, op);
	if (h->tagged) {
		h->stag = 0x11223344;
		h->to = 0x0102030405060708ULL;
		return;
	}
	h->msn = 1;
	if (op == KIWI_RDMAP_SEND_INV || op == KIWI_RDMAP_SEND_SE_INV)
		h->inval_stag = 0xa1b2c3d4;
	if (op == KIWI_RDMAP_READ_REQ) {
		h->sink_stag = 0x55667788;
		h->sink_to = 0x1000;
		h->read_size = 0x2000;
		h->src_stag = 0x99aabbcc;
		h->src_to = 0x8000000000000000ULL;
	}
	if (op == KIWI_RDMAP_TERMINATE) {
		h->term.layer = 1;
		h->term.etype = 2;
		h->term.ecode = 3;
	}
}

static void test_opcodes(void)
{
	static const u16 ctrl[KIWI_RDMAP_MAX] = {
		0xc140, 0x4141, 0xc142, 0x4143, 0x4144, 0x4145, 0x4146,
		0x4147
	};
	static const u8 hlen[KIWI_RDMAP_MAX] = { 14, 46, 14, 18, 18, 18, 18, 22 };
	struct kiwi_rx_cfg rc = { .crc = true };
	struct kiwi_tx_cfg tc = { .crc = true };
	int op;

	for (op = 0; op < KIWI_RDMAP_MAX; op++) {
		struct kiwi_hdr h;
		struct kiwi_tx tx;
		struct parsed o;
		struct buf s = { 0 };
		u8 pl[5] = { 1, 2, 3, 4, 5 };
		u32 plen = op == KIWI_RDMAP_READ_REQ || op == KIWI_RDMAP_TERMINATE ?
			   0 : 5;
		u32 ulpdu = hlen[op] + plen, pad = (4 - (ulpdu + 2) % 4) % 4;
		int good;

		fill_hdr(&h, op);
		kiwi_tx_init(&tx, &tc);
		good = tx_fpdu(&tx, &h, pl, plen, &s) == 0;
		good = good && s.len == 2 + ulpdu + pad + 4 &&
		       be16_at(s.p) == ulpdu && be16_at(s.p + 2) == ctrl[op];
		if (h.tagged)
			good = good && be32_at(s.p + 4) == 0x11223344 &&
			       be32_at(s.p + 8) == 0x01020304 &&
			       be32_at(s.p + 12) == 0x05060708;
		else
			good = good && be32_at(s.p + 4) == h.inval_stag &&
			       be32_at(s.p + 8) == h.qn &&
			       be32_at(s.p + 12) == 1 && be32_at(s.p + 16) == 0;
		if (op == KIWI_RDMAP_READ_REQ)
			good = good && be32_at(s.p + 20) == 0x55667788 &&
			       be32_at(s.p + 28) == 0x1000 &&
			       be32_at(s.p + 32) == 0x2000 &&
			       be32_at(s.p + 36) == 0x99aabbcc &&
			       be32_at(s.p + 40) == 0x80000000;
		if (op == KIWI_RDMAP_TERMINATE)
			good = good && be32_at(s.p + 20) == 0x12030000;
		good = good && le32_at(s.p + s.len - 4) ==
			       crc_ref(s.p, s.len - 4);
		rx_stream(&rc, s.p, s.len, 1, &o);
		good = good && !o.err && o.nhdr == 1 && o.ndone == 1 &&
		       hdr_eq(&o.hdr[0], &h) && o.plen[0] == plen &&
		       o.payload.len == plen &&
		       (!plen || !memcmp(o.payload.p, pl, plen));
		ok(good, "%s: wire bytes (ctrl %04x, %u-byte header), CRC, parsed back byte by byte",
		   opname[op], ctrl[op], hlen[op]);
		parsed_free(&o);
		free(s.p);
	}
}

/* Feed one crafted FPDU header (CRC off) and return the parser's error. */
static enum kiwi_err rx_one(const struct kiwi_hdr *h, u32 plen,
			    struct kiwi_rxq *init_q)
{
	struct kiwi_rx_cfg rc = { 0 };
	struct kiwi_rx rx;
	struct kiwi_rx_event ev;
	u8 b[128];
	int n = kiwi_hdr_encode(h, plen, b, sizeof(b));
	u32 used;

	if (n < 0)
		return KIWI_ERR_MAX;
	kiwi_rx_init(&rx, &rc);
	if (init_q)
		memcpy(rx.q, init_q, sizeof(rx.q));
	used = kiwi_rx_feed(&rx, b, n, &ev);
	if (ev.type == KIWI_RX_ERROR) {
		/* a dead stream stays dead */
		struct kiwi_rx_event ev2;
		u32 u2 = kiwi_rx_feed(&rx, b, n, &ev2);

		if (u2 || ev2.type != KIWI_RX_ERROR || ev2.err != ev.err)
			return KIWI_ERR_MAX;
		return ev.err;
	}
	if (ev.type != KIWI_RX_HDR || used != (u32)n)
		return KIWI_ERR_MAX;
	return KIWI_OK;
}

static int term_is(enum kiwi_err e, u8 layer, u8 etype, u8 ecode)
{
	const struct kiwi_err_desc *d = kiwi_err_desc(e);

	return d->layer == layer && d->etype == etype && d->ecode == ecode;
}

#define CHECK_ERR(got, want, l, t, c, ...) \
	ok((got) == (want) && term_is(got, l, t, c), __VA_ARGS__)

static void test_validation(void)
{
	struct kiwi_hdr h;
	struct kiwi_rxq q[KIWI_QN_MAX];
	enum kiwi_err e;
	int v, op;

	for (v = 0; v < 4; v++) {
		if (v == 1)
			continue;
		fill_hdr(&h, KIWI_RDMAP_WRITE);
		h.dv = v;
		e = rx_one(&h, 4, NULL);
		CHECK_ERR(e, KIWI_ERR_DDP_T_VERSION, 1, 1, 4,
			  "tagged DDP version %d: Terminate DDP/1/0x04", v);
		fill_hdr(&h, KIWI_RDMAP_SEND);
		h.dv = v;
		e = rx_one(&h, 4, NULL);
		CHECK_ERR(e, KIWI_ERR_DDP_U_VERSION, 1, 2, 6,
			  "untagged DDP version %d: Terminate DDP/2/0x06", v);
		fill_hdr(&h, KIWI_RDMAP_READ_RESP);
		h.rv = v;
		e = rx_one(&h, 4, NULL);
		CHECK_ERR(e, KIWI_ERR_RDMAP_VERSION, 0, 2, 5,
			  "RDMAP version %d: Terminate RDMAP/2/0x05", v);
	}
	for (op = 8; op < 16; op++) {
		fill_hdr(&h, KIWI_RDMAP_SEND);
		h.opcode = op;
		e = rx_one(&h, 0, NULL);
		CHECK_ERR(e, KIWI_ERR_RDMAP_OPCODE, 0, 2, 6,
			  "reserved opcode %d: Terminate RDMAP/2/0x06", op);
	}
	for (op = 0; op < KIWI_RDMAP_MAX; op++) {
		fill_hdr(&h, op);
		h.tagged = !h.tagged;
		e = rx_one(&h, 0, NULL);
		CHECK_ERR(e, KIWI_ERR_RDMAP_OPCODE, 0, 2, 6,
			  "%s with the T flag %s: Terminate RDMAP/2/0x06",
			  opname[op], h.tagged ? "set" : "clear");
	}
	for (op = KIWI_RDMAP_READ_REQ; op < KIWI_RDMAP_MAX; op++) {
		if (op == KIWI_RDMAP_READ_RESP)
			continue;
		fill_hdr(&h, op);
		h.qn = (h.qn + 1) % 3;
		e = rx_one(&h, 0, NULL);
		CHECK_ERR(e, KIWI_ERR_DDP_U_QN, 1, 2, 1,
			  "%s on queue %u: Terminate DDP/2/0x01", opname[op],
			  h.qn);
	}
	fill_hdr(&h, KIWI_RDMAP_SEND);
	h.qn = 7;
	e = rx_one(&h, 0, NULL);
	CHECK_ERR(e, KIWI_ERR_DDP_U_QN, 1, 2, 1,
		  "Send on queue 7: Terminate DDP/2/0x01");
	fill_hdr(&h, KIWI_RDMAP_SEND);
	h.msn = 2;
	e = rx_one(&h, 0, NULL);
	CHECK_ERR(e, KIWI_ERR_DDP_U_MSN_RANGE, 1, 2, 3,
		  "first Send with MSN 2: Terminate DDP/2/0x03");
	fill_hdr(&h, KIWI_RDMAP_READ_REQ);
	h.msn = 0;
	e = rx_one(&h, 0, NULL);
	CHECK_ERR(e, KIWI_ERR_DDP_U_MSN_RANGE, 1, 2, 3,
		  "Read Request with MSN 0: Terminate DDP/2/0x03");
	fill_hdr(&h, KIWI_RDMAP_SEND);
	h.mo = 4;
	e = rx_one(&h, 0, NULL);
	CHECK_ERR(e, KIWI_ERR_DDP_U_MO, 1, 2, 4,
		  "first segment with MO 4: Terminate DDP/2/0x04");

	/* a message in progress: 100 bytes placed, MSN 5 */
	memset(q, 0, sizeof(q));
	q[0].msn = 5;
	q[0].mo = 100;
	q[0].open = true;
	q[0].opcode = KIWI_RDMAP_SEND_SE;
	q[1].msn = 1;
	q[2].msn = 1;
	fill_hdr(&h, KIWI_RDMAP_SEND_SE);
	h.msn = 5;
	h.mo = 100;
	ok(rx_one(&h, 10, q) == KIWI_OK,
	   "continuation segment with the expected MSN and MO accepted");
	h.mo = 96;
	e = rx_one(&h, 10, q);
	CHECK_ERR(e, KIWI_ERR_DDP_U_MO, 1, 2, 4,
		  "continuation with MO 96 instead of 100: Terminate DDP/2/0x04");
	h.mo = 100;
	h.msn = 6;
	e = rx_one(&h, 10, q);
	CHECK_ERR(e, KIWI_ERR_DDP_U_MSN_RANGE, 1, 2, 3,
		  "continuation with the next MSN: Terminate DDP/2/0x03");
	fill_hdr(&h, KIWI_RDMAP_SEND);
	h.msn = 5;
	h.mo = 100;
	e = rx_one(&h, 10, q);
	CHECK_ERR(e, KIWI_ERR_RDMAP_OPCODE, 0, 2, 6,
		  "opcode changes inside a message: Terminate RDMAP/2/0x06");
	q[0].mo = 0xfffffff0;
	fill_hdr(&h, KIWI_RDMAP_SEND_SE);
	h.msn = 5;
	h.mo = 0xfffffff0;
	e = rx_one(&h, 0x20, q);
	CHECK_ERR(e, KIWI_ERR_DDP_U_TOOLONG, 1, 2, 5,
		  "message beyond 4 GiB (MO + length wraps): Terminate DDP/2/0x05");

	fill_hdr(&h, KIWI_RDMAP_READ_REQ);
	h.last = false;
	e = rx_one(&h, 0, NULL);
	CHECK_ERR(e, KIWI_ERR_DDP_U_TOOLONG, 1, 2, 5,
		  "Read Request without L: Terminate DDP/2/0x05");
	fill_hdr(&h, KIWI_RDMAP_READ_REQ);
	e = rx_one(&h, 4, NULL);
	CHECK_ERR(e, KIWI_ERR_DDP_U_TOOLONG, 1, 2, 5,
		  "Read Request with trailing data: Terminate DDP/2/0x05");
	fill_hdr(&h, KIWI_RDMAP_READ_REQ);
	h.src_to = ~0ULL - 0xfff;
	e = rx_one(&h, 0, NULL);
	CHECK_ERR(e, KIWI_ERR_RDMAP_TO_WRAP, 0, 1, 4,
		  "Read Request source offset + size wraps: Terminate RDMAP/1/0x04");
	h.src_to = ~0ULL - 0x1fff;
	ok(rx_one(&h, 0, NULL) == KIWI_OK,
	   "Read Request ending exactly at 2^64 accepted");
	fill_hdr(&h, KIWI_RDMAP_READ_REQ);
	h.sink_to = ~0ULL;
	e = rx_one(&h, 0, NULL);
	CHECK_ERR(e, KIWI_ERR_RDMAP_TO_WRAP, 0, 1, 4,
		  "Read Request sink offset + size wraps: Terminate RDMAP/1/0x04");
	fill_hdr(&h, KIWI_RDMAP_READ_REQ);
	h.read_size = 0;
	h.src_to = ~0ULL;
	ok(rx_one(&h, 0, NULL) == KIWI_OK,
	   "zero-length Read Request at the last offset accepted");
	fill_hdr(&h, KIWI_RDMAP_TERMINATE);
	h.last = false;
	e = rx_one(&h, 0, NULL);
	CHECK_ERR(e, KIWI_ERR_DDP_U_TOOLONG, 1, 2, 5,
		  "Terminate without L: Terminate DDP/2/0x05");
	fill_hdr(&h, KIWI_RDMAP_WRITE);
	h.to = ~0ULL;
	e = rx_one(&h, 2, NULL);
	CHECK_ERR(e, KIWI_ERR_DDP_T_TO_WRAP, 1, 1, 3,
		  "Write whose offset + length wraps: Terminate DDP/1/0x03");
	h.to = ~0ULL;
	ok(rx_one(&h, 1, NULL) == KIWI_OK,
	   "Write of the last byte of the offset space accepted");

	/* lengths the header cannot fit in */
	{
		static const u8 raw[][4] = {
			{ 0x00, 0x00, 0x41, 0x43 },	/* ULPDU 0 */
			{ 0x00, 0x01, 0x41, 0x43 },	/* ULPDU 1 */
			{ 0x00, 0x0d, 0xc1, 0x40 },	/* Write in 13 */
			{ 0x00, 0x11, 0x41, 0x43 },	/* Send in 17 */
			{ 0x00, 0x2d, 0x41, 0x41 },	/* Read Req in 45 */
			{ 0x00, 0x15, 0x41, 0x47 },	/* Terminate in 21 */
		};
		int i;

		for (i = 0; i < 6; i++) {
			struct kiwi_rx rx;
			struct kiwi_rx_cfg rc = { 0 };
			struct kiwi_rx_event ev;

			kiwi_rx_init(&rx, &rc);
			kiwi_rx_feed(&rx, raw[i], 4, &ev);
			CHECK_ERR(ev.err, KIWI_ERR_RDMAP_UNSPEC, 0, 2, 0xff,
				  "ULPDU length %u too short for its header: Terminate RDMAP/2/0xff",
				  be16_at(raw[i]));
		}
	}
	{
		/* a Terminate longer than any copy of headers */
		static const u8 raw[4] = { 0x00, 0x47, 0x41, 0x47 };
		struct kiwi_rx rx;
		struct kiwi_rx_cfg rc = { 0 };
		struct kiwi_rx_event ev;

		kiwi_rx_init(&rx, &rc);
		kiwi_rx_feed(&rx, raw, 4, &ev);
		CHECK_ERR(ev.err, KIWI_ERR_DDP_U_TOOLONG, 1, 2, 5,
			  "Terminate with a 71-byte ULPDU: Terminate DDP/2/0x05");
	}
	/* kiwi_ddp_check on its own, for callers that decode themselves */
	memset(q, 0, sizeof(q));
	q[0].msn = q[1].msn = q[2].msn = 1;
	fill_hdr(&h, KIWI_RDMAP_SEND);
	h.last = false;
	e = kiwi_ddp_check(q, &h, 100);
	h.last = true;
	h.mo = 100;
	e |= kiwi_ddp_check(q, &h, 50);
	h.mo = 0;
	h.msn = 2;
	e |= kiwi_ddp_check(q, &h, 0);
	ok(!e && q[0].msn == 3 && q[0].mo == 0 && !q[0].open,
	   "two messages, one in two segments: MSN advances to 3");
}

static void test_terminate(void)
{
	struct kiwi_hdr bad, t;
	struct kiwi_tx tx;
	struct kiwi_tx_cfg tc = { .crc = true };
	struct kiwi_rx_cfg rc = { .crc = true };
	struct parsed o;
	struct buf s = { 0 };
	u8 raw[64];
	int n;

	/* DDP untagged error on a Send: M and D, the 18-byte DDP header */
	fill_hdr(&bad, KIWI_RDMAP_SEND);
	bad.msn = 9;
	n = kiwi_hdr_encode(&bad, 300, raw, sizeof(raw));
	kiwi_term_build(&t, KIWI_ERR_DDP_U_MSN_RANGE, raw, n, 1);
	kiwi_tx_init(&tx, &tc);
	tx_fpdu(&tx, &t, NULL, 0, &s);
	ok(s.len == 2 + 22 + 2 + 18 + 4 &&
	   be32_at(s.p + 20) == 0x1203c000 && be16_at(s.p + 24) == 318 &&
	   !memcmp(s.p + 26, raw + 2, 18) && be32_at(s.p + 8) == 2 &&
	   be32_at(s.p + 12) == 1,
	   "Terminate for DDP/2/0x03: queue 2, control 1203c000, segment length and DDP header copied");
	rx_stream(&rc, s.p, s.len, 3, &o);
	ok(!o.err && o.nhdr == 1 && hdr_eq(&o.hdr[0], &t) &&
	   o.hdr[0].term.layer == 1 && o.hdr[0].term.etype == 2 &&
	   o.hdr[0].term.ecode == 3 && o.hdr[0].term.m && o.hdr[0].term.d &&
	   !o.hdr[0].term.r,
	   "Terminate decoded: layer, type, code, flags and copied header");
	parsed_free(&o);
	s.len = 0;

	/* RDMAP protection error on a Read Request: M, D and R */
	fill_hdr(&bad, KIWI_RDMAP_READ_REQ);
	n = kiwi_hdr_encode(&bad, 0, raw, sizeof(raw));
	kiwi_term_build(&t, KIWI_ERR_RDMAP_STAG, raw, n, 1);
	tx_fpdu(&tx, &t, NULL, 0, &s);
	rx_stream(&rc, s.p, s.len, 0, &o);
	ok(s.len == 2 + 70 + 4 && be32_at(s.p + 20) == 0x0100e000 &&
	   !memcmp(s.p + 26, raw + 2, 46) && !o.err && o.nhdr == 1 &&
	   hdr_eq(&o.hdr[0], &t) && o.hdr[0].term.r,
	   "Terminate for RDMAP/1/0x00 on a Read Request carries all 46 header bytes (M, D, R)");
	parsed_free(&o);
	s.len = 0;

	/* tagged error: 14-byte copy */
	fill_hdr(&bad, KIWI_RDMAP_WRITE);
	n = kiwi_hdr_encode(&bad, 1000, raw, sizeof(raw));
	kiwi_term_build(&t, KIWI_ERR_DDP_T_BOUNDS, raw, n, 1);
	tx_fpdu(&tx, &t, NULL, 0, &s);
	rx_stream(&rc, s.p, s.len, 0, &o);
	ok(t.term.ddp_hdr_len == 14 && t.term.seg_len == 1014 &&
	   be32_at(s.p + 20) == 0x1101c000 && !o.err &&
	   hdr_eq(&o.hdr[0], &t),
	   "Terminate for DDP/1/0x01 on a Write copies the 14-byte tagged header");
	parsed_free(&o);
	s.len = 0;

	/* version error: the header layout is unknown, nothing copied */
	kiwi_term_build(&t, KIWI_ERR_DDP_U_VERSION, raw, n, 1);
	tx_fpdu(&tx, &t, NULL, 0, &s);
	ok(s.len == 2 + 22 + 4 && be32_at(s.p + 20) == 0x12060000,
	   "Terminate for a version error copies no header");
	s.len = 0;
	kiwi_term_build(&t, KIWI_ERR_MPA_CRC, NULL, 0, 1);
	tx_fpdu(&tx, &t, NULL, 0, &s);
	ok(s.len == 28 && be32_at(s.p + 20) == 0x20020000,
	   "Terminate for an MPA CRC error: LLP/0/0x02");
	s.len = 0;
	kiwi_term_build(&t, KIWI_ERR_DDP_U_QN, raw, 3, 1);
	ok(!t.term.m && !t.term.d,
	   "too short an offending header is not copied");

	/* siw sets R for Send errors but copies no RDMAP header */
	fill_hdr(&bad, KIWI_RDMAP_SEND);
	n = kiwi_hdr_encode(&bad, 0, raw, sizeof(raw));
	kiwi_term_build(&t, KIWI_ERR_RDMAP_STAG, raw, n, 1);
	tx_fpdu(&tx, &t, NULL, 0, &s);
	s.p[22] |= 0x20;	/* R */
	s.p[s.len - 4] = 0;
	{
		u32 c = crc_ref(s.p, s.len - 4);

		s.p[s.len - 4] = c;
		s.p[s.len - 3] = c >> 8;
		s.p[s.len - 2] = c >> 16;
		s.p[s.len - 1] = c >> 24;
	}
	rx_stream(&rc, s.p, s.len, 0, &o);
	ok(!o.err && o.nhdr == 1 && o.hdr[0].term.d && !o.hdr[0].term.r,
	   "Terminate claiming R without the RDMAP header: decoded leniently");
	parsed_free(&o);
	s.len = 0;
	{
		/* D set but no bytes: flags cleared */
		struct kiwi_hdr z;
		u8 w[40];
		struct kiwi_rx rx;
		struct kiwi_rx_event ev;
		struct kiwi_rx_cfg zc = { 0 };

		kiwi_hdr_init(&z, KIWI_RDMAP_TERMINATE);
		n = kiwi_hdr_encode(&z, 0, w, sizeof(w));
		w[22] = 0xe0;	/* M, D, R with no copy behind them */
		memset(w + n, 0, 4);
		kiwi_rx_init(&rx, &zc);
		kiwi_rx_feed(&rx, w, n, &ev);
		ok(ev.type == KIWI_RX_HDR && !ev.hdr->term.m &&
		   !ev.hdr->term.d && !ev.hdr->term.r,
		   "Terminate with flags but no copied headers: flags cleared");
		w[1] = 23;	/* one byte of a DDP header */
		w[22] = 0x40;
		w[24] = 0;
		kiwi_rx_init(&rx, &zc);
		kiwi_rx_feed(&rx, w, 25, &ev);
		ok(ev.type == KIWI_RX_HDR && !ev.hdr->term.d,
		   "Terminate with a truncated DDP header copy: D cleared");
	}
	t.term.d = true;
	t.term.ddp_hdr_len = 5;
	ok(kiwi_hdr_encode(&t, 0, raw, sizeof(raw)) == -EINVAL,
	   "encoding a Terminate with a bogus copied-header length fails");
	free(s.p);
}

static void test_encode_errors(void)
{
	struct kiwi_hdr h;
	struct kiwi_tx tx;
	struct kiwi_tx_cfg tc = { 0 };
	u8 b[128], pl[16] = { 0 };

	fill_hdr(&h, KIWI_RDMAP_SEND);
	ok(kiwi_hdr_encode(&h, 0xffff - 18, b, sizeof(b)) == 20 &&
	   be16_at(b) == 0xffff,
	   "largest ULPDU (65535) encodes");
	ok(kiwi_hdr_encode(&h, 0xffff - 17, b, sizeof(b)) == -EMSGSIZE,
	   "ULPDU above 65535 refused with -EMSGSIZE");
	ok(kiwi_hdr_encode(&h, 0, b, 19) == -ENOSPC,
	   "header into a short buffer refused with -ENOSPC");
	h.opcode = 16;
	ok(kiwi_hdr_encode(&h, 0, b, sizeof(b)) == -EINVAL &&
	   kiwi_hdr_len(&h) == 0, "opcode 16 cannot be encoded");
	fill_hdr(&h, KIWI_RDMAP_TERMINATE);
	ok(kiwi_hdr_encode(&h, 4, b, sizeof(b)) == -EINVAL,
	   "Terminate with payload refused");
	kiwi_tx_init(&tx, &tc);
	fill_hdr(&h, KIWI_RDMAP_SEND);
	ok(kiwi_tx_begin(&tx, &h, 10) == 0 &&
	   kiwi_tx_begin(&tx, &h, 10) == -EBUSY &&
	   kiwi_fpdu_build(&tx, &h, b, 1, b, sizeof(b)) == -EBUSY,
	   "second FPDU while one is in progress: -EBUSY");
	kiwi_tx_init(&tx, &tc);
	ok(kiwi_fpdu_build(&tx, &h, pl, 10, b, 35) == -ENOSPC &&
	   kiwi_fpdu_build(&tx, &h, pl, 10, b, 36) == 36,
	   "kiwi_fpdu_build needs exactly the wire length (36)");
	ok(kiwi_fpdu_build(&tx, &h, b, 0x10000, b, sizeof(b)) == -EMSGSIZE,
	   "kiwi_fpdu_build refuses a payload beyond the ULPDU limit");
	h.opcode = 20;
	ok(kiwi_fpdu_build(&tx, &h, b, 1, b, sizeof(b)) == -EINVAL &&
	   kiwi_tx_wire_len(&tx, &h, 1) == 0,
	   "kiwi_fpdu_build refuses an unencodable header");
	fill_hdr(&h, KIWI_RDMAP_TERMINATE);
	ok(kiwi_tx_begin(&tx, &h, 3) == -EINVAL && !kiwi_tx_more(&tx),
	   "kiwi_tx_begin refuses a Terminate with payload and stays idle");
}

/* ---- FPDU framing ---- */

static void test_framing(void)
{
	struct kiwi_tx tx;
	struct kiwi_tx_cfg tc = { 0 };
	struct kiwi_rx_cfg rc = { 0 };
	struct kiwi_hdr h;
	struct parsed o;
	u8 pl[600], out[2048];
	u32 i, j;
	int good = 1;

	for (i = 0; i < sizeof(pl); i++)
		pl[i] = i * 7;
	for (i = 0; i < 8; i++) {
		int n;

		fill_hdr(&h, KIWI_RDMAP_WRITE);
		kiwi_tx_init(&tx, &tc);
		memset(out, 0xee, sizeof(out));
		n = kiwi_fpdu_build(&tx, &h, pl, i, out, sizeof(out));
		/* 2 + 14 + i, padded to 4, + CRC; pad octets zero */
		if (n != (int)((16 + i + 3) / 4 * 4 + 4) ||
		    memcmp(out + 16, pl, i))
			good = 0;
		for (j = 16 + i; j < (u32)n - 4; j++)
			if (out[j] != 0)
				good = 0;
		if (le32_at(out + n - 4) != 0)
			good = 0;	/* CRC off: the field is zero */
	}
	ok(good, "padding to 4 octets with zero pad; CRC field zero when CRC is off");

	/* CRC off: the receiver ignores whatever is in the CRC field */
	fill_hdr(&h, KIWI_RDMAP_SEND);
	kiwi_tx_init(&tx, &tc);
	i = kiwi_fpdu_build(&tx, &h, pl, 6, out, sizeof(out));
	out[i - 1] = 0x5a;
	rx_stream(&rc, out, i, 0, &o);
	ok(!o.err && o.ndone == 1, "CRC off: the CRC field is not checked");
	parsed_free(&o);

	/* CRC on: every corrupted octet is caught */
	tc.crc = rc.crc = true;
	kiwi_tx_init(&tx, &tc);
	fill_hdr(&h, KIWI_RDMAP_SEND);
	i = kiwi_fpdu_build(&tx, &h, pl, 6, out, sizeof(out));
	good = 1;
	{
		u32 k;

		/* from octet 1: a flip in the high length octet only waits */
		for (k = 1; k < i; k++) {
			out[k] ^= 0x10;
			rx_stream(&rc, out, i, 0, &o);
			/* header corruption may hit validation first */
			if (!o.err || (k >= 20 && o.err != KIWI_ERR_MPA_CRC))
				good = 0;
			parsed_free(&o);
			out[k] ^= 0x10;
		}
	}
	ok(good, "CRC on: a flipped bit in any octet is rejected (payload, pad, CRC: LLP/0/0x02)");

	ok(kiwi_mpa_mulpdu(1460, false) == 1454 &&
	   kiwi_mpa_mulpdu(1460, true) == 1442 &&
	   kiwi_mpa_mulpdu(1461, false) == 1454 &&
	   kiwi_mpa_mulpdu(9000, true) == 8922 &&
	   kiwi_mpa_mulpdu(8948, false) == 8942 &&
	   kiwi_mpa_mulpdu(65483, false) == 65474 &&
	   kiwi_mpa_mulpdu(200000, false) == 0xfffe &&
	   kiwi_mpa_mulpdu(64, false) == 0 &&
	   kiwi_mpa_mulpdu(200000, true) == 65006,
	   "MULPDU from EMSS (RFC 5044 5.1.1): 1460 -> 1454, with Markers 1442");
	{
		struct kiwi_tx_cfg mc = { .markers = true };
		u8 *big = calloc(1, 70000), *wire = malloc(70000);
		int n;

		fill_hdr(&h, KIWI_RDMAP_WRITE);
		kiwi_tx_init(&tx, &mc);
		ok(kiwi_tx_begin(&tx, &h, 65400) == -EMSGSIZE &&
		   !kiwi_tx_more(&tx),
		   "with Markers an FPDU longer than FPDUPTR can span is refused");
		n = kiwi_fpdu_build(&tx, &h, big, 65006 - 14, wire, 70000);
		ok(n > 65006 && n <= 0xffff,
		   "with Markers the MULPDU cap (65006) still fits (%d octets)", n);
		tc.markers = false;
		kiwi_tx_init(&tx, &tc);
		ok(kiwi_fpdu_build(&tx, &h, big, 65400, wire, 70000) > 65400,
		   "without Markers the same FPDU is fine");
		free(big);
		free(wire);
	}
	good = 1;
	for (i = 80; i < 20000; i += 3) {
		u32 m = kiwi_mpa_mulpdu(i, false);
		u32 mm = kiwi_mpa_mulpdu(i, true);

		if (m && (m + 6 > i || (m + 2) % 4))
			good = 0;
		if (mm > m)
			good = 0;
	}
	ok(good, "every MULPDU fits its EMSS with the Length 4-aligned");
}

/*
 * kiwi_tx_head()/kiwi_tx_tail() (the transmit path without Markers) put
 * the same bytes on the wire as kiwi_tx_next(), CRC included, for every
 * opcode and pad length, and keep the stream position; with Markers
 * they refuse.
 */
static void test_head_tail(void)
{
	static const enum kiwi_rdmap_op ops[] = {
		KIWI_RDMAP_WRITE, KIWI_RDMAP_SEND, KIWI_RDMAP_SEND_SE_INV,
		KIWI_RDMAP_READ_REQ, KIWI_RDMAP_READ_RESP,
		KIWI_RDMAP_TERMINATE,
	};
	struct kiwi_tx_cfg tc = { 0 };
	struct kiwi_tx a, b;
	struct kiwi_hdr h;
	u8 pl[80], ref[256], out[256];
	u32 i, k, plen;
	int good = 1, crc, n, m;

	for (i = 0; i < sizeof(pl); i++)
		pl[i] = i * 13 + 1;
	for (crc = 0; crc < 2; crc++) {
		tc.crc = crc;
		tc.pos = 100;
		kiwi_tx_init(&a, &tc);
		kiwi_tx_init(&b, &tc);
		for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			for (plen = 0; plen < 70; plen++) {
				u32 len = plen;

				fill_hdr(&h, ops[k]);
				if (ops[k] == KIWI_RDMAP_READ_REQ ||
				    ops[k] == KIWI_RDMAP_TERMINATE)
					len = 0;
				n = kiwi_fpdu_build(&a, &h, pl, len, ref,
						    sizeof(ref));
				m = kiwi_tx_head(&b, &h, len, out, 96);
				if (n <= 0 || m <= 0) {
					good = 0;
					continue;
				}
				memcpy(out + m, pl, len);
				kiwi_tx_crc_data(&b, pl, len);
				m += len;
				m += kiwi_tx_tail(&b, out + m);
				if (m != n || memcmp(out, ref, n) ||
				    a.pos != b.pos || kiwi_tx_more(&b))
					good = 0;
			}
		}
	}
	ok(good, "kiwi_tx_head/tail frame as kiwi_tx_next does (every opcode, pad 0-3, CRC on and off)");

	tc.crc = true;
	kiwi_tx_init(&b, &tc);
	fill_hdr(&h, KIWI_RDMAP_WRITE);
	n = kiwi_tx_head(&b, &h, 8, out, 96);
	memcpy(out + n, pl, 8);
	kiwi_tx_copy_data(&b, out + n, pl, 8);
	n += 8;
	n += kiwi_tx_tail(&b, out + n);
	{
		struct kiwi_rx_cfg rc = { .crc = true };
		struct parsed o;

		rx_stream(&rc, out, n, 0, &o);
		ok(!o.err && o.ndone == 1 && o.payload.len == 8 &&
		   !memcmp(o.payload.p, pl, 8),
		   "an FPDU from kiwi_tx_head/tail with CRC parses, payload intact");
		parsed_free(&o);
	}

	tc.markers = true;
	kiwi_tx_init(&b, &tc);
	ok(kiwi_tx_head(&b, &h, 8, out, 96) == -EINVAL && !kiwi_tx_more(&b),
	   "kiwi_tx_head refuses a stream with Markers");
	tc.markers = false;
	kiwi_tx_init(&b, &tc);
	ok(kiwi_tx_head(&b, &h, 8, out, 10) == -ENOSPC,
	   "kiwi_tx_head with too small a buffer: -ENOSPC");
}

static void test_markers(void)
{
	static const u32 pos0s[] = { 0, 4, 256, 496, 508, 1020, 0xfffffe00 };
	int p, good_pos = 1, good_rt = 1, total = 0;

	for (p = 0; p < 7; p++) {
		struct kiwi_tx_cfg tc = { .crc = true, .markers = true };
		struct kiwi_rx_cfg rc = { .crc = true, .markers = true };
		struct kiwi_tx tx;
		struct buf s = { 0 }, want = { 0 };
		u32 starts[64], lenpos[64];
		struct parsed o;
		int m, count;

		tc.pos = rc.pos = pos0s[p];
		kiwi_tx_init(&tx, &tc);
		for (m = 0; m < 40; m++) {
			struct kiwi_hdr h;
			u8 pl[1500];
			u32 plen = rnd(3) == 0 ? rnd(8) : rnd(1500), k;
			u32 start = s.len;	/* relative: pos0 may wrap */

			for (k = 0; k < plen; k++)
				pl[k] = rnd(256);
			fill_hdr(&h, KIWI_RDMAP_WRITE);
			h.to = m * 4096;
			/* FPDU start: its leading Marker, if any */
			starts[m] = start;
			lenpos[m] = (tc.pos + start) % 512 ? start : start + 4;
			if (tx_fpdu(&tx, &h, pl, plen, &s))
				good_pos = 0;
			buf_put(&want, pl, plen);
		}
		/* Markers point at the ULPDU Length (or are 0 at the start) */
		{
			u32 i;
			int k = 0;

			count = 0;
			for (i = 0; i < s.len; i++) {
				u32 pos = tc.pos + i, ptr;

				if (pos % 512)
					continue;
				count++;
				while (k + 1 < m && starts[k + 1] <= i)
					k++;
				ptr = be16_at(s.p + i + 2);
				if (be16_at(s.p + i) ||
				    (starts[k] == i ? ptr != 0 :
				     ptr != i - lenpos[k]))
					good_pos = 0;
			}
		}
		total += count;
		rx_stream(&rc, s.p, s.len, 0, &o);
		if (o.err || o.ndone != 40 || o.payload.len != want.len ||
		    memcmp(o.payload.p, want.p, want.len) || o.outside)
			good_rt = 0;
		parsed_free(&o);
		rx_stream(&rc, s.p, s.len, 1, &o);
		if (o.err || o.ndone != 40 || o.payload.len != want.len ||
		    memcmp(o.payload.p, want.p, want.len))
			good_rt = 0;
		parsed_free(&o);

		/* corrupt one Marker's pointer: LLP/0/0x03 */
		if (p == 0) {
			struct parsed o2;

			s.p[512 + 3] ^= 4;
			rx_stream(&rc, s.p, s.len, 0, &o2);
			CHECK_ERR(o2.err, KIWI_ERR_MPA_MARKER, 2, 0, 3,
				  "Marker pointing elsewhere: Terminate LLP/0/0x03");
			parsed_free(&o2);
			s.p[512 + 3] ^= 4;
			rc.crc = false;
			s.p[512 + 3] ^= 3;	/* low bits are ignored */
			s.p[512] = 1;		/* so is the reserved field */
			rx_stream(&rc, s.p, s.len, 7, &o2);
			ok(!o2.err && o2.ndone == 40,
			   "Marker pointer low bits and reserved field ignored on receive");
			parsed_free(&o2);
			s.p[512 + 3] ^= 3;
			s.p[512] = 0;
			rc.crc = true;
		}
		free(s.p);
		free(want.p);
	}
	ok(good_pos && total > 100,
	   "TX Markers every 512 octets, FPDUPTR to the ULPDU Length, 0 at an FPDU start (%d Markers)",
	   total);
	ok(good_rt,
	   "RX strips and checks Markers at any stream position, one byte or random chunks at a time");
}

/* ---- random valid streams: the round-trip property ---- */

struct gen {
	u32 msn[KIWI_QN_MAX];
	struct kiwi_hdr hdr[MAXMSG];
	u32 plen[MAXMSG];
	int n;
	struct buf stream;
	struct buf payload;
};

static void gen_fpdu(struct gen *g, struct kiwi_tx *tx, struct kiwi_hdr *h,
		     u32 plen)
{
	u8 pl[4096];
	u32 k;

	for (k = 0; k < plen; k++)
		pl[k] = rnd(256);
	if (rnd(2)) {
		if (tx_fpdu(tx, h, pl, plen, &g->stream))
			abort();
	} else {
		u8 out[4096 + 256];
		int n = kiwi_fpdu_build(tx, h, pl, plen, out, sizeof(out));

		if (n < 0)
			abort();
		buf_put(&g->stream, out, n);
	}
	buf_put(&g->payload, pl, plen);
	g->hdr[g->n] = *h;
	g->plen[g->n] = plen;
	g->n++;
}

static void gen_stream(struct gen *g, struct kiwi_tx *tx, int nmsg)
{
	int i;

	g->msn[0] = g->msn[1] = g->msn[2] = 1;
	for (i = 0; i < nmsg && g->n < MAXMSG - 8; i++) {
		struct kiwi_hdr h;
		u32 op = rnd(7), seg, nseg, mo = 0;

		kiwi_hdr_init(&h, op);
		if (h.tagged) {
			u32 plen = rnd(5) ? rnd(2000) : 0;

			h.stag = rnd64();
			h.to = rnd64() >> 1;
			h.last = rnd(2);
			gen_fpdu(g, tx, &h, plen);
			continue;
		}
		if (op == KIWI_RDMAP_READ_REQ) {
			h.msn = g->msn[1]++;
			h.sink_stag = rnd64();
			h.sink_to = rnd64() >> 1;
			h.read_size = rnd64();
			h.src_stag = rnd64();
			h.src_to = rnd64() >> 1;
			gen_fpdu(g, tx, &h, 0);
			continue;
		}
		nseg = 1 + rnd(3);
		for (seg = 0; seg < nseg; seg++) {
			u32 plen = rnd(4) ? rnd(3000) : 0;

			kiwi_hdr_init(&h, op);
			h.msn = g->msn[0];
			h.mo = mo;
			h.last = seg == nseg - 1;
			if (op == KIWI_RDMAP_SEND_INV || op == KIWI_RDMAP_SEND_SE_INV)
				h.inval_stag = 0x1000 + i;
			gen_fpdu(g, tx, &h, plen);
			mo += plen;
		}
		g->msn[0]++;
	}
	if (rnd(3) == 0) {
		struct kiwi_hdr t;
		u8 raw[KIWI_WIRE_HDR_MAX];
		int n = kiwi_hdr_encode(&g->hdr[g->n - 1], g->plen[g->n - 1],
					raw, sizeof(raw));

		kiwi_term_build(&t, 1 + rnd(KIWI_ERR_MAX - 1), raw, n, 1);
		gen_fpdu(g, tx, &t, 0);
	}
}

static void test_roundtrip(void)
{
	int iter, bad = 0, fpdus = 0;
	u64 bytes = 0;

	for (iter = 0; iter < 400; iter++) {
		struct kiwi_tx_cfg tc = { .crc = rnd(2), .markers = rnd(2) };
		struct kiwi_rx_cfg rc;
		struct kiwi_tx tx;
		struct gen *g = calloc(1, sizeof(*g));
		struct parsed *o = calloc(1, sizeof(*o));
		int k;

		tc.pos = rnd(3) ? 0 : rnd64() & ~3U;
		rc.crc = tc.crc;
		rc.markers = tc.markers;
		rc.pos = tc.pos;
		kiwi_tx_init(&tx, &tc);
		gen_stream(g, &tx, 1 + rnd(30));
		rx_stream(&rc, g->stream.p, g->stream.len,
			  iter % 10 == 0 ? 1 : 0, o);
		if (o->err || o->nhdr != g->n || o->ndone != g->n ||
		    o->outside || o->payload.len != g->payload.len ||
		    (g->payload.len &&
		     memcmp(o->payload.p, g->payload.p, g->payload.len)))
			bad++;
		else
			for (k = 0; k < g->n; k++)
				if (!hdr_eq(&o->hdr[k], &g->hdr[k]) ||
				    o->plen[k] != g->plen[k]) {
					bad++;
					break;
				}
		fpdus += g->n;
		bytes += g->stream.len;
		parsed_free(o);
		free(g->stream.p);
		free(g->payload.p);
		free(g);
		free(o);
	}
	ok(!bad,
	   "round trip: 400 random streams (%d FPDUs, %llu octets, CRC and Markers on/off) cut into random chunks parse back equal",
	   fpdus, (unsigned long long)bytes);
}

/* ---- MPA connection setup ---- */

static int mpa_parse_all(struct kiwi_mpa_parser *p, const u8 *b, u32 len,
			 u32 chunk, u32 *consumed)
{
	u32 off = 0;
	int rv = 0;

	while (off < len) {
		u32 n = chunk && chunk < len - off ? chunk : len - off;
		u32 used;

		rv = kiwi_mpa_parse(p, b + off, n, &used);
		off += used;
		if (rv)
			break;
		if (used != n)
			return -9999;
	}
	*consumed = off;
	return rv;
}

static void test_mpa_frames(void)
{
	struct kiwi_mpa_cfg cfg = {
		.rev = 2, .crc = KIWI_MPA_CRC_PREFERRED, .p2p = true,
		.rtr = KIWI_RTR_WRITE | KIWI_RTR_READ, .ird = 16, .ord = 8,
	};
	static const u8 want[] = {
		'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
		'F', 'r', 'a', 'm', 'e', 0x50, 0x02, 0x00, 0x09,
		0x80, 0x10, 0xc0, 0x08, 'h', 'e', 'l', 'l', 'o'
	};
	struct kiwi_mpa_parser p;
	u8 b[600], big[600];
	u32 used, split;
	int n, rv, good = 1;

	n = kiwi_mpa_req_build(&cfg, "hello", 5, b, sizeof(b));
	ok(n == (int)sizeof(want) && !memcmp(b, want, n),
	   "MPA Request bytes: key, C|H, rev 2, PD length 9, IRD word 8010 (P2P, 16), ORD word c008 (Write+Read RTR, 8)");
	for (split = 1; split <= (u32)n; split++) {
		kiwi_mpa_parser_init(&p, false);
		rv = mpa_parse_all(&p, b, n, split, &used);
		if (rv != 1 || used != (u32)n || !p.f.v2 || !p.f.c ||
		    p.f.m || p.f.r || p.f.rev != 2 || p.f.ird != 16 ||
		    p.f.ord != 8 || !p.f.p2p ||
		    p.f.rtr != (KIWI_RTR_WRITE | KIWI_RTR_READ) ||
		    p.f.ulp_pd_len != 5 || memcmp(p.f.ulp_pd, "hello", 5))
			good = 0;
	}
	ok(good, "MPA Request parsed back in every chunk size from 1 to %d", n);

	/* stops at the end of the frame: FPDUs may follow */
	memcpy(b + n, "\x00\x10\xc1\x40", 4);
	kiwi_mpa_parser_init(&p, false);
	rv = kiwi_mpa_parse(&p, b, n + 4, &used);
	ok(rv == 1 && used == (u32)n &&
	   kiwi_mpa_parse(&p, b + n, 4, &used) == 1 && used == 0,
	   "parser consumes exactly the frame, not the FPDU behind it");

	memcpy(big, b, n);
	big[3] = 'x';
	kiwi_mpa_parser_init(&p, false);
	rv = kiwi_mpa_parse(&p, big, n, &used);
	ok(rv == -EPROTO && p.err == KIWI_ERR_MPA_KEY &&
	   kiwi_mpa_parse(&p, big, n, &used) == -EPROTO && used == 0,
	   "wrong key rejected (-EPROTO), and stays rejected");
	kiwi_mpa_parser_init(&p, true);
	rv = kiwi_mpa_parse(&p, b, n, &used);
	ok(rv == -EPROTO && p.err == KIWI_ERR_MPA_KEY,
	   "a Request where a Reply is expected is rejected");
	memcpy(big, b, 20);
	big[18] = 0x02;
	big[19] = 0x01;		/* 513 */
	kiwi_mpa_parser_init(&p, false);
	ok(kiwi_mpa_parse(&p, big, 20, &used) == -EMSGSIZE &&
	   p.err == KIWI_ERR_MPA_PDLEN,
	   "private data length 513 rejected (-EMSGSIZE)");
	big[18] = 0;
	big[19] = 2;		/* enhanced but no room for IRD/ORD */
	big[20] = big[21] = 0;
	kiwi_mpa_parser_init(&p, false);
	ok(kiwi_mpa_parse(&p, big, 22, &used) == -EPROTO &&
	   p.err == KIWI_ERR_MPA_REQREP,
	   "enhanced Request with 2 bytes of private data rejected");
	big[16] = 0x10;
	big[17] = 1;		/* H in revision 1: reserved, ignored */
	kiwi_mpa_parser_init(&p, false);
	ok(kiwi_mpa_parse(&p, big, 22, &used) == 1 && !p.f.v2 &&
	   p.f.ulp_pd_len == 2, "H flag in a revision 1 Request ignored");

	memset(big, 0xab, sizeof(big));
	cfg.rev = 1;
	cfg.p2p = false;
	ok(kiwi_mpa_ulp_pd_max(&cfg) == 512 &&
	   kiwi_mpa_req_build(&cfg, big, 512, b, sizeof(b)) == 532 &&
	   kiwi_mpa_req_build(&cfg, big, 513, b, sizeof(b)) == -EMSGSIZE,
	   "revision 1: 512 bytes of private data, 513 refused");
	kiwi_mpa_parser_init(&p, false);
	ok(mpa_parse_all(&p, b, 532, 7, &used) == 1 && p.f.pd_len == 512 &&
	   !memcmp(p.f.ulp_pd, big, 512),
	   "512 bytes of private data parsed back");
	cfg.rev = 2;
	ok(kiwi_mpa_ulp_pd_max(&cfg) == 508 &&
	   kiwi_mpa_req_build(&cfg, big, 508, b, sizeof(b)) == 532 &&
	   kiwi_mpa_req_build(&cfg, big, 509, b, sizeof(b)) == -EMSGSIZE,
	   "revision 2: 508 bytes beside IRD/ORD, 509 refused");
	ok(kiwi_mpa_req_build(&cfg, big, 10, b, 29) == -ENOSPC &&
	   kiwi_mpa_req_build(&cfg, NULL, 10, b, sizeof(b)) == -EINVAL,
	   "short buffer -ENOSPC, missing private data -EINVAL");
	cfg.rev = 3;
	ok(kiwi_mpa_req_build(&cfg, NULL, 0, b, sizeof(b)) == -EINVAL,
	   "revision 3 cannot be requested");
	cfg.rev = 1;
	cfg.p2p = true;
	ok(kiwi_mpa_req_build(&cfg, NULL, 0, b, sizeof(b)) == -EINVAL,
	   "peer-to-peer needs revision 2");
	cfg.rev = 2;
	cfg.rtr = 0;
	ok(kiwi_mpa_req_build(&cfg, NULL, 0, b, sizeof(b)) == -EINVAL,
	   "peer-to-peer needs an RTR type");
	cfg.p2p = false;
	cfg.ird = 0x7fff;
	kiwi_mpa_req_build(&cfg, NULL, 0, b, sizeof(b));
	ok(b[20] == 0x3f && b[21] == 0xff,
	   "IRD above 14 bits is clamped to 0x3fff");
}

struct side {
	struct kiwi_mpa_cfg cfg;
	struct kiwi_mpa_result res;
	enum kiwi_err err;
};

/* run a whole setup: initiator a, responder b; returns the Reply bytes */
static void mpa_run(struct side *a, struct side *b, int *rep_reject)
{
	struct kiwi_mpa_parser p;
	u8 req[600], rep[600];
	u32 used;
	int n;

	*rep_reject = -1;
	n = kiwi_mpa_req_build(&a->cfg, "req", 3, req, sizeof(req));
	kiwi_mpa_parser_init(&p, false);
	if (n < 0 || mpa_parse_all(&p, req, n, 1 + rnd(30), &used) != 1) {
		a->err = b->err = KIWI_ERR_MAX;
		return;
	}
	b->err = kiwi_mpa_accept(&b->cfg, &p.f, &b->res);
	n = kiwi_mpa_rep_build(&b->res, b->err != KIWI_OK, "rep", 3, rep,
			       sizeof(rep));
	kiwi_mpa_parser_init(&p, true);
	if (n < 0 || mpa_parse_all(&p, rep, n, 1 + rnd(30), &used) != 1) {
		a->err = KIWI_ERR_MAX;
		return;
	}
	*rep_reject = p.f.r;
	a->err = kiwi_mpa_connect(&a->cfg, &p.f, &a->res);
	if (p.f.ulp_pd_len != 3 || memcmp(p.f.ulp_pd, "rep", 3))
		a->err = KIWI_ERR_MAX;
}

/* one peer-to-peer combination: modes ap/bp, RTR sets ai/bi */
static int p2p_case(int ap, int bp, int ai, int bi)
{
	struct side a = { .cfg = { .rev = 2, .p2p = ap, .rtr = ai } };
	struct side b = { .cfg = { .rev = 2, .p2p = bp, .rtr = bi } };
	int common = ai & bi;
	int pick = common & 2 ? 2 : common & 4 ? 4 : common & 1;
	int rej;

	mpa_run(&a, &b, &rej);
	if (!ap)
		return !a.err && !b.err && !a.res.p2p && !b.res.p2p;
	if (!bp)
		return b.err == KIWI_OK && a.err == KIWI_ERR_MPA_RTR;
	if (!common)
		return b.err == KIWI_ERR_MPA_RTR &&
		       a.err == KIWI_ERR_MPA_REJECTED;
	return !a.err && !b.err && a.res.rtr == pick && b.res.rtr == pick &&
	       a.res.p2p && b.res.p2p;
}

static void test_mpa_negotiation(void)
{
	static const char * const pol[] = { "off", "preferred", "required" };
	int i, r, mi, mr, rej;
	int good;

	/* CRC: used if either asks; required rejects a peer without it */
	for (i = 0; i < 3; i++)
		for (r = 0; r < 3; r++) {
			struct side a = { .cfg = { .rev = 2, .crc = i } };
			struct side b = { .cfg = { .rev = 2, .crc = r } };
			int want_crc = i || r;

			mpa_run(&a, &b, &rej);
			if (r == KIWI_MPA_CRC_REQUIRED && i == 0)
				good = b.err == KIWI_ERR_MPA_NOCRC && rej == 1 &&
				       a.err == KIWI_ERR_MPA_REJECTED;
			else
				good = !a.err && !b.err && rej == 0 &&
				       a.res.crc == want_crc &&
				       b.res.crc == want_crc;
			ok(good, "CRC initiator %s, responder %s: %s", pol[i],
			   pol[r],
			   r == 2 && !i ? "rejected (LLP 0x04), initiator gets -ECONNREFUSED" :
			   want_crc ? "CRC on" : "CRC off");
		}
	{
		/* a Reply without C while we require it */
		struct kiwi_mpa_cfg c = { .rev = 2,
					  .crc = KIWI_MPA_CRC_REQUIRED };
		struct kiwi_mpa_result res, rr = { .rev = 2 };
		struct kiwi_mpa_parser p;
		u8 rep[64];
		u32 used;
		int n = kiwi_mpa_rep_build(&rr, false, NULL, 0, rep,
					   sizeof(rep));

		kiwi_mpa_parser_init(&p, true);
		kiwi_mpa_parse(&p, rep, n, &used);
		ok(kiwi_mpa_connect(&c, &p.f, &res) == KIWI_ERR_MPA_NOCRC &&
		   kiwi_err_desc(KIWI_ERR_MPA_NOCRC)->errnum == EOPNOTSUPP,
		   "initiator requiring CRC refuses a Reply without C (-EOPNOTSUPP)");
		c.crc = KIWI_MPA_CRC_PREFERRED;
		ok(kiwi_mpa_connect(&c, &p.f, &res) == KIWI_OK && res.crc,
		   "initiator preferring CRC uses it although the Reply has no C");
	}

	/* Markers, each direction on its own */
	for (mi = 0; mi < 2; mi++)
		for (mr = 0; mr < 2; mr++) {
			struct side a = { .cfg = { .rev = 2, .markers = mi } };
			struct side b = { .cfg = { .rev = 1, .markers = mr } };

			mpa_run(&a, &b, &rej);
			ok(!a.err && !b.err && a.res.markers_rx == mi &&
			   b.res.markers_tx == mi && a.res.markers_tx == mr &&
			   b.res.markers_rx == mr,
			   "Markers initiator %d, responder %d: initiator->responder %s, responder->initiator %s",
			   mi, mr, mr ? "on" : "off", mi ? "on" : "off");
		}

	/* FPDUs beyond the MSS: only where both offer G */
	for (mi = 0; mi < 2; mi++)
		for (mr = 0; mr < 2; mr++) {
			struct side a = { .cfg = { .rev = 2,
						   .fpdu_max = mi * 65535 } };
			struct side b = { .cfg = { .rev = 2,
						   .fpdu_max = mr * 16384 } };
			int both = mi && mr;

			mpa_run(&a, &b, &rej);
			ok(!a.err && !b.err &&
			   a.res.fpdu_max == (both ? 65535 : 0) &&
			   b.res.fpdu_max == (both ? 16384 : 0),
			   "large FPDUs offered by initiator %d, responder %d: %s",
			   mi, mr, both ? "each sends up to its own size" :
			   "both send one MSS");
		}
	{
		/* G on the wire, and nowhere in a reject */
		struct kiwi_mpa_cfg c = { .rev = 1, .fpdu_max = 9000 };
		struct kiwi_mpa_result rr = { .rev = 1, .fpdu_max = 9000 };
		u8 f[64];
		int n = kiwi_mpa_req_build(&c, NULL, 0, f, sizeof(f));

		ok(n == 20 && f[16] == 0x08 && f[17] == 1,
		   "a Request offering large FPDUs carries 0x0800 in its flags");
		n = kiwi_mpa_rep_build(&rr, true, NULL, 0, f, sizeof(f));
		ok(n == 20 && f[16] == 0x20 && f[17] == 1,
		   "a rejecting Reply does not offer large FPDUs");
	}

	/* revisions */
	for (i = 1; i <= 2; i++)
		for (r = 1; r <= 2; r++) {
			struct side a = { .cfg = { .rev = i, .ird = 4, .ord = 4 } };
			struct side b = { .cfg = { .rev = r, .ird = 4, .ord = 4 } };
			int rev = i < r ? i : r;

			mpa_run(&a, &b, &rej);
			ok(!a.err && !b.err && a.res.rev == rev &&
			   b.res.rev == rev &&
			   a.res.enhanced == (rev == 2) &&
			   b.res.enhanced == (rev == 2),
			   "revision initiator %d, responder %d: revision %d, %s",
			   i, r, rev, rev == 2 ? "enhanced" : "basic");
		}
	{
		struct kiwi_mpa_cfg c = { .rev = 2 };
		struct kiwi_mpa_frame f = { .rev = 3 };
		struct kiwi_mpa_result res;
		u8 rep[64];
		int n;

		ok(kiwi_mpa_accept(&c, &f, &res) == KIWI_ERR_MPA_REVISION &&
		   (n = kiwi_mpa_rep_build(&res, true, NULL, 0, rep, 64)) == 20 &&
		   rep[16] == 0x20 && rep[17] == 2,
		   "Request revision 3 rejected; the Reply carries R and revision 2");
		f.rev = 0;
		ok(kiwi_mpa_accept(&c, &f, &res) == KIWI_ERR_MPA_REVISION,
		   "Request revision 0 rejected");
		f.reply = true;
		f.rev = 1;
		ok(kiwi_mpa_accept(&c, &f, &res) == KIWI_ERR_MPA_KEY,
		   "a Reply is no Request");
		c.rev = 1;
		f.reply = true;
		f.rev = 2;
		ok(kiwi_mpa_connect(&c, &f, &res) == KIWI_ERR_MPA_REVISION,
		   "revision 2 Reply to a revision 1 Request refused");
		f.reply = false;
		ok(kiwi_mpa_connect(&c, &f, &res) == KIWI_ERR_MPA_KEY,
		   "a Request is no Reply");
		res.rev = 0;
		ok(kiwi_mpa_rep_build(&res, false, NULL, 0, rep, 64) == -EINVAL,
		   "Reply with revision 0 cannot be built");
	}

	/* IRD/ORD */
	{
		struct side a = { .cfg = { .rev = 2, .ird = 8, .ord = 32 } };
		struct side b = { .cfg = { .rev = 2, .ird = 16, .ord = 64 } };

		mpa_run(&a, &b, &rej);
		ok(!a.err && !b.err && b.res.peer_ird == 8 &&
		   b.res.peer_ord == 32 && b.res.ord == 8 &&
		   b.res.ird == 16 && a.res.peer_ird == 16 &&
		   a.res.peer_ord == 8 && a.res.ord == 16 && a.res.ird == 8,
		   "IRD/ORD exchanged; each ORD cut to the peer's IRD (initiator 8/16, responder 16/8)");
	}
	{
		struct kiwi_mpa_cfg c = { .rev = 2, .ird = 4, .ord = 4 };
		struct kiwi_mpa_frame f = { .reply = true, .rev = 2,
					    .v2 = true, .ird = 4, .ord = 5 };
		struct kiwi_mpa_result res;
		enum kiwi_err e = kiwi_mpa_connect(&c, &f, &res);

		CHECK_ERR(e, KIWI_ERR_MPA_IRD, 2, 0, 6,
			  "responder ORD above our IRD: Terminate LLP/0/0x06 insufficient IRD");
	}

	/* peer-to-peer and RTR */
	{
		int ai, bi, ap, bp, bad = 0, cases = 0;

		for (ap = 0; ap < 2; ap++)
			for (bp = 0; bp < 2; bp++)
				for (ai = 1; ai < 8; ai++)
					for (bi = 1; bi < 8; bi++, cases++)
						bad += !p2p_case(ap, bp, ai, bi);
		ok(!bad,
		   "peer-to-peer: %d combinations of mode and RTR sets agree on Write, else Read, else Send, or fail with no matching RTR",
		   cases);
	}
	{
		struct kiwi_mpa_cfg c = { .rev = 2, .p2p = true,
					  .rtr = KIWI_RTR_ALL };
		struct kiwi_mpa_frame f = { .reply = true, .rev = 1 };
		struct kiwi_mpa_result res;
		enum kiwi_err e = kiwi_mpa_connect(&c, &f, &res);

		CHECK_ERR(e, KIWI_ERR_MPA_RTR, 2, 0, 7,
			  "peer-to-peer initiator and a revision 1 responder: Terminate LLP/0/0x07");
		c.p2p = false;
		ok(kiwi_mpa_connect(&c, &f, &res) == KIWI_OK && !res.enhanced &&
		   res.rev == 1,
		   "enhanced initiator accepts a revision 1 responder");
	}

	/* the RTR itself */
	{
		static const u8 types[] = { KIWI_RTR_SEND, KIWI_RTR_WRITE,
					    KIWI_RTR_READ };
		static const u8 ops[] = { KIWI_RDMAP_SEND, KIWI_RDMAP_WRITE,
					  KIWI_RDMAP_READ_REQ };

		for (i = 0; i < 3; i++) {
			struct kiwi_mpa_result res = { .p2p = true,
						       .rtr = types[i] };
			struct kiwi_rx_cfg rc = { .crc = true };
			struct kiwi_tx_cfg tc = { .crc = true };
			struct kiwi_tx tx;
			struct kiwi_hdr h;
			struct parsed o;
			u8 out[128];
			int n, other;

			good = kiwi_mpa_rtr_hdr(&res, &h) == 0 &&
			       h.opcode == ops[i];
			kiwi_tx_init(&tx, &tc);
			n = kiwi_fpdu_build(&tx, &h, NULL, 0, out, sizeof(out));
			rx_stream(&rc, out, n, 0, &o);
			good = good && !o.err && o.nhdr == 1 &&
			       kiwi_mpa_rtr_check(&res, &o.hdr[0], 0) == KIWI_OK;
			/* wrong type, payload, non-zero read size */
			for (other = 0; other < 3; other++)
				if (other != i) {
					kiwi_hdr_init(&h, ops[other]);
					good = good &&
					       kiwi_mpa_rtr_check(&res, &h, 0) ==
					       KIWI_ERR_MPA_RTR;
				}
			kiwi_hdr_init(&h, ops[i]);
			good = good && kiwi_mpa_rtr_check(&res, &h, 1) ==
				       KIWI_ERR_MPA_RTR;
			h.read_size = 1;
			good = good && (ops[i] != KIWI_RDMAP_READ_REQ ||
					kiwi_mpa_rtr_check(&res, &h, 0) ==
					KIWI_ERR_MPA_RTR);
			ok(good, "RTR zero-length %s: built, parsed, checked; any other first FPDU is LLP/0/0x07",
			   opname[ops[i]]);
			parsed_free(&o);
		}
		{
			struct kiwi_mpa_result res = { .p2p = false,
						       .rtr = KIWI_RTR_WRITE };
			struct kiwi_hdr h;

			kiwi_hdr_init(&h, KIWI_RDMAP_WRITE);
			ok(kiwi_mpa_rtr_hdr(&res, &h) == -EINVAL &&
			   kiwi_mpa_rtr_check(&res, &h, 0) == KIWI_ERR_MPA_RTR,
			   "no RTR without peer-to-peer mode");
			res.p2p = true;
			res.rtr = 3;
			ok(kiwi_mpa_rtr_hdr(&res, &h) == -EINVAL &&
			   kiwi_mpa_rtr_check(&res, &h, 0) == KIWI_ERR_MPA_RTR,
			   "no RTR for an ambiguous RTR type");
		}
	}

	/* the bytes siw 6.1 sends by default: revision 2, enhanced, P2P off */
	{
		static const u8 siw_req[] = {
			'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
			'F', 'r', 'a', 'm', 'e', 0x10, 0x02, 0x00, 0x04,
			0x00, 0x20, 0x00, 0x10
		};
		struct kiwi_mpa_cfg c = { .rev = 2, .ird = 64, .ord = 64 };
		struct kiwi_mpa_parser p;
		struct kiwi_mpa_result res;
		u8 rep[64];
		u32 used;
		int n;

		kiwi_mpa_parser_init(&p, false);
		kiwi_mpa_parse(&p, siw_req, sizeof(siw_req), &used);
		ok(kiwi_mpa_accept(&c, &p.f, &res) == KIWI_OK &&
		   res.enhanced && !res.crc && res.ord == 32 &&
		   res.peer_ord == 16 &&
		   (n = kiwi_mpa_rep_build(&res, false, NULL, 0, rep,
					   sizeof(rep))) == 24 &&
		   !memcmp(rep, KIWI_MPA_KEY_REP, 16) && rep[16] == 0x10 &&
		   rep[17] == 2 && rep[19] == 4 && rep[20] == 0 &&
		   rep[21] == 64 && rep[22] == 0 && rep[23] == 32,
		   "siw-style enhanced Request (IRD 32, ORD 16) answered with IRD 64, ORD 32");
	}
}

int main(void)
{
	test_crc();
	test_crc_copy();
	test_crc_run();
	test_err_table();
	test_opcodes();
	test_validation();
	test_terminate();
	test_encode_errors();
	test_framing();
	test_head_tail();
	test_markers();
	test_roundtrip();
	test_mpa_frames();
	test_mpa_negotiation();
	diag("%d passed, %d failed", tap_n - tap_failed, tap_failed);
	if (!getenv("KIWI_TAP_NOPLAN"))
		printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

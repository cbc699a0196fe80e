// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: MPA Request/Reply parsing and negotiation
 * (drivers/kiwi/proto/mpa.c). Properties checked beyond the sanitizers:
 * the parser's result does not depend on chunking; a responder's Reply to
 * any Request it parsed is itself parseable; and the initiator that sent
 * that Request reaches the same outcome from the Reply (or sees the
 * reject, or the missing RTR it asked for).
 *
 * Input: flags, chunk seed, local IRD, local ORD, then the frame.
 */
#include <stdlib.h>
#include <string.h>

#include "kiwi_proto.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

static int parse(struct kiwi_mpa_parser *p, bool reply, const u8 *b,
		 u32 len, u32 seed, u32 *consumed)
{
	u32 off = 0;
	int rv = 0;

	kiwi_mpa_parser_init(p, reply);
	while (off < len) {
		u32 n = len - off, used;

		if (seed) {
			seed = seed * 1103515245 + 12345;
			n = 1 + (seed >> 16) % 41;
			if (n > len - off)
				n = len - off;
		}
		rv = kiwi_mpa_parse(p, b + off, n, &used);
		check(used <= n);
		off += used;
		if (rv)
			break;
		check(used == n);
	}
	*consumed = off;
	return rv;
}

static void same_frame(const struct kiwi_mpa_frame *a,
		       const struct kiwi_mpa_frame *b)
{
	check(a->rev == b->rev && a->m == b->m && a->c == b->c &&
	      a->r == b->r && a->h == b->h && a->v2 == b->v2 &&
	      a->p2p == b->p2p && a->rtr == b->rtr && a->ird == b->ird &&
	      a->ord == b->ord && a->pd_len == b->pd_len &&
	      a->ulp_pd_len == b->ulp_pd_len &&
	      !memcmp(a->pd, b->pd, a->pd_len));
	check(a->ulp_pd >= a->pd &&
	      a->ulp_pd + a->ulp_pd_len <= a->pd + KIWI_MPA_PD_MAX);
}

static void responder(const struct kiwi_mpa_cfg *cfg,
		      const struct kiwi_mpa_frame *req, const u8 *pd,
		      u32 pd_len)
{
	static struct kiwi_mpa_parser p;
	struct kiwi_mpa_result rb, ra;
	struct kiwi_mpa_cfg ic = { 0 };
	enum kiwi_err eb, ea;
	u8 rep[600];
	u32 used;
	int n;

	eb = kiwi_mpa_accept(cfg, req, &rb);
	check(eb < KIWI_ERR_MAX);
	if (pd_len > KIWI_MPA_PD_MAX - (rb.enhanced ? 4 : 0))
		pd_len = KIWI_MPA_PD_MAX - (rb.enhanced ? 4 : 0);
	n = kiwi_mpa_rep_build(&rb, eb != KIWI_OK, pd, pd_len, rep,
			       sizeof(rep));
	check(n > 0);
	check(parse(&p, true, rep, n, 0, &used) == 1 && used == (u32)n);
	check(p.f.r == (eb != KIWI_OK) && p.f.ulp_pd_len == pd_len);

	/* the initiator that would have sent this Request */
	ic.rev = req->rev;
	ic.crc = req->c ? KIWI_MPA_CRC_PREFERRED : KIWI_MPA_CRC_OFF;
	ic.markers = req->m;
	ic.p2p = req->v2 && req->p2p;
	ic.rtr = req->rtr;
	ic.ird = req->ird;
	ic.ord = req->ord;
	ea = kiwi_mpa_connect(&ic, &p.f, &ra);
	if (eb != KIWI_OK) {
		check(ea == KIWI_ERR_MPA_REJECTED);
		return;
	}
	if (ic.p2p && !rb.p2p) {
		check(ea == KIWI_ERR_MPA_RTR);
		return;
	}
	check(ea == KIWI_OK);
	check(ra.rev == rb.rev && ra.crc == rb.crc &&
	      ra.markers_rx == rb.markers_tx &&
	      ra.markers_tx == rb.markers_rx &&
	      ra.enhanced == rb.enhanced && ra.p2p == rb.p2p &&
	      ra.rtr == rb.rtr);
	if (ra.enhanced)
		check(ra.ord <= rb.ird && rb.ord <= ra.ird);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kiwi_mpa_parser whole, chunked;
	struct kiwi_mpa_cfg cfg = { 0 };
	bool reply;
	u32 seed, used1, used2, len;
	int rv1, rv2;

	if (size < 4)
		return 0;
	reply = data[0] & 1;
	cfg.rev = data[0] & 2 ? 2 : 1;
	cfg.crc = ((data[0] >> 2) & 3) % 3;
	cfg.markers = data[0] & 0x10;
	cfg.p2p = cfg.rev == 2 && (data[0] & 0x20);
	cfg.rtr = (data[1] & 7) ? (data[1] & 7) : KIWI_RTR_WRITE;
	seed = data[1] | 1;
	cfg.ird = data[2];
	cfg.ord = data[3];
	data += 4;
	len = size - 4;

	rv1 = parse(&whole, reply, data, len, 0, &used1);
	rv2 = parse(&chunked, reply, data, len, seed, &used2);
	check(rv1 == rv2 && used1 == used2 && whole.err == chunked.err);
	if (rv1 < 0)
		check(whole.err != KIWI_OK &&
		      rv1 == -kiwi_err_desc(whole.err)->errnum);
	if (rv1 != 1)
		return 0;
	same_frame(&whole.f, &chunked.f);
	check(used1 == sizeof(struct kiwi_mpa_rr) + whole.f.pd_len);

	if (!reply) {
		responder(&cfg, &whole.f, data + used1, len - used1);
	} else {
		struct kiwi_mpa_result res;
		enum kiwi_err e = kiwi_mpa_connect(&cfg, &whole.f, &res);

		check(e < KIWI_ERR_MAX);
		if (e == KIWI_OK && res.enhanced)
			check(res.ord <= cfg.ord && res.ord <= whole.f.ird &&
			      (!cfg.p2p || res.rtr));
	}
	return 0;
}

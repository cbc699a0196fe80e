// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * MPA connection setup (RFC 5044 section 7, RFC 6581): Request and Reply
 * frames, the incremental frame parser, and the negotiation outcome for
 * the initiator and the responder.
 */
#include "kiwi_proto.h"

#define KIWI_MPA_RR_LEN		sizeof(struct kiwi_mpa_rr)
#define KIWI_MPA_V2_LEN		sizeof(struct kiwi_mpa_v2)

void kiwi_mpa_parser_init(struct kiwi_mpa_parser *p, bool want_reply)
{
	memset(p, 0, sizeof(*p));
	p->want_reply = want_reply;
}

static int kiwi_mpa_fail(struct kiwi_mpa_parser *p, enum kiwi_err err)
{
	p->err = err;
	return -kiwi_err_desc(err)->errnum;
}

static int kiwi_mpa_got_rr(struct kiwi_mpa_parser *p)
{
	const char *key = p->want_reply ? KIWI_MPA_KEY_REP : KIWI_MPA_KEY_REQ;
	struct kiwi_mpa_frame *f = &p->f;
	u16 bits = be16_to_cpu(p->rr.bits);

	if (memcmp(p->rr.key, key, KIWI_MPA_KEY_LEN))
		return kiwi_mpa_fail(p, KIWI_ERR_MPA_KEY);
	f->reply = p->want_reply;
	f->rev = bits & KIWI_MPA_REV_MASK;
	f->m = bits & KIWI_MPA_M;
	f->c = bits & KIWI_MPA_C;
	f->r = bits & KIWI_MPA_R;
	f->h = bits & KIWI_MPA_H;
	f->g = bits & KIWI_MPA_G;
	f->pd_len = be16_to_cpu(p->rr.pd_len);
	if (f->pd_len > KIWI_MPA_PD_MAX)
		return kiwi_mpa_fail(p, KIWI_ERR_MPA_PDLEN);
	return 0;
}

static int kiwi_mpa_got_pd(struct kiwi_mpa_parser *p)
{
	struct kiwi_mpa_frame *f = &p->f;

	f->ulp_pd = f->pd;
	f->ulp_pd_len = f->pd_len;
	/* H outside revision 2 is a reserved bit: ignored */
	if (f->rev != 2 || !f->h)
		return 1;
	if (f->pd_len < KIWI_MPA_V2_LEN)
		return kiwi_mpa_fail(p, KIWI_ERR_MPA_REQREP);
	{
		u16 ird = (f->pd[0] << 8) | f->pd[1];
		u16 ord = (f->pd[2] << 8) | f->pd[3];

		f->v2 = true;
		f->ird = ird & KIWI_MPA_V2_MASK;
		f->ord = ord & KIWI_MPA_V2_MASK;
		f->p2p = ird & KIWI_MPA_V2_P2P;
		f->rtr = 0;
		if (ird & KIWI_MPA_V2_RTR_SEND)
			f->rtr |= KIWI_RTR_SEND;
		if (ord & KIWI_MPA_V2_RTR_WRITE)
			f->rtr |= KIWI_RTR_WRITE;
		if (ord & KIWI_MPA_V2_RTR_READ)
			f->rtr |= KIWI_RTR_READ;
	}
	f->ulp_pd = f->pd + KIWI_MPA_V2_LEN;
	f->ulp_pd_len = f->pd_len - KIWI_MPA_V2_LEN;
	return 1;
}

int kiwi_mpa_parse(struct kiwi_mpa_parser *p, const u8 *buf, u32 len,
		   u32 *used)
{
	u32 i = 0;
	u32 take;
	int rv;

	*used = 0;
	if (p->err)
		return -kiwi_err_desc(p->err)->errnum;
	if (p->have < KIWI_MPA_RR_LEN) {
		take = KIWI_MPA_RR_LEN - p->have;
		if (take > len)
			take = len;
		memcpy((u8 *)&p->rr + p->have, buf, take);
		p->have += take;
		i += take;
		*used = i;
		if (p->have < KIWI_MPA_RR_LEN)
			return 0;
		rv = kiwi_mpa_got_rr(p);
		if (rv)
			return rv;
	}
	if (p->have > KIWI_MPA_RR_LEN + p->f.pd_len)
		return 1;	/* already complete */
	take = KIWI_MPA_RR_LEN + p->f.pd_len - p->have;
	if (take > len - i)
		take = len - i;
	memcpy(p->f.pd + (p->have - KIWI_MPA_RR_LEN), buf + i, take);
	p->have += take;
	i += take;
	*used = i;
	if (p->have < KIWI_MPA_RR_LEN + p->f.pd_len)
		return 0;
	/* mark complete so that further calls consume nothing */
	p->have++;
	return kiwi_mpa_got_pd(p);
}

u32 kiwi_mpa_ulp_pd_max(const struct kiwi_mpa_cfg *cfg)
{
	return KIWI_MPA_PD_MAX - (cfg->rev == 2 ? KIWI_MPA_V2_LEN : 0);
}

static u16 kiwi_mpa_clamp(u16 v)
{
	return v > KIWI_MPA_V2_MASK ? KIWI_MPA_V2_MASK : v;
}

static int kiwi_mpa_build(const char *key, u16 bits, bool v2, u16 ird,
			  u16 ord, const void *pd, u32 pd_len, u8 *buf,
			  u32 cap)
{
	struct kiwi_mpa_rr rr;
	u32 total = pd_len + (v2 ? KIWI_MPA_V2_LEN : 0);
	u8 *p = buf + KIWI_MPA_RR_LEN;

	if (total > KIWI_MPA_PD_MAX)
		return -EMSGSIZE;
	if (pd_len && !pd)
		return -EINVAL;
	if (cap < KIWI_MPA_RR_LEN + total)
		return -ENOSPC;
	memcpy(rr.key, key, KIWI_MPA_KEY_LEN);
	rr.bits = cpu_to_be16(bits);
	rr.pd_len = cpu_to_be16(total);
	memcpy(buf, &rr, KIWI_MPA_RR_LEN);
	if (v2) {
		p[0] = ird >> 8;
		p[1] = ird & 0xff;
		p[2] = ord >> 8;
		p[3] = ord & 0xff;
		p += KIWI_MPA_V2_LEN;
	}
	if (pd_len)
		memcpy(p, pd, pd_len);
	return KIWI_MPA_RR_LEN + total;
}

static void kiwi_mpa_v2_words(bool p2p, u8 rtr, u16 ird, u16 ord,
			      u16 *wird, u16 *word)
{
	*wird = kiwi_mpa_clamp(ird);
	*word = kiwi_mpa_clamp(ord);
	if (!p2p)
		return;
	*wird |= KIWI_MPA_V2_P2P;
	if (rtr & KIWI_RTR_SEND)
		*wird |= KIWI_MPA_V2_RTR_SEND;
	if (rtr & KIWI_RTR_WRITE)
		*word |= KIWI_MPA_V2_RTR_WRITE;
	if (rtr & KIWI_RTR_READ)
		*word |= KIWI_MPA_V2_RTR_READ;
}

int kiwi_mpa_req_build(const struct kiwi_mpa_cfg *cfg, const void *pd,
		       u32 pd_len, u8 *buf, u32 cap)
{
	u16 bits, wird = 0, word = 0;
	bool v2 = cfg->rev == 2;

	if (cfg->rev < 1 || cfg->rev > 2 || cfg->crc > KIWI_MPA_CRC_REQUIRED)
		return -EINVAL;
	if (cfg->p2p && (!v2 || !(cfg->rtr & KIWI_RTR_ALL)))
		return -EINVAL;
	bits = cfg->rev;
	if (cfg->markers)
		bits |= KIWI_MPA_M;
	if (cfg->crc != KIWI_MPA_CRC_OFF)
		bits |= KIWI_MPA_C;
	if (cfg->fpdu_max)
		bits |= KIWI_MPA_G;
	if (v2) {
		bits |= KIWI_MPA_H;
		kiwi_mpa_v2_words(cfg->p2p, cfg->rtr & KIWI_RTR_ALL, cfg->ird,
				  cfg->ord, &wird, &word);
	}
	return kiwi_mpa_build(KIWI_MPA_KEY_REQ, bits, v2, wird, word, pd,
			      pd_len, buf, cap);
}

int kiwi_mpa_rep_build(const struct kiwi_mpa_result *res, bool reject,
		       const void *pd, u32 pd_len, u8 *buf, u32 cap)
{
	u16 bits, wird = 0, word = 0;

	if (res->rev < 1 || res->rev > 2)
		return -EINVAL;
	bits = res->rev;
	if (res->markers_rx)
		bits |= KIWI_MPA_M;
	if (res->crc)
		bits |= KIWI_MPA_C;
	if (reject)
		bits |= KIWI_MPA_R;
	/* only where the Request offered it too, as siw's Reply does */
	if (res->fpdu_max && !reject)
		bits |= KIWI_MPA_G;
	if (res->enhanced) {
		bits |= KIWI_MPA_H;
		kiwi_mpa_v2_words(res->p2p, res->rtr, res->ird, res->ord,
				  &wird, &word);
	}
	return kiwi_mpa_build(KIWI_MPA_KEY_REP, bits, res->enhanced, wird,
			      word, pd, pd_len, buf, cap);
}

/* one RTR type out of a set, in the order siw and hardware prefer */
static u8 kiwi_rtr_pick(u8 set)
{
	if (set & KIWI_RTR_WRITE)
		return KIWI_RTR_WRITE;
	if (set & KIWI_RTR_READ)
		return KIWI_RTR_READ;
	return set & KIWI_RTR_SEND;
}

enum kiwi_err kiwi_mpa_accept(const struct kiwi_mpa_cfg *cfg,
			      const struct kiwi_mpa_frame *req,
			      struct kiwi_mpa_result *res)
{
	memset(res, 0, sizeof(*res));
	res->rev = cfg->rev == 1 ? 1 : 2;
	res->crc = req->c || cfg->crc != KIWI_MPA_CRC_OFF;
	res->markers_rx = cfg->markers;
	res->markers_tx = req->m;
	res->ird = cfg->ird;
	res->ord = cfg->ord;
	res->fpdu_max = req->g ? cfg->fpdu_max : 0;
	if (req->reply)
		return KIWI_ERR_MPA_KEY;
	/* the Reply of a reject still says which revision we speak */
	if (req->rev < 1 || req->rev > 2)
		return KIWI_ERR_MPA_REVISION;
	if (req->rev < res->rev)
		res->rev = req->rev;
	if (cfg->crc == KIWI_MPA_CRC_REQUIRED && !req->c)
		return KIWI_ERR_MPA_NOCRC;
	res->enhanced = res->rev == 2 && req->v2;
	if (!res->enhanced)
		return KIWI_OK;
	res->peer_ird = req->ird;
	res->peer_ord = req->ord;
	/* never more Reads outstanding than the initiator can take */
	if (res->ord > req->ird)
		res->ord = req->ird;
	if (req->p2p && cfg->p2p) {
		res->p2p = true;
		res->rtr = kiwi_rtr_pick(req->rtr & cfg->rtr);
		if (!res->rtr)
			return KIWI_ERR_MPA_RTR;
	}
	return KIWI_OK;
}

enum kiwi_err kiwi_mpa_connect(const struct kiwi_mpa_cfg *cfg,
			       const struct kiwi_mpa_frame *rep,
			       struct kiwi_mpa_result *res)
{
	memset(res, 0, sizeof(*res));
	res->rev = rep->rev;
	res->crc = rep->c || cfg->crc != KIWI_MPA_CRC_OFF;
	res->markers_rx = cfg->markers;
	res->markers_tx = rep->m;
	res->ird = cfg->ird;
	res->ord = cfg->ord;
	res->fpdu_max = rep->g ? cfg->fpdu_max : 0;
	if (!rep->reply)
		return KIWI_ERR_MPA_KEY;
	if (rep->r)
		return KIWI_ERR_MPA_REJECTED;
	if (rep->rev < 1 || rep->rev > cfg->rev)
		return KIWI_ERR_MPA_REVISION;
	if (cfg->crc == KIWI_MPA_CRC_REQUIRED && !rep->c)
		return KIWI_ERR_MPA_NOCRC;
	res->enhanced = cfg->rev == 2 && rep->v2;
	if (!res->enhanced)
		return cfg->p2p ? KIWI_ERR_MPA_RTR : KIWI_OK;
	res->peer_ird = rep->ird;
	res->peer_ord = rep->ord;
	/* the responder may not read from us more than we can serve */
	if (rep->ord > cfg->ird)
		return KIWI_ERR_MPA_IRD;
	if (res->ord > rep->ird)
		res->ord = rep->ird;
	if (cfg->p2p) {
		res->p2p = true;
		res->rtr = kiwi_rtr_pick(rep->rtr & cfg->rtr);
		if (!rep->p2p || !res->rtr)
			return KIWI_ERR_MPA_RTR;
	}
	return KIWI_OK;
}

/* the RDMAP opcode of the chosen RTR type, -1 for none */
static int kiwi_rtr_op(const struct kiwi_mpa_result *res)
{
	switch (res->rtr) {
	case KIWI_RTR_WRITE:
		return KIWI_RDMAP_WRITE;
	case KIWI_RTR_READ:
		return KIWI_RDMAP_READ_REQ;
	case KIWI_RTR_SEND:
		return KIWI_RDMAP_SEND;
	}
	return -1;
}

int kiwi_mpa_rtr_hdr(const struct kiwi_mpa_result *res, struct kiwi_hdr *h)
{
	int op = kiwi_rtr_op(res);

	if (!res->p2p || op < 0)
		return -EINVAL;
	kiwi_hdr_init(h, op);
	return 0;
}

enum kiwi_err kiwi_mpa_rtr_check(const struct kiwi_mpa_result *res,
				 const struct kiwi_hdr *h, u32 payload_len)
{
	int op = kiwi_rtr_op(res);

	if (!res->p2p || op < 0 || h->opcode != op || payload_len ||
	    !h->last || (op == KIWI_RDMAP_READ_REQ && h->read_size))
		return KIWI_ERR_MPA_RTR;
	return KIWI_OK;
}

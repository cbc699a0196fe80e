// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * DDP (RFC 5041) and RDMAP (RFC 5040) headers: encoding, decoding,
 * validation of every peer-controlled field, Terminate messages, and the
 * one table that maps each failure to its Terminate code.
 */
#include "kiwi_proto.h"

#define E(l, t, c, h, tm, e, n) \
	{ .layer = l, .etype = t, .ecode = c, .hdrs = h, .term = tm, \
	  .errnum = e, .name = n }
#define LLP KIWI_LAYER_LLP
#define DDP KIWI_LAYER_DDP
#define RDMAP KIWI_LAYER_RDMAP
#define H0 KIWI_TERM_HDR_NONE
#define HD KIWI_TERM_HDR_DDP
#define HR KIWI_TERM_HDR_RDMAP

/*
 * Layer / error type / error code from RFC 5040 section 7 (RDMAP),
 * RFC 5041 section 7.2 (DDP), RFC 5044 section 8 and RFC 6581 section 9
 * (MPA). Headers are copied into the Terminate unless their layout is
 * unknown (version and opcode errors) or the error is not about one
 * segment. MPA setup errors before full operation have no Terminate: the
 * Reply carries the R flag, or the connection is closed.
 */
static const struct kiwi_err_desc kiwi_err_table[KIWI_ERR_MAX] = {
	[KIWI_OK] = E(0, 0, 0, H0, false, 0, "ok"),
	[KIWI_ERR_MPA_CRC] = E(LLP, 0, 0x02, H0, true, EBADMSG, "mpa crc"),
	[KIWI_ERR_MPA_MARKER] =
		E(LLP, 0, 0x03, H0, true, EBADMSG, "mpa marker"),
	[KIWI_ERR_MPA_KEY] = E(LLP, 0, 0x04, H0, false, EPROTO, "mpa key"),
	[KIWI_ERR_MPA_PDLEN] =
		E(LLP, 0, 0x04, H0, false, EMSGSIZE, "mpa private data"),
	[KIWI_ERR_MPA_REVISION] =
		E(LLP, 0, 0x04, H0, false, EPROTONOSUPPORT, "mpa revision"),
	[KIWI_ERR_MPA_REQREP] =
		E(LLP, 0, 0x04, H0, false, EPROTO, "mpa request/reply"),
	[KIWI_ERR_MPA_NOCRC] =
		E(LLP, 0, 0x04, H0, false, EOPNOTSUPP, "mpa crc required"),
	[KIWI_ERR_MPA_REJECTED] =
		E(LLP, 0, 0x04, H0, false, ECONNREFUSED, "mpa rejected"),
	[KIWI_ERR_MPA_LOCAL] = E(LLP, 0, 0x05, H0, true, EIO, "mpa local"),
	[KIWI_ERR_MPA_IRD] =
		E(LLP, 0, 0x06, H0, true, ENOBUFS, "mpa insufficient ird"),
	[KIWI_ERR_MPA_RTR] =
		E(LLP, 0, 0x07, H0, true, EPROTO, "mpa no matching rtr"),
	[KIWI_ERR_DDP_T_STAG] = E(DDP, 1, 0x00, HD, true, EACCES, "ddp stag"),
	[KIWI_ERR_DDP_T_BOUNDS] =
		E(DDP, 1, 0x01, HD, true, EFAULT, "ddp bounds"),
	[KIWI_ERR_DDP_T_STAG_STREAM] =
		E(DDP, 1, 0x02, HD, true, EACCES, "ddp stag stream"),
	[KIWI_ERR_DDP_T_TO_WRAP] =
		E(DDP, 1, 0x03, HD, true, EFAULT, "ddp to wrap"),
	[KIWI_ERR_DDP_T_VERSION] =
		E(DDP, 1, 0x04, H0, true, EPROTO, "ddp tagged version"),
	[KIWI_ERR_DDP_U_QN] = E(DDP, 2, 0x01, HD, true, EPROTO, "ddp qn"),
	[KIWI_ERR_DDP_U_MSN_NOBUF] =
		E(DDP, 2, 0x02, HD, true, ENOBUFS, "ddp no buffer"),
	[KIWI_ERR_DDP_U_MSN_RANGE] =
		E(DDP, 2, 0x03, HD, true, EPROTO, "ddp msn range"),
	[KIWI_ERR_DDP_U_MO] = E(DDP, 2, 0x04, HD, true, EPROTO, "ddp mo"),
	[KIWI_ERR_DDP_U_TOOLONG] =
		E(DDP, 2, 0x05, HD, true, EMSGSIZE, "ddp too long"),
	[KIWI_ERR_DDP_U_VERSION] =
		E(DDP, 2, 0x06, H0, true, EPROTO, "ddp untagged version"),
	[KIWI_ERR_DDP_LOCAL] = E(DDP, 0, 0x00, H0, true, EIO, "ddp local"),
	[KIWI_ERR_RDMAP_LOCAL] = E(RDMAP, 0, 0x00, H0, true, EIO, "rdmap local"),
	[KIWI_ERR_RDMAP_STAG] =
		E(RDMAP, 1, 0x00, HR, true, EACCES, "rdmap stag"),
	[KIWI_ERR_RDMAP_BOUNDS] =
		E(RDMAP, 1, 0x01, HR, true, EFAULT, "rdmap bounds"),
	[KIWI_ERR_RDMAP_ACCESS] =
		E(RDMAP, 1, 0x02, HR, true, EACCES, "rdmap access"),
	[KIWI_ERR_RDMAP_STAG_STREAM] =
		E(RDMAP, 1, 0x03, HR, true, EACCES, "rdmap stag stream"),
	[KIWI_ERR_RDMAP_TO_WRAP] =
		E(RDMAP, 1, 0x04, HR, true, EFAULT, "rdmap to wrap"),
	[KIWI_ERR_RDMAP_PROT_INVALIDATE] =
		E(RDMAP, 1, 0x09, HR, true, EACCES, "rdmap invalidate prot"),
	[KIWI_ERR_RDMAP_PROT_UNSPEC] =
		E(RDMAP, 1, 0xff, HR, true, EACCES, "rdmap protection"),
	[KIWI_ERR_RDMAP_VERSION] =
		E(RDMAP, 2, 0x05, H0, true, EPROTO, "rdmap version"),
	[KIWI_ERR_RDMAP_OPCODE] =
		E(RDMAP, 2, 0x06, H0, true, EPROTO, "rdmap opcode"),
	[KIWI_ERR_RDMAP_STREAM] =
		E(RDMAP, 2, 0x07, HD, true, EIO, "rdmap stream"),
	[KIWI_ERR_RDMAP_GLOBAL] =
		E(RDMAP, 2, 0x08, H0, true, EIO, "rdmap global"),
	[KIWI_ERR_RDMAP_INVALIDATE] =
		E(RDMAP, 2, 0x09, HD, true, EINVAL, "rdmap invalidate"),
	[KIWI_ERR_RDMAP_UNSPEC] =
		E(RDMAP, 2, 0xff, H0, true, EPROTO, "rdmap unspecified"),
};

const struct kiwi_err_desc *kiwi_err_desc(enum kiwi_err err)
{
	if ((unsigned int)err >= KIWI_ERR_MAX)
		err = KIWI_ERR_RDMAP_LOCAL;
	return &kiwi_err_table[err];
}

static bool kiwi_op_tagged(u8 op)
{
	return op == KIWI_RDMAP_WRITE || op == KIWI_RDMAP_READ_RESP;
}

static u32 kiwi_op_qn(u8 op)
{
	if (op == KIWI_RDMAP_READ_REQ)
		return KIWI_QN_RREQ;
	if (op == KIWI_RDMAP_TERMINATE)
		return KIWI_QN_TERM;
	return KIWI_QN_SEND;
}

void kiwi_hdr_init(struct kiwi_hdr *h, enum kiwi_rdmap_op op)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->dv = KIWI_DDP_VERSION;
	h->rv = KIWI_RDMAP_VERSION;
	h->tagged = kiwi_op_tagged(op);
	h->last = true;
	if (!h->tagged) {
		h->qn = kiwi_op_qn(op);
		h->msn = 1;
	}
}

static u32 kiwi_term_body_len(const struct kiwi_term_info *t)
{
	u32 n = 0;

	if (t->m || t->d)
		n += 2;
	if (t->d)
		n += t->ddp_hdr_len;
	if (t->r)
		n += KIWI_RREQ_BODY;
	return n;
}

u32 kiwi_hdr_len(const struct kiwi_hdr *h)
{
	if (h->opcode > KIWI_RDMAP_OP_MASK)
		return 0;
	if (h->tagged)
		return KIWI_HDR_TAGGED;
	if (h->opcode == KIWI_RDMAP_READ_REQ)
		return KIWI_HDR_RREQ;
	if (h->opcode == KIWI_RDMAP_TERMINATE)
		return KIWI_HDR_TERM + kiwi_term_body_len(&h->term);
	return KIWI_HDR_UNTAGGED;
}

static u16 kiwi_ctrl_word(const struct kiwi_hdr *h)
{
	u16 c = h->opcode & KIWI_RDMAP_OP_MASK;

	if (h->tagged)
		c |= KIWI_DDP_T;
	if (h->last)
		c |= KIWI_DDP_L;
	c |= (h->dv << KIWI_DDP_DV_SHIFT) & KIWI_DDP_DV_MASK;
	c |= (h->rv << KIWI_RDMAP_RV_SHIFT) & KIWI_RDMAP_RV_MASK;
	return c;
}

static u32 kiwi_term_word(const struct kiwi_term_info *t)
{
	u32 w = (u32)(t->layer & 0xf) << KIWI_TERM_LAYER_SHIFT;

	w |= (u32)(t->etype & 0xf) << KIWI_TERM_ETYPE_SHIFT;
	w |= (u32)t->ecode << KIWI_TERM_ECODE_SHIFT;
	if (t->m)
		w |= KIWI_TERM_M;
	if (t->d)
		w |= KIWI_TERM_D;
	if (t->r)
		w |= KIWI_TERM_R;
	return w;
}

int kiwi_hdr_encode(const struct kiwi_hdr *h, u32 payload_len,
		    u8 *buf, u32 cap)
{
	union kiwi_wire_hdr w;
	u32 hl = kiwi_hdr_len(h);
	u32 ulpdu;

	if (!hl)
		return -EINVAL;
	if (h->opcode == KIWI_RDMAP_TERMINATE && payload_len)
		return -EINVAL;
	if (h->opcode == KIWI_RDMAP_TERMINATE && h->term.d &&
	    h->term.ddp_hdr_len != KIWI_HDR_TAGGED &&
	    h->term.ddp_hdr_len != KIWI_HDR_UNTAGGED)
		return -EINVAL;
	if (payload_len > 0xffff - hl)
		return -EMSGSIZE;
	ulpdu = hl + payload_len;
	if (cap < KIWI_MPA_LEN_SIZE + hl)
		return -ENOSPC;

	memset(&w, 0, sizeof(w));
	w.c.mpa_len = cpu_to_be16(ulpdu);
	w.c.ctrl = cpu_to_be16(kiwi_ctrl_word(h));
	if (h->tagged) {
		w.t.stag = cpu_to_be32(h->stag);
		w.t.to = cpu_to_be64(h->to);
	} else {
		w.u.rsvd = cpu_to_be32(h->inval_stag);
		w.u.qn = cpu_to_be32(h->qn);
		w.u.msn = cpu_to_be32(h->msn);
		w.u.mo = cpu_to_be32(h->mo);
		if (h->opcode == KIWI_RDMAP_READ_REQ) {
			w.rreq.sink_stag = cpu_to_be32(h->sink_stag);
			w.rreq.sink_to = cpu_to_be64(h->sink_to);
			w.rreq.size = cpu_to_be32(h->read_size);
			w.rreq.src_stag = cpu_to_be32(h->src_stag);
			w.rreq.src_to = cpu_to_be64(h->src_to);
		} else if (h->opcode == KIWI_RDMAP_TERMINATE) {
			const struct kiwi_term_info *t = &h->term;
			u8 *p = w.raw + sizeof(struct kiwi_wire_term);

			w.term.term = cpu_to_be32(kiwi_term_word(t));
			if (t->m || t->d) {
				p[0] = t->seg_len >> 8;
				p[1] = t->seg_len & 0xff;
				p += 2;
			}
			if (t->d) {
				memcpy(p, t->ddp_hdr, t->ddp_hdr_len);
				p += t->ddp_hdr_len;
			}
			if (t->r)
				memcpy(p, t->rdma_hdr, KIWI_RREQ_BODY);
		}
	}
	memcpy(buf, w.raw, KIWI_MPA_LEN_SIZE + hl);
	return KIWI_MPA_LEN_SIZE + hl;
}

/*
 * Header bytes (with the ULPDU Length) needed after the first four, or
 * an error if the control word or the length already rule the segment
 * out. Checked in the order the RFCs layer them: DDP version before
 * RDMAP version before opcode.
 */
enum kiwi_err kiwi_hdr_need(const union kiwi_wire_hdr *w, u32 *need)
{
	u16 ulpdu = be16_to_cpu(w->c.mpa_len);
	u16 ctrl = be16_to_cpu(w->c.ctrl);
	bool tagged = ctrl & KIWI_DDP_T;
	u8 op = ctrl & KIWI_RDMAP_OP_MASK;
	u32 hl;

	if (ulpdu < 2)
		return KIWI_ERR_RDMAP_UNSPEC;
	if (((ctrl & KIWI_DDP_DV_MASK) >> KIWI_DDP_DV_SHIFT) !=
	    KIWI_DDP_VERSION)
		return tagged ? KIWI_ERR_DDP_T_VERSION :
				KIWI_ERR_DDP_U_VERSION;
	if (((ctrl & KIWI_RDMAP_RV_MASK) >> KIWI_RDMAP_RV_SHIFT) !=
	    KIWI_RDMAP_VERSION)
		return KIWI_ERR_RDMAP_VERSION;
	if (op >= KIWI_RDMAP_MAX || tagged != kiwi_op_tagged(op))
		return KIWI_ERR_RDMAP_OPCODE;
	if (tagged)
		hl = KIWI_HDR_TAGGED;
	else if (op == KIWI_RDMAP_READ_REQ)
		hl = KIWI_HDR_RREQ;
	else if (op == KIWI_RDMAP_TERMINATE)
		hl = KIWI_HDR_TERM;
	else
		hl = KIWI_HDR_UNTAGGED;
	if (ulpdu < hl)
		return KIWI_ERR_RDMAP_UNSPEC;
	if (op == KIWI_RDMAP_TERMINATE) {
		/* the whole Terminate is header: it carries no ULP data */
		if (ulpdu > KIWI_TERM_ULPDU_MAX)
			return KIWI_ERR_DDP_U_TOOLONG;
		hl = ulpdu;
	}
	*need = KIWI_MPA_LEN_SIZE + hl;
	return KIWI_OK;
}

/*
 * A received Terminate only explains why the stream is going away, so
 * take what is there: siw, for one, sets R for errors on Sends and then
 * copies no RDMAP header. Flags end up saying what was really present.
 */
static void kiwi_term_decode(struct kiwi_term_info *t, const u8 *p, u32 len)
{
	if ((t->m || t->d) && len >= 2) {
		t->seg_len = (p[0] << 8) | p[1];
		p += 2;
		len -= 2;
	} else {
		t->m = false;
		t->d = false;
	}
	if (t->d && len) {
		/* the copied header says itself whether it is tagged */
		t->ddp_hdr_len = (p[0] & (KIWI_DDP_T >> 8)) ?
				 KIWI_HDR_TAGGED : KIWI_HDR_UNTAGGED;
	}
	if (t->d && len >= t->ddp_hdr_len && t->ddp_hdr_len) {
		memcpy(t->ddp_hdr, p, t->ddp_hdr_len);
		p += t->ddp_hdr_len;
		len -= t->ddp_hdr_len;
	} else {
		t->d = false;
		t->ddp_hdr_len = 0;
	}
	if (t->r && len >= KIWI_RREQ_BODY)
		memcpy(t->rdma_hdr, p, KIWI_RREQ_BODY);
	else
		t->r = false;
}

/*
 * Decode a complete header (have bytes including the ULPDU Length, as
 * sized by kiwi_hdr_need). Field validation is kiwi_ddp_check's job.
 */
enum kiwi_err kiwi_hdr_decode(struct kiwi_hdr *h,
			      const union kiwi_wire_hdr *w, u32 have)
{
	u16 ctrl = be16_to_cpu(w->c.ctrl);

	memset(h, 0, sizeof(*h));
	h->opcode = ctrl & KIWI_RDMAP_OP_MASK;
	h->tagged = ctrl & KIWI_DDP_T;
	h->last = ctrl & KIWI_DDP_L;
	h->dv = (ctrl & KIWI_DDP_DV_MASK) >> KIWI_DDP_DV_SHIFT;
	h->rv = (ctrl & KIWI_RDMAP_RV_MASK) >> KIWI_RDMAP_RV_SHIFT;
	if (h->tagged) {
		if (have < KIWI_MPA_LEN_SIZE + KIWI_HDR_TAGGED)
			return KIWI_ERR_RDMAP_UNSPEC;
		h->stag = be32_to_cpu(w->t.stag);
		h->to = be64_to_cpu(w->t.to);
		return KIWI_OK;
	}
	if (have < KIWI_MPA_LEN_SIZE + KIWI_HDR_UNTAGGED)
		return KIWI_ERR_RDMAP_UNSPEC;
	h->inval_stag = be32_to_cpu(w->u.rsvd);
	h->qn = be32_to_cpu(w->u.qn);
	h->msn = be32_to_cpu(w->u.msn);
	h->mo = be32_to_cpu(w->u.mo);
	if (h->opcode == KIWI_RDMAP_READ_REQ) {
		if (have < KIWI_MPA_LEN_SIZE + KIWI_HDR_RREQ)
			return KIWI_ERR_RDMAP_UNSPEC;
		h->sink_stag = be32_to_cpu(w->rreq.sink_stag);
		h->sink_to = be64_to_cpu(w->rreq.sink_to);
		h->read_size = be32_to_cpu(w->rreq.size);
		h->src_stag = be32_to_cpu(w->rreq.src_stag);
		h->src_to = be64_to_cpu(w->rreq.src_to);
	} else if (h->opcode == KIWI_RDMAP_TERMINATE) {
		struct kiwi_term_info *t = &h->term;
		u32 word;

		if (have < KIWI_MPA_LEN_SIZE + KIWI_HDR_TERM)
			return KIWI_ERR_RDMAP_UNSPEC;
		word = be32_to_cpu(w->term.term);
		t->layer = word >> KIWI_TERM_LAYER_SHIFT;
		t->etype = (word >> KIWI_TERM_ETYPE_SHIFT) & 0xf;
		t->ecode = (word >> KIWI_TERM_ECODE_SHIFT) & 0xff;
		t->m = word & KIWI_TERM_M;
		t->d = word & KIWI_TERM_D;
		t->r = word & KIWI_TERM_R;
		kiwi_term_decode(t, w->raw + sizeof(w->term),
				 have - sizeof(w->term));
	}
	return KIWI_OK;
}

/* does [to, to + len) run past the end of the 64-bit offset space? */
static bool kiwi_wraps64(u64 to, u32 len)
{
	return len && to > ~0ULL - (len - 1);
}

enum kiwi_err kiwi_ddp_check(struct kiwi_rxq *qs, const struct kiwi_hdr *h,
			     u32 payload_len)
{
	struct kiwi_rxq *q;

	if (h->dv != KIWI_DDP_VERSION)
		return h->tagged ? KIWI_ERR_DDP_T_VERSION :
				   KIWI_ERR_DDP_U_VERSION;
	if (h->rv != KIWI_RDMAP_VERSION)
		return KIWI_ERR_RDMAP_VERSION;
	if (h->opcode >= KIWI_RDMAP_MAX || h->tagged != kiwi_op_tagged(h->opcode))
		return KIWI_ERR_RDMAP_OPCODE;
	if (h->tagged)
		return kiwi_wraps64(h->to, payload_len) ?
			KIWI_ERR_DDP_T_TO_WRAP : KIWI_OK;

	if (h->qn != kiwi_op_qn(h->opcode))
		return KIWI_ERR_DDP_U_QN;
	q = &qs[h->qn];
	if (h->msn != q->msn)
		return KIWI_ERR_DDP_U_MSN_RANGE;
	if (h->mo != q->mo)
		return KIWI_ERR_DDP_U_MO;
	if (q->open && h->opcode != q->opcode)
		return KIWI_ERR_RDMAP_OPCODE;
	if ((u64)h->mo + payload_len > 0xffffffffULL)
		return KIWI_ERR_DDP_U_TOOLONG;
	if (h->opcode == KIWI_RDMAP_READ_REQ) {
		/* a Read Request is one segment with no ULP payload */
		if (!h->last || payload_len)
			return KIWI_ERR_DDP_U_TOOLONG;
		if (kiwi_wraps64(h->src_to, h->read_size) ||
		    kiwi_wraps64(h->sink_to, h->read_size))
			return KIWI_ERR_RDMAP_TO_WRAP;
	}
	if (h->opcode == KIWI_RDMAP_TERMINATE && !h->last)
		return KIWI_ERR_DDP_U_TOOLONG;

	if (h->last) {
		q->msn++;
		q->mo = 0;
		q->open = false;
	} else {
		q->mo += payload_len;
		q->opcode = h->opcode;
		q->open = true;
	}
	return KIWI_OK;
}

void kiwi_term_build(struct kiwi_hdr *h, enum kiwi_err err,
		     const u8 *bad, u32 bad_len, u32 msn)
{
	const struct kiwi_err_desc *d = kiwi_err_desc(err);
	struct kiwi_term_info *t = &h->term;
	u32 dlen;

	kiwi_hdr_init(h, KIWI_RDMAP_TERMINATE);
	h->msn = msn;
	t->layer = d->layer;
	t->etype = d->etype;
	t->ecode = d->ecode;
	if (d->hdrs == KIWI_TERM_HDR_NONE || !bad || bad_len < 4)
		return;
	dlen = (bad[2] & (KIWI_DDP_T >> 8)) ? KIWI_HDR_TAGGED :
					       KIWI_HDR_UNTAGGED;
	if (bad_len < KIWI_MPA_LEN_SIZE + dlen)
		return;
	t->m = true;
	t->d = true;
	t->seg_len = (bad[0] << 8) | bad[1];
	t->ddp_hdr_len = dlen;
	memcpy(t->ddp_hdr, bad + KIWI_MPA_LEN_SIZE, dlen);
	if (d->hdrs == KIWI_TERM_HDR_RDMAP && dlen == KIWI_HDR_UNTAGGED &&
	    (bad[3] & KIWI_RDMAP_OP_MASK) == KIWI_RDMAP_READ_REQ &&
	    bad_len >= KIWI_MPA_LEN_SIZE + KIWI_HDR_RREQ) {
		t->r = true;
		memcpy(t->rdma_hdr, bad + KIWI_MPA_LEN_SIZE + KIWI_HDR_UNTAGGED,
		       KIWI_RREQ_BODY);
	}
}

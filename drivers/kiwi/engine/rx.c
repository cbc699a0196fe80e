// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi: the receive engine.  FPDUs are parsed out of the socket's receive
 * queue by tcp_read_sock() in sk_data_ready, or by rx_work on another CPU
 * for bulk arrivals; both own the socket and hold sk_callback_lock.  Every
 * destination is validated at the segment's header, then payload is
 * copied once with its CRC.  Any violation sends a Terminate, moves the
 * QP to ERR and stops parsing.  RQ, ORD and IRD are shared under qp->lock.
 */
#include <linux/debugfs.h>
#include <linux/skbuff.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "engine.h"
#include "core/kiwi_trace.h"

enum {
	KIWI_RXK_NONE,
	KIWI_RXK_WRITE,		/* tagged, rx_mr referenced here */
	KIWI_RXK_RRESP,		/* tagged, the ORD entry's sink MR */
	KIWI_RXK_SEND,
	KIWI_RXK_RREQ,
	KIWI_RXK_TERM,
	KIWI_RXK_SKIP,		/* zero-length RTR: nothing to place */
};

/* RDMAP remote protection errors and DDP tagged buffer errors */
static bool kiwi_term_is_access(u8 layer, u8 etype)
{
	return etype == 1 && (layer == KIWI_LAYER_RDMAP ||
			      layer == KIWI_LAYER_DDP);
}

/* Stop receiving for good: Terminate (by tx), QP to ERR.  Any context. */
void kiwi_rx_fail(struct kiwi_qp *qp, enum kiwi_err err, bool with_hdr)
{
	const struct kiwi_err_desc *d = kiwi_err_desc(err);
	const u8 *raw = NULL;
	u32 len = 0;

	set_bit(KIWI_EF_RX_DEAD, &qp->eflags);
	if (with_hdr)
		raw = kiwi_rx_raw_hdr(qp->rx, &len);
	pr_debug("kiwi: qp %u: %s\n", qp->ibqp.qp_num, d->name);
	if (!test_and_set_bit(KIWI_EF_TERM_CLAIM, &qp->eflags)) {
		if (d->term) {
			/* tx fills in the MSN of its Terminate queue */
			kiwi_term_build(&qp->txs->term, err, raw, len, 0);
			set_bit(KIWI_EF_TERM, &qp->eflags);
			kiwi_tx_kick(qp);
		} else if (qp->conn) {
			kiwi_conn_llp_event(qp->conn, KIWI_LLP_RESET);
		}
	}
	kiwi_qp_to_err(qp, kiwi_term_is_access(d->layer, d->etype) ?
		       IB_EVENT_QP_ACCESS_ERR : IB_EVENT_QP_FATAL);
}

static void kiwi_rx_wc(struct kiwi_qp *qp, u64 id, u32 bytes, u8 status,
		       u8 flags, u32 inval)
{
	struct kiwi_wc wc = {
		.id = id,
		.bytes = bytes,
		.qp_id = qp->ibqp.qp_num,
		.inval_stag = inval,
		.opcode = KIWI_OP_RECEIVE,
		.status = status,
		.flags = flags,
	};

	kiwi_cq_push(qp->rcq, &wc);
}

/* The Receive being filled is done: its MRs go, then its completion. */
static void kiwi_rx_send_end(struct kiwi_qp *qp, u8 status, u8 flags,
			     u32 inval)
{
	struct kiwi_rx_send *rs = qp->rxs;

	kiwi_mrs_put(rs->mr);
	rs->active = false;
	kiwi_rx_wc(qp, rs->rqe.id, rs->placed, status, flags, inval);
}

/* Take the next RQE or SRQE for a new Send message and validate it. */
static enum kiwi_err kiwi_rx_take_rqe(struct kiwi_qp *qp)
{
	struct kiwi_rx_send *rs = qp->rxs;
	struct kiwi_rqe *slot;
	unsigned long flags;
	u64 total = 0;
	u32 i, nsge, max_sge = qp->max_recv_sge;

	if (qp->srq) {
		if (kiwi_srq_take(qp->srq, &rs->rqe))
			return KIWI_ERR_DDP_U_MSN_NOBUF;
		max_sge = qp->srq->max_sge;
	} else {
		spin_lock_irqsave(&qp->lock, flags);
		slot = kiwi_ring_slot(&qp->rq, qp->rq_cons);
		if (!qp->rq.num ||
		    !(kiwi_slot_flags(&slot->flags) & KIWI_WQE_VALID)) {
			spin_unlock_irqrestore(&qp->lock, flags);
			return KIWI_ERR_DDP_U_MSN_NOBUF;
		}
		/* one copy of a slot the process may still scribble on */
		memcpy(&rs->rqe, slot, sizeof(rs->rqe));
		kiwi_slot_set(&slot->flags, 0);
		qp->rq_cons++;
		spin_unlock_irqrestore(&qp->lock, flags);
	}
	rs->active = true;
	rs->placed = 0;
	rs->sge = 0;
	rs->sge_off = 0;
	/* a process may write any count into its ring: held to the caps */
	nsge = rs->rqe.num_sge;
	if (nsge > max_sge)
		goto bad;
	for (i = 0; i < nsge; i++) {
		struct kiwi_sge *sge = &rs->rqe.sge[i];
		struct kiwi_mr *mr;

		total += sge->length;
		if (!sge->length)
			continue;
		mr = kiwi_mr_get(qp->kdev, sge->lkey);
		if (!mr)
			goto bad;
		rs->mr[i] = mr;
		if (kiwi_mr_check(mr, qp->ibqp.pd, sge->addr, sge->length,
				  IB_ACCESS_LOCAL_WRITE, &rs->gen[i]))
			goto bad;
	}
	if (total > KIWI_MAX_MSG_SIZE)
		goto bad;
	rs->rqe.num_sge = nsge;
	rs->total = total;
	/* a kernel QP's own receives were traced when posted */
	if (qp->srq || qp->user)
		trace_kiwi_wr_post(qp->ibqp.qp_num, true, true, rs->rqe.id,
				   KIWI_OP_RECEIVE, total);
	return KIWI_OK;
bad:
	kiwi_rx_send_end(qp, IB_WC_LOC_PROT_ERR, 0, 0);
	return KIWI_ERR_DDP_LOCAL;
}

static enum kiwi_err kiwi_rx_mr_err(int rv, bool rdmap)
{
	switch (rv) {
	case -EPERM:
		return rdmap ? KIWI_ERR_RDMAP_STAG_STREAM :
			KIWI_ERR_DDP_T_STAG_STREAM;
	case -EACCES:
		return KIWI_ERR_RDMAP_ACCESS;
	case -EFAULT:
		return rdmap ? KIWI_ERR_RDMAP_BOUNDS : KIWI_ERR_DDP_T_BOUNDS;
	default:
		return rdmap ? KIWI_ERR_RDMAP_STAG : KIWI_ERR_DDP_T_STAG;
	}
}

static enum kiwi_err kiwi_rx_rresp(struct kiwi_qp *qp,
				   const struct kiwi_hdr *h, u32 plen)
{
	enum kiwi_err err = KIWI_OK;
	struct kiwi_ord_ent *e;
	unsigned long flags;

	if (test_bit(KIWI_EF_RTR_RRESP, &qp->eflags)) {
		/* the answer to our zero-length Read RTR */
		clear_bit(KIWI_EF_RTR_RRESP, &qp->eflags);
		if (plen || !h->last)
			return KIWI_ERR_DDP_T_BOUNDS;
		qp->rx_kind = KIWI_RXK_SKIP;
		return KIWI_OK;
	}
	spin_lock_irqsave(&qp->lock, flags);
	if (qp->ord_tail == qp->ord_head) {
		err = KIWI_ERR_RDMAP_OPCODE;	/* no Read outstanding */
		goto out;
	}
	e = &qp->ordq[qp->ord_tail & qp->ord_mask];
	/* only within the sink the oldest Read Request named, in order */
	if (h->stag != e->sink_stag) {
		err = KIWI_ERR_DDP_T_STAG;
		goto out;
	}
	if (h->to != e->sink_to + e->placed || plen > e->len - e->placed ||
	    (h->last && e->placed + plen != e->len)) {
		err = KIWI_ERR_DDP_T_BOUNDS;
		goto out;
	}
	/* the sink as checked when the Read was posted, still mapped so */
	if (plen && (!e->mr || !kiwi_mr_current(e->mr, e->gen))) {
		err = KIWI_ERR_DDP_T_STAG;
		goto out;
	}
	qp->rx_mr = e->mr;
	if (e->mr && e->mr->type == KIWI_MR_FAST_REG)
		kiwi_stat_inc(qp->kdev, KIWI_STAT_FASTREG_PLACED);
	qp->rx_gen = e->gen;
	qp->rx_to = h->to;
	qp->rx_kind = KIWI_RXK_RRESP;
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	return err;
}

static enum kiwi_err kiwi_rx_rreq(struct kiwi_qp *qp,
				  const struct kiwi_hdr *h)
{
	struct kiwi_ird_ent *e = &qp->rx_rreq;
	struct kiwi_mr *mr = NULL;
	unsigned long flags;
	u32 gen = 0;
	bool full;
	int rv;

	/* the zero-length Read RTR is not counted against IRD */
	spin_lock_irqsave(&qp->lock, flags);
	full = !qp->rx_rtr &&
		qp->ird_head - qp->ird_tail >= qp->ird_max;
	spin_unlock_irqrestore(&qp->lock, flags);
	if (full)
		return KIWI_ERR_RDMAP_STREAM;
	if (h->read_size) {
		/* the QP's rights first: its access flags may deny Reads */
		if (!(READ_ONCE(qp->access) & IB_ACCESS_REMOTE_READ))
			return KIWI_ERR_RDMAP_ACCESS;
		mr = kiwi_mr_get(qp->kdev, h->src_stag);
		if (!mr)
			return KIWI_ERR_RDMAP_STAG;
		rv = kiwi_mr_check(mr, qp->ibqp.pd, h->src_to, h->read_size,
				   IB_ACCESS_REMOTE_READ, &gen);
		if (rv) {
			kiwi_mr_put(mr);
			return kiwi_rx_mr_err(rv, true);
		}
	}
	e->mr = mr;
	e->gen = gen;
	e->src_to = h->src_to;
	e->sink_stag = h->sink_stag;
	e->sink_to = h->sink_to;
	e->len = h->read_size;
	e->sent = 0;
	qp->rx_kind = KIWI_RXK_RREQ;
	return KIWI_OK;
}

/*
 * The MR of stag, referenced, if the QP may invalidate it: remotely only
 * a fast-registration MR of its PD (a user MR could never be valid
 * again), locally any of its PD but the DMA MR.  Else NULL.
 */
static struct kiwi_mr *kiwi_rx_inval_mr(struct kiwi_qp *qp, u32 stag,
					bool remote)
{
	struct kiwi_mr *mr = kiwi_mr_get(qp->kdev, stag);

	if (mr && mr->ibmr.pd == qp->ibqp.pd &&
	    (remote ? mr->type == KIWI_MR_FAST_REG : mr->type != KIWI_MR_DMA))
		return mr;
	if (mr)
		kiwi_mr_put(mr);
	return NULL;
}

/* p2p responder: the first FPDU must be the agreed RTR */
static enum kiwi_err kiwi_rx_hdr_rtr(struct kiwi_qp *qp,
				     const struct kiwi_hdr *h, u32 plen)
{
	enum kiwi_err err;

	err = kiwi_mpa_rtr_check(&qp->mpa, h, plen);
	if (err)
		return err;
	qp->rx_rtr = true;
	trace_kiwi_rtr_rcvd(qp->ibqp.qp_num, h->opcode);
	if (h->opcode == KIWI_RDMAP_READ_REQ)
		return kiwi_rx_rreq(qp, h);
	qp->rx_kind = KIWI_RXK_SKIP;
	return KIWI_OK;
}

/* a tagged Write: the MR it names, checked for the whole segment */
static enum kiwi_err kiwi_rx_hdr_write(struct kiwi_qp *qp,
				       const struct kiwi_hdr *h, u32 plen)
{
	struct kiwi_mr *mr;
	int rv;

	/* refused as by an MR without the right: access violation */
	if (!(READ_ONCE(qp->access) & IB_ACCESS_REMOTE_WRITE))
		return KIWI_ERR_RDMAP_ACCESS;
	mr = kiwi_mr_get(qp->kdev, h->stag);
	if (!mr)
		return KIWI_ERR_DDP_T_STAG;
	rv = kiwi_mr_check(mr, qp->ibqp.pd, h->to, plen,
			   IB_ACCESS_REMOTE_WRITE, &qp->rx_gen);
	if (rv) {
		kiwi_mr_put(mr);
		return kiwi_rx_mr_err(rv, false);
	}
	qp->rx_mr = mr;
	if (mr->type == KIWI_MR_FAST_REG)
		kiwi_stat_inc(qp->kdev, KIWI_STAT_FASTREG_PLACED);
	qp->rx_to = h->to;
	qp->rx_kind = KIWI_RXK_WRITE;
	return KIWI_OK;
}

/* a Send of any kind: the RQE it lands in, room there, an invalidation */
static enum kiwi_err kiwi_rx_hdr_send(struct kiwi_qp *qp,
				      const struct kiwi_hdr *h, u32 plen)
{
	struct kiwi_mr *mr;
	enum kiwi_err err;

	if (!qp->rxs->active) {
		err = kiwi_rx_take_rqe(qp);
		if (err)
			return err;
	}
	if (plen > qp->rxs->total - qp->rxs->placed) {
		/* the RQE completes with its own error, then flush */
		kiwi_rx_send_end(qp, IB_WC_LOC_LEN_ERR, 0, 0);
		return KIWI_ERR_DDP_U_TOOLONG;
	}
	/* a refused invalidation places nothing of the last segment */
	if (h->last && (h->opcode == KIWI_RDMAP_SEND_INV ||
			h->opcode == KIWI_RDMAP_SEND_SE_INV)) {
		mr = kiwi_rx_inval_mr(qp, h->inval_stag, true);
		if (!mr) {
			kiwi_rx_send_end(qp, IB_WC_REM_INV_REQ_ERR, 0, 0);
			return KIWI_ERR_RDMAP_INVALIDATE;
		}
		kiwi_mr_put(mr);
	}
	qp->rx_kind = KIWI_RXK_SEND;
	return KIWI_OK;
}

/* A segment's header: find and check its destination. */
static enum kiwi_err kiwi_rx_hdr(struct kiwi_qp *qp, const struct kiwi_hdr *h,
				 u32 plen)
{
	qp->rx_kind = KIWI_RXK_NONE;
	qp->rx_bytes = 0;
	if (test_bit(KIWI_EF_HOLD, &qp->eflags))
		return kiwi_rx_hdr_rtr(qp, h, plen);

	switch (h->opcode) {
	case KIWI_RDMAP_WRITE:
		return kiwi_rx_hdr_write(qp, h, plen);
	case KIWI_RDMAP_READ_RESP:
		return kiwi_rx_rresp(qp, h, plen);
	case KIWI_RDMAP_SEND:
	case KIWI_RDMAP_SEND_INV:
	case KIWI_RDMAP_SEND_SE:
	case KIWI_RDMAP_SEND_SE_INV:
		return kiwi_rx_hdr_send(qp, h, plen);
	case KIWI_RDMAP_READ_REQ:
		return kiwi_rx_rreq(qp, h);
	case KIWI_RDMAP_TERMINATE:
		qp->rx_kind = KIWI_RXK_TERM;
		return KIWI_OK;
	default:
		return KIWI_ERR_RDMAP_OPCODE;
	}
}

/*
 * Place a piece of the FPDU's payload with its CRC, through the mapping its
 * MR had when the header was checked, or stop with an error.
 */
static enum kiwi_err kiwi_rx_place(struct kiwi_qp *qp, const u8 *src,
				   u32 len)
{
	struct kiwi_rx_send *rs = qp->rxs;
	u32 contig, n;
	void *dst;

	qp->rx_bytes += len;
	switch (qp->rx_kind) {
	case KIWI_RXK_WRITE:
	case KIWI_RXK_RRESP:
		while (len) {
			dst = kiwi_mr_kaddr(qp->rx_mr, qp->rx_gen, qp->rx_to,
					    &contig);
			if (!dst)
				return KIWI_ERR_DDP_T_STAG;
			n = min(len, contig);
			kiwi_rx_copy_data(qp->rx, dst, src, n);
			qp->rx_to += n;
			src += n;
			len -= n;
		}
		break;
	case KIWI_RXK_SEND:
		while (len) {
			struct kiwi_sge *sge = &rs->rqe.sge[rs->sge];

			if (rs->sge_off == sge->length) {
				rs->sge++;
				rs->sge_off = 0;
				continue;
			}
			dst = kiwi_mr_kaddr(rs->mr[rs->sge], rs->gen[rs->sge],
					    sge->addr + rs->sge_off, &contig);
			if (!dst) {
				/* the receive's own buffer went: its error */
				kiwi_rx_run_end(qp->rx);
				kiwi_rx_send_end(qp, IB_WC_LOC_PROT_ERR, 0, 0);
				return KIWI_ERR_DDP_LOCAL;
			}
			n = min3(len, contig, sge->length - rs->sge_off);
			kiwi_rx_copy_data(qp->rx, dst, src, n);
			rs->sge_off += n;
			rs->placed += n;
			src += n;
			len -= n;
		}
		break;
	default:
		/* nothing to place; the CRC still covers it */
		kiwi_rx_crc_data(qp->rx, src, len);
		break;
	}
	return KIWI_OK;
}

/* Invalidate stag for the QP if kiwi_rx_inval_mr() allows it. */
static bool kiwi_rx_invalidate(struct kiwi_qp *qp, u32 stag, bool remote)
{
	struct kiwi_mr *mr = kiwi_rx_inval_mr(qp, stag, remote);

	if (!mr)
		return false;
	kiwi_mr_invalidate(mr);
	kiwi_mr_put(mr);
	kiwi_stat_inc(qp->kdev, remote ? KIWI_STAT_REMOTE_INVS :
		      KIWI_STAT_LOCAL_INVS);
	return true;
}

static int kiwi_rx_cpu(void);

/*
 * debugfs kiwi/rresp_defer: Responses of this many bytes or more to a Read
 * Request that came in a softirq are sent from another CPU.  0: never.
 */
static unsigned int kiwi_rresp_defer = 4096;

static void kiwi_rx_kick_rresp(struct kiwi_qp *qp, u32 len)
{
	unsigned int limit = READ_ONCE(kiwi_rresp_defer);

	if (limit && len >= limit && !in_task() && num_online_cpus() > 1) {
		kiwi_stat_inc(qp->kdev, KIWI_STAT_RRESP_DEFERRED);
		kiwi_tx_kick_on(qp, kiwi_rx_cpu());
	} else {
		kiwi_tx_kick(qp);
	}
}

/* a Read Response is placed; at the last one the oldest Read is done */
static void kiwi_rx_rresp_done(struct kiwi_qp *qp, const struct kiwi_hdr *h)
{
	struct kiwi_ord_ent *e;
	struct kiwi_mr *mr = NULL;
	unsigned long flags;
	u8 status = IB_WC_SUCCESS;

	/* the entry at ord_tail is rx's until rx moves ord_tail */
	e = &qp->ordq[qp->ord_tail & qp->ord_mask];
	if (h->last && e->opcode == KIWI_OP_READ_LOCAL_INV &&
	    !kiwi_rx_invalidate(qp, e->inval_stag, false))
		status = IB_WC_MW_BIND_ERR;
	spin_lock_irqsave(&qp->lock, flags);
	e->placed += qp->rx_bytes;
	if (h->last) {
		mr = e->mr;
		e->mr = NULL;
		kiwi_pend_read_done(qp, e->pend, status);
		qp->ord_tail++;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	qp->rx_mr = NULL;
	if (!h->last)
		return;
	if (mr)
		kiwi_mr_put(mr);
	kiwi_pend_drain(qp);
	/* an ORD slot is free, a fence may lift, an ACK may be waited for */
	kiwi_tx_kick(qp);
}

static void kiwi_rx_send_done(struct kiwi_qp *qp, const struct kiwi_hdr *h)
{
	u8 flags = 0;
	u32 inval = 0;
	bool ok = true;

	if (!h->last)
		return;
	if (h->opcode == KIWI_RDMAP_SEND_SE ||
	    h->opcode == KIWI_RDMAP_SEND_SE_INV)
		flags |= KIWI_CQE_SOLICITED;
	if (h->opcode == KIWI_RDMAP_SEND_INV ||
	    h->opcode == KIWI_RDMAP_SEND_SE_INV) {
		inval = h->inval_stag;
		ok = kiwi_rx_invalidate(qp, inval, true);
		flags |= KIWI_CQE_INVALIDATED;
	}
	if (!ok) {
		kiwi_rx_send_end(qp, IB_WC_REM_INV_REQ_ERR, 0, 0);
		kiwi_rx_fail(qp, KIWI_ERR_RDMAP_INVALIDATE, true);
		return;
	}
	kiwi_rx_send_end(qp, IB_WC_SUCCESS, flags, inval);
}

/* The FPDU passed its CRC: complete what it finished. */
static void kiwi_rx_done(struct kiwi_qp *qp)
{
	const struct kiwi_hdr *h = &qp->rx->hdr;
	unsigned long flags;

	kiwi_stat_inc(qp->kdev, KIWI_STAT_RX_FPDUS);
	/* ULP payload only: not a Terminate's copy of the bad headers */
	if (qp->rx_kind == KIWI_RXK_WRITE || qp->rx_kind == KIWI_RXK_RRESP ||
	    qp->rx_kind == KIWI_RXK_SEND)
		kiwi_stat_add(qp->kdev, KIWI_STAT_RX_BYTES, qp->rx_bytes);
	switch (qp->rx_kind) {
	case KIWI_RXK_WRITE:
		kiwi_mr_put(qp->rx_mr);
		qp->rx_mr = NULL;
		break;
	case KIWI_RXK_RRESP:
		kiwi_rx_rresp_done(qp, h);
		break;
	case KIWI_RXK_SEND:
		kiwi_rx_send_done(qp, h);
		break;
	case KIWI_RXK_RREQ:
		spin_lock_irqsave(&qp->lock, flags);
		qp->irdq[qp->ird_head & qp->ird_mask] = qp->rx_rreq;
		qp->ird_head++;
		spin_unlock_irqrestore(&qp->lock, flags);
		qp->rx_rreq.mr = NULL;
		kiwi_rx_kick_rresp(qp, qp->rx_rreq.len);
		break;
	case KIWI_RXK_TERM:
		kiwi_stat_term(qp->kdev, false, h->term.layer);
		trace_kiwi_term_rcvd(qp->ibqp.qp_num, &h->term);
		pr_debug("kiwi: qp %u: Terminate layer %u type %u code 0x%02x\n",
			 qp->ibqp.qp_num, h->term.layer, h->term.etype,
			 h->term.ecode);
		set_bit(KIWI_EF_RX_DEAD, &qp->eflags);
		set_bit(KIWI_EF_TERM_CLAIM, &qp->eflags);
		/* the peer refused access: one of our WRs is to blame */
		if (kiwi_term_is_access(h->term.layer, h->term.etype))
			kiwi_qp_term_rcvd(qp, IB_WC_REM_ACCESS_ERR,
					  IB_EVENT_QP_ACCESS_ERR);
		else
			kiwi_qp_to_err(qp, IB_EVENT_QP_FATAL);
		if (qp->conn)
			kiwi_conn_llp_event(qp->conn, KIWI_LLP_TERMINATE_RCVD);
		break;
	default:
		break;
	}
	qp->rx_kind = KIWI_RXK_NONE;
	if (qp->rx_rtr) {
		qp->rx_rtr = false;
		clear_bit(KIWI_EF_HOLD, &qp->eflags);
		kiwi_tx_kick(qp);
	}
	if (!test_and_set_bit(KIWI_EF_COMM_EST, &qp->eflags))
		kiwi_qp_event(qp, IB_EVENT_COMM_EST);
}

/* drop what the FPDU in progress holds (a Read Response's: the ORD's) */
void kiwi_rx_abort_fpdu(struct kiwi_qp *qp)
{
	if (qp->rx_kind == KIWI_RXK_WRITE && qp->rx_mr)
		kiwi_mr_put(qp->rx_mr);
	if (qp->rx_kind == KIWI_RXK_WRITE || qp->rx_kind == KIWI_RXK_RRESP)
		qp->rx_mr = NULL;
	if (qp->rx_kind == KIWI_RXK_RREQ && qp->rx_rreq.mr) {
		kiwi_mr_put(qp->rx_rreq.mr);
		qp->rx_rreq.mr = NULL;
	}
	qp->rx_kind = KIWI_RXK_NONE;
}

/* Feed one contiguous piece of the stream; false once the stream died. */
static bool kiwi_rx_chunk(struct kiwi_qp *qp, const u8 *buf, u32 len)
{
	struct kiwi_rx_event ev;
	enum kiwi_err err;
	u32 off = 0, used;

	while (off < len) {
		used = kiwi_rx_feed(qp->rx, buf + off, len - off, &ev);
		err = KIWI_OK;
		switch (ev.type) {
		case KIWI_RX_HDR:
			err = kiwi_rx_hdr(qp, ev.hdr, ev.payload_len);
			break;
		case KIWI_RX_DATA:
			err = kiwi_rx_place(qp, buf + off + ev.off, ev.len);
			break;
		case KIWI_RX_DONE:
			kiwi_rx_done(qp);
			if (test_bit(KIWI_EF_RX_DEAD, &qp->eflags))
				return false;
			break;
		case KIWI_RX_ERROR:
			err = ev.err;
			if (err == KIWI_ERR_MPA_CRC)
				kiwi_stat_inc(qp->kdev, KIWI_STAT_CRC_ERRORS);
			break;
		default:		/* KIWI_RX_MORE */
			break;
		}
		if (err) {
			/* no header to quote when the framing itself broke */
			kiwi_rx_run_end(qp->rx);
			kiwi_rx_abort_fpdu(qp);
			kiwi_rx_fail(qp, err, err != KIWI_ERR_MPA_CRC &&
				     err != KIWI_ERR_MPA_MARKER);
			return false;
		}
		off += used;
	}
	return true;
}

/* per hold of the socket lock: arrivals wait in the backlog, unacked */
#define KIWI_RX_WORK_BUDGET	(64 * 1024)

/*
 * desc->written counts what was consumed; reaching a budget in desc->error
 * (rx_work's) zeroes desc->count, which ends tcp_read_sock() after this skb.
 */
static int kiwi_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			 unsigned int offset, size_t len)
{
	struct kiwi_qp *qp = desc->arg.data;
	struct skb_seq_state st;
	unsigned int done = 0, n;
	const u8 *data;

	desc->written += len;
	if (desc->error && desc->written >= (size_t)desc->error)
		desc->count = 0;
	/* after a failure the rest of the stream is read and dropped */
	if (test_bit(KIWI_EF_RX_DEAD, &qp->eflags))
		return len;
	skb_prepare_seq_read(skb, offset, offset + len, &st);
	while ((n = skb_seq_read(done, &data, &st)) != 0) {
		if (!kiwi_rx_chunk(qp, data, n)) {
			skb_abort_seq_read(&st);
			break;
		}
		done += n;
	}
	kiwi_rx_run_end(qp->rx);
	return len;
}

/*
 * debugfs kiwi/rx_defer: once this many bytes wait, rx_work places them on
 * another CPU, in parallel with a sender whose softirq runs ours.  0: never.
 */
static unsigned int kiwi_rx_defer = 16384;

static struct workqueue_struct *kiwi_rx_wq;

/* with the switches above, A/B tools (module.md) */
int kiwi_rx_wq_init(struct dentry *dir)
{
	debugfs_create_u32("rx_defer", 0644, dir, &kiwi_rx_defer);
	debugfs_create_u32("rresp_defer", 0644, dir, &kiwi_rresp_defer);
	/* WQ_MEM_RECLAIM: block storage may write back through it */
	kiwi_rx_wq = alloc_workqueue("kiwi_rx", WQ_HIGHPRI | WQ_MEM_RECLAIM,
				     0);
	return kiwi_rx_wq ? 0 : -ENOMEM;
}

void kiwi_rx_wq_exit(void)
{
	if (kiwi_rx_wq)
		destroy_workqueue(kiwi_rx_wq);
	kiwi_rx_wq = NULL;
}

/* a hint: from a softirq the next online CPU, in a task this one */
static int kiwi_rx_cpu(void)
{
	int cpu = raw_smp_processor_id();

	if (in_task())
		return cpu;
	cpu = cpumask_next(cpu, cpu_online_mask);
	return cpu < nr_cpu_ids ? cpu : cpumask_first(cpu_online_mask);
}

/* Under sk_callback_lock, with the socket owned. */
static bool kiwi_rx_deferred(struct kiwi_qp *qp, struct sock *sk)
{
	unsigned int limit = READ_ONCE(kiwi_rx_defer);

	/* queued, not running yet: it will read what just came too */
	if (work_pending(&qp->rx_work))
		return true;
	if (!limit || num_online_cpus() < 2 || tcp_inq(sk) < limit)
		return false;
	if (queue_work_on(kiwi_rx_cpu(), kiwi_rx_wq, &qp->rx_work))
		kiwi_stat_inc(qp->kdev, KIWI_STAT_RX_DEFERRED);
	return true;
}

/* Parse what waits, up to budget bytes (0: all); true if it stopped there. */
static bool kiwi_rx_parse(struct kiwi_qp *qp, struct sock *sk, int budget)
{
	read_descriptor_t rd = { .count = 1, .arg.data = qp, .error = budget };

	tcp_read_sock(sk, &rd, kiwi_rx_actor);
	return !rd.count;
}

void kiwi_rx_data_ready(struct sock *sk)
{
	struct kiwi_qp *qp;

	read_lock(&sk->sk_callback_lock);
	qp = sk->sk_user_data;
	if (qp && !test_bit(KIWI_EF_RX_DEAD, &qp->eflags) &&
	    !kiwi_rx_deferred(qp, sk))
		kiwi_rx_parse(qp, sk, 0);
	read_unlock(&sk->sk_callback_lock);
}

/*
 * On kiwi_rx_wq, cancelled by the quiesce.  Past the budget it queues
 * itself again, so that TCP acknowledges what waited in the backlog.
 */
void kiwi_rx_work(struct work_struct *work)
{
	struct kiwi_qp *qp = container_of(work, struct kiwi_qp, rx_work);
	struct sock *sk = qp->sock->sk;
	bool more = false;

	lock_sock(sk);
	read_lock(&sk->sk_callback_lock);
	if (sk->sk_user_data == qp && !test_bit(KIWI_EF_RX_DEAD, &qp->eflags))
		more = kiwi_rx_parse(qp, sk, KIWI_RX_WORK_BUDGET);
	read_unlock(&sk->sk_callback_lock);
	release_sock(sk);
	if (more && !test_bit(KIWI_EF_RX_DEAD, &qp->eflags))
		queue_work_on(raw_smp_processor_id(), kiwi_rx_wq, &qp->rx_work);
}

/* Process context: what arrived before the callbacks were ours. */
void kiwi_rx_read(struct kiwi_qp *qp)
{
	struct sock *sk = qp->sock->sk;

	lock_sock(sk);
	kiwi_rx_data_ready(sk);
	release_sock(sk);
}

void kiwi_rx_state_change(struct sock *sk)
{
	struct kiwi_qp *qp;

	read_lock_bh(&sk->sk_callback_lock);
	qp = sk->sk_user_data;
	if (qp && qp->conn) {
		switch (sk->sk_state) {
		case TCP_CLOSE_WAIT:
			if (!test_and_set_bit(KIWI_EF_FIN, &qp->eflags))
				kiwi_conn_llp_event(qp->conn,
						  KIWI_LLP_PEER_CLOSED);
			break;
		case TCP_CLOSE:
			if (!test_and_set_bit(KIWI_EF_RST, &qp->eflags))
				kiwi_conn_llp_event(qp->conn, KIWI_LLP_RESET);
			break;
		default:
			break;
		}
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

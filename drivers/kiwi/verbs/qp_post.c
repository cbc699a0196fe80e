// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: kernel work requests into the rings, and their flush in ERR. */

#include <linux/string.h>

#include "engine/qp.h"
#include "verbs.h"
#include "core/kiwi_trace.h"

/* kernel ib_sge addresses are virtual (ib_uses_virt_dma); QP's caps */
static int kiwi_copy_inline(const struct kiwi_qp *qp, struct kiwi_sqe *sqe,
			    const struct ib_send_wr *wr)
{
	u32 len = 0;
	int i;

	if (wr->num_sge < 0 || wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > qp->max_inline - len)
			return -EINVAL;
		memcpy(sqe->inline_data + len,
		       (void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	/* inline_data overlays the whole SGE area: the count lives apart */
	sqe->num_sge = 0;
	sqe->inline_len = len;
	return 0;
}

#define KIWI_SEND_FLAGS	(IB_SEND_FENCE | IB_SEND_SIGNALED | \
			 IB_SEND_SOLICITED | IB_SEND_INLINE)

/* a fast-registration WR: the MR must be one of ours, of that type */
static int kiwi_sqe_reg_mr(struct kiwi_qp *qp, struct kiwi_sqe *sqe,
			   const struct ib_reg_wr *reg)
{
	struct kiwi_mr *mr;

	if (!reg->mr || reg->mr->device != qp->ibqp.device)
		return -EINVAL;
	mr = to_kmr(reg->mr);
	if (mr->type != KIWI_MR_FAST_REG ||
	    kiwi_mr_access_ok(reg->access))
		return -EINVAL;
	sqe->opcode = KIWI_OP_REG_MR;
	sqe->reg.mr = (uintptr_t)mr;
	sqe->reg.key = reg->key;
	sqe->reg.access = reg->access;
	return 0;
}

static int kiwi_sqe_from_wr(struct kiwi_qp *qp, struct kiwi_sqe *sqe,
			    const struct ib_send_wr *wr)
{
	u16 flags = 0;
	int rv = 0;

	if (wr->send_flags & ~KIWI_SEND_FLAGS)
		return -EINVAL;
	memset(sqe, 0, sizeof(*sqe));
	sqe->id = wr->wr_id;
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		flags |= KIWI_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		flags |= KIWI_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		flags |= KIWI_WQE_READ_FENCE;

	switch (wr->opcode) {
	case IB_WR_SEND:
		sqe->opcode = KIWI_OP_SEND;
		break;
	case IB_WR_SEND_WITH_INV:
		sqe->opcode = KIWI_OP_SEND_INV;
		sqe->inval_stag = wr->ex.invalidate_rkey;
		break;
	case IB_WR_RDMA_WRITE:
		sqe->opcode = KIWI_OP_WRITE;
		sqe->rkey = rdma_wr(wr)->rkey;
		sqe->raddr = rdma_wr(wr)->remote_addr;
		break;
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		/* one Read Request names one sink STag: one local SGE */
		if (wr->num_sge > KIWI_MAX_SGE_RD ||
		    (wr->send_flags & IB_SEND_INLINE))
			return -EINVAL;
		sqe->opcode = wr->opcode == IB_WR_RDMA_READ ?
			KIWI_OP_READ : KIWI_OP_READ_LOCAL_INV;
		/* rdma_rw names the sink MR's STag here */
		if (wr->opcode == IB_WR_RDMA_READ_WITH_INV)
			sqe->inval_stag = wr->ex.invalidate_rkey;
		sqe->rkey = rdma_wr(wr)->rkey;
		sqe->raddr = rdma_wr(wr)->remote_addr;
		break;
	case IB_WR_LOCAL_INV:
		sqe->opcode = KIWI_OP_LOCAL_INV;
		sqe->inval_stag = wr->ex.invalidate_rkey;
		goto done;
	case IB_WR_REG_MR:
		rv = kiwi_sqe_reg_mr(qp, sqe, reg_wr(wr));
		if (rv)
			return rv;
		goto done;
	default:
		/* immediate data, atomics and the rest: not on iWARP here */
		return -EINVAL;
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		flags |= KIWI_WQE_INLINE;
		rv = kiwi_copy_inline(qp, sqe, wr);
	} else {
		rv = kiwi_sges_from_wr(sqe->sge, wr->sg_list, wr->num_sge,
				       qp->max_send_sge);
		sqe->num_sge = wr->num_sge;
	}
done:
	sqe->flags = flags;	/* VALID is set by the caller, last */
	return rv;
}

/* bytes a kernel WR names, for its trace event */
static u32 kiwi_sg_len(const struct ib_sge *sg, int n)
{
	u32 len = 0;

	while (n-- > 0)
		len += sg[n].length;
	return len;
}

/* Called with qp->lock held, QP in ERR: complete at once, flushed. */
static int kiwi_flush_send_wrs(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			       const struct ib_send_wr **bad_wr)
{
	struct kiwi_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = KIWI_OP_SEND,
		.qp_id = qp->ibqp.qp_num,
	};
	struct kiwi_sqe tmp;
	int rv;

	for (; wr; wr = wr->next) {
		/* an invalid WR is refused as in any other state */
		rv = kiwi_sqe_from_wr(qp, &tmp, wr);
		wc.id = wr->wr_id;
		if (!rv && kiwi_cq_push(qp->scq, &wc))
			rv = -ENOMEM;
		if (rv) {
			*bad_wr = wr;
			return rv;
		}
	}
	return 0;
}

/* A kernel QP's WRs into its SQ, under qp->lock; *posted if any went. */
static int kiwi_sq_post_wrs(struct kiwi_qp *qp, const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad_wr, bool *posted)
{
	struct kiwi_sqe tmp, *sqe;
	int rv = 0;

	for (; wr; wr = wr->next) {
		sqe = kiwi_ring_slot(&qp->sq, qp->sq_prod);
		if (READ_ONCE(sqe->flags) & KIWI_WQE_VALID) {
			rv = -ENOMEM;	/* SQ full */
			break;
		}
		rv = kiwi_sqe_from_wr(qp, &tmp, wr);
		if (rv)
			break;
		memcpy(sqe, &tmp, sizeof(tmp));
		kiwi_slot_set(&sqe->flags, tmp.flags | KIWI_WQE_VALID);
		qp->sq_prod++;
		if (trace_kiwi_wr_post_enabled())
			trace_kiwi_wr_post(qp->ibqp.qp_num, false, false, tmp.id,
					   tmp.opcode, kiwi_sg_len(wr->sg_list,
							wr->num_sge));
		*posted = true;
	}
	if (rv)
		*bad_wr = wr;
	return rv;
}

int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	unsigned long flags;
	bool kick = false;
	int rv = 0;

	/* user QPs post into the mapped ring; the call is a doorbell */
	if (qp->user && wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->user) {
		kiwi_doorbell_count();
		kiwi_stat_inc(qp->kdev, KIWI_STAT_DOORBELLS);
		/* lockless: in RTS the doorbell only starts the engine */
		if (READ_ONCE(qp->state) == IB_QPS_RTS) {
			kiwi_tx_doorbell(qp);
			return 0;
		}
	}

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state == IB_QPS_ERR && kiwi_qp_flush_now(qp)) {
		/* ib_drain_sq() waits for exactly this completion */
		if (qp->user)
			kiwi_flush_sq(qp);
		else
			rv = kiwi_flush_send_wrs(qp, wr, bad_wr);
		goto out;
	}
	if (qp->state == IB_QPS_RESET) {
		rv = -EINVAL;
		if (wr)
			*bad_wr = wr;
		goto out;
	}
	/* posting in Idle (INIT) is allowed: WRs wait for RTS */
	if (qp->user) {
		/* in RTS the doorbell starts the SQ engine */
		kick = qp->state == IB_QPS_RTS;
		goto out;
	}
	rv = kiwi_sq_post_wrs(qp, wr, bad_wr, &kick);
	kick = kick && qp->state == IB_QPS_RTS;
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	if (kick) {
		if (qp->user)
			kiwi_tx_doorbell(qp);
		else
			kiwi_tx_post(qp);
	}
	return rv;
}

int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = KIWI_OP_RECEIVE,
		.qp_id = ibqp->qp_num,
	};
	struct kiwi_rqe tmp, *rqe;
	unsigned long flags;
	int rv = 0;

	/* user QPs own their ring; a QP with an SRQ has no RQ at all */
	if ((qp->user && wr) || !qp->rq.num) {
		*bad_wr = wr;
		return -EINVAL;
	}
	/* a user doorbell after the RQ flush: flush what came since */
	if (qp->user) {
		spin_lock_irqsave(&qp->lock, flags);
		if (qp->state == IB_QPS_ERR && kiwi_qp_flush_now(qp))
			kiwi_flush_rq(qp);
		spin_unlock_irqrestore(&qp->lock, flags);
		return 0;
	}

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state == IB_QPS_RESET) {
		rv = -EINVAL;
	} else if (qp->state == IB_QPS_ERR && kiwi_qp_flush_now(qp)) {
		/* ib_drain_rq() waits for exactly this completion */
		for (; wr; wr = wr->next) {
			rv = kiwi_rqe_from_wr(&tmp, wr, qp->max_recv_sge);
			if (rv)
				break;
			wc.id = wr->wr_id;
			rv = kiwi_cq_push(qp->rcq, &wc);
			if (rv) {
				rv = -ENOMEM;
				break;
			}
		}
	} else {
		for (; wr; wr = wr->next) {
			rqe = kiwi_ring_slot(&qp->rq, qp->rq_prod);
			if (READ_ONCE(rqe->flags) & KIWI_WQE_VALID) {
				rv = -ENOMEM;	/* RQ full */
				break;
			}
			rv = kiwi_rqe_from_wr(&tmp, wr, qp->max_recv_sge);
			if (rv)
				break;
			memcpy(rqe, &tmp, sizeof(tmp));
			kiwi_slot_set(&rqe->flags, KIWI_WQE_VALID);
			qp->rq_prod++;
			if (trace_kiwi_wr_post_enabled())
				trace_kiwi_wr_post(ibqp->qp_num, true, false,
						   tmp.id, KIWI_OP_RECEIVE,
						   kiwi_sg_len(wr->sg_list,
							       wr->num_sge));
		}
	}
	if (rv)
		*bad_wr = wr;
	spin_unlock_irqrestore(&qp->lock, flags);
	return rv;
}

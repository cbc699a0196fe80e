// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: completion queues, rings of struct kiwi_cqe owned by KIWI_CQE_VALID */
#include "res.h"
#include "core/kiwi_trace.h"

int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct kiwi_cq_udata_arg *cq_udata)
{
	struct ib_udata *udata = kiwi_cq_udata(cq_udata);
	struct kiwi_dev *kdev = to_kdev(ibcq->device);
	struct kiwi_cq *cq = to_kcq(ibcq);
	u32 num;
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return rv;
	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > KIWI_MAX_CQE ||
	    attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	rv = kiwi_charge(kdev, udata, KIWI_UOBJ_CQ, &cq->uctx);
	if (rv)
		return rv;

	num = roundup_pow_of_two(attr->cqe);
	spin_lock_init(&cq->lock);
	cq->user = !!udata;
	rv = kiwi_ring_alloc(&cq->ring, num, sizeof(struct kiwi_cqe), udata);
	if (rv)
		goto err_count;
	ibcq->cqe = num;

	if (udata) {
		struct kiwi_uresp_create_cq resp = {
			.cq_key = kiwi_ring_key(&cq->ring),
			.cq_id = atomic_inc_return(&kdev->cq_ids),
			.num_cqe = num,
		};

		rv = kiwi_respond(udata, &resp, sizeof(resp));
		if (rv)
			goto err_ring;
	}
	kiwi_obj_inc(KIWI_OBJ_CQ);
	return 0;

err_ring:
	kiwi_ring_free(&cq->ring);
err_count:
	kiwi_uncharge(kdev, cq->uctx, KIWI_UOBJ_CQ);
	return rv;
}

/* ib_core refuses (EBUSY) while a QP or SRQ still uses the CQ. */
int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct kiwi_cq *cq = to_kcq(ibcq);

	kiwi_ring_free(&cq->ring);
	kiwi_uncharge(to_kdev(ibcq->device), cq->uctx, KIWI_UOBJ_CQ);
	kiwi_obj_dec(KIWI_OBJ_CQ);
	return 0;
}

static void kiwi_cq_overflow(struct kiwi_cq *cq)
{
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.event = IB_EVENT_CQ_ERR,
		.element.cq = &cq->ibcq,
	};

	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/* Add one completion; -ENOSPC and IB_EVENT_CQ_ERR on overflow. */
int kiwi_cq_push(struct kiwi_cq *cq, const struct kiwi_wc *wc)
{
	struct kiwi_cq_ctrl *ctrl = kiwi_ring_ctrl(&cq->ring);
	struct kiwi_cqe *cqe;
	unsigned long flags;
	bool event = false;
	u32 notify;

	spin_lock_irqsave(&cq->lock, flags);
	cqe = kiwi_ring_slot(&cq->ring, cq->prod);
	if (kiwi_slot_flags(&cqe->flags) & KIWI_CQE_VALID) {
		spin_unlock_irqrestore(&cq->lock, flags);
		kiwi_cq_overflow(cq);
		return -ENOSPC;
	}
	cqe->id = wc->id;
	cqe->opcode = wc->opcode;
	cqe->status = wc->status;
	cqe->reserved0 = 0;
	cqe->bytes = wc->bytes;
	cqe->qp_id = wc->qp_id;
	cqe->inval_stag = wc->inval_stag;
	cqe->reserved1 = 0;
	/* the slot's contents become visible before its VALID bit */
	kiwi_slot_set(&cqe->flags, KIWI_CQE_VALID |
			  (wc->flags & (KIWI_CQE_SOLICITED |
					KIWI_CQE_INVALIDATED)));
	cq->prod++;
	kiwi_stat_inc(to_kdev(cq->ibcq.device), KIWI_STAT_COMPLETIONS);
	if (wc->status == IB_WC_WR_FLUSH_ERR)
		kiwi_stat_inc(to_kdev(cq->ibcq.device),
			      KIWI_STAT_COMPLETIONS_FLUSHED);
	trace_kiwi_wr_complete(cq->ibcq.res.id, wc->qp_id, wc->id, wc->opcode,
			       wc->status, wc->bytes);

	/* pairs with the consumer's between arming and re-checking the ring */
	smp_mb();
	notify = READ_ONCE(ctrl->notify);
	if ((notify & KIWI_NOTIFY_NEXT) ||
	    ((notify & KIWI_NOTIFY_SOLICITED) &&
	     (wc->flags & KIWI_CQE_SOLICITED))) {
		WRITE_ONCE(ctrl->notify, KIWI_NOTIFY_NONE);
		event = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (!event || !cq->ibcq.comp_handler)
		return 0;
	/* run irq_poll's softirq at bh enable rather than wake ksoftirqd */
	if (in_task() && !irqs_disabled()) {
		local_bh_disable();
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		local_bh_enable();
	} else {
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	}
	return 0;
}

static enum ib_wc_opcode kiwi_wc_opcode(u8 op)
{
	switch (op) {
	case KIWI_OP_WRITE:
		return IB_WC_RDMA_WRITE;
	case KIWI_OP_READ:
	case KIWI_OP_READ_LOCAL_INV:
		return IB_WC_RDMA_READ;
	case KIWI_OP_REG_MR:
		return IB_WC_REG_MR;
	case KIWI_OP_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case KIWI_OP_RECEIVE:
		return IB_WC_RECV;
	default:			/* the Sends */
		return IB_WC_SEND;
	}
}

/* Kernel CQs only: a user CQ's consumer index lives in the provider. */
int kiwi_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct kiwi_cq *cq = to_kcq(ibcq);
	struct kiwi_dev *kdev = to_kdev(ibcq->device);
	struct kiwi_cqe *cqe;
	unsigned long flags;
	u8 cflags;
	int i;

	if (cq->user)
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	for (i = 0; i < num; i++) {
		cqe = kiwi_ring_slot(&cq->ring, cq->cons);
		cflags = kiwi_slot_flags(&cqe->flags);
		if (!(cflags & KIWI_CQE_VALID))
			break;
		memset(&wc[i], 0, sizeof(wc[i]));
		wc[i].wr_id = cqe->id;
		wc[i].status = cqe->status;
		wc[i].opcode = kiwi_wc_opcode(cqe->opcode);
		wc[i].byte_len = cqe->bytes;
		/* NULL if the QP was destroyed with completions pending */
		wc[i].qp = xa_load(&kdev->qp_xa, cqe->qp_id);
		wc[i].src_qp = cqe->qp_id;
		if (cflags & KIWI_CQE_INVALIDATED) {
			wc[i].ex.invalidate_rkey = cqe->inval_stag;
			wc[i].wc_flags |= IB_WC_WITH_INVALIDATE;
		}
		/* hand the slot back to the producer */
		kiwi_slot_set(&cqe->flags, 0);
		cq->cons++;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return i;
}

int kiwi_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct kiwi_cq *cq = to_kcq(ibcq);
	struct kiwi_cq_ctrl *ctrl = kiwi_ring_ctrl(&cq->ring);
	struct kiwi_cqe *cqe;
	unsigned long irqf;
	u32 arm;
	int missed = 0;

	arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		KIWI_NOTIFY_SOLICITED : KIWI_NOTIFY_NEXT;

	spin_lock_irqsave(&cq->lock, irqf);
	/* "next" is the stronger request and survives a "solicited" one */
	WRITE_ONCE(ctrl->notify, READ_ONCE(ctrl->notify) | arm);
	if (!cq->user && (flags & IB_CQ_REPORT_MISSED_EVENTS)) {
		cqe = kiwi_ring_slot(&cq->ring, cq->cons);
		missed = !!(READ_ONCE(cqe->flags) & KIWI_CQE_VALID);
	}
	spin_unlock_irqrestore(&cq->lock, irqf);
	return missed;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: shared receive queues, a ring of struct kiwi_rqe like a QP's RQ. */
#include "res.h"

int kiwi_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct kiwi_dev *kdev = to_kdev(ibsrq->device);
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	struct ib_srq_attr *a = &attr->attr;
	u32 num;
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return rv;
	if (attr->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!a->max_wr || a->max_wr > KIWI_MAX_SRQ_WR ||
	    a->max_sge > KIWI_MAX_SGE || a->srq_limit > a->max_wr)
		return -EINVAL;
	rv = kiwi_charge(kdev, udata, KIWI_UOBJ_SRQ, &srq->uctx);
	if (rv)
		return rv;

	num = roundup_pow_of_two(a->max_wr);
	spin_lock_init(&srq->lock);
	srq->user = !!udata;
	/* as asked, reported and enforced like a QP's (rnic-compat.md) */
	srq->max_sge = a->max_sge;
	srq->limit = a->srq_limit;
	rv = kiwi_ring_alloc(&srq->ring, num, sizeof(struct kiwi_rqe), udata);
	if (rv)
		goto err_count;

	if (udata) {
		struct kiwi_uresp_create_srq resp = {
			.srq_key = kiwi_ring_key(&srq->ring),
			.num_rqe = num,
		};

		rv = kiwi_respond(udata, &resp, sizeof(resp));
		if (rv)
			goto err_ring;
	}
	a->max_wr = num;
	kiwi_obj_inc(KIWI_OBJ_SRQ);
	return 0;

err_ring:
	kiwi_ring_free(&srq->ring);
err_count:
	kiwi_uncharge(kdev, srq->uctx, KIWI_UOBJ_SRQ);
	return rv;
}

int kiwi_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	unsigned long flags;
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return rv;
	/* rings are not resized: the provider has them mapped */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (mask & ~IB_SRQ_LIMIT)
		return -EINVAL;
	if ((mask & IB_SRQ_LIMIT) && attr->srq_limit > srq->ring.num)
		return -EINVAL;

	spin_lock_irqsave(&srq->lock, flags);
	if (mask & IB_SRQ_LIMIT)
		srq->limit = attr->srq_limit;	/* armed while non-zero */
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

int kiwi_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	unsigned long flags;

	attr->max_wr = srq->ring.num;
	attr->max_sge = srq->max_sge;
	spin_lock_irqsave(&srq->lock, flags);
	attr->srq_limit = srq->limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

/* ib_core refuses (EBUSY) while a QP still uses the SRQ. */
int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);

	kiwi_ring_free(&srq->ring);
	kiwi_uncharge(to_kdev(ibsrq->device), srq->uctx, KIWI_UOBJ_SRQ);
	kiwi_obj_dec(KIWI_OBJ_SRQ);
	return 0;
}

int kiwi_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct kiwi_srq *srq = to_ksrq(ibsrq);
	struct kiwi_rqe tmp, *rqe;
	unsigned long flags;
	int rv = 0;

	/* a user SRQ's ring is written by the provider directly */
	if (srq->user) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		rqe = kiwi_ring_slot(&srq->ring, srq->prod);
		if (READ_ONCE(rqe->flags) & KIWI_WQE_VALID) {
			rv = -ENOMEM;	/* SRQ full */
			break;
		}
		rv = kiwi_rqe_from_wr(&tmp, wr, srq->max_sge);
		if (rv)
			break;
		memcpy(rqe, &tmp, sizeof(tmp));
		kiwi_slot_set(&rqe->flags, KIWI_WQE_VALID);
		srq->prod++;
	}
	if (rv)
		*bad_wr = wr;
	spin_unlock_irqrestore(&srq->lock, flags);
	return rv;
}

/* The data path takes the next RQE (one copy); fires the armed limit. */
int kiwi_srq_take(struct kiwi_srq *srq, struct kiwi_rqe *out)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
		.element.srq = &srq->ibsrq,
	};
	struct kiwi_rqe *rqe;
	unsigned long flags;
	bool fire = false;
	u32 n;

	spin_lock_irqsave(&srq->lock, flags);
	rqe = kiwi_ring_slot(&srq->ring, srq->cons);
	if (!(kiwi_slot_flags(&rqe->flags) & KIWI_WQE_VALID)) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return -ENOENT;
	}
	memcpy(out, rqe, sizeof(*out));
	kiwi_slot_set(&rqe->flags, 0);
	srq->cons++;
	if (srq->limit) {
		/* the limit is small; user SRQs keep no producer count */
		for (n = 0; n < srq->limit; n++) {
			rqe = kiwi_ring_slot(&srq->ring, srq->cons + n);
			if (!(READ_ONCE(rqe->flags) & KIWI_WQE_VALID))
				break;
		}
		if (n < srq->limit) {
			srq->limit = 0;
			fire = true;
		}
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (fire && srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	return 0;
}

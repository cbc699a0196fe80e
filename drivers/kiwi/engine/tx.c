// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi: the transmit engine, one per connected QP, serialised by
 * qp->tx_mutex.  It runs from a work item or, when idle, in the context
 * of the user doorbell or of a kernel post that may sleep.  It decides
 * what goes into a batch (tx_batch.c): the RTR, Read Responses before SQ
 * work at FPDU granularity, then the SQ's WRs in order.
 */
#include <linux/debugfs.h>
#include <linux/sched/mm.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "tx.h"
#include "core/kiwi_trace.h"

/* work done by one run before the engine yields */
#define KIWI_TX_BUDGET_WORK	(512 * 1024)
#define KIWI_TX_BUDGET_DIRECT	(64 * 1024)

/* WQ_MEM_RECLAIM: block storage (NVMe-oF) may write back through it */
static struct workqueue_struct *kiwi_tx_wq;

static int kiwi_tx_counter_get(void *data, u64 *val)
{
	*val = atomic64_read(data);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(kiwi_tx_counter_fops, kiwi_tx_counter_get, NULL,
			 "%llu\n");

/* debugfs kiwi/tx_direct: a kernel post that may sleep runs the engine */
static bool kiwi_tx_direct;

int kiwi_dp_init(struct dentry *debugfs)
{
	debugfs_create_file_unsafe("tx_zcopy_bytes", 0444, debugfs,
				   &kiwi_tx_zc_bytes, &kiwi_tx_counter_fops);
	debugfs_create_file_unsafe("tx_copy_bytes", 0444, debugfs,
				   &kiwi_tx_copy_bytes, &kiwi_tx_counter_fops);
	debugfs_create_file_unsafe("tx_zcopy_held", 0444, debugfs,
				   &kiwi_tx_zc_held, &kiwi_tx_counter_fops);
	/* A/B switches for measurements (module.md) */
	debugfs_create_bool("tx_zcopy", 0644, debugfs, &kiwi_tx_zcopy);
	debugfs_create_u32("tx_zcopy_min", 0644, debugfs, &kiwi_tx_zcopy_min);
	debugfs_create_bool("tx_crc_own", 0644, debugfs, &kiwi_tx_crc_own);
	debugfs_create_bool("tx_direct", 0644, debugfs, &kiwi_tx_direct);
	kiwi_tx_wq = alloc_workqueue("kiwi_tx", WQ_HIGHPRI | WQ_MEM_RECLAIM,
				     0);
	if (!kiwi_tx_wq)
		return -ENOMEM;
	if (kiwi_rx_wq_init(debugfs)) {
		destroy_workqueue(kiwi_tx_wq);
		kiwi_tx_wq = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* after every device (and so every QP) is gone */
void kiwi_dp_exit(void)
{
	kiwi_zc_ubufs_wait();
	kiwi_rx_wq_exit();
	if (kiwi_tx_wq)
		destroy_workqueue(kiwi_tx_wq);
	kiwi_tx_wq = NULL;
}

/* the engine's work queued on cpu (any CPU is correct) */
void kiwi_tx_kick_on(struct kiwi_qp *qp, int cpu)
{
	if (test_bit(KIWI_EF_ON, &qp->eflags) &&
	    !test_bit(KIWI_EF_TX_STOP, &qp->eflags))
		queue_work_on(cpu, kiwi_tx_wq, &qp->tx_work);
}

/* on the local CPU, as queue_work() does */
void kiwi_tx_kick(struct kiwi_qp *qp)
{
	kiwi_tx_kick_on(qp, WORK_CPU_UNBOUND);
}

/* ---- doorbell elision (kiwi_sq_ctrl.engine_busy, see kiwi-abi.h) ---- */

/*
 * The provider may skip the doorbell: the engine looks again.  Only where
 * it can take SQEs (qp->lock held).  Whether it set the word.
 */
static bool kiwi_tx_busy_mark(struct kiwi_qp *qp)
{
	struct kiwi_sq_ctrl *ctrl = kiwi_ring_ctrl(&qp->sq);
	bool busy;

	lockdep_assert_held(&qp->lock);
	busy = qp->state == IB_QPS_RTS &&
	       test_bit(KIWI_EF_ON, &qp->eflags) &&
	       !test_bit(KIWI_EF_TX_STOP, &qp->eflags) &&
	       !test_bit(KIWI_EF_HOLD, &qp->eflags) &&
	       !test_bit(KIWI_EF_RX_DEAD, &qp->eflags) &&
	       !test_bit(KIWI_EF_TERM, &qp->eflags);
	if (busy && !READ_ONCE(ctrl->engine_busy))
		WRITE_ONCE(ctrl->engine_busy, 1);
	return busy;
}

/*
 * From now on posts ring the doorbell.  The provider orders its slot
 * store before its load of the word as the barrier orders ours.
 */
void kiwi_tx_busy_clear(struct kiwi_qp *qp)
{
	struct kiwi_sq_ctrl *ctrl = kiwi_ring_ctrl(&qp->sq);

	if (!qp->user || !qp->sq.mem)
		return;
	WRITE_ONCE(ctrl->engine_busy, 0);
	/* the word before any later look at the slots */
	smp_mb();
}

/* nothing to do: clear the word, then look again.  False: a post came */
static bool kiwi_tx_idle(struct kiwi_qp *qp)
{
	unsigned long flags;
	bool busy;

	if (!qp->user)
		return true;
	kiwi_tx_busy_clear(qp);
	/* sq_cons is the engine's while it runs (flushes wait for it) */
	if (!kiwi_sq_next_posted(qp))
		return true;
	spin_lock_irqsave(&qp->lock, flags);
	busy = kiwi_tx_busy_mark(qp);
	spin_unlock_irqrestore(&qp->lock, flags);
	return !busy;
}

/* ---- SQ work requests ---- */

#define KIWI_WQE_FLAGS	(KIWI_WQE_VALID | KIWI_WQE_SIGNALED | \
			 KIWI_WQE_SOLICITED | KIWI_WQE_READ_FENCE | \
			 KIWI_WQE_LOCAL_FENCE | KIWI_WQE_INLINE)

static void kiwi_tx_wc(struct kiwi_qp *qp, const struct kiwi_sqe *sqe,
		       u32 bytes, u8 status)
{
	struct kiwi_wc wc = {
		.id = sqe->id,
		.bytes = bytes,
		.qp_id = qp->ibqp.qp_num,
		.opcode = sqe->opcode,
		.status = status,
		/* always the engine's current WR */
		.seq = qp->txs->wr.seq,
	};

	if (status == IB_WC_SUCCESS && !(sqe->flags & KIWI_WQE_SIGNALED))
		return;
	kiwi_tx_wc_add(qp, &wc);
}

/*
 * Check the copy of an SQE and take references on its SGEs' MRs: a WC
 * status.  Held to the QP's caps, which a process may ignore.
 */
static u8 kiwi_sqe_check(struct kiwi_qp *qp, struct kiwi_tx_wr *w)
{
	struct kiwi_sqe *sqe = &w->sqe;
	struct kiwi_cur *c = &w->cur;
	int access = 0;
	bool sink = false;
	u64 total = 0;
	u32 i;

	memset(c, 0, sizeof(*c));
	if (sqe->flags & ~KIWI_WQE_FLAGS)
		return IB_WC_LOC_QP_OP_ERR;
	switch (sqe->opcode) {
	case KIWI_OP_READ:
	case KIWI_OP_READ_LOCAL_INV:
		if ((sqe->flags & KIWI_WQE_INLINE) ||
		    sqe->num_sge > KIWI_MAX_SGE_RD)
			return IB_WC_LOC_QP_OP_ERR;
		access = IB_ACCESS_LOCAL_WRITE;
		sink = true;
		break;
	case KIWI_OP_WRITE:
	case KIWI_OP_SEND:
	case KIWI_OP_SEND_INV:
		break;
	case KIWI_OP_LOCAL_INV:
		return IB_WC_SUCCESS;
	case KIWI_OP_REG_MR:
		/* carries a kernel pointer: never from a user ring */
		return qp->user ? IB_WC_LOC_QP_OP_ERR : IB_WC_SUCCESS;
	default:
		return IB_WC_LOC_QP_OP_ERR;
	}
	if (sqe->flags & KIWI_WQE_INLINE) {
		if (sqe->inline_len > qp->max_inline)
			return IB_WC_LOC_LEN_ERR;
		c->sg[0].addr = (uintptr_t)sqe->inline_data;
		c->sg[0].length = sqe->inline_len;
		c->nsge = 1;
		w->total = sqe->inline_len;
		return IB_WC_SUCCESS;
	}
	if (sqe->num_sge > qp->max_send_sge)
		return IB_WC_LOC_QP_OP_ERR;
	c->nsge = sqe->num_sge;
	for (i = 0; i < c->nsge; i++) {
		struct kiwi_mr *mr;

		c->sg[i] = sqe->sge[i];
		total += c->sg[i].length;
		if (!c->sg[i].length)
			continue;
		mr = kiwi_mr_get(qp->kdev, c->sg[i].lkey);
		if (!mr)
			return IB_WC_LOC_PROT_ERR;
		c->mr[i] = mr;
		if (kiwi_mr_check(mr, qp->ibqp.pd, c->sg[i].addr,
				  c->sg[i].length, access, &c->gen[i]))
			return IB_WC_LOC_PROT_ERR;
		/* RNICs want remote write on a Read's sink (rnic-compat.md) */
		if (sink && qp->rnic_strict &&
		    kiwi_mr_check(mr, qp->ibqp.pd, c->sg[i].addr,
				  c->sg[i].length, IB_ACCESS_REMOTE_WRITE, NULL))
			return IB_WC_LOC_ACCESS_ERR;
	}
	if (total > KIWI_MAX_MSG_SIZE)
		return IB_WC_LOC_LEN_ERR;
	w->total = total;
	return IB_WC_SUCCESS;
}

/* Fast registration and local invalidation, executed in SQ order. */
static u8 kiwi_tx_memop(struct kiwi_qp *qp, struct kiwi_sqe *sqe)
{
	struct kiwi_mr *mr;
	u32 stag;

	if (sqe->opcode == KIWI_OP_REG_MR) {
		mr = (struct kiwi_mr *)(uintptr_t)sqe->reg.mr;
		if (mr->type != KIWI_MR_FAST_REG ||
		    mr->ibmr.pd != qp->ibqp.pd ||
		    kiwi_mr_access_ok(sqe->reg.access))
			return IB_WC_LOC_PROT_ERR;
		stag = (mr->stag & ~0xffU) | (sqe->reg.key & 0xff);
		/* nothing admitted before this registration carries over */
		kiwi_mr_bump(mr);
		WRITE_ONCE(mr->access, sqe->reg.access);
		WRITE_ONCE(mr->stag, stag);
		mr->ibmr.lkey = stag;
		mr->ibmr.rkey = stag;
		/* the rights and key before the MR is valid for lookups */
		smp_store_release(&mr->valid, true);
		kiwi_stat_inc(qp->kdev, KIWI_STAT_FASTREG_WRS);
		if (mr->registered)
			kiwi_stat_inc(qp->kdev, KIWI_STAT_FASTREG_REMAPS);
		mr->registered = true;
		return IB_WC_SUCCESS;
	}
	mr = kiwi_mr_get(qp->kdev, sqe->inval_stag);
	if (!mr)
		return IB_WC_LOC_PROT_ERR;
	if (mr->ibmr.pd != qp->ibqp.pd || mr->type == KIWI_MR_DMA) {
		kiwi_mr_put(mr);
		return IB_WC_LOC_PROT_ERR;
	}
	kiwi_mr_invalidate(mr);
	kiwi_mr_put(mr);
	kiwi_stat_inc(qp->kdev, KIWI_STAT_LOCAL_INVS);
	return IB_WC_SUCCESS;
}

/*
 * The engine's WR (w is txs->wr) failed locally: its error completion, in
 * SQ order behind the batch's and earlier WRs', then the QP to ERR.
 */
static void kiwi_tx_wr_fail(struct kiwi_qp *qp, struct kiwi_tx_wr *w, u8 st)
{
	/* a user-written opcode is reported as a Send's */
	if (w->sqe.opcode >= KIWI_OP_MAX)
		w->sqe.opcode = KIWI_OP_SEND;
	kiwi_tx_wc(qp, &w->sqe, 0, st);
	kiwi_cur_retire(qp->txs, &w->cur);
	w->active = false;
	kiwi_rx_fail(qp, KIWI_ERR_RDMAP_LOCAL, false);
}

enum {
	KIWI_NEXT_NONE, KIWI_NEXT_WR, KIWI_NEXT_AGAIN, KIWI_NEXT_FAIL,
	KIWI_NEXT_PUSH,
};

/* bytes a user SQE names as the process wrote it, for its trace event */
static u32 kiwi_sqe_len(const struct kiwi_sqe *sqe)
{
	u32 len = 0, i;

	if (sqe->flags & KIWI_WQE_INLINE)
		return sqe->inline_len;
	for (i = 0; i < sqe->num_sge && i < KIWI_MAX_SGE; i++)
		len += sqe->sge[i].length;
	return len;
}

static bool kiwi_sqe_read(const struct kiwi_sqe *sqe)
{
	return sqe->opcode == KIWI_OP_READ ||
		sqe->opcode == KIWI_OP_READ_LOCAL_INV;
}

/* not taken: a Read waiting for txs->held's allocation retries */
static int kiwi_tx_take_none(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;

	if (!txs->ord_wait || txs->held || !kiwi_sqe_read(&txs->wr.sqe))
		return KIWI_NEXT_NONE;
	if (kiwi_held_ready(txs))
		return KIWI_NEXT_AGAIN;
	kiwi_tx_kick(qp);
	return KIWI_NEXT_NONE;
}

/*
 * Take the next SQE if the QP may process it: not a fenced WR while Reads
 * are outstanding, nor a Read beyond ORD or without room for its
 * completion.  A memory operation waits until the batch is in TCP's hands
 * (KIWI_NEXT_PUSH): the batch was framed from the mapping it changes.
 */
static int kiwi_tx_take(struct kiwi_qp *qp)
{
	struct kiwi_tx_wr *w = &qp->txs->wr;
	struct kiwi_sqe *slot;
	unsigned long flags;
	u32 reads;
	u8 st;

	/* lockless: sq_cons is the engine's; later posts ring or are seen */
	qp->txs->ord_wait = false;
	if (!kiwi_sq_next_posted(qp))
		return KIWI_NEXT_NONE;
	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state != IB_QPS_RTS)
		goto none;
	slot = kiwi_ring_slot(&qp->sq, qp->sq_cons);
	if (!(kiwi_slot_flags(&slot->flags) & KIWI_WQE_VALID))
		goto none;
	/* one copy of a slot the process may still scribble on */
	memcpy(&w->sqe, slot, sizeof(w->sqe));
	reads = qp->ord_head - qp->ord_tail;
	/* parked: a Read's completion or the awaited ACK kicks the engine */
	qp->txs->ord_wait = true;
	if (kiwi_tx_held_full(qp->txs))
		goto none;
	if (reads && (w->sqe.flags & (KIWI_WQE_READ_FENCE |
				      KIWI_WQE_LOCAL_FENCE)))
		goto none;
	if (kiwi_sqe_read(&w->sqe) &&
	    (reads >= qp->ord_max || !kiwi_tx_pend_room(qp->txs)))
		goto none;
	qp->txs->ord_wait = false;
	if ((w->sqe.opcode == KIWI_OP_REG_MR ||
	     w->sqe.opcode == KIWI_OP_LOCAL_INV) && qp->txs->niov) {
		spin_unlock_irqrestore(&qp->lock, flags);
		return KIWI_NEXT_PUSH;
	}
	kiwi_slot_set(&slot->flags, 0);
	w->seq = qp->sq_cons++;
	/* the engine comes back for the next SQE: posts may skip the doorbell */
	if (qp->user)
		kiwi_tx_busy_mark(qp);
	spin_unlock_irqrestore(&qp->lock, flags);
	/* a kernel QP's WR was traced when posted */
	if (qp->user && trace_kiwi_wr_post_enabled())
		trace_kiwi_wr_post(qp->ibqp.qp_num, false, true, w->sqe.id,
				   w->sqe.opcode, kiwi_sqe_len(&w->sqe));

	w->off = 0;
	w->active = true;
	st = kiwi_sqe_check(qp, w);
	if (st == IB_WC_SUCCESS && (w->sqe.opcode == KIWI_OP_REG_MR ||
				    w->sqe.opcode == KIWI_OP_LOCAL_INV)) {
		st = kiwi_tx_memop(qp, &w->sqe);
		if (st == IB_WC_SUCCESS) {
			w->active = false;
			kiwi_tx_wc(qp, &w->sqe, 0, IB_WC_SUCCESS);
			return KIWI_NEXT_AGAIN;
		}
	}
	if (st != IB_WC_SUCCESS) {
		kiwi_tx_wr_fail(qp, w, st);
		return KIWI_NEXT_FAIL;
	}
	if (!kiwi_sqe_read(&w->sqe) && !(w->sqe.flags & KIWI_WQE_INLINE))
		w->cur.zc = kiwi_tx_zc_ok(qp, w->total, false);
	return KIWI_NEXT_WR;
none:
	spin_unlock_irqrestore(&qp->lock, flags);
	return kiwi_tx_take_none(qp);
}

/* The Read Request of w, recorded in ORD first. */
static int kiwi_tx_read(struct kiwi_qp *qp, struct kiwi_tx_wr *w)
{
	struct kiwi_wc wc = { .qp_id = qp->ibqp.qp_num };
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_sqe *sqe = &w->sqe;
	struct kiwi_ord_ent *e;
	struct kiwi_hdr h;
	unsigned long flags;
	int rv;

	kiwi_hdr_init(&h, KIWI_RDMAP_READ_REQ);
	h.msn = txs->msn[KIWI_QN_RREQ];
	h.read_size = w->total;
	h.src_stag = sqe->rkey;
	h.src_to = sqe->raddr;
	if (w->cur.nsge) {
		h.sink_stag = w->cur.sg[0].lkey;
		h.sink_to = w->cur.sg[0].addr;
	}
	rv = kiwi_fpdu_add(txs, &h, &w->cur, 0);
	if (rv)
		return rv;
	txs->msn[KIWI_QN_RREQ]++;

	spin_lock_irqsave(&qp->lock, flags);
	e = &qp->ordq[qp->ord_head & qp->ord_mask];
	e->id = sqe->id;
	e->mr = w->cur.mr[0];		/* the reference moves to ORD */
	e->gen = w->cur.gen[0];
	w->cur.mr[0] = NULL;
	e->sink_stag = h.sink_stag;
	e->sink_to = h.sink_to;
	e->len = w->total;
	e->placed = 0;
	/* the sink's current STag: rdma_rw names the key before it rekeys */
	e->inval_stag = w->cur.nsge ? h.sink_stag : sqe->inval_stag;
	e->opcode = sqe->opcode;
	e->signaled = sqe->flags & KIWI_WQE_SIGNALED;
	e->seq = w->seq;
	wc.id = e->id;
	wc.bytes = e->len;
	wc.opcode = e->opcode;
	wc.inval_stag = e->inval_stag;
	wc.seq = e->seq;
	/* its completion's place in SQ order, before rx can complete it */
	e->pend = kiwi_tx_pend_read(qp, &wc, e->signaled);
	qp->ord_head++;
	spin_unlock_irqrestore(&qp->lock, flags);
	w->active = false;
	return 0;
}

/* Next FPDU of the Send or Write in w. */
static int kiwi_tx_msg(struct kiwi_qp *qp, struct kiwi_tx_wr *w, u32 room)
{
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_sqe *sqe = &w->sqe;
	bool se = sqe->flags & KIWI_WQE_SOLICITED;
	struct kiwi_hdr h;
	u32 len;
	int rv;

	/* a source invalidated or re-mapped by its owner mid-message */
	if (kiwi_cur_stale(&w->cur))
		return -ESTALE;
	switch (sqe->opcode) {
	case KIWI_OP_WRITE:
		kiwi_hdr_init(&h, KIWI_RDMAP_WRITE);
		h.stag = sqe->rkey;
		h.to = sqe->raddr + w->off;
		break;
	case KIWI_OP_SEND_INV:
		kiwi_hdr_init(&h, se ? KIWI_RDMAP_SEND_SE_INV :
			      KIWI_RDMAP_SEND_INV);
		h.inval_stag = sqe->inval_stag;
		break;
	default:
		kiwi_hdr_init(&h, se ? KIWI_RDMAP_SEND_SE : KIWI_RDMAP_SEND);
		break;
	}
	if (!h.tagged) {
		if (!w->off)
			w->msn = txs->msn[KIWI_QN_SEND]++;
		h.msn = w->msn;
		h.mo = w->off;
	}
	len = kiwi_fpdu_payload(txs, &h, &w->cur, w->total - w->off, room);
	if (!len && w->total != w->off)
		return -ENOSPC;
	h.last = w->off + len == w->total;
	rv = kiwi_fpdu_add(txs, &h, &w->cur, len);
	if (rv)
		return rv;
	w->off += len;
	if (h.last) {
		kiwi_cur_retire(txs, &w->cur);
		w->active = false;
		kiwi_tx_wc(qp, sqe, w->total, IB_WC_SUCCESS);
	}
	return 0;
}

/* a Read Response is being sent or waits (a snapshot) */
static bool kiwi_tx_rresp_due(struct kiwi_qp *qp)
{
	return READ_ONCE(qp->ird_tail) != READ_ONCE(qp->ird_head);
}

/* Next FPDU of the oldest Read Response: 1, 0 if none is due, or -errno. */
static int kiwi_tx_rresp(struct kiwi_qp *qp, u32 room)
{
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_cur *c = &txs->rr;
	struct kiwi_ird_ent *e;
	struct kiwi_mr *mr = NULL;
	unsigned long flags;
	struct kiwi_hdr h;
	u32 len;
	int rv;

	/* none due: rx kicks the engine after it queues a Request */
	if (!kiwi_tx_rresp_due(qp))
		return 0;
	spin_lock_irqsave(&qp->lock, flags);
	e = &qp->irdq[qp->ird_tail & qp->ird_mask];
	spin_unlock_irqrestore(&qp->lock, flags);

	/* the source was invalidated or re-mapped after the Request came */
	if (e->mr && !kiwi_mr_current(e->mr, e->gen))
		return -ESTALE;
	memset(c, 0, sizeof(*c));
	c->nsge = 1;
	c->sg[0].addr = e->src_to + e->sent;
	c->sg[0].length = e->len - e->sent;
	c->mr[0] = e->mr;
	c->gen[0] = e->gen;
	c->zc = kiwi_tx_zc_ok(qp, e->len, true);
	kiwi_hdr_init(&h, KIWI_RDMAP_READ_RESP);
	h.stag = e->sink_stag;
	h.to = e->sink_to + e->sent;
	len = kiwi_fpdu_payload(txs, &h, c, e->len - e->sent, room);
	if (!len && e->len != e->sent)
		return -ENOSPC;
	h.last = e->sent + len == e->len;
	rv = kiwi_fpdu_add(txs, &h, c, len);
	c->mr[0] = NULL;	/* still the IRD entry's */
	if (rv)
		return rv;
	e->sent += len;
	if (h.last) {
		spin_lock_irqsave(&qp->lock, flags);
		mr = e->mr;
		e->mr = NULL;
		qp->ird_tail++;
		spin_unlock_irqrestore(&qp->lock, flags);
		c->mr[0] = mr;
		kiwi_cur_retire(txs, c);
	}
	return 1;
}

static int kiwi_tx_rtr(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_cur none = {};
	struct kiwi_hdr h;
	int rv;

	rv = kiwi_mpa_rtr_hdr(&qp->mpa, &h);
	if (rv)
		return rv;
	if (!h.tagged)
		h.msn = txs->msn[h.qn]++;
	trace_kiwi_rtr_sent(qp->ibqp.qp_num, h.opcode);
	return kiwi_fpdu_add(txs, &h, &none, 0);
}

/* Fill the batch, RTR, Read Responses, then SQ work: FPDUs or -errno. */
static int kiwi_batch_fill(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_tx_wr *w = &txs->wr;
	int added = 0, rv;
	u32 room;

	txs->more = false;
	while ((room = kiwi_batch_room(txs))) {
		if (test_bit(KIWI_EF_RX_DEAD, &qp->eflags))
			break;
		if (test_bit(KIWI_EF_RTR_SEND, &qp->eflags) &&
		    test_and_clear_bit(KIWI_EF_RTR_SEND, &qp->eflags)) {
			rv = kiwi_tx_rtr(qp);
			if (rv)
				return rv;
			added++;
			continue;
		}
		rv = kiwi_tx_rresp(qp, room);
		if (rv == -ESTALE) {
			/* RFC 5040: the Request's STag is invalid now */
			kiwi_rx_fail(qp, KIWI_ERR_RDMAP_STAG, false);
			return added;
		}
		if (rv < 0)
			goto full;
		if (rv) {
			added++;
			continue;
		}
		if (!w->active) {
			rv = kiwi_tx_take(qp);
			if (rv == KIWI_NEXT_NONE || rv == KIWI_NEXT_FAIL)
				return added;
			if (rv == KIWI_NEXT_PUSH) {
				/* no MSG_MORE for what waits on this batch */
				txs->more = kiwi_tx_rresp_due(qp);
				return added;
			}
			if (rv == KIWI_NEXT_AGAIN)
				continue;
		}
		if (kiwi_sqe_read(&w->sqe))
			rv = kiwi_tx_read(qp, w);
		else
			rv = kiwi_tx_msg(qp, w, room);
		if (rv == -ENOSPC)
			goto full;
		if (rv) {
			kiwi_tx_wr_fail(qp, w, rv == -ESTALE ? IB_WC_LOC_PROT_ERR :
					IB_WC_LOC_QP_OP_ERR);
			return added;
		}
		added++;
	}
full:
	/* MSG_MORE only if FPDUs follow: TCP may hold a corked tail 200 ms */
	txs->more = w->active || kiwi_tx_rresp_due(qp) ||
		     kiwi_sq_next_posted(qp);
	return added;
}

/* Queue the Terminate after whatever the batch holds. */
static void kiwi_tx_term(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_cur none = {};
	struct kiwi_hdr h = txs->term;

	h.msn = txs->msn[KIWI_QN_TERM]++;
	txs->more = false;
	if (!kiwi_fpdu_add(txs, &h, &none, 0))
		txs->term_queued = true;
}

/* Push the batch.  0: go on; > 0: leave, a kick comes; < 0: stop. */
static int kiwi_tx_push(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	int rv = kiwi_batch_push(qp);

	if (rv == -EAGAIN)
		return 1;
	if (rv == KIWI_TX_YIELD) {
		kiwi_tx_kick(qp);
		return 1;
	}
	if (rv) {
		set_bit(KIWI_EF_TX_STOP, &qp->eflags);
		if (!test_and_set_bit(KIWI_EF_RST, &qp->eflags))
			kiwi_conn_llp_event(qp->conn, KIWI_LLP_RESET);
		kiwi_qp_to_err(qp, IB_EVENT_QP_FATAL);
		return -1;
	}
	if (txs->term_queued) {
		kiwi_stat_term(qp->kdev, true, txs->term.term.layer);
		trace_kiwi_term_sent(qp->ibqp.qp_num, &txs->term.term);
		set_bit(KIWI_EF_TERM_SENT, &qp->eflags);
		set_bit(KIWI_EF_TX_STOP, &qp->eflags);
		kiwi_conn_llp_event(qp->conn, KIWI_LLP_TERMINATE_SENT);
		return -1;
	}
	return 0;
}

static void kiwi_tx_run(struct kiwi_qp *qp, u32 budget)
{
	struct kiwi_txs *txs;
	size_t sent = 0;
	int rv;

	lockdep_assert_held(&qp->tx_mutex);
	/* a stale kick may find the engine off and txs not (yet) its own */
	if (!test_bit(KIWI_EF_ON, &qp->eflags) ||
	    test_bit(KIWI_EF_TX_STOP, &qp->eflags))
		return;
	txs = qp->txs;
	/* only the engine sets it: no atomic unless it is set */
	if (test_bit(KIWI_EF_WAIT_SPACE, &qp->eflags))
		clear_bit(KIWI_EF_WAIT_SPACE, &qp->eflags);
	/* completions held for ACKs that may have come (the ACK's kick) */
	if (txs->zc_live || txs->held_head != READ_ONCE(txs->held_tail))
		kiwi_tx_reap(qp);
	/* engine_busy stays set only where the engine comes back */
	for (;;) {
		if (txs->niov) {
			sent += txs->bytes;
			rv = kiwi_tx_push(qp);
			if (rv > 0)
				return;
			if (rv < 0)
				break;
		}
		if (test_bit(KIWI_EF_TERM, &qp->eflags)) {
			kiwi_tx_term(qp);
			if (!txs->term_queued)
				break;
			continue;
		}
		if (test_bit(KIWI_EF_RX_DEAD, &qp->eflags) ||
		    test_bit(KIWI_EF_HOLD, &qp->eflags))
			break;
		if (sent >= budget) {
			kiwi_tx_kick(qp);	/* let others run */
			return;
		}
		if (kiwi_tx_held_full(txs) && !kiwi_tx_rresp_due(qp)) {
			/* an ACK or Response kicks; Responses go, or peers deadlock */
			if (txs->more) {
				txs->more = false;
				tcp_sock_set_cork(qp->sock->sk, false);
			}
			return;
		}
		if (kiwi_batch_fill(qp) <= 0 && !txs->niov) {
			/* only memory operations: their completions are due */
			kiwi_batch_complete(qp);
			if (txs->ord_wait || kiwi_tx_idle(qp))
				return;
		}
	}
	kiwi_tx_busy_clear(qp);
}

void kiwi_tx_work(struct work_struct *work)
{
	struct kiwi_qp *qp = container_of(work, struct kiwi_qp, tx_work);

	mutex_lock(&qp->tx_mutex);
	kiwi_tx_run(qp, KIWI_TX_BUDGET_WORK);
	mutex_unlock(&qp->tx_mutex);
}

/* The user doorbell: send in the caller's context if the engine is idle. */
void kiwi_tx_doorbell(struct kiwi_qp *qp)
{
	if (mutex_trylock(&qp->tx_mutex)) {
		kiwi_tx_run(qp, KIWI_TX_BUDGET_DIRECT);
		mutex_unlock(&qp->tx_mutex);
	} else {
		kiwi_tx_kick(qp);
	}
}

/* ULPs post from softirqs and RCU sections; no preempt count: never */
static bool kiwi_tx_may_sleep(void)
{
#ifdef CONFIG_PREEMPT_COUNT
	return preemptible() && !rcu_preempt_depth();
#else
	return false;
#endif
}

void kiwi_tx_post(struct kiwi_qp *qp)
{
	unsigned int noio;

	if (!KIWI_SK_OWN_FRAGS || !READ_ONCE(kiwi_tx_direct) ||
	    !kiwi_tx_may_sleep() ||
	    !mutex_trylock(&qp->tx_mutex)) {
		kiwi_tx_kick(qp);
		return;
	}
	/* a completion handler in this task must not wait for the socket */
	if (test_bit(KIWI_EF_ON, &qp->eflags) &&
	    sock_owned_by_user_nocheck(qp->sock->sk)) {
		mutex_unlock(&qp->tx_mutex);
		kiwi_tx_kick(qp);
		return;
	}
	kiwi_stat_inc(qp->kdev, KIWI_STAT_POSTS_DIRECT);
	/* the poster may be on the block I/O path: no reclaim into I/O */
	noio = memalloc_noio_save();
	kiwi_tx_run(qp, KIWI_TX_BUDGET_DIRECT);
	memalloc_noio_restore(noio);
	mutex_unlock(&qp->tx_mutex);
}

/* TCP has room again, or processed an ACK (NOSPACE kept: kiwi_tx_reap()) */
void kiwi_tx_write_space(struct sock *sk)
{
	struct kiwi_qp *qp;

	read_lock_bh(&sk->sk_callback_lock);
	qp = sk->sk_user_data;
	if (!qp)
		goto out;
	if (sk_stream_is_writeable(sk)) {
		if (sk->sk_socket) {
			clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
			/* kept for ACK_WAIT, which the engine sets first */
			smp_mb__after_atomic();
			if (test_bit(KIWI_EF_ACK_WAIT, &qp->eflags))
				set_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		}
		if (test_and_clear_bit(KIWI_EF_WAIT_SPACE, &qp->eflags))
			kiwi_tx_kick(qp);
	}
	if (test_bit(KIWI_EF_ACK_WAIT, &qp->eflags)) {
		/* the flag before the sequence number it was set for */
		smp_rmb();
		if (!before(READ_ONCE(tcp_sk(sk)->snd_una),
			    READ_ONCE(qp->txs->ack_seq)) &&
		    test_and_clear_bit(KIWI_EF_ACK_WAIT, &qp->eflags))
			kiwi_tx_kick(qp);
	}
out:
	read_unlock_bh(&sk->sk_callback_lock);
}

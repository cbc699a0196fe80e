// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi: the queue pair state machine: modify_qp, the flushes, and the QP
 * side of the engines.  iWARP QPs reach RTS through the CM only; a new
 * QP is in INIT (iWARP's Idle, as cxgb4 and siw report it).
 */
#include <linux/string.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <rdma/iw_cm.h>
#include <rdma/rdma_cm.h>

#include "qp.h"
#include "core/kiwi_trace.h"

/* Under qp->lock: the one way to move it. */
void kiwi_qp_state_set(struct kiwi_qp *qp, enum ib_qp_state new)
{
	lockdep_assert_held(&qp->lock);
	if (qp->state != new)
		trace_kiwi_qp_state(qp->ibqp.qp_num, qp->state, new);
	WRITE_ONCE(qp->state, new);
}

/* Complete every posted WR of a ring with IB_WC_WR_FLUSH_ERR. */
void kiwi_flush_sq(struct kiwi_qp *qp)
{
	struct kiwi_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.qp_id = qp->ibqp.qp_num,
	};
	struct kiwi_sqe *sqe;
	u32 n;

	lockdep_assert_held(&qp->lock);
	/* later posts ring the doorbell, which flushes them */
	kiwi_tx_busy_clear(qp);
	for (n = 0; n < qp->sq.num; n++) {
		sqe = kiwi_ring_slot(&qp->sq, qp->sq_cons);
		if (!(kiwi_slot_flags(&sqe->flags) & KIWI_WQE_VALID))
			break;
		/* user-written slot: read once, report the opcode as is */
		wc.id = READ_ONCE(sqe->id);
		wc.opcode = READ_ONCE(sqe->opcode);
		if (wc.opcode >= KIWI_OP_MAX)
			wc.opcode = KIWI_OP_SEND;
		if (kiwi_cq_push(qp->scq, &wc))
			break;
		kiwi_slot_set(&sqe->flags, 0);
		qp->sq_cons++;
	}
}

void kiwi_flush_rq(struct kiwi_qp *qp)
{
	struct kiwi_rq_ctrl *ctrl = kiwi_ring_ctrl(&qp->rq);
	struct kiwi_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = KIWI_OP_RECEIVE,
		.qp_id = qp->ibqp.qp_num,
	};
	struct kiwi_rqe *rqe;
	u32 n;

	lockdep_assert_held(&qp->lock);
	/* user processes post receives without a call: they ring from now */
	WRITE_ONCE(ctrl->flush, 1);
	/* the word before the scan, as the provider orders slots before it */
	smp_mb();
	for (n = 0; n < qp->rq.num; n++) {
		rqe = kiwi_ring_slot(&qp->rq, qp->rq_cons);
		if (!(kiwi_slot_flags(&rqe->flags) & KIWI_WQE_VALID))
			break;
		wc.id = READ_ONCE(rqe->id);
		if (kiwi_cq_push(qp->rcq, &wc))
			break;
		kiwi_slot_set(&rqe->flags, 0);
		qp->rq_cons++;
	}
}

/* under qp->lock, in ERR: flush now, or do the engines hold older WRs? */
bool kiwi_qp_flush_now(struct kiwi_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	return !test_bit(KIWI_EF_ON, &qp->eflags) ||
		test_bit(KIWI_EF_FLUSHED, &qp->eflags);
}

/* RESET drops all queued work without completions (IB semantics). */
static void kiwi_qp_reset(struct kiwi_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	memset(qp->sq.mem, 0, (size_t)qp->sq.num * qp->sq.slot_size);
	qp->sq_prod = 0;
	qp->sq_cons = 0;
	if (qp->rq.num) {
		struct kiwi_rq_ctrl *ctrl = kiwi_ring_ctrl(&qp->rq);

		memset(qp->rq.mem, 0, (size_t)qp->rq.num * qp->rq.slot_size);
		WRITE_ONCE(ctrl->flush, 0);
	}
	qp->rq_prod = 0;
	qp->rq_cons = 0;
	WRITE_ONCE(qp->access, KIWI_QP_REMOTE);
}

#define KIWI_QP_ATTRS	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS | \
			 IB_QP_PKEY_INDEX | IB_QP_PORT | \
			 IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC)
#define KIWI_QP_ACCESS	(IB_ACCESS_LOCAL_WRITE | KIWI_QP_REMOTE)

/*
 * INIT flags without a remote right keep the QP's: rdma_cm sets such flags
 * on every iWARP client QP, whose peers rely on iw_cm's rights (rping).
 */
static int kiwi_qp_access_new(struct kiwi_qp *qp, enum ib_qp_state new,
			      int flags)
{
	if (new == IB_QPS_INIT && !(flags & KIWI_QP_REMOTE))
		flags |= qp->access & KIWI_QP_REMOTE;
	return flags;
}

static void kiwi_qp_quiesce(struct kiwi_qp *qp);

/* under qp->lock: may the verbs move cur to new?  0, 1: a no-op, -errno */
static int kiwi_qp_transition(struct kiwi_qp *qp, enum ib_qp_state cur,
			      enum ib_qp_state new)
{
	lockdep_assert_held(&qp->lock);
	switch (new) {
	case IB_QPS_RESET:
		/* the rings belong to the engines until the connection ends */
		if (test_bit(KIWI_EF_ON, &qp->eflags))
			return -EBUSY;
		return 0;
	case IB_QPS_ERR:
		return 0;
	case IB_QPS_INIT:
		if (cur != IB_QPS_RESET && cur != IB_QPS_INIT)
			return -EINVAL;
		return 0;
	case IB_QPS_SQD:
		/* rdma_disconnect() asks even in ERR: failing fails perftest */
		if (cur == IB_QPS_ERR)
			return 1;
		if (cur != IB_QPS_RTS && cur != IB_QPS_SQD)
			return -EINVAL;
		return 0;
	case IB_QPS_RTR:
		/* librdmacm's accept passes through RTR, as on IB */
		if (cur != IB_QPS_INIT && cur != IB_QPS_RTR)
			return -EINVAL;
		return 0;
	case IB_QPS_RTS:
		/* only the CM does; iw_cm's own requests carry an empty mask */
		if (new != cur)
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_conn *conn = NULL;
	enum ib_qp_state cur, new;
	unsigned long flags;
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return rv;
	/* IB path attributes (AV, PSNs, timeouts, ...) mean nothing here */
	if (mask & ~KIWI_QP_ATTRS)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~KIWI_QP_ACCESS))
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > KIWI_MAX_ORD)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > KIWI_MAX_IRD)
		return -EINVAL;

	spin_lock_irqsave(&qp->lock, flags);
	cur = qp->state;
	new = mask & IB_QP_STATE ? attr->qp_state : cur;
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		rv = -EINVAL;
		goto out;
	}
	rv = kiwi_qp_transition(qp, cur, new);
	if (rv) {
		if (rv > 0)
			rv = 0;		/* nothing to do */
		goto out;
	}

	if (mask & IB_QP_ACCESS_FLAGS)
		WRITE_ONCE(qp->access,
			   kiwi_qp_access_new(qp, new, attr->qp_access_flags));
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->ord = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->ird = attr->max_dest_rd_atomic;
	kiwi_qp_state_set(qp, new);
	if (new != IB_QPS_RTS)
		kiwi_tx_busy_clear(qp);
	if (new == IB_QPS_ERR && kiwi_qp_flush_now(qp)) {
		kiwi_flush_sq(qp);
		if (qp->rq.num)
			kiwi_flush_rq(qp);
	} else if (new == IB_QPS_RESET && cur != IB_QPS_RESET) {
		kiwi_qp_reset(qp);
	}
	/* a connected QP: the CM tears the connection down */
	if ((new == IB_QPS_ERR || (new == IB_QPS_SQD && cur == IB_QPS_RTS)) &&
	    test_bit(KIWI_EF_ON, &qp->eflags) && qp->conn) {
		conn = qp->conn;
		conn->ops->get(conn);
	}
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	if (conn) {
		/* abortive: flush all now, so ib_drain_qp()'s WR comes last */
		if (new == IB_QPS_ERR)
			kiwi_qp_quiesce(qp);
		conn->ops->disconnect(conn, new == IB_QPS_ERR);
		conn->ops->put(conn);
	}
	return rv;
}

/* ---- the QP side of the engines ---- */

void kiwi_qp_event(struct kiwi_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.event = type,
		.element.qp = &qp->ibqp,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/* The engines found the connection broken (any context): ERR. */
void kiwi_qp_to_err(struct kiwi_qp *qp, enum ib_event_type ev)
{
	unsigned long flags;
	bool was;

	spin_lock_irqsave(&qp->lock, flags);
	was = qp->state == IB_QPS_ERR;
	if (!was) {
		kiwi_qp_state_set(qp, IB_QPS_ERR);
		/* posts ring the doorbell again: in ERR they are flushed */
		kiwi_tx_busy_clear(qp);
		if (kiwi_qp_flush_now(qp)) {
			kiwi_flush_sq(qp);
			if (qp->rq.num)
				kiwi_flush_rq(qp);
		}
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (!was && ev)
		kiwi_qp_event(qp, ev);
}

/* a Terminate for an access violation: the oldest WR takes the blame */
void kiwi_qp_term_rcvd(struct kiwi_qp *qp, u8 status, enum ib_event_type ev)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state != IB_QPS_ERR)
		qp->term_status = status;
	spin_unlock_irqrestore(&qp->lock, flags);
	kiwi_qp_to_err(qp, ev);
}

static void kiwi_flush_wc(struct kiwi_cq *cq, struct kiwi_qp *qp, u64 id,
			  u8 opcode, u8 *status)
{
	struct kiwi_wc wc = {
		.id = id,
		.status = *status,
		.opcode = opcode,
		.qp_id = qp->ibqp.qp_num,
	};

	kiwi_cq_push(cq, &wc);
	*status = IB_WC_WR_FLUSH_ERR;
}

/*
 * Under qp->lock: the SQ's completions not posted, in SQ order; the oldest
 * not done takes *st, the rest are flushed.  Sink MRs are released.
 */
static void kiwi_flush_ord_batch(struct kiwi_qp *qp, struct kiwi_txs *txs,
				 u8 *st)
{
	struct kiwi_wc *wc;
	bool done, cqe;
	u32 i;

	for (; qp->ord_tail != qp->ord_head; qp->ord_tail++) {
		struct kiwi_ord_ent *e =
			&qp->ordq[qp->ord_tail & qp->ord_mask];

		if (e->mr)
			kiwi_mr_put(e->mr);
		e->mr = NULL;
	}
	if (!txs)
		return;
	for (i = 0; (wc = kiwi_tx_wc_pending(txs, i, &done, &cqe)); i++) {
		if (done || wc->status != IB_WC_SUCCESS ||
		    wc->opcode == KIWI_OP_REG_MR ||
		    wc->opcode == KIWI_OP_LOCAL_INV) {
			if (cqe)
				kiwi_cq_push(qp->scq, wc);
			if (wc->status != IB_WC_SUCCESS)
				*st = IB_WC_WR_FLUSH_ERR;
			continue;
		}
		kiwi_flush_wc(qp->scq, qp, wc->id, wc->opcode, st);
	}
	kiwi_tx_wc_flushed(txs);	/* completed above */
}

/* The WR the transmit engine was in the middle of, and its MRs. */
static void kiwi_flush_tx_wr(struct kiwi_qp *qp, struct kiwi_txs *txs,
			     u8 *st)
{
	if (!txs)
		return;
	if (txs->wr.active) {
		kiwi_flush_wc(qp->scq, qp, txs->wr.sqe.id, txs->wr.sqe.opcode,
			      st);
		txs->wr.active = false;
	}
	kiwi_mrs_put(txs->wr.cur.mr);
}

/* The receive side: the Receive, the RQ, IRD, the FPDU in progress. */
static void kiwi_flush_rx_side(struct kiwi_qp *qp)
{
	u8 rst = IB_WC_WR_FLUSH_ERR;

	/* no rxs: never connected */
	if (qp->rxs && qp->rxs->active) {
		kiwi_flush_wc(qp->rcq, qp, qp->rxs->rqe.id, KIWI_OP_RECEIVE,
			      &rst);
		kiwi_mrs_put(qp->rxs->mr);
		qp->rxs->active = false;
	}
	if (qp->rq.num)
		kiwi_flush_rq(qp);
	for (; qp->ird_tail != qp->ird_head; qp->ird_tail++) {
		struct kiwi_ird_ent *e =
			&qp->irdq[qp->ird_tail & qp->ird_mask];

		if (e->mr)
			kiwi_mr_put(e->mr);
		e->mr = NULL;
	}
	/* not a plain put of rx_mr: a Read Response's is the ORD entry's */
	kiwi_rx_abort_fpdu(qp);
}

/*
 * With both engines stopped: complete everything outstanding, oldest first
 * with a received Terminate's status, and drop the MR references held.
 */
void kiwi_qp_flush_all(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	unsigned long flags;
	u8 st;

	lockdep_assert_held(&qp->stop_mutex);
	spin_lock_irqsave(&qp->lock, flags);
	kiwi_qp_state_set(qp, IB_QPS_ERR);
	st = qp->term_status ? qp->term_status : IB_WC_WR_FLUSH_ERR;
	qp->term_status = IB_WC_SUCCESS;
	/* held completions whose bytes the peer acknowledged: done */
	if (txs && txs->held && test_bit(KIWI_EF_ON, &qp->eflags) &&
	    qp->sock)
		kiwi_tx_pend_acked(txs,
				   READ_ONCE(tcp_sk(qp->sock->sk)->snd_una));
	kiwi_flush_ord_batch(qp, txs, &st);
	kiwi_tx_drop_batch(qp, &st);	/* its MRs and kvecs */
	kiwi_flush_tx_wr(qp, txs, &st);
	kiwi_flush_sq(qp);
	kiwi_flush_rx_side(qp);
	/* from now on WRs posted in ERR are flushed as they come */
	set_bit(KIWI_EF_FLUSHED, &qp->eflags);
	spin_unlock_irqrestore(&qp->lock, flags);
}

/* Stop both engines, keeping the socket (process context), then flush. */
static void __kiwi_qp_quiesce(struct kiwi_qp *qp)
{
	struct sock *sk = qp->sock->sk;

	lockdep_assert_held(&qp->stop_mutex);
	write_lock_bh(&sk->sk_callback_lock);
	set_bit(KIWI_EF_RX_DEAD, &qp->eflags);
	write_unlock_bh(&sk->sk_callback_lock);
	cancel_work_sync(&qp->rx_work);
	mutex_lock(&qp->tx_mutex);
	set_bit(KIWI_EF_TX_STOP, &qp->eflags);
	mutex_unlock(&qp->tx_mutex);
	cancel_work_sync(&qp->tx_work);
	kiwi_qp_flush_all(qp);
}

static void kiwi_qp_quiesce(struct kiwi_qp *qp)
{
	mutex_lock(&qp->stop_mutex);
	if (test_bit(KIWI_EF_ON, &qp->eflags) &&
	    !test_and_set_bit(KIWI_EF_QUIESCED, &qp->eflags))
		__kiwi_qp_quiesce(qp);
	mutex_unlock(&qp->stop_mutex);
}

/* RFC 5044's MULPDU for mss, or for the larger FPDUs both ends offered */
static u32 kiwi_txs_mulpdu_for(const struct kiwi_txs *txs, u32 mss)
{
	u32 m;

	if (txs->fpdu_max > mss)
		mss = txs->fpdu_max;
	m = kiwi_mpa_mulpdu(mss, txs->fr.markers);
	/* a tiny MSS: larger FPDUs only cost TCP segmentation */
	if (m < 512)
		m = 512;
	/* with Markers every 512 octets, keep a batch's iov bounded */
	if (txs->fr.markers && m > 4096)
		m = 4096;
	return m;
}

/*
 * The MULPDU for the MSS now, read per FPDU (tx_mutex held): the path MTU
 * may change.  mss_cache: tcp_current_mss() is not exported (as siw).
 */
u32 kiwi_txs_mulpdu(struct kiwi_txs *txs)
{
	u32 mss = READ_ONCE(tcp_sk(txs->sk)->mss_cache);

	if (unlikely(mss != txs->mss) && mss) {
		txs->mss = mss;
		/* read by the resource dump without tx_mutex */
		WRITE_ONCE(txs->max_ulpdu, kiwi_txs_mulpdu_for(txs, mss));
	}
	return txs->max_ulpdu;
}

/* The transmit engine's state for a new connection over sk. */
static struct kiwi_txs *kiwi_txs_new(const struct kiwi_conn_params *params,
				     struct sock *sk)
{
	const struct kiwi_mpa_result *res = &params->mpa;
	struct kiwi_tx_cfg tc = { .crc = res->crc, .markers = res->markers_tx };
	struct kiwi_txs *txs;
	u32 mss;
	int i;

	txs = kzalloc(sizeof(*txs), GFP_KERNEL);
	if (!txs)
		return NULL;
	/* one FPDU's framing at least: with Markers, up to 12 pieces */
	txs->fsize = res->markers_tx ? KIWI_TX_FBUF : KIWI_TX_FBUF_MIN;
	txs->fbuf = kmalloc(txs->fsize, GFP_KERNEL);
	if (!txs->fbuf) {
		kfree(txs);
		return NULL;
	}
	mss = READ_ONCE(tcp_sk(sk)->mss_cache);
	if (!mss)
		mss = params->mss;
	if (!mss)
		mss = 536;
	kiwi_tx_init(&txs->fr, &tc);
	for (i = 0; i < KIWI_QN_MAX; i++)
		txs->msn[i] = 1;
	txs->sk = sk;
	txs->fpdu_max = res->fpdu_max;
	txs->mss = mss;
	txs->max_ulpdu = kiwi_txs_mulpdu_for(txs, mss);
	return txs;
}

/* A referenced QP by number, or NULL (irqsave: iw_cm calls with irqs off). */
struct kiwi_qp *kiwi_qp_lookup(struct kiwi_dev *kdev, u32 qpn)
{
	struct kiwi_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&kdev->qp_xa, flags);
	qp = xa_load(&kdev->qp_xa, qpn);
	if (qp)
		kiwi_qp_get(qp);
	xa_unlock_irqrestore(&kdev->qp_xa, flags);
	return qp;
}

/*
 * qpn for the caller of connect or accept on id, which names it unchecked:
 * a user QP only for the process that created it, a kernel QP only for
 * the rdma_cm id it was created on.  iw_cm's context is rdma_cm's
 * rdma_id_private, whose first member is the rdma_cm_id (6.1 to 6.12).
 */
struct kiwi_qp *kiwi_qp_claim(struct kiwi_dev *kdev, u32 qpn,
			      const struct iw_cm_id *id)
{
	struct kiwi_qp *qp = kiwi_qp_lookup(kdev, qpn);
	const struct rdma_cm_id *cm_id = id->context;

	if (qp && (qp->owner ? qp->owner != task_tgid(current) :
		   !cm_id || cm_id->qp != &qp->ibqp)) {
		kiwi_qp_put(qp);
		return NULL;
	}
	return qp;
}

void kiwi_qp_conn_set(struct kiwi_qp *qp, struct kiwi_conn *conn)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	qp->connecting = conn;
	spin_unlock_irqrestore(&qp->lock, flags);
}

/* A new stream's engine state, before KIWI_EF_ON (under lock). */
static void kiwi_qp_llp_reset(struct kiwi_qp *qp, struct kiwi_txs *txs,
			      const struct kiwi_conn_params *params)
{
	const struct kiwi_mpa_result *res = &params->mpa;
	struct kiwi_rx_cfg rc = { .crc = res->crc, .markers = res->markers_rx };

	kiwi_txs_free(qp->txs);		/* of an earlier connection */
	qp->txs = txs;
	qp->mpa = *res;
	qp->ord_head = 0;
	qp->ord_tail = 0;
	qp->ird_head = 0;
	qp->ird_tail = 0;
	qp->rx = &txs->rx;
	qp->rxs = &txs->rxs;
	qp->rx_mr = NULL;
	qp->rx_kind = 0;
	qp->term_status = IB_WC_SUCCESS;
	kiwi_rx_init(qp->rx, &rc);
	qp->eflags = 0;
	if (res->p2p && !params->initiator)
		set_bit(KIWI_EF_HOLD, &qp->eflags);
	if (params->initiator)
		set_bit(KIWI_EF_COMM_EST, &qp->eflags);
	if (res->p2p && params->initiator) {
		set_bit(KIWI_EF_RTR_SEND, &qp->eflags);
		if (res->rtr == KIWI_RTR_READ)
			set_bit(KIWI_EF_RTR_RRESP, &qp->eflags);
	}
}

/* The socket's callbacks to the engines; llp_stop gives them back. */
static void kiwi_qp_sk_take(struct kiwi_qp *qp, struct sock *sk)
{
	write_lock_bh(&sk->sk_callback_lock);
	qp->sk_data_ready = sk->sk_data_ready;
	qp->sk_write_space = sk->sk_write_space;
	qp->sk_state_change = sk->sk_state_change;
	sk->sk_user_data = qp;
	sk->sk_data_ready = kiwi_rx_data_ready;
	sk->sk_write_space = kiwi_tx_write_space;
	sk->sk_state_change = kiwi_rx_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
}

int kiwi_qp_llp_start(struct kiwi_qp *qp, struct kiwi_conn *conn,
		      struct socket *sock,
		      const struct kiwi_conn_params *params)
{
	const struct kiwi_mpa_result *res = &params->mpa;
	struct sock *sk = sock->sk;
	struct kiwi_ord_ent *ordq;
	struct kiwi_ird_ent *irdq;
	u32 ord_max = min_t(u32, res->ord, KIWI_MAX_ORD);
	u32 ird_max = min_t(u32, res->ird, KIWI_MAX_IRD);
	u32 ord_n = roundup_pow_of_two(max_t(u32, ord_max, 1));
	u32 ird_n = roundup_pow_of_two(max_t(u32, ird_max, 1));
	struct kiwi_txs *txs;
	unsigned long flags;
	int rv = -ENOMEM;

	txs = kiwi_txs_new(params, sk);
	ordq = kcalloc(ord_n, sizeof(*ordq), GFP_KERNEL);
	irdq = kcalloc(ird_n, sizeof(*irdq), GFP_KERNEL);
	if (!txs || !ordq || !irdq)
		goto err;

	/* a stale earlier engine run must not see txs half set up or freed */
	mutex_lock(&qp->tx_mutex);
	spin_lock_irqsave(&qp->lock, flags);
	if ((qp->state != IB_QPS_INIT && qp->state != IB_QPS_RTR) ||
	    test_bit(KIWI_EF_ON, &qp->eflags)) {
		spin_unlock_irqrestore(&qp->lock, flags);
		mutex_unlock(&qp->tx_mutex);
		rv = -EINVAL;
		goto err;
	}
	kiwi_qp_llp_reset(qp, txs, params);
	/* an earlier connection's rings are empty (llp_stop flushed them) */
	swap(qp->ordq, ordq);
	swap(qp->irdq, irdq);
	qp->ord_mask = ord_n - 1;
	qp->ird_mask = ird_n - 1;
	qp->ord_max = ord_max;
	qp->ird_max = ird_max;
	if (!qp->user) {
		/* block I/O paths: no reclaim into I/O, own page frags */
		sk->sk_allocation = GFP_NOIO;
		kiwi_sk_own_frags(sk);
	}
	qp->sock = sock;
	qp->conn = conn;
	conn->ops->get(conn);
	reinit_completion(&qp->llp_stopped);
	kiwi_qp_state_set(qp, IB_QPS_RTS);
	set_bit(KIWI_EF_ON, &qp->eflags);
	spin_unlock_irqrestore(&qp->lock, flags);
	mutex_unlock(&qp->tx_mutex);
	kfree(ordq);			/* the earlier connection's */
	kfree(irdq);
	kiwi_qp_sk_take(qp, sk);

	/* the RTR, WRs posted in INIT, FPDUs that came with the MPA frame */
	kiwi_tx_kick(qp);
	kiwi_rx_read(qp);
	if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED &&
	    !test_and_set_bit(KIWI_EF_FIN, &qp->eflags))
		kiwi_conn_llp_event(conn, KIWI_LLP_PEER_CLOSED);
	return 0;

err:
	kiwi_txs_free(txs);
	kfree(ordq);
	kfree(irdq);
	return rv;
}

void kiwi_qp_llp_stop(struct kiwi_qp *qp)
{
	struct kiwi_conn *conn;
	struct sock *sk;
	unsigned long flags;

	mutex_lock(&qp->stop_mutex);
	if (!test_bit(KIWI_EF_ON, &qp->eflags)) {
		mutex_unlock(&qp->stop_mutex);
		return;
	}
	sk = qp->sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = qp->sk_data_ready;
	sk->sk_write_space = qp->sk_write_space;
	sk->sk_state_change = qp->sk_state_change;
	write_unlock_bh(&sk->sk_callback_lock);

	if (!test_and_set_bit(KIWI_EF_QUIESCED, &qp->eflags))
		__kiwi_qp_quiesce(qp);
	else
		kiwi_qp_flush_all(qp);	/* posted since the quiesce */

	spin_lock_irqsave(&qp->lock, flags);
	clear_bit(KIWI_EF_ON, &qp->eflags);
	conn = qp->conn;
	qp->conn = NULL;
	qp->sock = NULL;
	spin_unlock_irqrestore(&qp->lock, flags);
	mutex_unlock(&qp->stop_mutex);
	conn->ops->put(conn);
	complete_all(&qp->llp_stopped);
}

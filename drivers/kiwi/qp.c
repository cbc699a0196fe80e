// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi: queue pairs, their state machine and the posting of kernel work
 * requests into the SQ and RQ rings.
 *
 * iWARP QPs are RC only and reach RTS through the connection manager,
 * never through modify_qp.  A new QP is in INIT, the Idle state of the
 * iWARP verbs, as RNICs (cxgb4, newer siw) report it; from the verbs a
 * QP goes RESET -> INIT, INIT -> INIT or RTR, anything -> ERR and
 * anything -> RESET; a connected QP goes to SQD (graceful) or ERR
 * (abortive) through the CM.
 */
#include <linux/slab.h>
#include <linux/string.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <rdma/iw_cm.h>
#include <rdma/rdma_cm.h>
#include <rdma/restrack.h>

#include "kiwi.h"
#include "kiwi_trace.h"

/* Under qp->lock (or before the QP is visible): the one way to move it. */
static void kiwi_qp_state_set(struct kiwi_qp *qp, enum ib_qp_state new)
{
	if (qp->state != new)
		trace_kiwi_qp_state(qp->ibqp.qp_num, qp->state, new);
	qp->state = new;
}

static void kiwi_qp_release(struct kref *ref)
{
	complete(&container_of(ref, struct kiwi_qp, ref)->freed);
}

void kiwi_qp_get(struct kiwi_qp *qp)
{
	kref_get(&qp->ref);
}

void kiwi_qp_put(struct kiwi_qp *qp)
{
	kref_put(&qp->ref, kiwi_qp_release);
}

/*
 * iw_cm calls iw_add_ref only right after iw_get_qp, under one of its
 * spinlocks: kiwi_get_qp() has taken the reference already.
 */
void kiwi_qp_add_ref(struct ib_qp *ibqp)
{
}

void kiwi_qp_rem_ref(struct ib_qp *ibqp)
{
	kiwi_qp_put(to_kqp(ibqp));
}

/*
 * A referenced QP by number, or NULL, for the connection manager and the
 * data path (also from softirq).  Under the xarray's lock a QP that is
 * found still holds its creation reference: destroy_qp drops that only
 * after removing the number, and then waits for this one.
 */
struct kiwi_qp *kiwi_qp_lookup(struct kiwi_dev *kdev, u32 qpn)
{
	struct kiwi_qp *qp;

	xa_lock_bh(&kdev->qp_xa);
	qp = xa_load(&kdev->qp_xa, qpn);
	if (qp)
		kiwi_qp_get(qp);
	xa_unlock_bh(&kdev->qp_xa);
	return qp;
}

/*
 * iw_cm's lookup by number.  The reference iw_cm then asks for with
 * iw_add_ref is taken here, under the xarray's lock: between a bare load
 * and iw_add_ref, destroy_qp could have freed the QP.  (iw_cm calls this
 * with a spinlock held and interrupts off: the irqsave lock variant.)
 */
struct ib_qp *kiwi_get_qp(struct ib_device *ibdev, int qpn)
{
	struct kiwi_dev *kdev = to_kdev(ibdev);
	struct kiwi_qp *qp;
	unsigned long flags;

	if (qpn <= 0)
		return NULL;
	xa_lock_irqsave(&kdev->qp_xa, flags);
	qp = xa_load(&kdev->qp_xa, qpn);
	if (qp)
		kiwi_qp_get(qp);
	xa_unlock_irqrestore(&kdev->qp_xa, flags);
	return qp ? &qp->ibqp : NULL;
}

/*
 * May the caller of connect or accept on id bind qp to it?  The QP number
 * given to rdma_connect() and rdma_accept() comes from user space
 * unchecked (librdmacm passes any number when the rdma_cm_id has no QP of
 * its own), and iw_cm calls connect and accept in the caller's context: a
 * user QP is bound only by the process that created it.
 *
 * A kernel QP is bound only through the rdma_cm id it was created on
 * (rdma_create_qp(), which every kernel ULP uses): a user's id has no QP
 * in the kernel, so a user naming a kernel QP's number is refused.  That
 * id is reached through the iw_cm id's context: rdma_cm is iw_cm's only
 * user and passes its rdma_id_private, whose first member is the
 * rdma_cm_id (drivers/infiniband/core/cma_priv.h, 6.1 through 6.12).
 */
bool kiwi_qp_bind_ok(const struct kiwi_qp *qp, const struct iw_cm_id *id)
{
	const struct rdma_cm_id *cm_id = id->context;

	if (qp->owner)
		return qp->owner == task_tgid(current);
	return cm_id && cm_id->qp == &qp->ibqp;
}

int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata)
{
	struct kiwi_dev *kdev = to_kdev(ibqp->device);
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct ib_qp_cap *cap = &attr->cap;
	u32 nsq, nrq, id;
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return rv;
	if (attr->qp_type != IB_QPT_RC || attr->create_flags)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > KIWI_MAX_QP_WR ||
	    cap->max_send_sge > KIWI_MAX_SGE ||
	    cap->max_inline_data > KIWI_MAX_INLINE ||
	    (!attr->srq && (cap->max_recv_wr > KIWI_MAX_QP_WR ||
			    cap->max_recv_sge > KIWI_MAX_SGE)))
		return -EINVAL;
	if (!attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	if (attr->sq_sig_type != IB_SIGNAL_ALL_WR &&
	    attr->sq_sig_type != IB_SIGNAL_REQ_WR)
		return -EINVAL;

	/* a ring has at least one slot, even for a receive-only QP */
	nsq = roundup_pow_of_two(max(cap->max_send_wr, 1U));
	nrq = attr->srq ? 0 : roundup_pow_of_two(max(cap->max_recv_wr, 1U));

	qp->kdev = kdev;
	kref_init(&qp->ref);
	init_completion(&qp->freed);
	spin_lock_init(&qp->lock);
	/* Idle: receives and sends may be posted before the connection */
	qp->state = IB_QPS_INIT;
	qp->access = KIWI_QP_REMOTE;
	qp->user = !!udata;
	qp->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->scq = to_kcq(attr->send_cq);
	qp->rcq = to_kcq(attr->recv_cq);
	qp->srq = attr->srq ? to_ksrq(attr->srq) : NULL;
	INIT_WORK(&qp->tx_work, kiwi_tx_work);
	mutex_init(&qp->tx_mutex);
	mutex_init(&qp->stop_mutex);
	init_completion(&qp->llp_stopped);

	rv = kiwi_uobj_charge(udata, KIWI_UOBJ_QP, &qp->uctx);
	if (rv)
		return rv;
	rv = kiwi_ring_alloc(&qp->sq, nsq, sizeof(struct kiwi_sqe), udata);
	if (rv)
		goto err_charge;
	if (nrq) {
		rv = kiwi_ring_alloc(&qp->rq, nrq, sizeof(struct kiwi_rqe),
				     udata);
		if (rv)
			goto err_sq;
	}
	/*
	 * Reserve the number, cyclically so that a stale number (a late
	 * completion, a peer's old connection) does not name a new QP at
	 * once; the QP is published once complete.
	 */
	rv = xa_alloc_cyclic_bh(&kdev->qp_xa, &id, NULL,
				XA_LIMIT(1, KIWI_MAX_QP), &kdev->qp_next,
				GFP_KERNEL);
	if (rv < 0) {
		rv = rv == -EBUSY ? -ENOMEM : rv;
		goto err_rq;
	}
	ibqp->qp_num = id;

	if (udata) {
		struct kiwi_uresp_create_qp resp = {
			.sq_key = kiwi_ring_key(&qp->sq),
			.rq_key = nrq ? kiwi_ring_key(&qp->rq) :
				KIWI_INVAL_KEY,
			.qp_id = id,
			.num_sqe = nsq,
			.num_rqe = nrq,
		};

		rv = kiwi_respond(udata, &resp, sizeof(resp));
		if (rv)
			goto err_id;
	}

	/* what the QP really offers, at least what was asked for */
	cap->max_send_wr = nsq;
	cap->max_send_sge = KIWI_MAX_SGE;
	cap->max_inline_data = KIWI_MAX_INLINE;
	cap->max_recv_wr = nrq;
	cap->max_recv_sge = nrq ? KIWI_MAX_SGE : 0;

	if (udata)
		qp->owner = get_pid(task_tgid(current));
	xa_store_bh(&kdev->qp_xa, id, qp, GFP_KERNEL);
	kiwi_obj_inc(KIWI_OBJ_QP);
	/* created in INIT (above), reported once it has its number */
	trace_kiwi_qp_state(id, IB_QPS_RESET, IB_QPS_INIT);
	return 0;

err_id:
	xa_erase_bh(&kdev->qp_xa, id);
err_rq:
	if (nrq)
		kiwi_ring_free(&qp->rq);
err_sq:
	kiwi_ring_free(&qp->sq);
err_charge:
	kiwi_uobj_uncharge(qp->uctx, KIWI_UOBJ_QP);
	return rv;
}

/* Complete every posted WR of a ring with IB_WC_WR_FLUSH_ERR. */
static void kiwi_flush_sq(struct kiwi_qp *qp)
{
	struct kiwi_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.qp_id = qp->ibqp.qp_num,
	};
	struct kiwi_sqe *sqe;
	u32 n;

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

static void kiwi_flush_rq(struct kiwi_qp *qp)
{
	struct kiwi_rq_ctrl *ctrl = kiwi_ring_ctrl(&qp->rq);
	struct kiwi_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = KIWI_OP_RECEIVE,
		.qp_id = qp->ibqp.qp_num,
	};
	struct kiwi_rqe *rqe;
	u32 n;

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

/*
 * Under qp->lock, QP in ERR: may the rings be flushed now?  Not while
 * the engines still hold WRs (Reads in ORD, the WR being sent): those
 * are older than any in the rings and complete first, when
 * kiwi_qp_flush_all() runs at the stop that the CM carries out on the
 * event which put the QP in ERR.  Until then new WRs wait in the rings.
 */
static bool kiwi_qp_flush_now(struct kiwi_qp *qp)
{
	return !test_bit(KIWI_EF_ON, &qp->eflags) ||
		test_bit(KIWI_EF_FLUSHED, &qp->eflags);
}

/* RESET drops all queued work without completions (IB semantics). */
static void kiwi_qp_reset(struct kiwi_qp *qp)
{
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
 * The access flags a QP's Writes and Reads from the peer are checked
 * against.  A QP starts with both remote rights, and flags without any
 * remote right given in INIT leave them: that is what rdma_cm gives every
 * iWARP client QP before its connection exists (rdma_init_qp_attr()
 * without an iw_cm id; librdmacm's rdma_create_qp()), whatever the
 * application wants, and the applications rely on the rights the iw_cm
 * would have given (rping's server Writes to its client).  Any other
 * setting, in INIT with a remote right or in RTR and RTS, is enforced.
 */
static int kiwi_qp_access_new(struct kiwi_qp *qp, enum ib_qp_state new,
			      int flags)
{
	if (new == IB_QPS_INIT && !(flags & KIWI_QP_REMOTE))
		flags |= qp->access & KIWI_QP_REMOTE;
	return flags;
}

int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_cep *cep = NULL;
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
	switch (new) {
	case IB_QPS_RESET:
		/* the rings belong to the engines until the connection ends */
		if (test_bit(KIWI_EF_ON, &qp->eflags))
			rv = -EBUSY;
		break;
	case IB_QPS_ERR:
		break;
	case IB_QPS_INIT:
		if (cur != IB_QPS_RESET && cur != IB_QPS_INIT)
			rv = -EINVAL;
		break;
	case IB_QPS_SQD:
		/*
		 * iw_cm's graceful disconnect of a connected QP.  librdmacm's
		 * rdma_disconnect() asks for SQD on iWARP even when the peer
		 * closed first and the QP is in ERR already: nothing to do
		 * then, and failing it fails the application (perftest).
		 */
		if (cur == IB_QPS_ERR)
			goto out;
		if (cur != IB_QPS_RTS && cur != IB_QPS_SQD)
			rv = -EINVAL;
		break;
	case IB_QPS_RTR:
		/* librdmacm's accept passes through RTR, as on IB */
		if (cur != IB_QPS_INIT && cur != IB_QPS_RTR)
			rv = -EINVAL;
		break;
	case IB_QPS_RTS:
		/*
		 * Only the connection manager moves a QP to RTS, when the
		 * connection is up.  iw_cm's own modify requests for RTR and
		 * RTS carry an empty mask and take the no-change path.
		 */
		if (new != cur)
			rv = -EINVAL;
		break;
	default:
		rv = -EINVAL;
		break;
	}
	if (rv)
		goto out;

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
	    test_bit(KIWI_EF_ON, &qp->eflags) && qp->cep) {
		cep = qp->cep;
		kiwi_cep_get(cep);
	}
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	if (cep) {
		/*
		 * Abortive: every outstanding WR completes (flushed) before
		 * this returns, so that ib_drain_qp()'s own WR completes last.
		 */
		if (new == IB_QPS_ERR)
			kiwi_qp_quiesce(qp);
		kiwi_cm_disconnect(cep, new == IB_QPS_ERR);
		kiwi_cep_put(cep);
	}
	return rv;
}

static const char *kiwi_qp_state_name(enum ib_qp_state s)
{
	static const char * const names[] = {
		[IB_QPS_RESET] = "RESET", [IB_QPS_INIT] = "INIT",
		[IB_QPS_RTR] = "RTR", [IB_QPS_RTS] = "RTS",
		[IB_QPS_SQD] = "SQD", [IB_QPS_SQE] = "SQE",
		[IB_QPS_ERR] = "ERR",
	};

	return (unsigned int)s < ARRAY_SIZE(names) && names[s] ?
		names[s] : "?";
}

/*
 * `rdma res show qp -dd`: the engines' state, for whoever has to find out
 * why a QP stopped moving.  stop_mutex with KIWI_EF_ON keeps the socket
 * and the tx state from going away; the values themselves are racy
 * snapshots.
 */
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_txs *txs;
	struct nlattr *nest;
	struct sock *sk;
	bool sq_next = false, rq_next = false;
	struct kiwi_mpa_result mpa;
	enum ib_qp_state state;
	unsigned long flags;
	u32 v[6], rd[4];
	int rv = 0;

	/* the rings may be gone already (kiwi_qp_ring_drop()) */
	spin_lock_irqsave(&qp->lock, flags);
	if (qp->sq.mem)
		sq_next = kiwi_sq_next_posted(qp);
	if (qp->rq.mem) {
		struct kiwi_rqe *rqe = kiwi_ring_slot(&qp->rq, qp->rq_cons);

		rq_next = kiwi_slot_flags(&rqe->flags) & KIWI_WQE_VALID;
	}
	v[0] = qp->sq_cons;
	v[1] = qp->rq_cons;
	v[2] = qp->ord_head - qp->ord_tail;
	v[3] = qp->ird_head - qp->ird_tail;
	v[4] = 0;
	if (qp->user && qp->sq.mem) {
		struct kiwi_sq_ctrl *ctrl = kiwi_ring_ctrl(&qp->sq);

		v[4] = READ_ONCE(ctrl->engine_busy);
	}
	state = qp->state;
	rd[0] = qp->ord;		/* the consumer's limits (modify_qp) */
	rd[1] = qp->ird;
	rd[2] = qp->ord_max;		/* what the MPA exchange settled */
	rd[3] = qp->ird_max;
	mpa = qp->mpa;			/* of the last connection */
	spin_unlock_irqrestore(&qp->lock, flags);

	nest = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_string(msg, "state", kiwi_qp_state_name(state)) ||
	    rdma_nl_put_driver_u32(msg, "ord", rd[0]) ||
	    rdma_nl_put_driver_u32(msg, "ird", rd[1]) ||
	    rdma_nl_put_driver_u32(msg, "ord_max", rd[2]) ||
	    rdma_nl_put_driver_u32(msg, "ird_max", rd[3]) ||
	    rdma_nl_put_driver_u32(msg, "mpa_rev", mpa.rev) ||
	    rdma_nl_put_driver_u32(msg, "mpa_crc", mpa.crc) ||
	    rdma_nl_put_driver_u32(msg, "mpa_markers_rx", mpa.markers_rx) ||
	    rdma_nl_put_driver_u32(msg, "mpa_markers_tx", mpa.markers_tx) ||
	    rdma_nl_put_driver_u32(msg, "mpa_p2p", mpa.p2p) ||
	    rdma_nl_put_driver_u32(msg, "mpa_rtr", mpa.rtr) ||
	    rdma_nl_put_driver_u64_hex(msg, "eflags", READ_ONCE(qp->eflags)) ||
	    rdma_nl_put_driver_u32(msg, "sq_cons", v[0]) ||
	    rdma_nl_put_driver_u32(msg, "sq_next_posted", sq_next) ||
	    rdma_nl_put_driver_u32(msg, "rq_cons", v[1]) ||
	    rdma_nl_put_driver_u32(msg, "rq_next_posted", rq_next) ||
	    rdma_nl_put_driver_u32(msg, "ord_out", v[2]) ||
	    rdma_nl_put_driver_u32(msg, "ird_out", v[3]) ||
	    rdma_nl_put_driver_u32(msg, "engine_busy", v[4]) ||
	    rdma_nl_put_driver_u32(msg, "tx_work_pending",
				   work_pending(&qp->tx_work)) ||
	    rdma_nl_put_driver_u32(msg, "rx_kind", READ_ONCE(qp->rx_kind)) ||
	    rdma_nl_put_driver_u32(msg, "rx_send_active",
				   READ_ONCE(qp->rxs.active)))
		goto cancel;

	mutex_lock(&qp->stop_mutex);
	if (!test_bit(KIWI_EF_ON, &qp->eflags))
		goto out;
	txs = qp->txs;
	sk = qp->sock->sk;
	v[0] = READ_ONCE(txs->wr.active);
	v[1] = READ_ONCE(txs->niov) - READ_ONCE(txs->iov_done);
	rd[0] = READ_ONCE(txs->bytes);
	v[2] = READ_ONCE(txs->ord_wait);
	v[3] = READ_ONCE(sk->sk_wmem_queued);
	v[4] = READ_ONCE(sk->sk_sndbuf);
	v[5] = READ_ONCE(tcp_sk(sk)->rcv_nxt) -
	       READ_ONCE(tcp_sk(sk)->copied_seq);
	if (rdma_nl_put_driver_u32(msg, "tx_wr_active", v[0]) ||
	    rdma_nl_put_driver_u32(msg, "tx_iov_unsent", v[1]) ||
	    rdma_nl_put_driver_u32(msg, "tx_batch_unsent", rd[0]) ||
	    rdma_nl_put_driver_u32(msg, "tx_ord_wait", v[2]) ||
	    rdma_nl_put_driver_u32(msg, "sk_wmem_queued", v[3]) ||
	    rdma_nl_put_driver_u32(msg, "sk_sndbuf", v[4]) ||
	    rdma_nl_put_driver_u32(msg, "sk_unread", v[5]) ||
	    rdma_nl_put_driver_u32(msg, "sk_nospace", sk->sk_socket &&
				   test_bit(SOCK_NOSPACE,
					    &sk->sk_socket->flags)) ||
	    rdma_nl_put_driver_u32(msg, "sk_state", READ_ONCE(sk->sk_state)))
		rv = -EMSGSIZE;
out:
	mutex_unlock(&qp->stop_mutex);
	if (rv)
		goto cancel;
	nla_nest_end(msg, nest);
	return 0;
cancel:
	nla_nest_cancel(msg, nest);
	return -EMSGSIZE;
}

int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	unsigned long flags;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	spin_lock_irqsave(&qp->lock, flags);
	attr->qp_state = qp->state;
	attr->qp_access_flags = qp->access;
	attr->max_rd_atomic = qp->ord;
	attr->max_dest_rd_atomic = qp->ird;
	spin_unlock_irqrestore(&qp->lock, flags);
	attr->cur_qp_state = attr->qp_state;
	attr->port_num = 1;
	attr->path_mtu = ib_mtu_int_to_enum(READ_ONCE(qp->kdev->netdev->mtu));
	attr->cap.max_send_wr = qp->sq.num;
	attr->cap.max_send_sge = KIWI_MAX_SGE;
	attr->cap.max_inline_data = KIWI_MAX_INLINE;
	attr->cap.max_recv_wr = qp->rq.num;
	attr->cap.max_recv_sge = qp->rq.num ? KIWI_MAX_SGE : 0;

	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->qp_type = IB_QPT_RC;
	init->port_num = 1;
	return 0;
}

/*
 * Free a ring of a QP being destroyed.  ib_core deletes the QP from its
 * resource tracker only after destroy_qp, so a resource dump may still
 * be reading the ring (kiwi_fill_res_qp_entry()): it is unhooked under
 * qp->lock, which the dump holds while it looks, and freed after.
 */
static void kiwi_qp_ring_drop(struct kiwi_qp *qp, struct kiwi_ring *r)
{
	struct kiwi_ring old;
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	old = *r;
	memset(r, 0, sizeof(*r));
	spin_unlock_irqrestore(&qp->lock, flags);
	if (old.mem)
		kiwi_ring_free(&old);
}

int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_cep *cep = NULL;
	unsigned long flags;

	/* a connected QP: abort the connection and wait for llp_stop */
	spin_lock_irqsave(&qp->lock, flags);
	if (test_bit(KIWI_EF_ON, &qp->eflags) && qp->cep) {
		cep = qp->cep;
		kiwi_cep_get(cep);
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (cep) {
		kiwi_cm_disconnect(cep, true);
		wait_for_completion(&qp->llp_stopped);
		kiwi_cep_put(cep);
	}

	xa_erase_bh(&qp->kdev->qp_xa, ibqp->qp_num);
	/* no completions after destroy: queued WRs are dropped, not flushed */
	spin_lock_irqsave(&qp->lock, flags);
	kiwi_qp_state_set(qp, IB_QPS_ERR);
	spin_unlock_irqrestore(&qp->lock, flags);

	/* ib_core frees *qp when we return: wait out iw_cm's references */
	kiwi_qp_put(qp);
	wait_for_completion(&qp->freed);
	/* a kick that raced with llp_stop finds the engine off; wait for it */
	cancel_work_sync(&qp->tx_work);
	kfree(qp->txs);

	kiwi_qp_ring_drop(qp, &qp->rq);
	kiwi_qp_ring_drop(qp, &qp->sq);
	put_pid(qp->owner);
	kiwi_uobj_uncharge(qp->uctx, KIWI_UOBJ_QP);
	kiwi_obj_dec(KIWI_OBJ_QP);
	return 0;
}

static int kiwi_copy_sges(struct kiwi_sge *dst, const struct ib_sge *src,
			  int num, u32 max)
{
	int i;

	if (num < 0 || num > max)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
	return 0;
}

/*
 * Kernel consumers post with ib_sge addresses that are kernel virtual
 * addresses, because the device has no DMA device (ib_uses_virt_dma).
 */
static int kiwi_copy_inline(struct kiwi_sqe *sqe, const struct ib_send_wr *wr)
{
	u32 len = 0;
	int i;

	if (wr->num_sge < 0 || wr->num_sge > KIWI_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > KIWI_MAX_INLINE - len)
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
	case IB_WR_REG_MR: {
		const struct ib_reg_wr *reg = reg_wr(wr);
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
		goto done;
	}
	default:
		/* immediate data, atomics and the rest: not on iWARP here */
		return -EINVAL;
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		flags |= KIWI_WQE_INLINE;
		rv = kiwi_copy_inline(sqe, wr);
	} else {
		rv = kiwi_copy_sges(sqe->sge, wr->sg_list, wr->num_sge,
				    KIWI_MAX_SGE);
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

	for (; wr; wr = wr->next) {
		wc.id = wr->wr_id;
		if (kiwi_cq_push(qp->scq, &wc)) {
			*bad_wr = wr;
			return -ENOMEM;
		}
	}
	return 0;
}

int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_sqe tmp, *sqe;
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
	/*
	 * iWARP verbs allow posting in Idle (INIT): the WRs wait in the SQ
	 * until the connection brings the QP to RTS.
	 */
	if (qp->user) {
		/* in RTS the doorbell starts the SQ engine */
		kick = qp->state == IB_QPS_RTS;
		goto out;
	}
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
			trace_kiwi_wr_post(ibqp->qp_num, false, false, tmp.id,
					   tmp.opcode, kiwi_sg_len(wr->sg_list,
							wr->num_sge));
		kick = true;
	}
	if (rv)
		*bad_wr = wr;
	kick = kick && qp->state == IB_QPS_RTS;
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	if (kick) {
		if (qp->user)
			kiwi_tx_doorbell(qp);
		else
			kiwi_tx_kick(qp);
	}
	return rv;
}

int kiwi_rqe_from_wr(struct kiwi_rqe *rqe, const struct ib_recv_wr *wr,
		     u32 max_sge)
{
	int rv;

	memset(rqe, 0, sizeof(*rqe));
	rv = kiwi_copy_sges(rqe->sge, wr->sg_list, wr->num_sge, max_sge);
	if (rv)
		return rv;
	rqe->id = wr->wr_id;
	rqe->num_sge = wr->num_sge;
	return 0;
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
	/*
	 * A user doorbell (no WRs): the provider saw kiwi_rq_ctrl.flush, so
	 * what it posted since the flush completes flushed now.
	 */
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
			rv = kiwi_rqe_from_wr(&tmp, wr, KIWI_MAX_SGE);
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

/*
 * The engines found the connection broken (any context): ERR.  Every
 * outstanding WR is flushed, oldest first, when the engines stop (the
 * CM stops them on the event that goes with this).
 */
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

/*
 * A Terminate received for an access violation (rx.c): the QP goes to ERR
 * with IB_EVENT_QP_ACCESS_ERR, and the oldest WR in flight is blamed.
 * RDMA Writes and Sends complete once TCP has them, so the one that caused
 * it may have completed already; the next one still outstanding then
 * carries the error (a Read in ORD, the WR being sent).  If there is none
 * the event alone reports it.
 */
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
 * With both engines stopped: complete everything outstanding as flushed,
 * oldest first (Reads in flight, the WR being sent, the SQ ring; the
 * Receive being filled, the RQ ring) and drop the MR references held.
 * The oldest WR in flight takes the status a received Terminate left.
 */
void kiwi_qp_flush_all(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	unsigned long flags;
	u8 rst = IB_WC_WR_FLUSH_ERR;
	u8 st;
	int i;

	spin_lock_irqsave(&qp->lock, flags);
	kiwi_qp_state_set(qp, IB_QPS_ERR);
	st = qp->term_status ? qp->term_status : IB_WC_WR_FLUSH_ERR;
	qp->term_status = IB_WC_SUCCESS;
	/*
	 * Reads in ORD and the completions of the batch TCP did not take
	 * in full (its WRs did not all leave), merged in SQ order.
	 */
	for (i = 0; qp->ord_tail != qp->ord_head ||
		    (txs && i < txs->nwc);) {
		struct kiwi_ord_ent *e =
			&qp->ordq[qp->ord_tail % KIWI_MAX_ORD];

		if (qp->ord_tail == qp->ord_head ||
		    (txs && i < txs->nwc &&
		     (s32)(txs->wc[i].seq - e->seq) < 0)) {
			struct kiwi_wc *wc = &txs->wc[i++];

			/* memory operations took effect: as they were */
			if (wc->opcode == KIWI_OP_REG_MR ||
			    wc->opcode == KIWI_OP_LOCAL_INV)
				kiwi_cq_push(qp->scq, wc);
			else
				kiwi_flush_wc(qp->scq, qp, wc->id, wc->opcode,
					      &st);
			continue;
		}
		kiwi_flush_wc(qp->scq, qp, e->id, e->opcode, &st);
		if (e->mr)
			kiwi_mr_put(e->mr);
		e->mr = NULL;
		qp->ord_tail++;
	}
	if (txs)
		txs->nwc = 0;		/* completed above */
	kiwi_tx_drop_batch(qp, &st);	/* its MRs and kvecs */
	if (txs && txs->wr.active) {
		kiwi_flush_wc(qp->scq, qp, txs->wr.sqe.id, txs->wr.sqe.opcode,
			      &st);
		txs->wr.active = false;
	}
	if (txs) {
		for (i = 0; i < KIWI_MAX_SGE; i++) {
			if (txs->wr.cur.mr[i])
				kiwi_mr_put(txs->wr.cur.mr[i]);
			txs->wr.cur.mr[i] = NULL;
		}
	}
	kiwi_flush_sq(qp);
	if (qp->rxs.active) {
		kiwi_flush_wc(qp->rcq, qp, qp->rxs.rqe.id, KIWI_OP_RECEIVE,
			      &rst);
		for (i = 0; i < KIWI_MAX_SGE; i++) {
			if (qp->rxs.mr[i])
				kiwi_mr_put(qp->rxs.mr[i]);
			qp->rxs.mr[i] = NULL;
		}
		qp->rxs.active = false;
	}
	if (qp->rq.num)
		kiwi_flush_rq(qp);
	for (; qp->ird_tail != qp->ird_head; qp->ird_tail++) {
		struct kiwi_ird_ent *e =
			&qp->irdq[qp->ird_tail % KIWI_MAX_IRD];

		if (e->mr)
			kiwi_mr_put(e->mr);
		e->mr = NULL;
	}
	/* not a plain put of rx_mr: a Read Response's is the ORD entry's */
	kiwi_rx_abort_fpdu(qp);
	/* from now on WRs posted in ERR are flushed as they come */
	set_bit(KIWI_EF_FLUSHED, &qp->eflags);
	spin_unlock_irqrestore(&qp->lock, flags);
}

/*
 * Stop both engines without giving the socket back (process context):
 * no rx runs after the callback lock is dropped, no tx after the work is
 * cancelled and the doorbell mutex passed.  Then flush.  Idempotent.
 */
static void __kiwi_qp_quiesce(struct kiwi_qp *qp)
{
	struct sock *sk = qp->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	set_bit(KIWI_EF_RX_DEAD, &qp->eflags);
	write_unlock_bh(&sk->sk_callback_lock);
	mutex_lock(&qp->tx_mutex);
	set_bit(KIWI_EF_TX_STOP, &qp->eflags);
	mutex_unlock(&qp->tx_mutex);
	cancel_work_sync(&qp->tx_work);
	kiwi_qp_flush_all(qp);
}

void kiwi_qp_quiesce(struct kiwi_qp *qp)
{
	mutex_lock(&qp->stop_mutex);
	if (test_bit(KIWI_EF_ON, &qp->eflags) &&
	    !test_and_set_bit(KIWI_EF_QUIESCED, &qp->eflags))
		__kiwi_qp_quiesce(qp);
	mutex_unlock(&qp->stop_mutex);
}

int kiwi_qp_llp_start(struct kiwi_qp *qp, struct kiwi_cep *cep,
		      struct socket *sock,
		      const struct kiwi_conn_params *params)
{
	const struct kiwi_mpa_result *res = &params->mpa;
	struct kiwi_rx_cfg rc = { .crc = res->crc, .markers = res->markers_rx };
	struct kiwi_tx_cfg tc = { .crc = res->crc, .markers = res->markers_tx };
	struct sock *sk = sock->sk;
	struct kiwi_txs *txs;
	unsigned long flags;
	u32 mss;
	int i;

	txs = kzalloc(sizeof(*txs), GFP_KERNEL);
	if (!txs)
		return -ENOMEM;
	mss = READ_ONCE(tcp_sk(sk)->mss_cache);
	if (!mss)
		mss = params->mss;
	if (!mss)
		mss = 536;
	kiwi_tx_init(&txs->fr, &tc);
	for (i = 0; i < KIWI_QN_MAX; i++)
		txs->msn[i] = 1;
	txs->max_ulpdu = kiwi_mpa_mulpdu(mss, res->markers_tx);
	/* a tiny MSS: larger FPDUs only cost TCP segmentation */
	if (txs->max_ulpdu < 512)
		txs->max_ulpdu = 512;
	/* with Markers every 512 octets, keep a batch's iov bounded */
	if (res->markers_tx && txs->max_ulpdu > 4096)
		txs->max_ulpdu = 4096;

	/*
	 * tx_mutex: a stale kick of an earlier connection's engine may still
	 * be running; it must not see the new txs half set up, nor the old
	 * one freed under it.
	 */
	mutex_lock(&qp->tx_mutex);
	spin_lock_irqsave(&qp->lock, flags);
	if ((qp->state != IB_QPS_INIT && qp->state != IB_QPS_RTR) ||
	    test_bit(KIWI_EF_ON, &qp->eflags)) {
		spin_unlock_irqrestore(&qp->lock, flags);
		mutex_unlock(&qp->tx_mutex);
		kfree(txs);
		return -EINVAL;
	}
	kfree(qp->txs);		/* of an earlier connection */
	qp->txs = txs;
	qp->mpa = *res;
	qp->ord_max = min_t(u32, res->ord, KIWI_MAX_ORD);
	qp->ird_max = min_t(u32, res->ird, KIWI_MAX_IRD);
	qp->ord_head = 0;
	qp->ord_tail = 0;
	qp->ird_head = 0;
	qp->ird_tail = 0;
	memset(&qp->rxs, 0, sizeof(qp->rxs));
	qp->rx_mr = NULL;
	qp->rx_kind = 0;
	qp->term_status = IB_WC_SUCCESS;
	kiwi_rx_init(&qp->rx, &rc);
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
	qp->sock = sock;
	qp->cep = cep;
	kiwi_cep_get(cep);
	reinit_completion(&qp->llp_stopped);
	kiwi_qp_state_set(qp, IB_QPS_RTS);
	set_bit(KIWI_EF_ON, &qp->eflags);
	spin_unlock_irqrestore(&qp->lock, flags);
	mutex_unlock(&qp->tx_mutex);

	write_lock_bh(&sk->sk_callback_lock);
	qp->sk_data_ready = sk->sk_data_ready;
	qp->sk_write_space = sk->sk_write_space;
	qp->sk_state_change = sk->sk_state_change;
	sk->sk_user_data = qp;
	sk->sk_data_ready = kiwi_rx_data_ready;
	sk->sk_write_space = kiwi_tx_write_space;
	sk->sk_state_change = kiwi_rx_state_change;
	write_unlock_bh(&sk->sk_callback_lock);

	/* the RTR, WRs posted in INIT, FPDUs that came with the MPA frame */
	kiwi_tx_kick(qp);
	kiwi_rx_read(qp);
	if (READ_ONCE(sk->sk_state) != TCP_ESTABLISHED &&
	    !test_and_set_bit(KIWI_EF_FIN, &qp->eflags))
		kiwi_cm_llp_event(cep, KIWI_LLP_PEER_CLOSED);
	return 0;
}

void kiwi_qp_llp_stop(struct kiwi_qp *qp)
{
	struct kiwi_cep *cep;
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
	cep = qp->cep;
	qp->cep = NULL;
	qp->sock = NULL;
	spin_unlock_irqrestore(&qp->lock, flags);
	mutex_unlock(&qp->stop_mutex);
	kiwi_cep_put(cep);
	complete_all(&qp->llp_stopped);
}

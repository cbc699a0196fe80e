// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: QP objects: lookup, create, query, destroy, resource dump. */

#include <linux/slab.h>
#include <linux/string.h>
#include <net/sock.h>
#include <rdma/restrack.h>

#include "cm/cm.h"
#include "engine/qp.h"
#include "verbs.h"
#include "core/kiwi_trace.h"

/* iw_add_ref follows iw_get_qp, which took the reference already. */
void kiwi_qp_add_ref(struct ib_qp *ibqp)
{
}

void kiwi_qp_rem_ref(struct ib_qp *ibqp)
{
	kiwi_qp_put(to_kqp(ibqp));
}

/* iw_cm's lookup, with the reference iw_add_ref asks for (xarray lock) */
struct ib_qp *kiwi_get_qp(struct ib_device *ibdev, int qpn)
{
	struct kiwi_qp *qp = qpn > 0 ? kiwi_qp_lookup(to_kdev(ibdev), qpn) :
		NULL;

	return qp ? &qp->ibqp : NULL;
}

/* What create_qp asks for, against what a kiwi QP can be. */
static int kiwi_qp_attr_ok(const struct ib_qp_init_attr *attr)
{
	const struct ib_qp_cap *cap = &attr->cap;

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
	return 0;
}

/* A new QP's fields, in INIT, before anything that can fail. */
static void kiwi_qp_init(struct kiwi_qp *qp, struct kiwi_dev *kdev,
			 const struct ib_qp_init_attr *attr, bool user)
{
	qp->kdev = kdev;
	kref_init(&qp->ref);
	init_completion(&qp->freed);
	spin_lock_init(&qp->lock);
	/* Idle: receives and sends may be posted before the connection */
	qp->state = IB_QPS_INIT;
	qp->access = KIWI_QP_REMOTE;
	qp->user = user;
	qp->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	/* for the QP's life: its WRs keep one set of rules */
	qp->rnic_strict = kiwi_cm_knob_get(kdev, KIWI_RNIC_STRICT);
	qp->scq = to_kcq(attr->send_cq);
	qp->rcq = to_kcq(attr->recv_cq);
	qp->srq = attr->srq ? to_ksrq(attr->srq) : NULL;
	/* within KIWI_MAX_SGE and KIWI_MAX_INLINE: kiwi_qp_attr_ok() */
	qp->max_send_sge = attr->cap.max_send_sge;
	qp->max_recv_sge = attr->srq ? 0 : attr->cap.max_recv_sge;
	qp->max_inline = attr->cap.max_inline_data;
	INIT_WORK(&qp->tx_work, kiwi_tx_work);
	INIT_WORK(&qp->rx_work, kiwi_rx_work);
	mutex_init(&qp->tx_mutex);
	mutex_init(&qp->stop_mutex);
	init_completion(&qp->llp_stopped);
}

/* the send ring and, without an SRQ, the receive ring */
static int kiwi_qp_rings_alloc(struct kiwi_qp *qp, u32 nsq, u32 nrq,
			       struct ib_udata *udata)
{
	int rv;

	rv = kiwi_ring_alloc(&qp->sq, nsq, sizeof(struct kiwi_sqe), udata);
	if (rv || !nrq)
		return rv;
	rv = kiwi_ring_alloc(&qp->rq, nrq, sizeof(struct kiwi_rqe), udata);
	if (rv)
		kiwi_ring_free(&qp->sq);
	return rv;
}

/* the provider's answer: the rings to map and their sizes */
static int kiwi_qp_respond(struct kiwi_qp *qp, struct ib_udata *udata,
			   u32 id, u32 nsq, u32 nrq)
{
	struct kiwi_uresp_create_qp resp = {
		.sq_key = kiwi_ring_key(&qp->sq),
		.rq_key = nrq ? kiwi_ring_key(&qp->rq) : KIWI_INVAL_KEY,
		.qp_id = id,
		.num_sqe = nsq,
		.num_rqe = nrq,
	};

	return kiwi_respond(udata, &resp, sizeof(resp));
}

/* what the QP offers: slots rounded up, SGEs and inline size as asked */
static void kiwi_qp_caps_report(const struct kiwi_qp *qp,
				struct ib_qp_cap *cap)
{
	cap->max_send_wr = qp->sq.num;
	cap->max_send_sge = qp->max_send_sge;
	cap->max_inline_data = qp->max_inline;
	cap->max_recv_wr = qp->rq.num;
	cap->max_recv_sge = qp->max_recv_sge;
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
	rv = kiwi_qp_attr_ok(attr);
	if (rv)
		return rv;

	/* a ring has at least one slot, even for a receive-only QP */
	nsq = roundup_pow_of_two(max(cap->max_send_wr, 1U));
	nrq = attr->srq ? 0 : roundup_pow_of_two(max(cap->max_recv_wr, 1U));

	kiwi_qp_init(qp, kdev, attr, !!udata);

	rv = kiwi_charge(kdev, udata, KIWI_UOBJ_QP, &qp->uctx);
	if (rv)
		return rv;
	rv = kiwi_qp_rings_alloc(qp, nsq, nrq, udata);
	if (rv)
		goto err_charge;
	/* cyclically: a stale number names no new QP soon */
	rv = xa_alloc_cyclic_bh(&kdev->qp_xa, &id, NULL,
				XA_LIMIT(1, KIWI_MAX_QP), &kdev->qp_next,
				GFP_KERNEL);
	if (rv < 0) {
		rv = rv == -EBUSY ? -ENOMEM : rv;
		goto err_rings;
	}
	ibqp->qp_num = id;
	if (udata) {
		rv = kiwi_qp_respond(qp, udata, id, nsq, nrq);
		if (rv)
			goto err_id;
	}
	kiwi_qp_caps_report(qp, cap);

	if (udata)
		qp->owner = get_pid(task_tgid(current));
	xa_store_bh(&kdev->qp_xa, id, qp, GFP_KERNEL);
	kiwi_obj_inc(KIWI_OBJ_QP);
	/* created in INIT (above), reported once it has its number */
	trace_kiwi_qp_state(id, IB_QPS_RESET, IB_QPS_INIT);
	return 0;

err_id:
	xa_erase_bh(&kdev->qp_xa, id);
err_rings:
	if (nrq)
		kiwi_ring_free(&qp->rq);
	kiwi_ring_free(&qp->sq);
err_charge:
	kiwi_uncharge(qp->kdev, qp->uctx, KIWI_UOBJ_QP);
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

/* The engines' side, while connected: stop_mutex keeps them so. */
static int kiwi_fill_res_qp_engines(struct sk_buff *msg, struct kiwi_qp *qp)
{
	struct kiwi_txs *txs;
	struct tcp_sock *tp;
	struct sock *sk;
	int rv = 0;

	mutex_lock(&qp->stop_mutex);
	if (!test_bit(KIWI_EF_ON, &qp->eflags))
		goto out;
	txs = qp->txs;
	sk = qp->sock->sk;
	tp = tcp_sk(sk);
	/* tx_mulpdu: the FPDU size the engine last framed for; sk_mss now */
	if (rdma_nl_put_driver_u32(msg, "tx_wr_active",
				   READ_ONCE(txs->wr.active)) ||
	    rdma_nl_put_driver_u32(msg, "tx_iov_unsent", READ_ONCE(txs->niov) -
				   READ_ONCE(txs->iov_done)) ||
	    rdma_nl_put_driver_u32(msg, "tx_batch_unsent",
				   READ_ONCE(txs->bytes)) ||
	    rdma_nl_put_driver_u32(msg, "tx_ord_wait",
				   READ_ONCE(txs->ord_wait)) ||
	    rdma_nl_put_driver_u32(msg, "tx_mulpdu",
				   READ_ONCE(txs->max_ulpdu)) ||
	    rdma_nl_put_driver_u32(msg, "sk_mss", READ_ONCE(tp->mss_cache)) ||
	    rdma_nl_put_driver_u32(msg, "sk_wmem_queued",
				   READ_ONCE(sk->sk_wmem_queued)) ||
	    rdma_nl_put_driver_u32(msg, "sk_sndbuf", READ_ONCE(sk->sk_sndbuf)) ||
	    rdma_nl_put_driver_u32(msg, "sk_unread", READ_ONCE(tp->rcv_nxt) -
				   READ_ONCE(tp->copied_seq)) ||
	    rdma_nl_put_driver_u32(msg, "sk_nospace", sk->sk_socket &&
				   test_bit(SOCK_NOSPACE,
					    &sk->sk_socket->flags)) ||
	    rdma_nl_put_driver_u32(msg, "sk_state", READ_ONCE(sk->sk_state)))
		rv = -EMSGSIZE;
out:
	mutex_unlock(&qp->stop_mutex);
	return rv;
}

/* `rdma res show qp -dd`: racy snapshots of the engines' state. */
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct nlattr *nest;
	bool sq_next = false, rq_next = false, rx_send;
	struct kiwi_mpa_result mpa;
	enum ib_qp_state state;
	unsigned long flags;
	u32 v[5], rd[4];

	/* the engines' internals are for administrators (security.md) */
	if (!capable(CAP_NET_ADMIN))
		return 0;
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
	/* txs (which holds rxs) is replaced under this lock */
	rx_send = qp->rxs && READ_ONCE(qp->rxs->active);
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
	    kiwi_fill_res_mpa(msg, &mpa) ||
	    rdma_nl_put_driver_u32(msg, "mpa_fpdu_max", mpa.fpdu_max) ||
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
	    rdma_nl_put_driver_u32(msg, "rx_send_active", rx_send))
		goto cancel;

	if (kiwi_fill_res_qp_engines(msg, qp))
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
	attr->path_mtu = kiwi_dev_path_mtu(qp->kdev);
	kiwi_qp_caps_report(qp, &attr->cap);

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

/* Free a ring: unhooked under qp->lock, which its readers hold, first. */
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

/* The last connection's engine state, unhooked under qp->lock first. */
static void kiwi_qp_engines_drop(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs;
	void *ordq, *irdq;
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	txs = qp->txs;
	ordq = qp->ordq;
	irdq = qp->irdq;
	qp->txs = NULL;
	qp->rx = NULL;
	qp->rxs = NULL;
	qp->ordq = NULL;
	qp->irdq = NULL;
	spin_unlock_irqrestore(&qp->lock, flags);
	kiwi_txs_free(txs);
	kfree(ordq);
	kfree(irdq);
}

int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct kiwi_qp *qp = to_kqp(ibqp);
	struct kiwi_conn *cep = NULL, *conn = NULL;
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	if (test_bit(KIWI_EF_ON, &qp->eflags) && qp->conn) {
		cep = qp->conn;
		cep->ops->get(cep);
	} else if (qp->connecting) {
		conn = qp->connecting;
		conn->ops->get(conn);
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	/* a connected QP: abort the connection and wait for llp_stop */
	if (cep) {
		cep->ops->disconnect(cep, true);
		wait_for_completion(&qp->llp_stopped);
		cep->ops->put(cep);
	}
	/* a connect in its handshake holds the QP: end it now, not at timeout */
	if (conn) {
		conn->ops->qp_gone(conn);
		conn->ops->put(conn);
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
	cancel_work_sync(&qp->rx_work);	/* idle since llp_stop; cheap */
	kiwi_qp_engines_drop(qp);

	kiwi_qp_ring_drop(qp, &qp->rq);
	kiwi_qp_ring_drop(qp, &qp->sq);
	put_pid(qp->owner);
	kiwi_uncharge(qp->kdev, qp->uctx, KIWI_UOBJ_QP);
	kiwi_obj_dec(KIWI_OBJ_QP);
	return 0;
}

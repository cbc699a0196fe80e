// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi CM, active side: iw_connect, TCP connect, MPA Request, Reply. */

#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cep.h"

/*
 * No older connection of this process to the same peer address still
 * waits for its Reply (an order matters only within one application).
 * The SYN waits for the turn too, so a kiwi listener's accept order, in
 * which it hands Requests on, is the connect order: otherwise two
 * connections could each wait out the other's KIWI_ORDER_WAIT.
 */
static bool kiwi_cep_req_turn(struct kiwi_cep *cep)
{
	struct kiwi_cm_dev *cdev = cep->cdev;
	u64 seq = kiwi_cep_conn_stamp(cep), os;
	struct kiwi_cep *o;
	bool turn = true;

	spin_lock_irq(&cdev->lock);
	list_for_each_entry(o, &cdev->ceps, dev_entry) {
		if (o == cep || o->owner != cep->owner ||
		    !READ_ONCE(o->req_pending) ||
		    !kiwi_addr_same(&o->raddr, &cep->raddr))
			continue;
		os = atomic64_read(&o->conn_seq);
		if (os && os < seq) {
			turn = false;
			break;
		}
	}
	spin_unlock_irq(&cdev->lock);
	return turn;
}

/*
 * Our Request went (or never will): younger ones to the peer may go, kicked and
 * put after cdev->lock, which a last put's kiwi_cep_release() takes.
 */
static void kiwi_cep_req_done(struct kiwi_cep *cep)
{
	struct kiwi_cm_dev *cdev = cep->cdev;
	struct kiwi_cep *o, *n;
	LIST_HEAD(kick);

	if (!READ_ONCE(cep->req_pending))
		return;
	WRITE_ONCE(cep->req_pending, false);
	spin_lock_irq(&cdev->lock);
	list_for_each_entry(o, &cdev->ceps, dev_entry) {
		if (o->owner == cep->owner && READ_ONCE(o->req_pending) &&
		    kiwi_addr_same(&o->raddr, &cep->raddr) &&
		    list_empty(&o->kick_entry) &&
		    kref_get_unless_zero(&o->ref)) {
			/* a new older one to wait for: a new bounded wait */
			WRITE_ONCE(o->order_wait, false);
			list_add_tail(&o->kick_entry, &kick);
		}
	}
	spin_unlock_irq(&cdev->lock);
	list_for_each_entry_safe(o, n, &kick, kick_entry) {
		spin_lock_irq(&cdev->lock);
		list_del_init(&o->kick_entry);
		spin_unlock_irq(&cdev->lock);
		kiwi_cep_hs_kick(o);
		kiwi_cep_put(o);
	}
}

/*
 * rdma_cm picks an initiator's port blind to TCP's port space: if another
 * socket holds it (EADDRINUSE, or EADDRNOTAVAIL with the same peer), TCP
 * chooses instead.  iw_cm keeps the socket's address from CONNECT_REPLY
 * as the mapped one, as with the port mapper.  A port iwpmd mapped stays:
 * iw_cm's record of the mapping is keyed by it.
 */
static bool kiwi_port_give_way(const struct iw_cm_id *id, int rv)
{
	return (rv == -EADDRINUSE || rv == -EADDRNOTAVAIL) && !id->mapped;
}

/* the socket, bound to rdma_cm's address, or to its IP only (any_port) */
static int kiwi_connect_sock(struct kiwi_cm_dev *cdev, struct kiwi_cep *cep,
			     struct iw_cm_id *id, bool any_port)
{
	struct sockaddr_storage a = id->m_local_addr;
	int rv;

	rv = kiwi_sock_create(cdev, cep->raddr.ss_family, &cep->sock);
	if (rv)
		return rv;
	kiwi_sock_set_tos(cep->sock, id);
	if (any_port)
		kiwi_ss_set_port(&a, 0);
	else if (kiwi_port_mapped(id))
		kiwi_port_take(cep->sock);
	rv = kernel_bind(cep->sock, (struct sockaddr *)&a, kiwi_addr_len(&a));
	if (!rv && any_port)
		kiwi_stat_inc(cdev->kdev, KIWI_STAT_CONNECT_PORT_FALLBACKS);
	/* the address on the wire, for the trace events and the dumps */
	if (!rv)
		rv = kernel_getsockname(cep->sock, (struct sockaddr *)&cep->laddr);
	if (rv < 0) {
		sock_release(cep->sock);
		cep->sock = NULL;
		return rv;
	}
	WRITE_ONCE(cep->port, kiwi_ss_port(&cep->laddr));
	return 0;
}

/*
 * Not our turn yet: wait, a second at most (renewed whenever an older one
 * goes, kiwi_cep_req_done()).  False once the wait ran out, counted once.
 */
static bool kiwi_cep_turn_wait(struct kiwi_cep *cep)
{
	if (!READ_ONCE(cep->order_wait)) {
		cep->order_end = jiffies + KIWI_ORDER_WAIT;
		WRITE_ONCE(cep->order_wait, true);
	}
	if (time_before(jiffies, cep->order_end) &&
	    time_before(cep->order_end, cep->deadline)) {
		kiwi_cep_hs_arm(cep, cep->order_end);
		return true;
	}
	if (!cep->order_late) {
		cep->order_late = true;
		kiwi_stat_inc(cep->cdev->kdev, KIWI_STAT_ORDER_WAITS_EXPIRED);
	}
	return false;
}

/* The SYN, non-blocking; a 4-tuple already taken: a port TCP chooses. */
static int kiwi_cep_syn(struct kiwi_cep *cep)
{
	struct iw_cm_id *id = cep->cm_id;
	bool any_port = false;
	int rv;

again:
	/* before the SYN: its state change (connected, refused) kicks us */
	kiwi_cep_hs_attach(cep, true);
	rv = kernel_connect(cep->sock, (struct sockaddr *)&cep->raddr,
			    kiwi_addr_len(&cep->raddr), O_NONBLOCK);
	if (!any_port && kiwi_port_give_way(id, rv)) {
		any_port = true;
		kiwi_cep_release_sock(cep, false);
		rv = kiwi_connect_sock(cep->cdev, cep, id, true);
		if (!rv)
			goto again;
	}
	return rv == -EINPROGRESS ? 0 : rv;
}

/*
 * Under cep->mutex: the SYN at our turn if it waited for it, the TCP
 * connect, then the Request once older connections to the same peer got
 * their Reply.  -EINPROGRESS: wait for the connect or the turn (a state
 * change or a kick ends the wait).
 */
static int kiwi_cep_conn_request(struct kiwi_cep *cep)
{
	int rv, n;

	if (cep->hs_err)
		return cep->hs_err;
	if (cep->syn_wait) {
		if (!kiwi_cep_req_turn(cep) && kiwi_cep_turn_wait(cep))
			return -EINPROGRESS;
		cep->syn_wait = false;
		/* the connect's own wait now (kiwi_cep_conn_work()) */
		WRITE_ONCE(cep->order_wait, false);
		rv = kiwi_cep_syn(cep);
		return rv ? rv : -EINPROGRESS;
	}
	/* non-blocking: 0 once connected, the error once it failed */
	rv = kernel_connect(cep->sock, (struct sockaddr *)&cep->raddr,
			    kiwi_addr_len(&cep->raddr), O_NONBLOCK);
	if (rv == -EISCONN)
		rv = 0;
	if (rv == -EALREADY || rv == -EINPROGRESS || rv == -EAGAIN)
		return kiwi_cep_left(cep) > 0 ? -EINPROGRESS : -ETIMEDOUT;
	if (rv)
		return rv;
	/* an older one's listener is slow: ours goes after a while, once */
	if (!cep->order_late && !kiwi_cep_req_turn(cep) &&
	    kiwi_cep_turn_wait(cep))
		return -EINPROGRESS;
	tcp_sock_set_nodelay(cep->sock->sk);
	n = kiwi_mpa_req_build(&cep->cfg, cep->pd, cep->pd_len, cep->hs->buf,
			       sizeof(cep->hs->buf));
	rv = n < 0 ? n : kiwi_cep_send_now(cep, cep->hs->buf, n);
	if (!rv) {
		cep->req_sent = true;
		kiwi_cep_frame_sent(cep, kiwi_cep_qpn(cep));
	}
	return rv;
}

/* The connect's outcome to the consumer; a failure lets the socket go. */
static void kiwi_cep_conn_done(struct kiwi_cep *cep, int rv, const u8 *pd,
			       u16 pd_len)
{
	if (!rv) {
		cep->state = KIWI_CEP_ESTABLISHED;
		kiwi_cep_upcall(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, 0,
				pd, pd_len);
		kiwi_cep_hs_free(cep);	/* pd with it */
		return;
	}
	if (rv == -EAGAIN)
		rv = -ETIMEDOUT;
	if (rv == -ETIMEDOUT)
		kiwi_stat_inc(cep->cdev->kdev, KIWI_STAT_CONNECT_TIMEOUTS);
	kiwi_cep_upcall(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, rv,
			pd, pd_len);
	/* an RST frees a peer that never answered */
	kiwi_cep_release_sock(cep, rv == -ETIMEDOUT);
	kiwi_cep_drop_conn(cep);
}

static void kiwi_cep_conn_work(struct kiwi_cep *cep)
{
	struct kiwi_mpa_frame *f;
	const u8 *pd = NULL;
	u16 pd_len = 0;
	enum kiwi_err err;
	int rv;

	mutex_lock(&cep->mutex);
	if (cep->state != KIWI_CEP_CONNECTING)
		goto out;
	f = &cep->hs->parser.f;
	/* dead changes under cep->mutex only: this look holds to the end */
	rv = cep->dead ? -ECONNABORTED : 0;
	if (!rv && !cep->req_sent) {
		rv = kiwi_cep_conn_request(cep);
		if (rv == -EINPROGRESS) {
			if (!READ_ONCE(cep->order_wait) ||
			    !time_before(jiffies, cep->order_end))
				kiwi_cep_hs_arm(cep, cep->deadline);
			goto out;
		}
	}
	if (!rv) {
		rv = kiwi_cep_hs_result(cep, false);
		if (rv == KIWI_HS_READING) {
			kiwi_cep_hs_arm(cep, cep->deadline);
			goto out;
		}
		if (rv == KIWI_HS_COMPLETE) {
			rv = 0;
			kiwi_cep_frame_rcvd(cep);
		}
	}
	/*
	 * Only now may the next Request to this peer go: a listener that reads
	 * Requests in parallel (siw) could deliver two in either order.
	 */
	kiwi_cep_req_done(cep);
	if (!rv) {
		err = kiwi_mpa_connect(&cep->cfg, f, &cep->res);
		if (err == KIWI_ERR_MPA_REJECTED) {
			pd = f->ulp_pd;
			pd_len = f->ulp_pd_len;
		} else if (err == KIWI_ERR_MPA_IRD || err == KIWI_ERR_MPA_RTR) {
			kiwi_cep_send_term(cep, err);
		}
		if (err != KIWI_OK)
			rv = -kiwi_err_desc(err)->errnum;
	}
	if (!rv) {
		kiwi_cep_addrs(cep);
		rv = kiwi_cep_llp_start(cep, cep->qp, true);
	}
	if (!rv) {
		pd = f->ulp_pd;
		pd_len = f->ulp_pd_len;
	}
	kiwi_cep_conn_done(cep, rv, pd, pd_len);
out:
	mutex_unlock(&cep->mutex);
}

/* what the consumer asks for, checked before anything is allocated */
static int kiwi_connect_param_ok(struct iw_cm_id *id,
				 struct iw_cm_conn_param *param)
{
	if (!kiwi_family_ok(&id->m_remote_addr) ||
	    id->m_local_addr.ss_family != id->m_remote_addr.ss_family)
		return -EAFNOSUPPORT;
	if (param->ird > KIWI_MAX_IRD || param->ord > KIWI_MAX_ORD)
		return -EINVAL;
	if (param->private_data_len && !param->private_data)
		return -EINVAL;
	return 0;
}

/* CONNECTING, and the SYN: from here the handshake work takes over */
static void kiwi_connect_start(struct kiwi_cep *cep, struct iw_cm_id *id)
{
	int rv = 0;

	mutex_lock(&cep->mutex);
	cep->state = KIWI_CEP_CONNECTING;
	cep->deadline = jiffies + kiwi_cm_timeout();
	cep->cm_id = id;
	WRITE_ONCE(cep->ulp_id, id->context);
	id->add_ref(id);
	kiwi_cep_conn_stamp(cep);	/* its place: the consumer's order */
	WRITE_ONCE(cep->req_pending, true);
	/*
	 * The SYN now, unless an older connection of this process to the
	 * peer still waits for its Reply: then at its turn, so the peer
	 * accepts them in order and holds no silent connections of ours
	 * (which a kiwi listener counts in pending_per_source).
	 */
	if (kiwi_cep_req_turn(cep)) {
		rv = kiwi_cep_syn(cep);
	} else {
		cep->syn_wait = true;
		kiwi_cep_turn_wait(cep);
	}
	if (rv) {
		cep->hs_err = rv;
		kiwi_cep_hs_kick(cep);
	} else if (!cep->syn_wait) {
		kiwi_cep_hs_arm(cep, cep->deadline);
	}
	mutex_unlock(&cep->mutex);
}

int kiwi_iw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct kiwi_dev *kdev = to_kdev(id->device);
	struct kiwi_cm_dev *cdev = kiwi_cm_dev_get(kdev);
	struct kiwi_cep *cep;
	struct kiwi_qp *qp;
	int rv;

	if (!cdev)
		return -ENODEV;
	rv = kiwi_connect_param_ok(id, param);
	if (rv)
		return rv;
	qp = kiwi_qp_claim(kdev, param->qpn, id);
	if (!qp)
		return -EINVAL;
	cep = kiwi_cep_alloc(cdev, kiwi_cep_conn_work);
	if (!cep) {
		kiwi_qp_put(qp);
		return -ENOMEM;
	}
	cep->qp = qp;
	kiwi_qp_conn_set(qp, &cep->conn);
	kiwi_cep_cfg(cep, param->ird, param->ord);
	if (param->private_data_len > kiwi_mpa_ulp_pd_max(&cep->cfg)) {
		rv = -EINVAL;
		goto err;
	}
	if (param->private_data_len) {
		cep->pd = kmemdup(param->private_data,
				  param->private_data_len, GFP_KERNEL);
		if (!cep->pd) {
			rv = -ENOMEM;
			goto err;
		}
		cep->pd_len = param->private_data_len;
	}
	cep->laddr = id->m_local_addr;
	cep->raddr = id->m_remote_addr;
	cep->owner = task_tgid_nr(current);

	rv = kiwi_connect_sock(cdev, cep, id, false);
	if (kiwi_port_give_way(id, rv))
		rv = kiwi_connect_sock(cdev, cep, id, true);
	if (rv)
		goto err;
	kiwi_connect_start(cep, id);
	return 0;

err:
	mutex_lock(&cep->mutex);
	kiwi_cep_release_sock(cep, false);
	kiwi_qp_conn_set(cep->qp, NULL);
	kiwi_qp_put(cep->qp);
	cep->qp = NULL;
	cep->state = KIWI_CEP_CLOSED;
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
	return rv;
}

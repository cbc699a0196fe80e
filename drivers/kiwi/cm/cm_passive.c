// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi CM, passive side: an accepted connection's Request to reply. */

#include <net/sock.h>

#include "cep.h"

/*
 * Under both mutexes: answer a Request we refuse, then close (with an RST
 * if abort: nothing more to say to a peer that said nothing in time).
 */
static void kiwi_cep_refuse(struct kiwi_cep *cep, bool reply, bool abort)
{
	int n;

	if (reply) {
		n = kiwi_mpa_rep_build(&cep->res, true, NULL, 0, cep->hs->buf,
				       sizeof(cep->hs->buf));
		if (n > 0 && !kiwi_cep_send_now(cep, cep->hs->buf, n))
			kiwi_cep_frame_sent(cep, 0);
	}
	kiwi_cep_release_sock(cep, abort);
	kiwi_cep_finish(cep);
}

/* Under lcep->mutex: cep's Request is no longer awaited (once). */
void kiwi_cep_child_done(struct kiwi_cep *cep, struct kiwi_cep *lcep)
{
	struct kiwi_cep *c;

	lockdep_assert_held(&lcep->mutex);
	if (list_empty(&cep->child_entry))
		return;
	list_del_init(&cep->child_entry);
	atomic_dec(&kiwi_cm_pending);
	/* younger ones from its host may have their Request and wait for it */
	list_for_each_entry(c, &lcep->children, child_entry)
		if (kiwi_addr_same_host(&c->raddr, &cep->raddr) &&
		    kiwi_cep_hs_status(c) == KIWI_HS_COMPLETE)
			kiwi_cep_hs_kick(c);
}

/*
 * Under lcep->mutex: must cep's complete Request wait for an older one from its
 * host that began its Request or is younger than KIWI_ORDER_GRACE?
 */
static bool kiwi_cep_req_blocked(struct kiwi_cep *lcep, struct kiwi_cep *cep,
				 unsigned long *until)
{
	struct kiwi_cep *o;
	bool blocked = false;

	lockdep_assert_held(&lcep->mutex);
	list_for_each_entry(o, &lcep->children, child_entry) {
		if (o == cep)
			break;
		if (!kiwi_addr_same_host(&o->raddr, &cep->raddr))
			continue;
		/* o's hs lives while it is on the list (it leaves first) */
		if (READ_ONCE(o->hs->parser.have) ||
		    kiwi_cep_hs_status(o) != KIWI_HS_READING)
			return true;
		if (time_before(jiffies, o->born + KIWI_ORDER_GRACE)) {
			if (!blocked || time_before(o->born + KIWI_ORDER_GRACE,
						    *until))
				*until = o->born + KIWI_ORDER_GRACE;
			blocked = true;
		}
	}
	return blocked;
}

/*
 * A step of a passive handshake: the Request is complete or broken, the
 * peer closed, the deadline passed, the listener went, or an older
 * connection left the queue.
 *
 * Requests from one host reach the consumer in accept order: applications
 * may pair connections up by order (perftest -q N deadlocks otherwise).
 * Requests are read in parallel, so one slow peer stalls no one: a
 * complete Request waits for older ones from its host (lcep->children is
 * in accept order) at most KIWI_ORDER_WAIT, and for a silent one only
 * KIWI_ORDER_GRACE (kiwi_cep_req_blocked()).
 */
void kiwi_cep_req_work(struct kiwi_cep *cep)
{
	struct kiwi_cep *lcep = cep->parent;
	struct kiwi_mpa_frame *f;
	unsigned long until;
	enum kiwi_err err;
	bool gone;
	int st;

	mutex_lock(&lcep->mutex);
	mutex_lock(&cep->mutex);
	if (cep->state != KIWI_CEP_AWAIT_REQ)
		goto out;
	f = &cep->hs->parser.f;
	gone = lcep->state != KIWI_CEP_LISTEN || cep->dead;
	if (!gone && kiwi_cep_hs_status(cep) == KIWI_HS_COMPLETE) {
		if (!cep->order_wait) {
			cep->order_wait = true;
			cep->order_end = jiffies + KIWI_ORDER_WAIT;
		}
		until = cep->order_end;
		if (kiwi_cep_req_blocked(lcep, cep, &until)) {
			if (time_before(jiffies, cep->order_end)) {
				if (time_after(until, cep->order_end))
					until = cep->order_end;
				kiwi_cep_hs_arm(cep, until);
				goto out;
			}
			kiwi_stat_inc(cep->cdev->kdev,
				      KIWI_STAT_ORDER_WAITS_EXPIRED);
		}
	}
	st = kiwi_cep_hs_result(cep, gone);
	if (st == KIWI_HS_READING) {
		kiwi_cep_hs_arm(cep, cep->deadline);
		goto out;
	}
	kiwi_cep_child_done(cep, lcep);
	if (st == KIWI_HS_COMPLETE)
		kiwi_cep_frame_rcvd(cep);
	if (gone || st < 0) {
		/* no valid Request, or gone: no Reply (RFC 5044), just close */
		if (st == -ETIMEDOUT) {
			atomic64_inc(&kiwi_cm_req_timeouts);
			kiwi_stat_inc(cep->cdev->kdev,
				      KIWI_STAT_CONNECT_TIMEOUTS);
		}
		kiwi_cep_refuse(cep, false, st == -ETIMEDOUT || cep->evicted);
		goto out;
	}
	/* our preferred RTR type if offered, else any the initiator offers */
	if (!(f->rtr & cep->cfg.rtr))
		cep->cfg.rtr = KIWI_RTR_ALL;
	err = kiwi_mpa_accept(&cep->cfg, f, &cep->res);
	if (err != KIWI_OK) {
		/* revision, CRC required, no RTR in common: Reply with R */
		kiwi_cep_refuse(cep, true, false);
		goto out;
	}
	cep->state = KIWI_CEP_REQ_RCVD;
	kiwi_cep_addrs(cep);
	st = kiwi_cep_upcall(cep, lcep->cm_id, IW_CM_EVENT_CONNECT_REQUEST, 0,
			     f->ulp_pd, f->ulp_pd_len);
	if (st)		/* more pending requests than the backlog */
		kiwi_cep_refuse(cep, false, false);
	else
		kiwi_cep_start_timer(cep);
out:
	mutex_unlock(&cep->mutex);
	mutex_unlock(&lcep->mutex);
}

/* the QP the consumer accepts on, if it and the parameters will do */
static struct kiwi_qp *kiwi_accept_qp(struct kiwi_cep *cep,
				      struct iw_cm_id *id,
				      struct iw_cm_conn_param *param)
{
	struct kiwi_qp *qp;
	u32 pd_max;

	pd_max = KIWI_MPA_PD_MAX -
		(cep->res.enhanced ? sizeof(struct kiwi_mpa_v2) : 0);
	if (param->ird > KIWI_MAX_IRD || param->ord > KIWI_MAX_ORD ||
	    param->private_data_len > pd_max ||
	    (param->private_data_len && !param->private_data))
		return NULL;
	qp = kiwi_qp_claim(to_kdev(id->device), param->qpn, id);
	if (!qp)
		return NULL;
	/* and the limits the consumer set on the QP, if any */
	if ((qp->ird && param->ird > qp->ird) ||
	    (qp->ord && param->ord > qp->ord)) {
		kiwi_qp_put(qp);
		return NULL;
	}
	return qp;
}

/* the MPA Reply, with what this end grants; cep->res becomes that */
static int kiwi_accept_reply(struct kiwi_cep *cep, struct kiwi_qp *qp,
			     struct iw_cm_conn_param *param)
{
	struct kiwi_mpa_result res = cep->res;
	int rv, n;

	res.ird = param->ird;
	res.ord = param->ord;
	/* never more Reads outstanding than the initiator can answer */
	if (res.enhanced && res.ord > res.peer_ird)
		res.ord = res.peer_ird;
	n = kiwi_mpa_rep_build(&res, false, param->private_data,
			       param->private_data_len, cep->hs->buf,
			       sizeof(cep->hs->buf));
	if (n < 0)
		return n;
	cep->deadline = jiffies + kiwi_cm_timeout();
	rv = kiwi_cep_send(cep, cep->hs->buf, n);
	if (rv)
		return rv;
	kiwi_cep_frame_sent(cep, qp->ibqp.qp_num);
	cep->res = res;
	return 0;
}

int kiwi_iw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct kiwi_cep *cep = id->provider_data;
	struct kiwi_qp *qp = NULL;
	int rv;

	if (!cep)
		return -EINVAL;
	kiwi_cep_get(cep);
	mutex_lock(&cep->mutex);
	rv = -ECONNRESET;	/* closed meanwhile (device removal) */
	if (cep->state != KIWI_CEP_REQ_RCVD)
		goto out;
	kiwi_cep_stop_timer(cep);
	if (!cep->sock)		/* too late: the timer reset it */
		goto fail;
	/* from here a failure closes: iw_cm goes idle, never asks again */
	rv = -EINVAL;
	qp = kiwi_accept_qp(cep, id, param);
	if (!qp)
		goto fail;
	rv = kiwi_accept_reply(cep, qp, param);
	if (rv)
		goto fail;
	rv = kiwi_cep_llp_start(cep, qp, false);
	if (rv)
		goto fail;

	cep->qp = qp;
	cep->cm_id = id;
	WRITE_ONCE(cep->ulp_id, id->context);
	id->add_ref(id);
	cep->state = KIWI_CEP_ESTABLISHED;
	kiwi_cep_upcall(cep, id, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	kiwi_cep_hs_free(cep);
	goto out;

fail:
	if (qp)
		kiwi_qp_put(qp);
	kiwi_cep_release_sock(cep, true);
	kiwi_cep_finish(cep);
out:
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
	return rv;
}

int kiwi_iw_reject(struct iw_cm_id *id, const void *pdata, u8 pdata_len)
{
	struct kiwi_cep *cep = id->provider_data;
	int rv = 0, n;

	if (!cep)
		return -EINVAL;
	kiwi_cep_get(cep);
	mutex_lock(&cep->mutex);
	if (cep->state == KIWI_CEP_REQ_RCVD && cep->sock) {
		n = kiwi_mpa_rep_build(&cep->res, true, pdata,
				       pdata ? pdata_len : 0, cep->hs->buf,
				       sizeof(cep->hs->buf));
		cep->deadline = jiffies + kiwi_cm_timeout();
		rv = n < 0 ? n : kiwi_cep_send(cep, cep->hs->buf, n);
		if (!rv)
			kiwi_cep_frame_sent(cep, 0);
		/* FIN after the Reply: the peer reads its reason first */
		kiwi_cep_release_sock(cep, false);
	}
	if (cep->state == KIWI_CEP_REQ_RCVD)
		kiwi_cep_finish(cep);
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
	return rv;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * TEMPORARY (CM engineer): stand-in for the engines' kiwi_qp_llp_start()
 * and kiwi_qp_llp_stop() until tx.c/rx.c provide them, so that the CM
 * links and can be tested alone.  It moves no data: it only puts the QP
 * in RTS and reports the peer's FIN or RST.  DELETE when the real ones
 * land; never keep both.
 */
#include <linux/slab.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "kiwi.h"
#include "conn.h"

struct kiwi_stub {
	struct list_head entry;
	struct kiwi_qp *qp;
	struct kiwi_cep *cep;
	struct socket *sock;
	void (*saved_state_change)(struct sock *sk);
};

static LIST_HEAD(kiwi_stubs);
static DEFINE_SPINLOCK(kiwi_stubs_lock);

static void kiwi_stub_state_change(struct sock *sk)
{
	struct kiwi_stub *st;
	void (*saved)(struct sock *sk) = NULL;

	read_lock_bh(&sk->sk_callback_lock);
	st = sk->sk_user_data;
	if (st) {
		saved = st->saved_state_change;
		if (sk->sk_state == TCP_CLOSE_WAIT)
			kiwi_cm_llp_event(st->cep, KIWI_LLP_PEER_CLOSED);
		else if (sk->sk_state == TCP_CLOSE)
			kiwi_cm_llp_event(st->cep, KIWI_LLP_RESET);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (saved)
		saved(sk);
}

int kiwi_qp_llp_start(struct kiwi_qp *qp, struct kiwi_cep *cep,
		      struct socket *sock,
		      const struct kiwi_conn_params *params)
{
	struct kiwi_stub *st = kzalloc(sizeof(*st), GFP_KERNEL);
	struct sock *sk = sock->sk;
	unsigned long flags;

	if (!st)
		return -ENOMEM;
	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state != IB_QPS_INIT && qp->state != IB_QPS_RTR) {
		spin_unlock_irqrestore(&qp->lock, flags);
		kfree(st);
		return -EINVAL;
	}
	qp->state = IB_QPS_RTS;
	spin_unlock_irqrestore(&qp->lock, flags);

	st->qp = qp;
	st->cep = cep;
	st->sock = sock;
	spin_lock(&kiwi_stubs_lock);
	list_add(&st->entry, &kiwi_stubs);
	spin_unlock(&kiwi_stubs_lock);
	write_lock_bh(&sk->sk_callback_lock);
	st->saved_state_change = sk->sk_state_change;
	sk->sk_user_data = st;
	sk->sk_state_change = kiwi_stub_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
	/* a FIN that came with the MPA frame */
	if (sk->sk_state != TCP_ESTABLISHED)
		kiwi_cm_llp_event(cep, KIWI_LLP_PEER_CLOSED);
	return 0;
}

void kiwi_qp_llp_stop(struct kiwi_qp *qp)
{
	struct kiwi_stub *st = NULL, *it;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct sock *sk;

	spin_lock(&kiwi_stubs_lock);
	list_for_each_entry(it, &kiwi_stubs, entry) {
		if (it->qp == qp) {
			st = it;
			list_del(&st->entry);
			break;
		}
	}
	spin_unlock(&kiwi_stubs_lock);
	if (!st)
		return;
	sk = st->sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_state_change = st->saved_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
	kfree(st);
	kiwi_modify_qp(&qp->ibqp, &attr, IB_QP_STATE, NULL);
}

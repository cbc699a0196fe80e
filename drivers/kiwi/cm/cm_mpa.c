// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi connection management: the MPA exchange on the socket. */

#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cep.h"
#include "core/kiwi_trace.h"

/* Blocking send of all of buf before the deadline. */
int kiwi_cep_send(struct kiwi_cep *cep, const void *buf, size_t len)
{
	struct kvec iov;
	int rv;

	while (len) {
		struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
		long left = kiwi_cep_left(cep);

		if (left <= 0)
			return -ETIMEDOUT;
		WRITE_ONCE(cep->sock->sk->sk_sndtimeo, left);
		iov.iov_base = (void *)buf;
		iov.iov_len = len;
		rv = kernel_sendmsg(cep->sock, &msg, &iov, 1, len);
		if (rv == -EAGAIN)
			continue;
		if (rv < 0)
			return rv;
		buf += rv;
		len -= rv;
	}
	return 0;
}

/* All of a small frame at once, without waiting, into the send buffer. */
int kiwi_cep_send_now(struct kiwi_cep *cep, const void *buf,
		      size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT };
	struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
	int rv;

	rv = kernel_sendmsg(cep->sock, &msg, &iov, 1, len);
	if (rv < 0)
		return rv;
	return rv == len ? 0 : -ENOBUFS;
}

/* ---- counters and trace events of the MPA exchange ---- */

/* stats.h has Requests, Replies, rejects, each sent then received */
static void kiwi_cep_mpa_stat(struct kiwi_cep *cep, bool reply, bool rej,
			      bool rcvd)
{
	kiwi_stat_inc(cep->cdev->kdev, KIWI_STAT_MPA_REQ_SENT +
		      2 * (reply + (reply && rej)) + rcvd);
}

/* Under cep->mutex: the frame in hs->buf went, for QP qpn (0: none). */
void kiwi_cep_frame_sent(struct kiwi_cep *cep, u32 qpn)
{
	const struct kiwi_mpa_rr *rr = (const struct kiwi_mpa_rr *)cep->hs->buf;
	bool reply = !memcmp(rr->key, KIWI_MPA_KEY_REP, KIWI_MPA_KEY_LEN);

	kiwi_cep_mpa_stat(cep, reply, be16_to_cpu(rr->bits) & KIWI_MPA_R,
			  false);
	if (reply)
		trace_kiwi_mpa_rep_sent(qpn, &cep->laddr, &cep->raddr, rr,
					(const u8 *)(rr + 1));
	else
		trace_kiwi_mpa_req_sent(qpn, &cep->laddr, &cep->raddr, rr,
					(const u8 *)(rr + 1));
}

/* Under cep->mutex: the parser holds a whole, well-formed frame. */
void kiwi_cep_frame_rcvd(struct kiwi_cep *cep)
{
	const struct kiwi_mpa_frame *f = &cep->hs->parser.f;

	kiwi_cep_mpa_stat(cep, f->reply, f->r, true);
	if (f->reply)
		trace_kiwi_mpa_rep_rcvd(kiwi_cep_qpn(cep), &cep->laddr,
					&cep->raddr, &cep->hs->parser.rr, f->pd);
	else
		trace_kiwi_mpa_req_rcvd(kiwi_cep_qpn(cep), &cep->laddr,
					&cep->raddr, &cep->hs->parser.rr, f->pd);
}

/* ---- the handshake's frame, read by the socket's callbacks ---- */

/* Run the handshake work now.  The caller keeps cep alive meanwhile. */
void kiwi_cep_hs_kick(struct kiwi_cep *cep)
{
	kiwi_cep_get(cep);
	if (mod_delayed_work(kiwi_cm_wq, &cep->hs_work, 0))
		kiwi_cep_put(cep);	/* it was queued, with its own */
}

/* Run the handshake work at when, unless queued (a kick, sooner). */
void kiwi_cep_hs_arm(struct kiwi_cep *cep, unsigned long when)
{
	long delay = (long)(when - jiffies);

	kiwi_cep_get(cep);
	if (!queue_delayed_work(kiwi_cm_wq, &cep->hs_work,
				delay > 0 ? delay : 0))
		kiwi_cep_put(cep);
}

/* Under the socket lock: feed the parser exactly the frame's bytes. */
static int kiwi_cep_hs_actor(read_descriptor_t *rd, struct sk_buff *skb,
			     unsigned int off, size_t len)
{
	struct kiwi_cep *cep = rd->arg.data;
	size_t done = 0;
	u8 chunk[64];
	u32 n, used;
	int rv = 0;

	while (done < len && !rv) {
		n = min_t(size_t, len - done, sizeof(chunk));
		if (skb_copy_bits(skb, off + done, chunk, n)) {
			rv = -EFAULT;
			break;
		}
		rv = kiwi_mpa_parse(&cep->hs->parser, chunk, n, &used);
		done += used;
		if (!rv && used != n)
			rv = -EPROTO;	/* cannot happen: parser contract */
	}
	if (rv) {
		/* complete or broken: rest unread (acquired in hs_status) */
		smp_store_release(&cep->hs_status,
				  rv > 0 ? KIWI_HS_COMPLETE : rv);
		rd->count = 0;
	}
	return done;
}

/* Under the socket lock: whatever of the frame the socket holds. */
void kiwi_cep_hs_read(struct kiwi_cep *cep, struct sock *sk)
{
	read_descriptor_t rd = { .count = 1, .arg.data = cep };

	if (cep->hs_status == KIWI_HS_READING)
		tcp_read_sock(sk, &rd, kiwi_cep_hs_actor);
}

/* softirq (or process context with the socket locked): bytes arrived */
static void kiwi_cep_hs_data_ready(struct sock *sk)
{
	struct kiwi_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep && cep->hs_status == KIWI_HS_READING) {
		kiwi_cep_hs_read(cep, sk);
		if (cep->hs_status != KIWI_HS_READING)
			kiwi_cep_hs_kick(cep);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/* connected, or the peer closed or reset: the work looks at sk_state */
static void kiwi_cep_hs_state_change(struct sock *sk)
{
	struct kiwi_cep *cep;

	read_lock_bh(&sk->sk_callback_lock);
	cep = sk->sk_user_data;
	if (cep)
		kiwi_cep_hs_kick(cep);
	read_unlock_bh(&sk->sk_callback_lock);
}

/* Under cep->mutex: the handshake's callbacks on the socket. */
void kiwi_cep_hs_attach(struct kiwi_cep *cep, bool reply)
{
	struct sock *sk = cep->sock->sk;

	lockdep_assert_held(&cep->mutex);
	kiwi_mpa_parser_init(&cep->hs->parser, reply);
	cep->hs_status = KIWI_HS_READING;
	write_lock_bh(&sk->sk_callback_lock);
	cep->sk_data_ready = sk->sk_data_ready;
	cep->sk_state_change = sk->sk_state_change;
	sk->sk_user_data = cep;
	sk->sk_data_ready = kiwi_cep_hs_data_ready;
	sk->sk_state_change = kiwi_cep_hs_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
	cep->hs_cb = true;
}

/*
 * Under cep->mutex (or on the last reference): the callbacks go; when
 * this returns none runs any more and hs_status and the parser are final.
 */
void kiwi_cep_hs_detach(struct kiwi_cep *cep)
{
	struct sock *sk;

	if (!cep->hs_cb)
		return;
	sk = cep->sock->sk;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = cep->sk_data_ready;
	sk->sk_state_change = cep->sk_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
	cep->hs_cb = false;
}

/*
 * Under cep->mutex: KIWI_HS_COMPLETE, -errno or KIWI_HS_READING. At the
 * deadline, close or stop, the callbacks go and the socket is read once more.
 */
int kiwi_cep_hs_result(struct kiwi_cep *cep, bool stop)
{
	struct sock *sk = cep->sock->sk;
	int st = kiwi_cep_hs_status(cep);

	lockdep_assert_held(&cep->mutex);
	if (st == KIWI_HS_READING && !stop && kiwi_cep_left(cep) > 0 &&
	    READ_ONCE(sk->sk_state) == TCP_ESTABLISHED)
		return KIWI_HS_READING;
	kiwi_cep_hs_detach(cep);
	if (st == KIWI_HS_READING) {
		lock_sock(sk);
		kiwi_cep_hs_read(cep, sk);
		release_sock(sk);
		st = cep->hs_status;
	}
	if (st == KIWI_HS_READING) {
		if (stop)
			st = -ECONNABORTED;
		else if (kiwi_cep_left(cep) <= 0)
			st = -ETIMEDOUT;
		else
			st = -ECONNRESET;	/* EOF or RST mid-frame */
	}
	return st;
}

/* Initiator: the Reply was fine as MPA but not for us in full operation. */
void kiwi_cep_send_term(struct kiwi_cep *cep, enum kiwi_err err)
{
	struct kiwi_tx_cfg tc = {
		.crc = cep->res.crc,
		.markers = cep->res.markers_tx,
	};
	struct kiwi_tx tx;
	struct kiwi_hdr h;
	int n;

	kiwi_term_build(&h, err, NULL, 0, 1);
	kiwi_tx_init(&tx, &tc);
	n = kiwi_fpdu_build(&tx, &h, NULL, 0, cep->hs->buf, sizeof(cep->hs->buf));
	if (n > 0 && !kiwi_cep_send_now(cep, cep->hs->buf, n)) {
		kiwi_stat_inc(cep->cdev->kdev, KIWI_STAT_TX_FPDUS);
		kiwi_stat_term(cep->cdev->kdev, true, h.term.layer);
		trace_kiwi_term_sent(kiwi_cep_qpn(cep), &h.term);
	}
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi connection management: iw_cm operations over kernel TCP sockets.
 *
 * A struct kiwi_cep (connection endpoint) is either a listener, which owns
 * one listening socket per local address it covers, or one connection,
 * which owns one TCP socket from the handshake to the close.
 *
 * Nothing a peer controls may hold a worker: the MPA Request or Reply is
 * parsed by the socket's callbacks as it arrives (kiwi_cep_hs_data_ready(),
 * non-blocking), and the handshake's work (hs_work, on kiwi_cm_wq, its
 * delayed work the timer) runs only for short steps: frame complete or
 * broken, socket closed or connected, turn come, deadline passed.  The
 * accept loop runs on kiwi_cm_wq too; teardown (engine reports,
 * disconnects, the close timer) on kiwi_cm_ev_wq, never behind
 * handshakes.  A listener admits at most pending_per_listener undelivered
 * Requests, pending_per_source from one address, and resets the others.
 *
 * Connection states (cep->state, changed only under cep->mutex):
 *
 *   active:  CONNECTING --(Reply ok, llp_start)--> ESTABLISHED
 *            CONNECTING --(timeout, reject, error)--> CLOSED
 *   passive: AWAIT_REQ --(Request ok)--> REQ_RCVD --(iw_accept)--> ESTABLISHED
 *            AWAIT_REQ --(bad Request, timeout, listener gone)--> CLOSED
 *            REQ_RCVD --(iw_reject, accept failure)--> CLOSED
 *   both:    ESTABLISHED --(iw_cm graceful disconnect: FIN sent)--> CLOSING
 *            ESTABLISHED/CLOSING --(peer FIN, RST, Terminate, abort,
 *                                   FIN wait timeout)--> CLOSED
 *   listener: LISTEN --(iw_destroy_listen, device removal)--> CLOSED
 *
 * Every cep that reached ESTABLISHED gets exactly one IW_CM_EVENT_CLOSE,
 * after kiwi_qp_llp_stop() and the socket's release.
 *
 * References: the allocation reference lives until CLOSED
 * (kiwi_cep_finish); queued works, children (on their listener) and
 * iw_cm operations hold their own.  While CONNECTING or AWAIT_REQ the
 * handshake callbacks are on the socket (sk_user_data is the cep); every
 * way out removes them (kiwi_cep_hs_detach) before the socket or that
 * reference goes.  Lock order: listener mutex, a child's mutex, the QP's
 * (engine.h), the socket lock, cep->lock (a spinlock: engines, softirq).
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <rdma/rdma_cm.h>
#include <rdma/restrack.h>

#include "cep.h"

/* handshakes, accept loops, listener resyncs: short steps, never blocking */
struct workqueue_struct *kiwi_cm_wq;
/* teardown: the engines' reports, disconnects, close timers */
static struct workqueue_struct *kiwi_cm_ev_wq;

/* handshake counters, all devices together (debugfs kiwi/cm) */
atomic_t kiwi_cm_pending = ATOMIC_INIT(0);
atomic64_t kiwi_cm_cap_listener = ATOMIC64_INIT(0);
atomic64_t kiwi_cm_cap_source = ATOMIC64_INIT(0);
atomic64_t kiwi_cm_evicted = ATOMIC64_INIT(0);
atomic64_t kiwi_cm_req_timeouts = ATOMIC64_INIT(0);

/* ---- endpoints ---- */

static void kiwi_cep_release(struct kref *ref)
{
	struct kiwi_cep *cep = container_of(ref, struct kiwi_cep, ref);
	struct kiwi_cm_dev *cdev = cep->cdev;
	unsigned long flags;

	/* every way to CLOSED releases all in process context, not softirq */
	if (cep->sock) {
		kiwi_cep_hs_detach(cep);
		sock_release(cep->sock);
	}
	if (cep->parent)
		kref_put(&cep->parent->ref, kiwi_cep_release);
	mutex_destroy(&cep->mutex);

	spin_lock_irqsave(&cdev->lock, flags);
	list_del(&cep->dev_entry);
	if (list_empty(&cdev->ceps))
		wake_up_all(&cdev->empty);
	spin_unlock_irqrestore(&cdev->lock, flags);
	kfree(cep->pd);
	kfree(cep->hs);
	kfree(cep);
	kiwi_obj_dec(KIWI_OBJ_CEP);
}

void kiwi_cep_get(struct kiwi_cep *cep)
{
	kref_get(&cep->ref);
}

void kiwi_cep_put(struct kiwi_cep *cep)
{
	kref_put(&cep->ref, kiwi_cep_release);
}

static const struct kiwi_conn_ops kiwi_cep_conn_ops;
static void kiwi_cep_hs_work(struct work_struct *work);
static void kiwi_cep_event_work(struct work_struct *work);
static void kiwi_cep_close_timeout(struct work_struct *work);

/* hs: the handshake's step (conn_work, req_work); NULL: a listener */
struct kiwi_cep *kiwi_cep_alloc(struct kiwi_cm_dev *cdev,
				void (*hs)(struct kiwi_cep *cep))
{
	struct kiwi_cep *cep = kzalloc(sizeof(*cep), GFP_KERNEL);

	if (!cep)
		return NULL;
	if (hs) {
		cep->hs = kmalloc(sizeof(*cep->hs), GFP_KERNEL);
		if (!cep->hs) {
			kfree(cep);
			return NULL;
		}
	}
	cep->hs_step = hs;
	cep->conn.ops = &kiwi_cep_conn_ops;
	kref_init(&cep->ref);
	mutex_init(&cep->mutex);
	spin_lock_init(&cep->lock);
	cep->state = KIWI_CEP_IDLE;
	cep->cdev = cdev;
	INIT_LIST_HEAD(&cep->lsocks);
	INIT_LIST_HEAD(&cep->children);
	INIT_LIST_HEAD(&cep->child_entry);
	INIT_LIST_HEAD(&cep->wild_entry);
	INIT_LIST_HEAD(&cep->kick_entry);
	INIT_DELAYED_WORK(&cep->hs_work, kiwi_cep_hs_work);
	INIT_WORK(&cep->event_work, kiwi_cep_event_work);
	INIT_DELAYED_WORK(&cep->close_timer, kiwi_cep_close_timeout);
	kiwi_obj_inc(KIWI_OBJ_CEP);
	spin_lock_irq(&cdev->lock);
	list_add_tail(&cep->dev_entry, &cdev->ceps);
	spin_unlock_irq(&cdev->lock);
	return cep;
}

/* Under cep->mutex, once established: the MPA exchange is over. */
void kiwi_cep_hs_free(struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->mutex);
	WARN_ON_ONCE(cep->hs_cb);
	kfree(cep->hs);
	cep->hs = NULL;
}

/* Under cep->mutex: stop the timer of REQ_RCVD or CLOSING. */
void kiwi_cep_stop_timer(struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->mutex);
	if (cancel_delayed_work(&cep->close_timer))
		kiwi_cep_put(cep);	/* the timer's; not the last one */
}

/* Under cep->mutex: no more events; drop the allocation reference. */
void kiwi_cep_finish(struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->mutex);
	if (cep->state == KIWI_CEP_CLOSED)
		return;
	kiwi_cep_stop_timer(cep);
	cep->state = KIWI_CEP_CLOSED;
	kiwi_cep_put(cep);	/* the caller holds its own reference */
}

/* Under cep->mutex, iw_cm told of the end: drop its references, finish. */
void kiwi_cep_drop_conn(struct kiwi_cep *cep)
{
	cep->cm_id->rem_ref(cep->cm_id);
	cep->cm_id = NULL;
	WRITE_ONCE(cep->ulp_id, NULL);
	if (!cep->parent)
		kiwi_qp_conn_set(cep->qp, NULL);
	kiwi_qp_put(cep->qp);
	cep->qp = NULL;
	kiwi_cep_finish(cep);
}

/* Under cep->mutex: connect_timeout_ms from now, kiwi_cep_close_timeout. */
void kiwi_cep_start_timer(struct kiwi_cep *cep)
{
	lockdep_assert_held(&cep->mutex);
	kiwi_cep_get(cep);
	if (!queue_delayed_work(kiwi_cm_ev_wq, &cep->close_timer,
				kiwi_cm_timeout()))
		kiwi_cep_put(cep);
}

/* Under cep->mutex: the socket goes, with an RST instead of a FIN if abort. */
void kiwi_cep_release_sock(struct kiwi_cep *cep, bool abort)
{
	lockdep_assert_held(&cep->mutex);
	if (!cep->sock)
		return;
	kiwi_cep_hs_detach(cep);
	if (abort)
		sock_no_linger(cep->sock->sk);
	sock_release(cep->sock);
	cep->sock = NULL;
}

/* A user-like TCP socket in the netdev's netns: it may outlive its users. */
int kiwi_sock_create(struct kiwi_cm_dev *cdev, int family,
		     struct socket **sock)
{
	struct net *net = dev_net(cdev->kdev->netdev);
	int rv;

	rv = __sock_create(net, family, SOCK_STREAM, IPPROTO_TCP, sock, 0);
	if (rv)
		return rv;
	sock_set_reuseaddr((*sock)->sk);
	return 0;
}

/* The consumer's TOS, as RNICs set it; listeners pass it on. */
static void kiwi_sock_tos(struct socket *sock, u8 tos)
{
	int tclass = tos & ~INET_ECN_MASK;

	/* an IPv6 socket's IPv4 (mapped) peers use this one too */
	ip_sock_set_tos(sock->sk, tclass);
	if (sock->sk->sk_family == AF_INET6)
		sock->ops->setsockopt(sock, SOL_IPV6, IPV6_TCLASS,
				      KERNEL_SOCKPTR(&tclass), sizeof(tclass));
}

void kiwi_sock_set_tos(struct socket *sock, const struct iw_cm_id *id)
{
	if (id && id->tos_set)
		kiwi_sock_tos(sock, id->tos);
}

/* Accepted: the larger of listener's and initiator's TOS, as irdma. */
void kiwi_sock_reflect_tos(struct socket *sock)
{
	struct sock *sk = sock->sk;
	u8 own = inet_sk(sk)->tos, peer = inet_sk(sk)->rcv_tos;

	if (sk->sk_family == AF_INET6 &&
	    !ipv6_addr_v4mapped(&sk->sk_v6_daddr)) {
		own = inet6_sk(sk)->tclass;
		peer = ip6_tclass(inet6_sk(sk)->rcv_flowinfo);
	}
	if ((peer & ~INET_ECN_MASK) > (own & ~INET_ECN_MASK))
		kiwi_sock_tos(sock, peer);
}

void kiwi_cep_addrs(struct kiwi_cep *cep)
{
	if (kernel_getsockname(cep->sock, (struct sockaddr *)&cep->laddr) < 0)
		memset(&cep->laddr, 0, sizeof(cep->laddr));
	if (kernel_getpeername(cep->sock, (struct sockaddr *)&cep->raddr) < 0)
		memset(&cep->raddr, 0, sizeof(cep->raddr));
	WRITE_ONCE(cep->port, kiwi_ss_port(&cep->laddr));
}

int kiwi_cep_upcall(struct kiwi_cep *cep, struct iw_cm_id *id,
		    enum iw_cm_event_type type, int status,
		    const u8 *pd, u16 pd_len)
{
	struct iw_cm_event ev = {
		.event = type,
		.status = status,
		.local_addr = cep->laddr,
		.remote_addr = cep->raddr,
	};

	if (type == IW_CM_EVENT_CONNECT_REQUEST) {
		ev.provider_data = cep;
		/*
		 * ird and ord reach the listener as initiator_depth and
		 * responder_resources: under MPA v2 the initiator's (capped),
		 * so that svcrdma, isert and ksmbd size their Reads by the
		 * peer; MPA v1 does not say, so our limits.
		 */
		ev.ird = KIWI_MAX_ORD;
		ev.ord = KIWI_MAX_IRD;
		if (cep->res.enhanced) {
			ev.ird = min_t(u16, cep->res.peer_ird, KIWI_MAX_ORD);
			ev.ord = min_t(u16, cep->res.peer_ord, KIWI_MAX_IRD);
		}
	} else if (type == IW_CM_EVENT_ESTABLISHED ||
		   type == IW_CM_EVENT_CONNECT_REPLY) {
		ev.ird = cep->res.ird;
		ev.ord = cep->res.ord;
	}
	/* a failed one's stay as given: rdma_cm copies them as they are */
	if (type == IW_CM_EVENT_CONNECT_REPLY && status) {
		ev.local_addr = id->m_local_addr;
		ev.remote_addr = id->m_remote_addr;
	}
	/* iw_cm copies private data for these two only; its length is a u8 */
	if (pd_len && (type == IW_CM_EVENT_CONNECT_REQUEST ||
		       type == IW_CM_EVENT_CONNECT_REPLY)) {
		ev.private_data = (void *)pd;
		ev.private_data_len = min_t(u16, pd_len, U8_MAX);
	}
	return id->event_handler(id, &ev);
}

/* Under cep->mutex, ESTABLISHED or CLOSING: stop, close, tell iw_cm. */
static void kiwi_cep_close_conn(struct kiwi_cep *cep, bool abort)
{
	kiwi_qp_llp_stop(cep->qp);
	kiwi_cep_release_sock(cep, abort);
	kiwi_cep_stop_timer(cep);
	kiwi_cep_upcall(cep, cep->cm_id, IW_CM_EVENT_CLOSE, 0, NULL, 0);
	kiwi_cep_drop_conn(cep);
}

/* ---- disconnect: reports from the engines and requests from modify_qp ---- */

/* Any context: bits into *word (llp_events, disc), then the event work. */
static void kiwi_cep_post(struct kiwi_cep *cep, unsigned long *word,
			  unsigned long bits)
{
	unsigned long flags;

	spin_lock_irqsave(&cep->lock, flags);
	*word |= bits;
	spin_unlock_irqrestore(&cep->lock, flags);
	kiwi_cep_get(cep);
	if (!queue_work(kiwi_cm_ev_wq, &cep->event_work))
		kiwi_cep_put(cep);
}

static void kiwi_cep_llp_event(struct kiwi_conn *conn,
			       enum kiwi_llp_event ev)
{
	struct kiwi_cep *cep = container_of(conn, struct kiwi_cep, conn);

	kiwi_cep_post(cep, &cep->llp_events, BIT(ev));
}

static void kiwi_cep_disconnect(struct kiwi_conn *conn, bool abort)
{
	struct kiwi_cep *cep = container_of(conn, struct kiwi_cep, conn);

	kiwi_cep_post(cep, &cep->disc,
		      abort ? KIWI_DISC_ABORT : KIWI_DISC_GRACEFUL);
}

static void kiwi_cep_qp_gone(struct kiwi_conn *conn)
{
	struct kiwi_cep *cep = container_of(conn, struct kiwi_cep, conn);

	mutex_lock(&cep->mutex);
	switch (cep->state) {
	case KIWI_CEP_CONNECTING:
		/* the handshake work ends it: CONNECT_REPLY, -ECONNABORTED */
		cep->dead = true;
		kiwi_cep_hs_kick(cep);
		break;
	case KIWI_CEP_ESTABLISHED:
	case KIWI_CEP_CLOSING:
		/* established since destroy_qp looked: as for a connected QP */
		kiwi_cep_post(cep, &cep->disc, KIWI_DISC_ABORT);
		break;
	default:
		break;
	}
	mutex_unlock(&cep->mutex);
}

static void kiwi_cep_conn_get(struct kiwi_conn *conn)
{
	kiwi_cep_get(container_of(conn, struct kiwi_cep, conn));
}

static void kiwi_cep_conn_put(struct kiwi_conn *conn)
{
	kiwi_cep_put(container_of(conn, struct kiwi_cep, conn));
}

static const struct kiwi_conn_ops kiwi_cep_conn_ops = {
	.llp_event = kiwi_cep_llp_event,
	.disconnect = kiwi_cep_disconnect,
	.qp_gone = kiwi_cep_qp_gone,
	.get = kiwi_cep_conn_get,
	.put = kiwi_cep_conn_put,
};

#define KIWI_LLP_FATAL	(BIT(KIWI_LLP_RESET) | BIT(KIWI_LLP_TERMINATE_SENT) | \
			 BIT(KIWI_LLP_TERMINATE_RCVD))
#define KIWI_LLP_TERM	(BIT(KIWI_LLP_TERMINATE_SENT) | \
			 BIT(KIWI_LLP_TERMINATE_RCVD))
#define KIWI_LLP_FIN	(BIT(KIWI_LLP_PEER_CLOSED) | BIT(KIWI_LLP_CLOSED))

static void kiwi_cep_event_work(struct work_struct *work)
{
	struct kiwi_cep *cep = container_of(work, struct kiwi_cep, event_work);
	unsigned long ev, disc;
	bool abort;

	mutex_lock(&cep->mutex);
	spin_lock_irq(&cep->lock);
	ev = cep->llp_events;
	disc = cep->disc;
	cep->llp_events = 0;
	cep->disc = 0;
	spin_unlock_irq(&cep->lock);

	/* a Terminate must reach the wire: FIN after it, never an RST */
	abort = !(ev & KIWI_LLP_TERM) &&
		((ev & BIT(KIWI_LLP_RESET)) || (disc & KIWI_DISC_ABORT));

	switch (cep->state) {
	case KIWI_CEP_ESTABLISHED:
		if ((ev & KIWI_LLP_FATAL) || (disc & KIWI_DISC_ABORT)) {
			kiwi_cep_close_conn(cep, abort);
		} else if (ev & KIWI_LLP_FIN) {
			/* the peer closed first: a graceful disconnect */
			kiwi_cep_upcall(cep, cep->cm_id,
					IW_CM_EVENT_DISCONNECT, 0, NULL, 0);
			kiwi_cep_close_conn(cep, false);
		} else if (disc & KIWI_DISC_GRACEFUL) {
			/* our FIN now, the close when the peer's arrives */
			kernel_sock_shutdown(cep->sock, SHUT_WR);
			cep->state = KIWI_CEP_CLOSING;
			kiwi_cep_start_timer(cep);
		}
		break;
	case KIWI_CEP_CLOSING:
		if ((ev & (KIWI_LLP_FATAL | KIWI_LLP_FIN)) ||
		    (disc & KIWI_DISC_ABORT))
			kiwi_cep_close_conn(cep, abort);
		break;
	default:
		/* before the engines started or after the close: nothing */
		break;
	}
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
}

static void kiwi_cep_close_timeout(struct work_struct *work)
{
	struct kiwi_cep *cep = container_of(to_delayed_work(work),
					    struct kiwi_cep, close_timer);

	mutex_lock(&cep->mutex);
	/* the peer never sent its FIN: do not wait forever */
	if (cep->state == KIWI_CEP_CLOSING)
		kiwi_cep_close_conn(cep, true);
	/*
	 * Neither accepted nor rejected in time: the initiator gave up too.
	 * Reset; the cep stays for a late accept or reject (which fail) or
	 * removal.
	 */
	if (cep->state == KIWI_CEP_REQ_RCVD)
		kiwi_cep_release_sock(cep, true);
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
}

/* ---- handshake steps (cm_active.c, cm_passive.c) ---- */

/* Both sides' handshake steps; the work holds a reference. */
static void kiwi_cep_hs_work(struct work_struct *work)
{
	struct kiwi_cep *cep = container_of(to_delayed_work(work),
					    struct kiwi_cep, hs_work);

	cep->hs_step(cep);
	kiwi_cep_put(cep);
}

/* ---- resource dumps ---- */

static const char * const kiwi_cep_state_names[] = {
	[KIWI_CEP_IDLE] = "IDLE",
	[KIWI_CEP_LISTEN] = "LISTEN",
	[KIWI_CEP_CONNECTING] = "CONNECTING",
	[KIWI_CEP_AWAIT_REQ] = "AWAIT_REQ",
	[KIWI_CEP_REQ_RCVD] = "REQ_RCVD",
	[KIWI_CEP_ESTABLISHED] = "ESTABLISHED",
	[KIWI_CEP_CLOSING] = "CLOSING",
	[KIWI_CEP_CLOSED] = "CLOSED",
};

/* `rdma res show cm_id -dd`: snapshots, under cdev->lock, of an id's cep. */
int kiwi_fill_res_cm_id_entry(struct sk_buff *msg, struct rdma_cm_id *id)
{
	struct kiwi_cm_dev *cdev = kiwi_cm_dev_get(to_kdev(id->device));
	struct kiwi_mpa_result res = {};
	enum kiwi_cep_state state = KIWI_CEP_IDLE;
	struct kiwi_cep *cep;
	struct nlattr *nest;
	bool found = false;
	u32 backlog = 0;
	__be16 lport = 0;

	/* the MPA parameters and states are for administrators */
	if (!cdev || !capable(CAP_NET_ADMIN))
		return 0;
	spin_lock_irq(&cdev->lock);
	list_for_each_entry(cep, &cdev->ceps, dev_entry) {
		if (READ_ONCE(cep->ulp_id) != id)
			continue;
		state = READ_ONCE(cep->state);
		res = cep->res;
		backlog = cep->backlog;
		lport = READ_ONCE(cep->port);
		found = true;
		break;
	}
	spin_unlock_irq(&cdev->lock);
	if (!found)
		return 0;

	nest = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_string(msg, "cep_state",
				      kiwi_cep_state_names[state]))
		goto cancel;
	if (state == KIWI_CEP_LISTEN) {
		if (rdma_nl_put_driver_u32(msg, "backlog", backlog))
			goto cancel;
	} else if (kiwi_fill_res_mpa(msg, &res) ||
		   rdma_nl_put_driver_u32(msg, "ird", res.ird) ||
		   rdma_nl_put_driver_u32(msg, "ord", res.ord) ||
		   rdma_nl_put_driver_u32(msg, "peer_ird", res.peer_ird) ||
		   rdma_nl_put_driver_u32(msg, "peer_ord", res.peer_ord) ||
		   rdma_nl_put_driver_u32(msg, "tcp_lport", be16_to_cpu(lport))) {
		goto cancel;
	}
	nla_nest_end(msg, nest);
	return 0;
cancel:
	nla_nest_cancel(msg, nest);
	return -EMSGSIZE;
}

/* ---- device removal and module lifetime ---- */

/* Everything of a device whose iw_cm users are gone. */
static void kiwi_cep_reap(struct kiwi_cep *cep)
{
	LIST_HEAD(socks);

	mutex_lock(&cep->mutex);
	cep->dead = true;
	switch (cep->state) {
	case KIWI_CEP_CONNECTING:
	case KIWI_CEP_AWAIT_REQ:
		/* the handshake work finishes it now */
		kiwi_cep_hs_kick(cep);
		break;
	case KIWI_CEP_REQ_RCVD:
		/* iw_cm dropped the request with its listener: ours now */
		kiwi_cep_release_sock(cep, true);
		kiwi_cep_finish(cep);
		break;
	case KIWI_CEP_ESTABLISHED:
	case KIWI_CEP_CLOSING:
		kiwi_cep_close_conn(cep, true);
		break;
	case KIWI_CEP_LISTEN:
		kiwi_cep_unlisten(cep, &socks);
		break;
	default:
		break;
	}
	mutex_unlock(&cep->mutex);
	kiwi_lsocks_free(&socks);
}

static bool kiwi_cm_dev_empty(struct kiwi_cm_dev *cdev)
{
	bool empty;

	spin_lock_irq(&cdev->lock);
	empty = list_empty(&cdev->ceps);
	spin_unlock_irq(&cdev->lock);
	return empty;
}

/* ib_core's dealloc_driver: close and wait for whatever cep is left. */
void kiwi_cm_dev_del(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;
	struct kiwi_cep *cep, *found;

	cdev = kiwi_cm_dev_unlink(kdev);
	if (!cdev)
		return;

	for (;;) {
		found = NULL;
		spin_lock_irq(&cdev->lock);
		list_for_each_entry(cep, &cdev->ceps, dev_entry) {
			if (!cep->reaped && kref_get_unless_zero(&cep->ref)) {
				cep->reaped = true;
				found = cep;
				break;
			}
		}
		spin_unlock_irq(&cdev->lock);
		if (!found)
			break;
		kiwi_cep_reap(found);
		kiwi_cep_put(found);
	}
	wait_event(cdev->empty, kiwi_cm_dev_empty(cdev));
	kfree(cdev);
}

static int kiwi_cm_stats_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "pending_requests %d\n", atomic_read(&kiwi_cm_pending));
	seq_printf(m, "reset_listener_cap %lld\n",
		   (long long)atomic64_read(&kiwi_cm_cap_listener));
	seq_printf(m, "reset_source_cap %lld\n",
		   (long long)atomic64_read(&kiwi_cm_cap_source));
	seq_printf(m, "evicted_busiest_source %lld\n",
		   (long long)atomic64_read(&kiwi_cm_evicted));
	seq_printf(m, "request_timeouts %lld\n",
		   (long long)atomic64_read(&kiwi_cm_req_timeouts));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kiwi_cm_stats);

int kiwi_cm_init(void)
{
	struct dentry *dir;
	int rv;

	/* unbound: accept loops and handshake steps of many listeners */
	kiwi_cm_wq = alloc_workqueue("kiwi_cm", WQ_UNBOUND | WQ_MEM_RECLAIM,
				     0);
	if (!kiwi_cm_wq)
		return -ENOMEM;
	/* its own, so that closing connections never waits for handshakes */
	kiwi_cm_ev_wq = alloc_workqueue("kiwi_cm_ev",
					WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!kiwi_cm_ev_wq) {
		rv = -ENOMEM;
		goto err_wq;
	}
	rv = kiwi_cm_listen_init();
	if (rv)
		goto err_ev_wq;
	/* main.c made the directory; it removes it with what is inside */
	dir = debugfs_lookup("kiwi", NULL);
	if (!IS_ERR_OR_NULL(dir)) {
		debugfs_create_file("cm", 0444, dir, NULL,
				    &kiwi_cm_stats_fops);
		dput(dir);
	}
	return 0;
err_ev_wq:
	destroy_workqueue(kiwi_cm_ev_wq);
err_wq:
	destroy_workqueue(kiwi_cm_wq);
	return rv;
}

void kiwi_cm_exit(void)
{
	kiwi_cm_listen_exit();
	destroy_workqueue(kiwi_cm_wq);
	destroy_workqueue(kiwi_cm_ev_wq);
}

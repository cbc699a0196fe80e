// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi connection management: iw_cm operations over kernel TCP sockets.
 *
 * A struct kiwi_cep (connection endpoint) is either a listener, which owns
 * one listening socket per local address it covers, or one connection,
 * which owns one TCP socket from the handshake to the close.
 *
 * Nothing a peer controls may hold a worker: the MPA frame of a handshake
 * (the Request a listener awaits, the Reply an initiator awaits) is parsed
 * by the socket's own callbacks as it arrives (kiwi_cep_hs_data_ready(),
 * non-blocking, exactly the frame's bytes), and the handshake's work item
 * (hs_work, on kiwi_cm_wq) runs only for short steps: when the frame is
 * complete or broken, the socket closed or connected, its turn came, or
 * its deadline passed (the delayed work is the timer).  The accept loop
 * (kicked by the listening socket's sk_data_ready) runs on kiwi_cm_wq too.
 * What tears connections down (the engines' reports, disconnects, the
 * close timer) runs on kiwi_cm_ev_wq, so that it never queues behind
 * handshakes.  A listener admits at most pending_per_listener connections
 * whose Request is not yet delivered, pending_per_source of them from one
 * address; it resets the others at once.
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
 * References: the allocation reference lives until the cep becomes CLOSED
 * (kiwi_cep_finish); queued works, children (on their listener) and
 * callers of the iw_cm operations hold their own.  While CONNECTING or
 * AWAIT_REQ the handshake callbacks are installed on the socket
 * (sk_user_data is the cep); every path out of those states removes them
 * (kiwi_cep_hs_detach) before the socket or the allocation reference goes,
 * so a callback always finds the cep alive.  Lock order: listener mutex,
 * then a child's mutex, then the socket lock, then cep->lock (a spinlock
 * for what the engines touch from softirq).
 */
#include <linux/debugfs.h>
#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <rdma/rdma_cm.h>
#include <rdma/restrack.h>

#include "cm.h"
#include "kiwi_trace.h"

enum kiwi_cep_state {
	KIWI_CEP_IDLE,
	KIWI_CEP_LISTEN,
	KIWI_CEP_CONNECTING,
	KIWI_CEP_AWAIT_REQ,
	KIWI_CEP_REQ_RCVD,
	KIWI_CEP_ESTABLISHED,
	KIWI_CEP_CLOSING,
	KIWI_CEP_CLOSED,
};

/* disconnect requests from kiwi_cm_disconnect(), in cep->disc */
#define KIWI_DISC_GRACEFUL	BIT(0)
#define KIWI_DISC_ABORT		BIT(1)

/* MPA Request/Reply with the most private data, or a Terminate */
#define KIWI_CEP_BUF	(sizeof(struct kiwi_mpa_rr) + KIWI_MPA_PD_MAX)

/* addresses one wildcard listener covers per family */
#define KIWI_LISTEN_ADDRS	16

/*
 * How long a Request read in full waits for connections accepted before
 * it whose Requests are still being read (kiwi_cep_req_work()): what a
 * silent peer can delay others by.
 */
#define KIWI_ORDER_WAIT		HZ

/* handshake frame status (cep->hs_status) besides a negative errno */
#define KIWI_HS_READING		0
#define KIWI_HS_COMPLETE	1

/* Per device: its MPA policy and the ceps removal has to wait for. */
struct kiwi_cm_dev {
	struct list_head entry;		/* kiwi_cm_devs */
	struct kiwi_dev *kdev;
	struct kiwi_mpa_policy pol;
	unsigned int llp[KIWI_LLP_MAX];	/* READ_ONCE/WRITE_ONCE */
	spinlock_t lock;		/* ceps */
	struct list_head ceps;
	wait_queue_head_t empty;	/* ceps became empty */
};

struct kiwi_cep {
	struct kref ref;
	struct mutex mutex;		/* everything below but the softirq part */
	enum kiwi_cep_state state;
	struct kiwi_cm_dev *cdev;
	struct list_head dev_entry;	/* cdev->ceps, under cdev->lock */
	bool reaped;			/* under cdev->lock: device removal saw it */
	bool dead;			/* device or listener gone: fail handshake */
	bool req_pending;		/* initiator: no Reply yet, none failed */
	bool req_sent;			/* initiator: it was sent */
	bool hs_cb;			/* the handshake callbacks are on sock */
	bool order_wait;		/* order_end is set */
	int hs_err;			/* initiator: the SYN could not go */
	/*
	 * KIWI_HS_*, or a negative errno: written by the callbacks under
	 * the socket lock (release), read by the handshake work (acquire)
	 */
	int hs_status;
	unsigned long order_end;	/* jiffies: end of the wait for turn */

	struct socket *sock;
	struct iw_cm_id *cm_id;		/* referenced with add_ref, or listener's */
	/* cm_id's rdma_cm_id, compared only (kiwi_fill_res_cm_id_entry()) */
	const void *ulp_id;
	struct kiwi_qp *qp;		/* referenced */
	unsigned long deadline;		/* jiffies: end of the handshake */

	/* listener */
	struct list_head lsocks;
	struct list_head children;	/* Requests not delivered yet, in order */
	int backlog;
	bool wildcard;			/* on kiwi_wild: follows the addresses */
	bool foreign;			/* wildcard from another netns: none */
	bool v4too;			/* IPv6 wildcard covering IPv4 too */
	sa_family_t family;
	__be16 port;
	struct list_head wild_entry;
	struct work_struct resync_work;	/* an address was added */

	/* passive connection */
	struct kiwi_cep *parent;	/* referenced */
	struct list_head child_entry;

	/* engines' reports and disconnect requests, any context */
	spinlock_t lock;
	unsigned long llp_events;	/* BIT(enum kiwi_llp_event) */
	unsigned long disc;		/* KIWI_DISC_* */

	/* handshake steps and its timer: connect or Request (kiwi_cm_wq) */
	struct delayed_work hs_work;
	struct work_struct event_work;		/* kiwi_cm_ev_wq */
	struct delayed_work close_timer;	/* kiwi_cm_ev_wq */
	/* the socket's callbacks before the handshake's */
	void (*sk_data_ready)(struct sock *sk);
	void (*sk_state_change)(struct sock *sk);

	struct kiwi_mpa_cfg cfg;
	struct kiwi_mpa_result res;
	struct kiwi_mpa_parser parser;
	struct sockaddr_storage laddr;
	struct sockaddr_storage raddr;
	u16 pd_len;			/* initiator's private data */
	u8 pd[KIWI_MPA_PD_MAX];
	u8 buf[KIWI_CEP_BUF];
};

/* One listening socket of a listener. */
struct kiwi_lsock {
	struct list_head entry;
	struct kiwi_cep *cep;		/* the listener outlives us */
	struct socket *sock;
	struct work_struct work;	/* accept loop */
	struct sockaddr_storage addr;
};

/* handshakes, accept loops, listener resyncs: short steps, never blocking */
static struct workqueue_struct *kiwi_cm_wq;
/* teardown: the engines' reports, disconnects, close timers */
static struct workqueue_struct *kiwi_cm_ev_wq;
/* wildcard listeners, for the address notifiers (which may be atomic) */
static LIST_HEAD(kiwi_wild);
static DEFINE_SPINLOCK(kiwi_wild_lock);
static LIST_HEAD(kiwi_cm_devs);
static DEFINE_MUTEX(kiwi_cm_devs_mutex);
/* TCP's own sk_data_ready, for sockets cloned from our listeners */
static void (*kiwi_tcp_data_ready)(struct sock *sk);

/* ---- policy ---- */

struct kiwi_pol_name {
	const char *name;
	u8 val;
};

static const struct kiwi_pol_name kiwi_pol_crc[] = {
	{ "off", KIWI_MPA_CRC_OFF },
	{ "preferred", KIWI_MPA_CRC_PREFERRED },
	{ "required", KIWI_MPA_CRC_REQUIRED },
	{ }
};

static const struct kiwi_pol_name kiwi_pol_rev[] = {
	{ "1", 1 }, { "2", 2 }, { }
};

static const struct kiwi_pol_name kiwi_pol_bool[] = {
	{ "0", 0 }, { "1", 1 }, { }
};

static const struct kiwi_pol_name kiwi_pol_rtr[] = {
	{ "send", KIWI_RTR_SEND },
	{ "write", KIWI_RTR_WRITE },
	{ "read", KIWI_RTR_READ },
	{ }
};

static const struct kiwi_pol_name *const kiwi_pol_names[KIWI_POL_MAX] = {
	[KIWI_POL_CRC] = kiwi_pol_crc,
	[KIWI_POL_REV] = kiwi_pol_rev,
	[KIWI_POL_P2P] = kiwi_pol_bool,
	[KIWI_POL_RTR] = kiwi_pol_rtr,
	[KIWI_POL_MARKERS] = kiwi_pol_bool,
};

static struct kiwi_mpa_policy kiwi_pol_default = {
	.v = {
		[KIWI_POL_CRC] = KIWI_MPA_CRC_OFF,
		[KIWI_POL_REV] = 2,
		[KIWI_POL_P2P] = 1,
		[KIWI_POL_RTR] = KIWI_RTR_WRITE,
		[KIWI_POL_MARKERS] = 0,
	},
};

static unsigned int kiwi_connect_timeout_ms = 10000;
#define KIWI_TIMEOUT_MAX_MS	600000

/*
 * Dead peer or path: unacknowledged data for 30 s, or an idle connection
 * whose keepalive probes (after 30 s, then three 10 s apart) go
 * unanswered, fails the connection.  TCP's own default would take about
 * 15 minutes and never notice an idle one.
 */
static unsigned int kiwi_llp_default[KIWI_LLP_MAX] = {
	[KIWI_LLP_USER_TIMEOUT] = 30000,
	[KIWI_LLP_KEEPALIVE] = 30,
};

static const unsigned int kiwi_llp_max[KIWI_LLP_MAX] = {
	[KIWI_LLP_USER_TIMEOUT] = KIWI_TIMEOUT_MAX_MS,
	[KIWI_LLP_KEEPALIVE] = MAX_TCP_KEEPIDLE,
};

/*
 * Connections a listener accepted whose MPA Request is not delivered yet
 * (0: no limit), all together and from one remote address: a peer that
 * opens connections and sends nothing holds each for connect_timeout_ms.
 */
static unsigned int kiwi_pending_listener = 1024;
module_param_named(pending_per_listener, kiwi_pending_listener, uint, 0644);
MODULE_PARM_DESC(pending_per_listener,
		 "connections awaiting their MPA Request per listener; more are reset (0: no limit)");
static unsigned int kiwi_pending_source = 256;
module_param_named(pending_per_source, kiwi_pending_source, uint, 0644);
MODULE_PARM_DESC(pending_per_source,
		 "connections awaiting their MPA Request per listener and remote address; more are reset (0: no limit)");

/* handshake counters, all devices together (debugfs kiwi/cm) */
static atomic_t kiwi_cm_pending = ATOMIC_INIT(0);
static atomic64_t kiwi_cm_cap_listener = ATOMIC64_INIT(0);
static atomic64_t kiwi_cm_cap_source = ATOMIC64_INIT(0);
static atomic64_t kiwi_cm_req_timeouts = ATOMIC64_INIT(0);

static int kiwi_pol_parse(enum kiwi_pol pol, const char *val, u8 *out)
{
	const struct kiwi_pol_name *n;

	if (pol >= KIWI_POL_MAX || !val)
		return -EINVAL;
	for (n = kiwi_pol_names[pol]; n->name; n++) {
		if (sysfs_streq(val, n->name)) {
			*out = n->val;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *kiwi_pol_name(enum kiwi_pol pol, u8 v)
{
	const struct kiwi_pol_name *n;

	for (n = kiwi_pol_names[pol]; n->name; n++)
		if (n->val == v)
			return n->name;
	return "?";
}

int kiwi_policy_set_default(enum kiwi_pol pol, const char *val)
{
	u8 v;
	int rv = kiwi_pol_parse(pol, val, &v);

	if (!rv)
		WRITE_ONCE(kiwi_pol_default.v[pol], v);
	return rv;
}

int kiwi_policy_get_default(enum kiwi_pol pol, char *buf)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n",
			 kiwi_pol_name(pol, READ_ONCE(kiwi_pol_default.v[pol])));
}

static int kiwi_llp_parse(enum kiwi_llp_knob k, const char *val,
			  unsigned int *out)
{
	unsigned int v;
	int rv;

	if (k >= KIWI_LLP_MAX || !val)
		return -EINVAL;
	rv = kstrtouint(val, 0, &v);
	if (rv)
		return rv;
	if (v > kiwi_llp_max[k])
		return -ERANGE;
	*out = v;
	return 0;
}

int kiwi_llp_set_default(enum kiwi_llp_knob k, const char *val)
{
	unsigned int v;
	int rv = kiwi_llp_parse(k, val, &v);

	if (!rv)
		WRITE_ONCE(kiwi_llp_default[k], v);
	return rv;
}

unsigned int kiwi_llp_get_default(enum kiwi_llp_knob k)
{
	return READ_ONCE(kiwi_llp_default[k]);
}

int kiwi_cm_set_timeout(const char *val)
{
	unsigned int ms;
	int rv = kstrtouint(val, 0, &ms);

	if (rv)
		return rv;
	if (!ms || ms > KIWI_TIMEOUT_MAX_MS)
		return -EINVAL;
	WRITE_ONCE(kiwi_connect_timeout_ms, ms);
	return 0;
}

unsigned int kiwi_cm_get_timeout(void)
{
	return READ_ONCE(kiwi_connect_timeout_ms);
}

static unsigned long kiwi_cm_timeout(void)
{
	return msecs_to_jiffies(kiwi_cm_get_timeout());
}

/* ---- devices ---- */

static struct kiwi_cm_dev *kiwi_cm_dev_find(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;

	lockdep_assert_held(&kiwi_cm_devs_mutex);
	list_for_each_entry(cdev, &kiwi_cm_devs, entry)
		if (cdev->kdev == kdev)
			return cdev;
	return NULL;
}

/* Valid while the device is registered: dev_del runs at dealloc. */
static struct kiwi_cm_dev *kiwi_cm_dev_get(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev;
}

ssize_t kiwi_cm_policy_show(struct kiwi_dev *kdev, enum kiwi_pol pol,
			    char *buf)
{
	struct kiwi_cm_dev *cdev;
	ssize_t rv = -ENODEV;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		rv = sysfs_emit(buf, "%s\n",
				kiwi_pol_name(pol, READ_ONCE(cdev->pol.v[pol])));
	mutex_unlock(&kiwi_cm_devs_mutex);
	return rv;
}

ssize_t kiwi_cm_policy_store(struct kiwi_dev *kdev, enum kiwi_pol pol,
			     const char *buf, size_t count)
{
	struct kiwi_cm_dev *cdev;
	int rv;
	u8 v;

	rv = kiwi_pol_parse(pol, buf, &v);
	if (rv)
		return rv;
	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		WRITE_ONCE(cdev->pol.v[pol], v);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev ? count : -ENODEV;
}

ssize_t kiwi_cm_llp_show(struct kiwi_dev *kdev, enum kiwi_llp_knob k,
			 char *buf)
{
	struct kiwi_cm_dev *cdev;
	ssize_t rv = -ENODEV;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		rv = sysfs_emit(buf, "%u\n", READ_ONCE(cdev->llp[k]));
	mutex_unlock(&kiwi_cm_devs_mutex);
	return rv;
}

ssize_t kiwi_cm_llp_store(struct kiwi_dev *kdev, enum kiwi_llp_knob k,
			  const char *buf, size_t count)
{
	struct kiwi_cm_dev *cdev;
	unsigned int v;
	int rv;

	rv = kiwi_llp_parse(k, buf, &v);
	if (rv)
		return rv;
	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		WRITE_ONCE(cdev->llp[k], v);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev ? count : -ENODEV;
}

int kiwi_cm_dev_add(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev = kzalloc(sizeof(*cdev), GFP_KERNEL);
	int i;

	if (!cdev)
		return -ENOMEM;
	cdev->kdev = kdev;
	for (i = 0; i < KIWI_POL_MAX; i++)
		cdev->pol.v[i] = READ_ONCE(kiwi_pol_default.v[i]);
	for (i = 0; i < KIWI_LLP_MAX; i++)
		cdev->llp[i] = READ_ONCE(kiwi_llp_default[i]);
	spin_lock_init(&cdev->lock);
	INIT_LIST_HEAD(&cdev->ceps);
	init_waitqueue_head(&cdev->empty);
	mutex_lock(&kiwi_cm_devs_mutex);
	list_add_tail(&cdev->entry, &kiwi_cm_devs);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return 0;
}

/* ---- endpoints ---- */

static void kiwi_cep_hs_detach(struct kiwi_cep *cep);

static void kiwi_cep_release(struct kref *ref)
{
	struct kiwi_cep *cep = container_of(ref, struct kiwi_cep, ref);
	struct kiwi_cm_dev *cdev = cep->cdev;
	unsigned long flags;

	/*
	 * Every path to CLOSED releases the socket and the references in
	 * process context first; nothing is left for a put from softirq.
	 */
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

static void kiwi_cep_hs_work(struct work_struct *work);
static void kiwi_cep_event_work(struct work_struct *work);
static void kiwi_cep_close_timeout(struct work_struct *work);

static struct kiwi_cep *kiwi_cep_alloc(struct kiwi_cm_dev *cdev)
{
	struct kiwi_cep *cep = kzalloc(sizeof(*cep), GFP_KERNEL);

	if (!cep)
		return NULL;
	kref_init(&cep->ref);
	mutex_init(&cep->mutex);
	spin_lock_init(&cep->lock);
	cep->state = KIWI_CEP_IDLE;
	cep->cdev = cdev;
	INIT_LIST_HEAD(&cep->lsocks);
	INIT_LIST_HEAD(&cep->children);
	INIT_LIST_HEAD(&cep->child_entry);
	INIT_LIST_HEAD(&cep->wild_entry);
	INIT_DELAYED_WORK(&cep->hs_work, kiwi_cep_hs_work);
	INIT_WORK(&cep->event_work, kiwi_cep_event_work);
	INIT_DELAYED_WORK(&cep->close_timer, kiwi_cep_close_timeout);
	kiwi_obj_inc(KIWI_OBJ_CEP);
	spin_lock_irq(&cdev->lock);
	list_add_tail(&cep->dev_entry, &cdev->ceps);
	spin_unlock_irq(&cdev->lock);
	return cep;
}

/* Under cep->mutex: stop the timer of REQ_RCVD or CLOSING. */
static void kiwi_cep_stop_timer(struct kiwi_cep *cep)
{
	if (cancel_delayed_work(&cep->close_timer))
		kiwi_cep_put(cep);	/* the timer's; not the last one */
}

/* Under cep->mutex: no more events; drop the allocation reference. */
static void kiwi_cep_finish(struct kiwi_cep *cep)
{
	if (cep->state == KIWI_CEP_CLOSED)
		return;
	kiwi_cep_stop_timer(cep);
	cep->state = KIWI_CEP_CLOSED;
	kiwi_cep_put(cep);	/* the caller holds its own reference */
}

/* Under cep->mutex: connect_timeout_ms from now, kiwi_cep_close_timeout. */
static void kiwi_cep_start_timer(struct kiwi_cep *cep)
{
	kiwi_cep_get(cep);
	if (!queue_delayed_work(kiwi_cm_ev_wq, &cep->close_timer,
				kiwi_cm_timeout()))
		kiwi_cep_put(cep);
}

/* Under cep->mutex: the socket goes, with an RST instead of a FIN if abort. */
static void kiwi_cep_release_sock(struct kiwi_cep *cep, bool abort)
{
	if (!cep->sock)
		return;
	kiwi_cep_hs_detach(cep);
	if (abort)
		sock_no_linger(cep->sock->sk);
	sock_release(cep->sock);
	cep->sock = NULL;
}

/*
 * The device's liveness settings, on a connection entering RDMA mode: a
 * peer or path that dies shows up as an error on the socket, which fails
 * the QP.  Keepalive probes go every third of the idle time, three of
 * them, so an idle connection is given up about twice the idle time after
 * the peer's last sign of life.
 */
static void kiwi_cep_llp_opts(struct kiwi_cep *cep)
{
	struct sock *sk = cep->sock->sk;
	unsigned int ut = READ_ONCE(cep->cdev->llp[KIWI_LLP_USER_TIMEOUT]);
	unsigned int ka = READ_ONCE(cep->cdev->llp[KIWI_LLP_KEEPALIVE]);

	tcp_sock_set_user_timeout(sk, ut);
	if (!ka)
		return;
	tcp_sock_set_keepidle(sk, ka);
	tcp_sock_set_keepintvl(sk, max(1U, ka / 3));
	tcp_sock_set_keepcnt(sk, 3);
	sock_set_keepalive(sk);
}

/* The policy as it is now: it applies to connections started from now on. */
static void kiwi_cep_cfg(struct kiwi_cep *cep, u16 ird, u16 ord)
{
	const struct kiwi_mpa_policy *p = &cep->cdev->pol;
	struct kiwi_mpa_cfg *c = &cep->cfg;

	c->rev = READ_ONCE(p->v[KIWI_POL_REV]);
	c->crc = READ_ONCE(p->v[KIWI_POL_CRC]);
	c->markers = READ_ONCE(p->v[KIWI_POL_MARKERS]);
	/* peer-to-peer mode is an extension of revision 2 */
	c->p2p = READ_ONCE(p->v[KIWI_POL_P2P]) && c->rev == 2;
	c->rtr = READ_ONCE(p->v[KIWI_POL_RTR]);
	c->ird = ird;
	c->ord = ord;
}

static int kiwi_addr_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		sizeof(struct sockaddr_in);
}

static bool kiwi_addr_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
			htonl(INADDR_ANY);
	return ipv6_addr_any(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static __be16 kiwi_addr_port(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_port;
	return ((const struct sockaddr_in6 *)a)->sin6_port;
}

/*
 * A TCP socket in the netdev's namespace.  Not a kernel socket: those hold
 * no reference on their namespace, and ours may outlive every process in
 * it, as a user's connected socket would.
 */
static int kiwi_sock_create(struct kiwi_cm_dev *cdev, int family,
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

static long kiwi_cep_left(struct kiwi_cep *cep)
{
	return (long)(cep->deadline - jiffies);
}

/* Blocking send of all of buf before the deadline. */
static int kiwi_cep_send(struct kiwi_cep *cep, const void *buf, size_t len)
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

/*
 * All of a frame at once, without waiting: for the handshake's own frames
 * (Request, refusing Reply, Terminate), which go out first or right after
 * the Request, into a send buffer far larger than they are.
 */
static int kiwi_cep_send_now(struct kiwi_cep *cep, const void *buf,
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

static u32 kiwi_cep_qpn(const struct kiwi_cep *cep)
{
	return cep->qp ? cep->qp->ibqp.qp_num : 0;
}

/*
 * Under cep->mutex: the frame in cep->buf went (a Request or a Reply),
 * for the QP numbered qpn (0: none yet).
 */
static void kiwi_cep_frame_sent(struct kiwi_cep *cep, u32 qpn)
{
	const struct kiwi_mpa_rr *rr = (const struct kiwi_mpa_rr *)cep->buf;
	bool reply = !memcmp(rr->key, KIWI_MPA_KEY_REP, KIWI_MPA_KEY_LEN);
	enum kiwi_stat s;

	if (!reply)
		s = KIWI_STAT_MPA_REQ_SENT;
	else if (be16_to_cpu(rr->bits) & KIWI_MPA_R)
		s = KIWI_STAT_MPA_REJ_SENT;
	else
		s = KIWI_STAT_MPA_REP_SENT;
	kiwi_stat_inc(cep->cdev->kdev, s);
	if (reply)
		trace_kiwi_mpa_rep_sent(qpn, &cep->laddr, &cep->raddr, rr,
					(const u8 *)(rr + 1));
	else
		trace_kiwi_mpa_req_sent(qpn, &cep->laddr, &cep->raddr, rr,
					(const u8 *)(rr + 1));
}

/* Under cep->mutex: the parser holds a whole, well-formed frame. */
static void kiwi_cep_frame_rcvd(struct kiwi_cep *cep)
{
	const struct kiwi_mpa_frame *f = &cep->parser.f;
	enum kiwi_stat s;

	if (!f->reply)
		s = KIWI_STAT_MPA_REQ_RCVD;
	else if (f->r)
		s = KIWI_STAT_MPA_REJ_RCVD;
	else
		s = KIWI_STAT_MPA_REP_RCVD;
	kiwi_stat_inc(cep->cdev->kdev, s);
	if (f->reply)
		trace_kiwi_mpa_rep_rcvd(kiwi_cep_qpn(cep), &cep->laddr,
					&cep->raddr, &cep->parser.rr, f->pd);
	else
		trace_kiwi_mpa_req_rcvd(kiwi_cep_qpn(cep), &cep->laddr,
					&cep->raddr, &cep->parser.rr, f->pd);
}

/* ---- the handshake's frame, read by the socket's callbacks ---- */

/* Run the handshake work now.  The caller keeps cep alive meanwhile. */
static void kiwi_cep_hs_kick(struct kiwi_cep *cep)
{
	kiwi_cep_get(cep);
	if (mod_delayed_work(kiwi_cm_wq, &cep->hs_work, 0))
		kiwi_cep_put(cep);	/* it was queued, with its own */
}

/*
 * Run the handshake work at when (its timer), unless it is queued already:
 * called when the handshake starts and from the work itself, so that can
 * only be a kick, which is immediate and comes first anyway.
 */
static void kiwi_cep_hs_arm(struct kiwi_cep *cep, unsigned long when)
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
		rv = kiwi_mpa_parse(&cep->parser, chunk, n, &used);
		done += used;
		if (!rv && used != n)
			rv = -EPROTO;	/* cannot happen: parser contract */
	}
	if (rv) {
		/*
		 * The frame is complete or broken: leave the rest unread.
		 * Pairs with the acquire in kiwi_cep_hs_status().
		 */
		smp_store_release(&cep->hs_status,
				  rv > 0 ? KIWI_HS_COMPLETE : rv);
		rd->count = 0;
	}
	return done;
}

/* hs_status outside the socket lock: once not READING, the parser is final */
static int kiwi_cep_hs_status(struct kiwi_cep *cep)
{
	/* pairs with the release in kiwi_cep_hs_actor() */
	return smp_load_acquire(&cep->hs_status);
}

/* Under the socket lock: whatever of the frame the socket holds. */
static void kiwi_cep_hs_read(struct kiwi_cep *cep, struct sock *sk)
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
static void kiwi_cep_hs_attach(struct kiwi_cep *cep, bool reply)
{
	struct sock *sk = cep->sock->sk;

	kiwi_mpa_parser_init(&cep->parser, reply);
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
static void kiwi_cep_hs_detach(struct kiwi_cep *cep)
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
 * Under cep->mutex: how the frame stands.  KIWI_HS_COMPLETE, a negative
 * errno, or KIWI_HS_READING to wait on (the callbacks stay).  Once the
 * deadline passed, the peer closed, or stop says so, the callbacks go and
 * what the socket holds is read one last time (a frame may have arrived
 * before the callbacks were installed, or just now).
 */
static int kiwi_cep_hs_result(struct kiwi_cep *cep, bool stop)
{
	struct sock *sk = cep->sock->sk;
	int st = kiwi_cep_hs_status(cep);

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

static void kiwi_cep_addrs(struct kiwi_cep *cep)
{
	if (kernel_getsockname(cep->sock, (struct sockaddr *)&cep->laddr) < 0)
		memset(&cep->laddr, 0, sizeof(cep->laddr));
	if (kernel_getpeername(cep->sock, (struct sockaddr *)&cep->raddr) < 0)
		memset(&cep->raddr, 0, sizeof(cep->raddr));
}

static u32 kiwi_cep_mss(struct kiwi_cep *cep)
{
	return READ_ONCE(tcp_sk(cep->sock->sk)->mss_cache);
}

static int kiwi_cep_upcall(struct kiwi_cep *cep, struct iw_cm_id *id,
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
		ev.ird = KIWI_MAX_IRD;
		ev.ord = KIWI_MAX_ORD;
	} else if (type == IW_CM_EVENT_ESTABLISHED ||
		   type == IW_CM_EVENT_CONNECT_REPLY) {
		ev.ird = cep->res.ird;
		ev.ord = cep->res.ord;
	}
	/* iw_cm copies private data for these two only; its length is a u8 */
	if (pd_len && (type == IW_CM_EVENT_CONNECT_REQUEST ||
		       type == IW_CM_EVENT_CONNECT_REPLY)) {
		ev.private_data = (void *)pd;
		ev.private_data_len = min_t(u16, pd_len, U8_MAX);
	}
	return id->event_handler(id, &ev);
}

/* Initiator: the Reply was fine as MPA but not for us in full operation. */
static void kiwi_cep_send_term(struct kiwi_cep *cep, enum kiwi_err err)
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
	n = kiwi_fpdu_build(&tx, &h, NULL, 0, cep->buf, sizeof(cep->buf));
	if (n > 0 && !kiwi_cep_send_now(cep, cep->buf, n)) {
		kiwi_stat_inc(cep->cdev->kdev, KIWI_STAT_TX_FPDUS);
		kiwi_stat_term(cep->cdev->kdev, true, h.term.layer);
		trace_kiwi_term_sent(kiwi_cep_qpn(cep), &h.term);
	}
}

/*
 * Under cep->mutex, ESTABLISHED or CLOSING: take the stream back from the
 * engines, close the socket, tell iw_cm and drop its references.
 */
static void kiwi_cep_close_conn(struct kiwi_cep *cep, bool abort)
{
	kiwi_qp_llp_stop(cep->qp);
	kiwi_cep_release_sock(cep, abort);
	kiwi_cep_stop_timer(cep);
	kiwi_cep_upcall(cep, cep->cm_id, IW_CM_EVENT_CLOSE, 0, NULL, 0);
	cep->cm_id->rem_ref(cep->cm_id);
	cep->cm_id = NULL;
	WRITE_ONCE(cep->ulp_id, NULL);
	kiwi_qp_put(cep->qp);
	cep->qp = NULL;
	kiwi_cep_finish(cep);
}

/* ---- disconnect: reports from the engines and requests from modify_qp ---- */

static void kiwi_cep_kick(struct kiwi_cep *cep)
{
	kiwi_cep_get(cep);
	if (!queue_work(kiwi_cm_ev_wq, &cep->event_work))
		kiwi_cep_put(cep);
}

void kiwi_cm_llp_event(struct kiwi_cep *cep, enum kiwi_llp_event ev)
{
	unsigned long flags;

	spin_lock_irqsave(&cep->lock, flags);
	cep->llp_events |= BIT(ev);
	spin_unlock_irqrestore(&cep->lock, flags);
	kiwi_cep_kick(cep);
}

void kiwi_cm_disconnect(struct kiwi_cep *cep, bool abort)
{
	unsigned long flags;

	spin_lock_irqsave(&cep->lock, flags);
	cep->disc |= abort ? KIWI_DISC_ABORT : KIWI_DISC_GRACEFUL;
	spin_unlock_irqrestore(&cep->lock, flags);
	kiwi_cep_kick(cep);
}

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
	 * The consumer neither accepted nor rejected in time (or iw_cm
	 * dropped the request with its listener): the initiator has given
	 * up too.  Reset the connection; the cep stays for a late
	 * accept or reject (which then fail) or for device removal.
	 */
	if (cep->state == KIWI_CEP_REQ_RCVD)
		kiwi_cep_release_sock(cep, true);
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
}

/* ---- active side ---- */

static bool kiwi_addr_same(const struct sockaddr_storage *a,
			   const struct sockaddr_storage *b)
{
	return a->ss_family == b->ss_family &&
	       !memcmp(a, b, kiwi_addr_len(a));
}

/* no older connection to the same peer address still owes its Request */
static bool kiwi_cep_req_turn(struct kiwi_cep *cep)
{
	struct kiwi_cm_dev *cdev = cep->cdev;
	struct kiwi_cep *o;
	bool turn = true;

	spin_lock_irq(&cdev->lock);
	list_for_each_entry(o, &cdev->ceps, dev_entry) {
		if (o == cep)
			break;
		if (READ_ONCE(o->req_pending) &&
		    kiwi_addr_same(&o->raddr, &cep->raddr)) {
			turn = false;
			break;
		}
	}
	spin_unlock_irq(&cdev->lock);
	return turn;
}

/* Our Request went (or never will): younger ones to the peer may go. */
static void kiwi_cep_req_done(struct kiwi_cep *cep)
{
	struct kiwi_cm_dev *cdev = cep->cdev;
	struct kiwi_cep *o;

	if (!READ_ONCE(cep->req_pending))
		return;
	WRITE_ONCE(cep->req_pending, false);
	spin_lock_irq(&cdev->lock);
	list_for_each_entry(o, &cdev->ceps, dev_entry) {
		/* not the last put: a queued work holds its own */
		if (READ_ONCE(o->req_pending) &&
		    kiwi_addr_same(&o->raddr, &cep->raddr) &&
		    kref_get_unless_zero(&o->ref)) {
			/* a new older one to wait for: a new bounded wait */
			WRITE_ONCE(o->order_wait, false);
			kiwi_cep_hs_kick(o);
			kiwi_cep_put(o);
		}
	}
	spin_unlock_irq(&cdev->lock);
}

/*
 * Under cep->mutex: the TCP connect, then the Request once older
 * connections to the same peer sent theirs.  -EINPROGRESS: wait for
 * the connect or the turn (a state change or a kick ends the wait).
 */
static int kiwi_cep_conn_request(struct kiwi_cep *cep)
{
	int rv, n;

	if (cep->hs_err)
		return cep->hs_err;
	/* non-blocking: 0 once connected, the error once it failed */
	rv = kernel_connect(cep->sock, (struct sockaddr *)&cep->raddr,
			    kiwi_addr_len(&cep->raddr), O_NONBLOCK);
	if (rv == -EISCONN)
		rv = 0;
	if (rv == -EALREADY || rv == -EINPROGRESS || rv == -EAGAIN)
		return kiwi_cep_left(cep) > 0 ? -EINPROGRESS : -ETIMEDOUT;
	if (rv)
		return rv;
	if (!kiwi_cep_req_turn(cep)) {
		/* an older one's listener is slow: ours goes after a while */
		if (!READ_ONCE(cep->order_wait)) {
			cep->order_end = jiffies + KIWI_ORDER_WAIT;
			WRITE_ONCE(cep->order_wait, true);
		}
		if (time_before(jiffies, cep->order_end) &&
		    time_before(cep->order_end, cep->deadline)) {
			kiwi_cep_hs_arm(cep, cep->order_end);
			return -EINPROGRESS;
		}
	}
	tcp_sock_set_nodelay(cep->sock->sk);
	n = kiwi_mpa_req_build(&cep->cfg, cep->pd, cep->pd_len, cep->buf,
			       sizeof(cep->buf));
	rv = n < 0 ? n : kiwi_cep_send_now(cep, cep->buf, n);
	if (!rv) {
		cep->req_sent = true;
		kiwi_cep_frame_sent(cep, kiwi_cep_qpn(cep));
	}
	return rv;
}

static void kiwi_cep_conn_work(struct kiwi_cep *cep)
{
	struct kiwi_mpa_frame *f = &cep->parser.f;
	struct kiwi_conn_params params = { .initiator = true };
	const u8 *pd = NULL;
	u16 pd_len = 0;
	enum kiwi_err err;
	int rv = 0;

	mutex_lock(&cep->mutex);
	if (cep->state != KIWI_CEP_CONNECTING)
		goto out;
	if (cep->dead)
		rv = -ECONNABORTED;
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
	 * Only now, with the Reply in (or none to come), may the next
	 * Request to this peer go: a listener that reads Requests in
	 * parallel (siw) could otherwise deliver two in either order.
	 */
	kiwi_cep_req_done(cep);
	if (!rv && cep->dead)
		rv = -ECONNABORTED;
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
		params.mpa = cep->res;
		params.mss = kiwi_cep_mss(cep);
		kiwi_cep_llp_opts(cep);
		rv = kiwi_qp_llp_start(cep->qp, cep, cep->sock, &params);
	}
	if (rv) {
		if (rv == -EAGAIN)
			rv = -ETIMEDOUT;
		if (rv == -ETIMEDOUT)
			kiwi_stat_inc(cep->cdev->kdev,
				      KIWI_STAT_CONNECT_TIMEOUTS);
		kiwi_cep_upcall(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, rv,
				pd, pd_len);
		/* an RST frees a peer that never answered */
		kiwi_cep_release_sock(cep, rv == -ETIMEDOUT);
		cep->cm_id->rem_ref(cep->cm_id);
		cep->cm_id = NULL;
		WRITE_ONCE(cep->ulp_id, NULL);
		kiwi_qp_put(cep->qp);
		cep->qp = NULL;
		kiwi_cep_finish(cep);
	} else {
		cep->state = KIWI_CEP_ESTABLISHED;
		kiwi_cep_upcall(cep, cep->cm_id, IW_CM_EVENT_CONNECT_REPLY, 0,
				f->ulp_pd, f->ulp_pd_len);
	}
out:
	mutex_unlock(&cep->mutex);
}

static void kiwi_cep_req_work(struct kiwi_cep *cep);

/* Both sides' handshake steps; the work holds a reference. */
static void kiwi_cep_hs_work(struct work_struct *work)
{
	struct kiwi_cep *cep = container_of(to_delayed_work(work),
					    struct kiwi_cep, hs_work);

	if (cep->parent)
		kiwi_cep_req_work(cep);
	else
		kiwi_cep_conn_work(cep);
	kiwi_cep_put(cep);
}

static bool kiwi_family_ok(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET || a->ss_family == AF_INET6;
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
	if (!kiwi_family_ok(&id->m_remote_addr) ||
	    id->m_local_addr.ss_family != id->m_remote_addr.ss_family)
		return -EAFNOSUPPORT;
	if (param->ird > KIWI_MAX_IRD || param->ord > KIWI_MAX_ORD)
		return -EINVAL;
	if (param->private_data_len && !param->private_data)
		return -EINVAL;
	qp = kiwi_qp_lookup(kdev, param->qpn);
	if (!qp)
		return -EINVAL;
	if (!kiwi_qp_bind_ok(qp, id)) {
		kiwi_qp_put(qp);
		return -EINVAL;
	}
	cep = kiwi_cep_alloc(cdev);
	if (!cep) {
		kiwi_qp_put(qp);
		return -ENOMEM;
	}
	cep->qp = qp;
	kiwi_cep_cfg(cep, param->ird, param->ord);
	if (param->private_data_len > kiwi_mpa_ulp_pd_max(&cep->cfg)) {
		rv = -EINVAL;
		goto err;
	}
	cep->pd_len = param->private_data_len;
	memcpy(cep->pd, param->private_data, cep->pd_len);
	cep->laddr = id->m_local_addr;
	cep->raddr = id->m_remote_addr;

	rv = kiwi_sock_create(cdev, cep->raddr.ss_family, &cep->sock);
	if (rv)
		goto err;
	/* the port rdma_cm picked, so that both ends agree on the 4-tuple */
	rv = kernel_bind(cep->sock, (struct sockaddr *)&cep->laddr,
			 kiwi_addr_len(&cep->laddr));
	if (rv)
		goto err;

	mutex_lock(&cep->mutex);
	cep->state = KIWI_CEP_CONNECTING;
	cep->deadline = jiffies + kiwi_cm_timeout();
	cep->cm_id = id;
	WRITE_ONCE(cep->ulp_id, id->context);
	id->add_ref(id);
	WRITE_ONCE(cep->req_pending, true);
	/* before the SYN: its state change (connected, refused) kicks us */
	kiwi_cep_hs_attach(cep, true);
	/*
	 * The SYN now, without waiting: connections then reach the peer in
	 * the order the consumer made them (see kiwi_cep_req_work()).  The
	 * handshake work learns how it ended from a second, equally
	 * non-blocking connect.
	 */
	rv = kernel_connect(cep->sock, (struct sockaddr *)&cep->raddr,
			    kiwi_addr_len(&cep->raddr), O_NONBLOCK);
	if (rv && rv != -EINPROGRESS) {
		cep->hs_err = rv;
		kiwi_cep_hs_kick(cep);
	} else {
		kiwi_cep_hs_arm(cep, cep->deadline);
	}
	mutex_unlock(&cep->mutex);
	return 0;

err:
	mutex_lock(&cep->mutex);
	kiwi_cep_release_sock(cep, false);
	kiwi_qp_put(cep->qp);
	cep->qp = NULL;
	cep->state = KIWI_CEP_CLOSED;
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
	return rv;
}

/* ---- passive side ---- */

/*
 * Under both mutexes: answer a Request we refuse, then close (with an RST
 * if abort: nothing more to say to a peer that said nothing in time).
 */
static void kiwi_cep_refuse(struct kiwi_cep *cep, bool reply, bool abort)
{
	int n;

	if (reply) {
		n = kiwi_mpa_rep_build(&cep->res, true, NULL, 0, cep->buf,
				       sizeof(cep->buf));
		if (n > 0 && !kiwi_cep_send_now(cep, cep->buf, n))
			kiwi_cep_frame_sent(cep, 0);
	}
	kiwi_cep_release_sock(cep, abort);
	kiwi_cep_finish(cep);
}

/* Under lcep->mutex: cep's Request is no longer awaited. */
static void kiwi_cep_child_done(struct kiwi_cep *cep, struct kiwi_cep *lcep)
{
	struct kiwi_cep *next;

	list_del_init(&cep->child_entry);
	atomic_dec(&kiwi_cm_pending);
	/* the next one in line may have its Request and be waiting for us */
	next = list_first_entry_or_null(&lcep->children, struct kiwi_cep,
					child_entry);
	if (next && kiwi_cep_hs_status(next) == KIWI_HS_COMPLETE)
		kiwi_cep_hs_kick(next);
}

/*
 * A step of a passive handshake: the Request is complete or broken, the
 * peer closed, the deadline passed, the listener went, or an older
 * connection left the queue.
 *
 * Connection requests reach the consumer in the order TCP accepted the
 * connections, as from a single-threaded handshake: applications that
 * open several connections to one listener may pair them up by order
 * (perftest -q N does; its credit scheme deadlocks otherwise).  The
 * Requests are read in parallel, so that one slow peer cannot stall the
 * rest: a complete Request waits for the older ones still being read
 * (lcep->children is in accept order), for KIWI_ORDER_WAIT at most.
 */
static void kiwi_cep_req_work(struct kiwi_cep *cep)
{
	struct kiwi_cep *lcep = cep->parent;
	struct kiwi_mpa_frame *f = &cep->parser.f;
	enum kiwi_err err;
	bool gone;
	u8 rtr;
	int st;

	mutex_lock(&lcep->mutex);
	mutex_lock(&cep->mutex);
	if (cep->state != KIWI_CEP_AWAIT_REQ)
		goto out;
	gone = lcep->state != KIWI_CEP_LISTEN || cep->dead;
	if (!gone && kiwi_cep_hs_status(cep) == KIWI_HS_COMPLETE &&
	    list_first_entry(&lcep->children, struct kiwi_cep,
			     child_entry) != cep) {
		if (!cep->order_wait) {
			cep->order_wait = true;
			cep->order_end = jiffies + KIWI_ORDER_WAIT;
		}
		if (time_before(jiffies, cep->order_end)) {
			kiwi_cep_hs_arm(cep, cep->order_end);
			goto out;
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
		/*
		 * Listener or device gone, timeout, EOF, or no valid Request
		 * (bad key, private data too long): RFC 5044 has no Reply
		 * for those, just the close.
		 */
		if (st == -ETIMEDOUT) {
			atomic64_inc(&kiwi_cm_req_timeouts);
			kiwi_stat_inc(cep->cdev->kdev,
				      KIWI_STAT_CONNECT_TIMEOUTS);
		}
		kiwi_cep_refuse(cep, false, st == -ETIMEDOUT);
		goto out;
	}
	/* our preferred RTR type if offered, else any the initiator offers */
	rtr = cep->cfg.rtr;
	if (!(f->rtr & rtr))
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

/* the same remote host (any port) */
static bool kiwi_addr_same_host(const struct sockaddr_storage *a,
				const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
			((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return ipv6_addr_equal(
			&((const struct sockaddr_in6 *)a)->sin6_addr,
			&((const struct sockaddr_in6 *)b)->sin6_addr);
	return true;
}

/*
 * Under lcep->mutex: room for one more connection awaiting its Request,
 * on the listener and for its remote address?
 */
static bool kiwi_cep_admit(struct kiwi_cep *lcep, struct kiwi_cep *cep)
{
	unsigned int max_l = READ_ONCE(kiwi_pending_listener);
	unsigned int max_s = READ_ONCE(kiwi_pending_source);
	unsigned int n = 0, same = 0;
	struct kiwi_cep *c;

	list_for_each_entry(c, &lcep->children, child_entry) {
		n++;
		if (max_s && kiwi_addr_same_host(&c->raddr, &cep->raddr) &&
		    ++same >= max_s) {
			atomic64_inc(&kiwi_cm_cap_source);
			return false;
		}
		if (max_l && n >= max_l) {
			atomic64_inc(&kiwi_cm_cap_listener);
			return false;
		}
	}
	return true;
}

/*
 * A new connection on a listening socket: its Request is read by the
 * socket's callbacks, its timeout is the handshake work's delay.
 */
static void kiwi_cep_spawn(struct kiwi_cep *lcep, struct socket *ns)
{
	struct sock *sk = ns->sk;
	struct kiwi_cep *cep;

	/* the clone inherited the listener's callback: give TCP's back */
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = kiwi_tcp_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	tcp_sock_set_nodelay(sk);

	cep = kiwi_cep_alloc(lcep->cdev);
	if (!cep) {
		sock_no_linger(sk);
		sock_release(ns);
		return;
	}
	kiwi_cep_get(cep);	/* ours, until the end of this function */
	cep->sock = ns;
	kiwi_cep_cfg(cep, KIWI_MAX_IRD, KIWI_MAX_ORD);
	kiwi_cep_addrs(cep);
	cep->deadline = jiffies + kiwi_cm_timeout();
	kiwi_cep_get(lcep);
	cep->parent = lcep;

	mutex_lock(&lcep->mutex);
	mutex_lock(&cep->mutex);
	if (lcep->state != KIWI_CEP_LISTEN || !kiwi_cep_admit(lcep, cep)) {
		/* at once, and with an RST: it costs us nothing more */
		kiwi_cep_release_sock(cep, true);
		kiwi_cep_finish(cep);
		mutex_unlock(&cep->mutex);
		mutex_unlock(&lcep->mutex);
		kiwi_cep_put(cep);
		return;
	}
	cep->state = KIWI_CEP_AWAIT_REQ;
	list_add_tail(&cep->child_entry, &lcep->children);
	atomic_inc(&kiwi_cm_pending);
	mutex_unlock(&lcep->mutex);

	kiwi_cep_hs_attach(cep, false);
	/*
	 * What arrived before the callbacks were ours (often the whole
	 * Request) is read now; a close before then is seen in sk_state.
	 */
	lock_sock(sk);
	kiwi_cep_hs_read(cep, sk);
	release_sock(sk);
	if (kiwi_cep_hs_status(cep) != KIWI_HS_READING ||
	    READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		kiwi_cep_hs_kick(cep);
	else
		kiwi_cep_hs_arm(cep, cep->deadline);
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
}

static void kiwi_lsock_work(struct work_struct *work)
{
	struct kiwi_lsock *ls = container_of(work, struct kiwi_lsock, work);
	struct socket *ns;

	while (!kernel_accept(ls->sock, &ns, O_NONBLOCK))
		kiwi_cep_spawn(ls->cep, ns);
}

/* softirq: a connection is ready to be accepted */
static void kiwi_lsock_ready(struct sock *sk)
{
	struct kiwi_lsock *ls;

	read_lock_bh(&sk->sk_callback_lock);
	ls = sk->sk_user_data;
	if (ls && sk->sk_state == TCP_LISTEN)
		queue_work(kiwi_cm_wq, &ls->work);
	else
		kiwi_tcp_data_ready(sk);	/* a clone not accepted yet */
	read_unlock_bh(&sk->sk_callback_lock);
}

static void kiwi_lsock_free(struct kiwi_lsock *ls)
{
	struct sock *sk = ls->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = kiwi_tcp_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	cancel_work_sync(&ls->work);
	/* connections not accepted yet go with it (RST) */
	sock_release(ls->sock);
	kfree(ls);
}

static int kiwi_lsock_add(struct kiwi_cep *lcep,
			  const struct sockaddr_storage *addr, bool wild)
{
	struct kiwi_lsock *ls = kzalloc(sizeof(*ls), GFP_KERNEL);
	struct sock *sk;
	int rv;

	if (!ls)
		return -ENOMEM;
	rv = kiwi_sock_create(lcep->cdev, addr->ss_family, &ls->sock);
	if (rv) {
		kfree(ls);
		return rv;
	}
	sk = ls->sock->sk;
	if (wild) {
		/* it may cover an IPv6 address still in DAD */
		ip_sock_set_freebind(sk);
		/*
		 * Bound to our netdev, from the start.  A listening socket
		 * bound to no device conflicts with every other one on the
		 * port whose address overlaps, whatever that one is bound to,
		 * and siw listens on a wildcard with one 0.0.0.0 (or ::)
		 * socket bound to its netdev, in the listening process's
		 * namespace whatever its device's: whichever came second
		 * failed.  Sockets bound to different devices share the port.
		 * Connections from this host to the netdev's addresses still
		 * find this socket: Linux looks them up as coming in on the
		 * device that has the address.  Lost: a client whose source
		 * is another local netdev's address (our reply leaves through
		 * our netdev and comes back with a local source, a martian),
		 * as with siw's own wildcard listener.
		 */
		rv = sock_bindtoindex(sk, lcep->cdev->kdev->netdev->ifindex,
				      true);
		if (rv)
			goto err;
	}
	rv = kernel_bind(ls->sock, (struct sockaddr *)addr,
			 kiwi_addr_len(addr));
	if (rv)
		goto err;
	ls->cep = lcep;
	ls->addr = *addr;
	INIT_WORK(&ls->work, kiwi_lsock_work);
	write_lock_bh(&sk->sk_callback_lock);
	if (!kiwi_tcp_data_ready)
		kiwi_tcp_data_ready = sk->sk_data_ready;
	sk->sk_user_data = ls;
	sk->sk_data_ready = kiwi_lsock_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	rv = kernel_listen(ls->sock, lcep->backlog);
	if (rv) {
		ls->sock->sk->sk_user_data = NULL;
		goto err;
	}
	list_add_tail(&ls->entry, &lcep->lsocks);
	return 0;
err:
	sock_release(ls->sock);
	kfree(ls);
	return rv;
}

/* The netdev's addresses of a family, as of now, with the given port. */
static int kiwi_netdev_addrs(struct net_device *nd, int family, __be16 port,
			     struct sockaddr_storage *out, int max)
{
	int n = 0;

	if (family == AF_INET) {
		const struct in_ifaddr *ifa;
		struct in_device *in;

		rcu_read_lock();
		in = __in_dev_get_rcu(nd);
		if (in) {
			in_dev_for_each_ifa_rcu(ifa, in) {
				struct sockaddr_in *s = (void *)&out[n];

				if (n == max)
					break;
				memset(&out[n], 0, sizeof(out[n]));
				s->sin_family = AF_INET;
				s->sin_port = port;
				s->sin_addr.s_addr = ifa->ifa_local;
				n++;
			}
		}
		rcu_read_unlock();
	} else {
		struct inet6_dev *in6 = in6_dev_get(nd);
		struct inet6_ifaddr *ifp;

		if (!in6)
			return 0;
		read_lock_bh(&in6->lock);
		list_for_each_entry(ifp, &in6->addr_list, if_list) {
			struct sockaddr_in6 *s = (void *)&out[n];

			if (n == max)
				break;
			memset(&out[n], 0, sizeof(out[n]));
			s->sin6_family = AF_INET6;
			s->sin6_port = port;
			s->sin6_addr = ifp->addr;
			if (ipv6_addr_type(&ifp->addr) & IPV6_ADDR_LINKLOCAL)
				s->sin6_scope_id = nd->ifindex;
			n++;
		}
		read_unlock_bh(&in6->lock);
		in6_dev_put(in6);
	}
	return n;
}

static bool kiwi_lsock_has(struct kiwi_cep *lcep,
			   const struct sockaddr_storage *addr)
{
	struct kiwi_lsock *ls;

	list_for_each_entry(ls, &lcep->lsocks, entry)
		if (kiwi_addr_same(&ls->addr, addr))
			return true;
	return false;
}

/*
 * Under lcep->mutex: a wildcard listener listens on each address its
 * netdev has (not on the wildcard itself: several kiwi devices in one
 * namespace may listen on the same port, each on its own addresses).
 * Run at listen time and again when the netdev gains an address.
 */
static int kiwi_listen_sync(struct kiwi_cep *lcep)
{
	struct net_device *nd = lcep->cdev->kdev->netdev;
	struct sockaddr_storage *addrs;
	int n = 0, i, rv = 0;

	if (lcep->foreign)
		return 0;
	addrs = kcalloc(2 * KIWI_LISTEN_ADDRS, sizeof(*addrs), GFP_KERNEL);
	if (!addrs)
		return -ENOMEM;
	if (lcep->family == AF_INET6)
		n = kiwi_netdev_addrs(nd, AF_INET6, lcep->port, addrs,
				      KIWI_LISTEN_ADDRS);
	if (lcep->family == AF_INET || lcep->v4too)
		n += kiwi_netdev_addrs(nd, AF_INET, lcep->port, addrs + n,
				       KIWI_LISTEN_ADDRS);
	for (i = 0; i < n && !rv; i++)
		if (!kiwi_lsock_has(lcep, &addrs[i]))
			rv = kiwi_lsock_add(lcep, &addrs[i], true);
	kfree(addrs);
	return rv;
}

static void kiwi_listen_resync(struct work_struct *work)
{
	struct kiwi_cep *lcep = container_of(work, struct kiwi_cep,
					     resync_work);

	mutex_lock(&lcep->mutex);
	/* a port taken meanwhile on the new address: that one is left out */
	if (lcep->state == KIWI_CEP_LISTEN)
		kiwi_listen_sync(lcep);
	mutex_unlock(&lcep->mutex);
	kiwi_cep_put(lcep);
}

/* An address appeared on nd: wildcard listeners on nd take it up. */
static void kiwi_wild_kick(struct net_device *nd)
{
	struct kiwi_cep *lcep;
	unsigned long flags;

	spin_lock_irqsave(&kiwi_wild_lock, flags);
	list_for_each_entry(lcep, &kiwi_wild, wild_entry) {
		if (lcep->cdev->kdev->netdev != nd)
			continue;
		kiwi_cep_get(lcep);
		if (!queue_work(kiwi_cm_wq, &lcep->resync_work))
			kiwi_cep_put(lcep);
	}
	spin_unlock_irqrestore(&kiwi_wild_lock, flags);
}

static int kiwi_inetaddr_event(struct notifier_block *nb,
			       unsigned long event, void *ptr)
{
	const struct in_ifaddr *ifa = ptr;

	if (event == NETDEV_UP && ifa->ifa_dev)
		kiwi_wild_kick(ifa->ifa_dev->dev);
	return NOTIFY_DONE;
}

static int kiwi_inet6addr_event(struct notifier_block *nb,
				unsigned long event, void *ptr)
{
	const struct inet6_ifaddr *ifp = ptr;

	if (event == NETDEV_UP && ifp->idev)
		kiwi_wild_kick(ifp->idev->dev);
	return NOTIFY_DONE;
}

static struct notifier_block kiwi_inetaddr_nb = {
	.notifier_call = kiwi_inetaddr_event,
};

static struct notifier_block kiwi_inet6addr_nb = {
	.notifier_call = kiwi_inet6addr_event,
};

/* Under lcep->mutex: stop listening; the sockets are freed by the caller. */
static void kiwi_cep_unlisten(struct kiwi_cep *lcep, struct list_head *socks)
{
	struct kiwi_cep *child;

	if (lcep->wildcard) {
		spin_lock_irq(&kiwi_wild_lock);
		list_del_init(&lcep->wild_entry);
		spin_unlock_irq(&kiwi_wild_lock);
	}
	list_splice_init(&lcep->lsocks, socks);
	/* the children's handshakes end now: they see the listener is gone */
	list_for_each_entry(child, &lcep->children, child_entry) {
		mutex_lock(&child->mutex);
		child->dead = true;
		kiwi_cep_hs_kick(child);
		mutex_unlock(&child->mutex);
	}
	kiwi_cep_finish(lcep);
}

static void kiwi_lsocks_free(struct list_head *socks)
{
	struct kiwi_lsock *ls, *tmp;

	list_for_each_entry_safe(ls, tmp, socks, entry)
		kiwi_lsock_free(ls);
}

/*
 * Is a wildcard listen from a namespace other than the device's netdev's?
 * In the shared netns mode rdma_cm's wildcard listen visits every device
 * whatever its namespace; opening sockets in the device's namespace would
 * hand the listener connections from a network it is not in, so kiwi
 * listens on nothing there.  The listener's namespace is its rdma_cm id's
 * (the iw_cm id's context is rdma_cm's rdma_id_private, whose first
 * member is the rdma_cm_id; see kiwi_qp_bind_ok()).
 */
static bool kiwi_listen_foreign(const struct iw_cm_id *id,
				struct kiwi_cm_dev *cdev)
{
	const struct rdma_cm_id *cm_id = id->context;
	struct net *net = cm_id ? cm_id->route.addr.dev_addr.net : NULL;

	return net && !net_eq(net, dev_net(cdev->kdev->netdev));
}

int kiwi_iw_create_listen(struct iw_cm_id *id, int backlog)
{
	struct kiwi_cm_dev *cdev = kiwi_cm_dev_get(to_kdev(id->device));
	struct kiwi_cep *lcep;
	LIST_HEAD(socks);
	int rv;

	if (!cdev)
		return -ENODEV;
	if (!kiwi_family_ok(&id->m_local_addr))
		return -EAFNOSUPPORT;
	lcep = kiwi_cep_alloc(cdev);
	if (!lcep)
		return -ENOMEM;
	lcep->backlog = backlog > 0 ? backlog : 1;
	lcep->cm_id = id;	/* no reference: destroy_listen comes first */
	WRITE_ONCE(lcep->ulp_id, id->context);

	lcep->family = id->m_local_addr.ss_family;
	lcep->port = kiwi_addr_port(&id->m_local_addr);
	/* an IPv6 wildcard also takes IPv4 unless the consumer said v6only */
	lcep->v4too = lcep->family == AF_INET6 && !id->afonly;
	INIT_WORK(&lcep->resync_work, kiwi_listen_resync);

	mutex_lock(&lcep->mutex);
	lcep->state = KIWI_CEP_LISTEN;
	if (kiwi_addr_any(&id->m_local_addr)) {
		lcep->wildcard = true;
		lcep->foreign = kiwi_listen_foreign(id, cdev);
		spin_lock_irq(&kiwi_wild_lock);
		list_add_tail(&lcep->wild_entry, &kiwi_wild);
		spin_unlock_irq(&kiwi_wild_lock);
		rv = kiwi_listen_sync(lcep);
	} else {
		rv = kiwi_lsock_add(lcep, &id->m_local_addr, false);
	}
	if (rv) {
		kiwi_cep_get(lcep);
		kiwi_cep_unlisten(lcep, &socks);
		mutex_unlock(&lcep->mutex);
		kiwi_lsocks_free(&socks);
		kiwi_cep_put(lcep);
		return rv;
	}
	id->provider_data = lcep;
	mutex_unlock(&lcep->mutex);
	return 0;
}

int kiwi_iw_destroy_listen(struct iw_cm_id *id)
{
	struct kiwi_cep *lcep = id->provider_data;
	LIST_HEAD(socks);

	if (!lcep)
		return 0;
	kiwi_cep_get(lcep);
	mutex_lock(&lcep->mutex);
	if (lcep->state == KIWI_CEP_LISTEN)
		kiwi_cep_unlisten(lcep, &socks);
	lcep->cm_id = NULL;
	WRITE_ONCE(lcep->ulp_id, NULL);
	mutex_unlock(&lcep->mutex);
	/* outside the mutex: an accept loop may be waiting for it */
	kiwi_lsocks_free(&socks);
	id->provider_data = NULL;
	kiwi_cep_put(lcep);
	return 0;
}

int kiwi_iw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param)
{
	struct kiwi_cep *cep = id->provider_data;
	struct kiwi_conn_params params = { .initiator = false };
	struct kiwi_mpa_result res;
	struct kiwi_qp *qp = NULL;
	u32 pd_max;
	int rv, n;

	if (!cep)
		return -EINVAL;
	kiwi_cep_get(cep);
	mutex_lock(&cep->mutex);
	if (cep->state != KIWI_CEP_REQ_RCVD) {
		rv = -ECONNRESET;	/* closed meanwhile (device removal) */
		goto out;
	}
	kiwi_cep_stop_timer(cep);
	rv = -ECONNRESET;
	if (!cep->sock)		/* too late: the timer reset it */
		goto fail;
	/*
	 * From here on a failure closes the connection: iw_cm goes back to
	 * idle and never asks us again about this endpoint.
	 */
	rv = -EINVAL;
	pd_max = KIWI_MPA_PD_MAX -
		(cep->res.enhanced ? sizeof(struct kiwi_mpa_v2) : 0);
	if (param->ird > KIWI_MAX_IRD || param->ord > KIWI_MAX_ORD ||
	    param->private_data_len > pd_max ||
	    (param->private_data_len && !param->private_data))
		goto fail;
	qp = kiwi_qp_lookup(to_kdev(id->device), param->qpn);
	if (!qp)
		goto fail;
	if (!kiwi_qp_bind_ok(qp, id))
		goto fail;
	/* limits the consumer set on the QP, if any */
	if ((qp->ird && param->ird > qp->ird) ||
	    (qp->ord && param->ord > qp->ord))
		goto fail;

	res = cep->res;
	res.ird = param->ird;
	res.ord = param->ord;
	/* never more Reads outstanding than the initiator can answer */
	if (res.enhanced && res.ord > res.peer_ird)
		res.ord = res.peer_ird;
	n = kiwi_mpa_rep_build(&res, false, param->private_data,
			       param->private_data_len, cep->buf,
			       sizeof(cep->buf));
	if (n < 0) {
		rv = n;
		goto fail;
	}
	cep->deadline = jiffies + kiwi_cm_timeout();
	rv = kiwi_cep_send(cep, cep->buf, n);
	if (rv)
		goto fail;
	kiwi_cep_frame_sent(cep, qp->ibqp.qp_num);
	cep->res = res;
	params.mpa = res;
	params.mss = kiwi_cep_mss(cep);
	kiwi_cep_llp_opts(cep);
	rv = kiwi_qp_llp_start(qp, cep, cep->sock, &params);
	if (rv)
		goto fail;

	cep->qp = qp;
	cep->cm_id = id;
	WRITE_ONCE(cep->ulp_id, id->context);
	id->add_ref(id);
	cep->state = KIWI_CEP_ESTABLISHED;
	kiwi_cep_upcall(cep, id, IW_CM_EVENT_ESTABLISHED, 0, NULL, 0);
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
				       pdata ? pdata_len : 0, cep->buf,
				       sizeof(cep->buf));
		cep->deadline = jiffies + kiwi_cm_timeout();
		rv = n < 0 ? n : kiwi_cep_send(cep, cep->buf, n);
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

/*
 * `rdma res show cm_id -dd`: kiwi's endpoint of an rdma_cm id, found by
 * the id it serves (listeners, and connections once connect or accept
 * bound them: a Request not yet accepted has none).  cdev->lock keeps
 * the endpoints allocated; their fields are snapshots, and nothing they
 * point to is followed.
 */
int kiwi_fill_res_cm_id_entry(struct sk_buff *msg, struct rdma_cm_id *id)
{
	struct kiwi_cm_dev *cdev = kiwi_cm_dev_get(to_kdev(id->device));
	struct kiwi_mpa_result res = {};
	enum kiwi_cep_state state = KIWI_CEP_IDLE;
	struct kiwi_cep *cep;
	struct nlattr *nest;
	bool found = false;
	u32 backlog = 0;

	if (!cdev)
		return 0;
	spin_lock_irq(&cdev->lock);
	list_for_each_entry(cep, &cdev->ceps, dev_entry) {
		if (READ_ONCE(cep->ulp_id) != id)
			continue;
		state = READ_ONCE(cep->state);
		res = cep->res;
		backlog = cep->backlog;
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
	} else if (rdma_nl_put_driver_u32(msg, "mpa_rev", res.rev) ||
		   rdma_nl_put_driver_u32(msg, "mpa_crc", res.crc) ||
		   rdma_nl_put_driver_u32(msg, "mpa_markers_rx",
					  res.markers_rx) ||
		   rdma_nl_put_driver_u32(msg, "mpa_markers_tx",
					  res.markers_tx) ||
		   rdma_nl_put_driver_u32(msg, "mpa_p2p", res.p2p) ||
		   rdma_nl_put_driver_u32(msg, "mpa_rtr", res.rtr) ||
		   rdma_nl_put_driver_u32(msg, "ird", res.ird) ||
		   rdma_nl_put_driver_u32(msg, "ord", res.ord) ||
		   rdma_nl_put_driver_u32(msg, "peer_ird", res.peer_ird) ||
		   rdma_nl_put_driver_u32(msg, "peer_ord", res.peer_ord)) {
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

/*
 * ib_core's dealloc_driver: its clients (rdma_cm, uverbs, ULPs) have
 * destroyed their cm_ids and QPs.  Close what is left (handshakes in
 * flight, requests iw_cm dropped, closes under way) and wait for it.
 */
void kiwi_cm_dev_del(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;
	struct kiwi_cep *cep, *found;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		list_del(&cdev->entry);
	mutex_unlock(&kiwi_cm_devs_mutex);
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
	rv = register_inetaddr_notifier(&kiwi_inetaddr_nb);
	if (rv)
		goto err_ev_wq;
	rv = register_inet6addr_notifier(&kiwi_inet6addr_nb);
	if (rv)
		goto err_inet;
	/* main.c made the directory; it removes it with what is inside */
	dir = debugfs_lookup("kiwi", NULL);
	if (!IS_ERR_OR_NULL(dir)) {
		debugfs_create_file("cm", 0444, dir, NULL,
				    &kiwi_cm_stats_fops);
		dput(dir);
	}
	return 0;
err_inet:
	unregister_inetaddr_notifier(&kiwi_inetaddr_nb);
err_ev_wq:
	destroy_workqueue(kiwi_cm_ev_wq);
err_wq:
	destroy_workqueue(kiwi_cm_wq);
	return rv;
}

void kiwi_cm_exit(void)
{
	unregister_inet6addr_notifier(&kiwi_inet6addr_nb);
	unregister_inetaddr_notifier(&kiwi_inetaddr_nb);
	destroy_workqueue(kiwi_cm_wq);
	destroy_workqueue(kiwi_cm_ev_wq);
}

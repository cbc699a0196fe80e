/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Private to cm*.c: struct kiwi_cep (cm.c says how it lives) and the rest. */
#ifndef KIWI_CEP_H
#define KIWI_CEP_H

#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <net/ipv6.h>

#include "cm.h"

/* cep->state: cm.c draws the transitions */
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

/* disconnect requests from conn->ops->disconnect, in cep->disc */
#define KIWI_DISC_GRACEFUL	BIT(0)
#define KIWI_DISC_ABORT		BIT(1)

/* MPA Request/Reply with the most private data, or a Terminate */
#define KIWI_CEP_BUF	(sizeof(struct kiwi_mpa_rr) + KIWI_MPA_PD_MAX)

/* how long a Request waits for older ones from its host (req_work) */
#define KIWI_ORDER_WAIT		HZ
/* how long a silent new connection holds younger ones from its host */
#define KIWI_ORDER_GRACE	(HZ / 5)

/* handshake frame status (cep->hs_status) besides a negative errno */
#define KIWI_HS_READING		0
#define KIWI_HS_COMPLETE	1

/* Per device: its MPA policy and the ceps removal has to wait for. */
struct kiwi_cm_dev {
	struct kiwi_dev *kdev;
	struct kiwi_cm_knobs knobs;
	spinlock_t lock;		/* ceps */
	struct list_head ceps;
	wait_queue_head_t empty;	/* ceps became empty */
	atomic64_t conn_seq;		/* initiators' connects, in call order */
};

/* what only the MPA exchange needs, apart to keep a live cep small */
struct kiwi_cep_hs {
	struct kiwi_mpa_parser parser;
	u8 buf[KIWI_CEP_BUF];
};

struct kiwi_cep {
	struct kiwi_conn conn;		/* what the engines see (conn.h) */
	struct kref ref;
	struct mutex mutex;		/* everything below but the softirq part */
	enum kiwi_cep_state state;
	struct kiwi_cm_dev *cdev;
	struct list_head dev_entry;	/* cdev->ceps, under cdev->lock */
	/* a kiwi_cep_req_done() call's list to kick, under cdev->lock */
	struct list_head kick_entry;
	bool reaped;			/* under cdev->lock: device removal saw it */
	bool dead;			/* device or listener gone: fail handshake */
	bool evicted;			/* passive: made room on a full listener */
	bool req_pending;		/* initiator: no Reply yet, none failed */
	bool req_sent;			/* initiator: it was sent */
	/* initiator: its place in the order of the connect calls */
	atomic64_t conn_seq;
	pid_t owner;			/* initiator: the connecting process */
	bool hs_cb;			/* the handshake callbacks are on sock */
	bool order_wait;		/* order_end is set */
	bool order_late;		/* a wait for its turn ran out */
	bool syn_wait;			/* initiator: its SYN waits for its turn */
	int hs_err;			/* initiator: the SYN could not go */
	/* KIWI_HS_* or -errno: callbacks release, handshake work acquires */
	int hs_status;
	unsigned long order_end;	/* jiffies: end of the wait for turn */
	unsigned long born;		/* jiffies: passive, accepted */

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
	bool port_mapped;		/* port held by iwpmd (kiwi_port_take) */
	sa_family_t family;
	/* listener: its port; connection: the socket's local port, or 0 */
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
	void (*hs_step)(struct kiwi_cep *cep);	/* what hs_work runs */
	struct work_struct event_work;		/* kiwi_cm_ev_wq */
	struct delayed_work close_timer;	/* kiwi_cm_ev_wq */
	/* the socket's callbacks before the handshake's */
	void (*sk_data_ready)(struct sock *sk);
	void (*sk_state_change)(struct sock *sk);

	struct kiwi_mpa_cfg cfg;
	struct kiwi_mpa_result res;
	struct sockaddr_storage laddr;
	struct sockaddr_storage raddr;
	u16 pd_len;			/* initiator's private data */
	/* pd_len bytes or NULL, apart: most connections carry little */
	u8 *pd;
	/* the handshake's frames; freed once established (kiwi_cep_hs_free) */
	struct kiwi_cep_hs *hs;
};

/* cm.c: the handshakes' workqueue and counters */
extern struct workqueue_struct *kiwi_cm_wq;
extern atomic_t kiwi_cm_pending;
extern atomic64_t kiwi_cm_cap_listener;
extern atomic64_t kiwi_cm_cap_source;
extern atomic64_t kiwi_cm_evicted;
extern atomic64_t kiwi_cm_req_timeouts;

/* An initiator's place in the order of the connect calls: set once. */
static inline u64 kiwi_cep_conn_stamp(struct kiwi_cep *cep)
{
	u64 seq = atomic64_read(&cep->conn_seq);

	if (seq)
		return seq;
	seq = atomic64_inc_return(&cep->cdev->conn_seq);
	atomic64_cmpxchg(&cep->conn_seq, 0, seq);
	return atomic64_read(&cep->conn_seq);
}

struct kiwi_cep *kiwi_cep_alloc(struct kiwi_cm_dev *cdev,
				void (*hs)(struct kiwi_cep *cep));
void kiwi_cep_get(struct kiwi_cep *cep);
void kiwi_cep_put(struct kiwi_cep *cep);
void kiwi_cep_stop_timer(struct kiwi_cep *cep);
void kiwi_cep_hs_free(struct kiwi_cep *cep);
void kiwi_cep_finish(struct kiwi_cep *cep);
void kiwi_cep_drop_conn(struct kiwi_cep *cep);
void kiwi_cep_start_timer(struct kiwi_cep *cep);
void kiwi_cep_release_sock(struct kiwi_cep *cep, bool abort);
int kiwi_sock_create(struct kiwi_cm_dev *cdev, int family,
		     struct socket **sock);
void kiwi_sock_set_tos(struct socket *sock, const struct iw_cm_id *id);
void kiwi_sock_reflect_tos(struct socket *sock);
void kiwi_cep_addrs(struct kiwi_cep *cep);
int kiwi_cep_upcall(struct kiwi_cep *cep, struct iw_cm_id *id,
		    enum iw_cm_event_type type, int status,
		    const u8 *pd, u16 pd_len);

/* cm_policy.c */
struct kiwi_cm_dev *kiwi_cm_dev_get(struct kiwi_dev *kdev);
struct kiwi_cm_dev *kiwi_cm_dev_unlink(struct kiwi_dev *kdev);
int kiwi_cep_llp_start(struct kiwi_cep *cep, struct kiwi_qp *qp,
		       bool initiator);
void kiwi_cep_cfg(struct kiwi_cep *cep, u16 ird, u16 ord);

/* cm_mpa.c */
int kiwi_cep_send(struct kiwi_cep *cep, const void *buf, size_t len);
int kiwi_cep_send_now(struct kiwi_cep *cep, const void *buf,
		      size_t len);
void kiwi_cep_frame_sent(struct kiwi_cep *cep, u32 qpn);
void kiwi_cep_frame_rcvd(struct kiwi_cep *cep);
void kiwi_cep_hs_kick(struct kiwi_cep *cep);
void kiwi_cep_hs_arm(struct kiwi_cep *cep, unsigned long when);
void kiwi_cep_hs_read(struct kiwi_cep *cep, struct sock *sk);
void kiwi_cep_hs_attach(struct kiwi_cep *cep, bool reply);
void kiwi_cep_hs_detach(struct kiwi_cep *cep);
int kiwi_cep_hs_result(struct kiwi_cep *cep, bool stop);
void kiwi_cep_send_term(struct kiwi_cep *cep, enum kiwi_err err);

/* cm_passive.c: one step of a handshake, from hs_work; a Request done */
void kiwi_cep_req_work(struct kiwi_cep *cep);
void kiwi_cep_child_done(struct kiwi_cep *cep, struct kiwi_cep *lcep);

/* cm_listen.c */
void kiwi_cep_unlisten(struct kiwi_cep *lcep, struct list_head *socks);
void kiwi_lsocks_free(struct list_head *socks);
int kiwi_cm_listen_init(void);
void kiwi_cm_listen_exit(void);

/* ---- small helpers ---- */

static inline unsigned long kiwi_cm_timeout(void)
{
	return msecs_to_jiffies(kiwi_cm_get_timeout());
}

static inline int kiwi_addr_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		sizeof(struct sockaddr_in);
}

static inline bool kiwi_addr_same(const struct sockaddr_storage *a,
				  const struct sockaddr_storage *b)
{
	return a->ss_family == b->ss_family &&
	       !memcmp(a, b, kiwi_addr_len(a));
}

/* the same host: the addresses without their ports */
static inline bool kiwi_addr_same_host(const struct sockaddr_storage *a,
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

static inline bool kiwi_family_ok(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET || a->ss_family == AF_INET6;
}

static inline long kiwi_cep_left(struct kiwi_cep *cep)
{
	return (long)(cep->deadline - jiffies);
}

static inline u32 kiwi_cep_qpn(const struct kiwi_cep *cep)
{
	return cep->qp ? cep->qp->ibqp.qp_num : 0;
}

/* hs_status outside the socket lock: once not READING, the parser is final */
static inline int kiwi_cep_hs_status(struct kiwi_cep *cep)
{
	/* pairs with the release in kiwi_cep_hs_actor() */
	return smp_load_acquire(&cep->hs_status);
}

/*
 * With port_map, iwpmd holds our picked port with a bound socket of its own:
 * ours must share it.  Unmapped ports keep the usual conflict checks.
 */
static inline __be16 kiwi_ss_port(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ?
		((const struct sockaddr_in6 *)a)->sin6_port :
		((const struct sockaddr_in *)a)->sin_port;
}

static inline void kiwi_ss_set_port(struct sockaddr_storage *a, __be16 port)
{
	if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = port;
	else
		((struct sockaddr_in *)a)->sin_port = port;
}

static inline bool kiwi_port_mapped(const struct iw_cm_id *id)
{
	return id->mapped &&
		kiwi_ss_port(&id->m_local_addr) != kiwi_ss_port(&id->local_addr);
}

static inline void kiwi_port_take(struct socket *sock)
{
	sock->sk->sk_reuse = SK_FORCE_REUSE;
}

#endif /* KIWI_CEP_H */

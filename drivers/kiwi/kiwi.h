/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kiwi: private structures of the verbs objects shared by the files of
 * kiwi.ko.  The wire protocol lives in proto/ and knows nothing of these.
 */
#ifndef KIWI_H
#define KIWI_H

#include <linux/completion.h>
#include <linux/etherdevice.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/uverbs_ioctl.h>

#include <uapi/kiwi-abi.h>

#include "compat.h"
#include "conn.h"

/* Object counts shown in debugfs; tests check they return to zero. */
enum kiwi_obj {
	KIWI_OBJ_DEVICE,
	KIWI_OBJ_UCONTEXT,
	KIWI_OBJ_PD,
	KIWI_OBJ_CQ,
	KIWI_OBJ_QP,
	KIWI_OBJ_SRQ,
	KIWI_OBJ_MR,
	KIWI_OBJ_CEP,
	KIWI_OBJ_MAX
};

void kiwi_obj_inc(enum kiwi_obj obj);
void kiwi_obj_dec(enum kiwi_obj obj);
/* user SQ doorbells received, in debugfs (kiwi/doorbells) */
void kiwi_doorbell_count(void);

/*
 * Per-device counters, shown by `rdma statistic show link <dev>/1` and in
 * /sys/class/infiniband/<dev>/ports/1/hw_counters (device.c names them;
 * Documentation/operability.md says what each counts).  Per CPU, so
 * that the data path pays one unshared add per batch or FPDU.
 */
enum kiwi_stat {
	KIWI_STAT_TX_FPDUS,
	KIWI_STAT_TX_BYTES,		/* ULP payload of the FPDUs sent */
	KIWI_STAT_RX_FPDUS,
	KIWI_STAT_RX_BYTES,		/* ULP payload placed */
	KIWI_STAT_CRC_ERRORS,
	KIWI_STAT_TERM_SENT_RDMAP,	/* Terminates by layer (KIWI_LAYER_*) */
	KIWI_STAT_TERM_SENT_DDP,
	KIWI_STAT_TERM_SENT_LLP,
	KIWI_STAT_TERM_RCVD_RDMAP,
	KIWI_STAT_TERM_RCVD_DDP,
	KIWI_STAT_TERM_RCVD_LLP,
	KIWI_STAT_MPA_REQ_SENT,
	KIWI_STAT_MPA_REQ_RCVD,
	KIWI_STAT_MPA_REP_SENT,		/* accepting Replies */
	KIWI_STAT_MPA_REP_RCVD,
	KIWI_STAT_MPA_REJ_SENT,		/* Replies with R set */
	KIWI_STAT_MPA_REJ_RCVD,
	KIWI_STAT_CONNECT_TIMEOUTS,
	KIWI_STAT_ORDER_WAITS_EXPIRED,	/* a handshake gave up its turn's wait */
	KIWI_STAT_CONNECT_PORT_FALLBACKS, /* rdma_cm's port taken: TCP chose */
	KIWI_STAT_DOORBELLS,
	KIWI_STAT_COMPLETIONS,
	KIWI_STAT_COMPLETIONS_FLUSHED,
	KIWI_STAT_RX_DEFERRED,		/* arrivals handed to rx_work */
	KIWI_STAT_RRESP_DEFERRED,	/* Read Responses sent from another CPU */
	KIWI_STAT_POSTS_DIRECT,		/* kernel posts sent in the poster's context */
	KIWI_STAT_FASTREG_WRS,		/* REG_MR WRs executed */
	KIWI_STAT_FASTREG_REMAPS,	/* ... on an MR registered before */
	KIWI_STAT_LOCAL_INVS,		/* LOCAL_INV, Read with local invalidate */
	KIWI_STAT_REMOTE_INVS,		/* Send with Invalidate honoured */
	KIWI_STAT_FASTREG_PLACED,	/* tagged FPDUs placed into FR MRs */
	KIWI_STAT_MAX
};

struct kiwi_stats {
	u64 v[KIWI_STAT_MAX];
};

/*
 * What a user context is charged for (kiwi_uobj_charge()): each kind has
 * a cap per context and a cap for all user contexts of a device together,
 * which leaves part of the device's numbers to kernel consumers.
 */
enum kiwi_uobj {
	KIWI_UOBJ_PD,
	KIWI_UOBJ_CQ,
	KIWI_UOBJ_QP,
	KIWI_UOBJ_SRQ,
	KIWI_UOBJ_MR,
	KIWI_UOBJ_MAX
};

struct kiwi_dev {
	struct ib_device ibdev;
	/*
	 * Not a reference: ib_device_set_netdev() holds one for as long as the
	 * device is registered, and the netdev notifier unregisters us before
	 * the netdev goes away.  Prefer kiwi_ib_netdev_get() where a
	 * reference is needed across sleeping calls.
	 */
	struct net_device *netdev;

	spinlock_t lock;		/* state, mac */
	enum ib_port_state state;
	u8 mac[ETH_ALEN];		/* the GID is derived from it */

	struct xarray qp_xa;		/* qp_num -> kiwi_qp */
	u32 qp_next;			/* cyclic QP number allocation */
	struct xarray mr_xa;		/* STag index -> kiwi_mr */
	u32 mr_next;			/* cyclic STag index allocation */

	/* per-device object counts, checked against the KIWI_MAX_* limits */
	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_srq;
	atomic_t cq_ids;		/* cq_id handed to the provider */
	atomic_t nuser[KIWI_UOBJ_MAX];	/* objects of all user contexts */

	struct kiwi_stats __percpu *stats;	/* freed by dealloc_driver */
};

/* Any context; kdev->stats lives as long as the ib_device. */
static inline void kiwi_stat_add(struct kiwi_dev *kdev, enum kiwi_stat s,
				 u64 n)
{
	this_cpu_add(kdev->stats->v[s], n);
}

static inline void kiwi_stat_inc(struct kiwi_dev *kdev, enum kiwi_stat s)
{
	kiwi_stat_add(kdev, s, 1);
}

/* A Terminate's layer (KIWI_LAYER_RDMAP, _DDP, _LLP), counted. */
static inline void kiwi_stat_term(struct kiwi_dev *kdev, bool sent, u8 layer)
{
	if (layer > KIWI_LAYER_LLP)
		layer = KIWI_LAYER_LLP;
	kiwi_stat_inc(kdev, (sent ? KIWI_STAT_TERM_SENT_RDMAP :
			     KIWI_STAT_TERM_RCVD_RDMAP) + layer);
}

struct kiwi_ucontext {
	struct ib_ucontext ibuc;
	struct kiwi_dev *kdev;
	atomic_t nobj[KIWI_UOBJ_MAX];	/* this context's objects */
};

struct kiwi_pd {
	struct ib_pd ibpd;
	struct kiwi_ucontext *uctx;	/* charged to; NULL: kernel */
};

/* Every ring ends with one control block of this size (kiwi-abi.h). */
#define KIWI_RING_CTRL_SIZE	64

/*
 * A ring of fixed-size slots followed by a 64-byte control block; the
 * same layout serves user objects (vmalloc_user, mmapped) and kernel
 * objects, so that the data path has one format to handle.
 */
struct kiwi_ring {
	void *mem;
	u32 num;			/* slots, a power of two */
	u32 slot_size;
	size_t bytes;			/* page-aligned allocation */
	struct rdma_user_mmap_entry *mentry;	/* NULL for kernel rings */
};

static inline void *kiwi_ring_slot(const struct kiwi_ring *r, u32 idx)
{
	return r->mem + (size_t)(idx & (r->num - 1)) * r->slot_size;
}

static inline void *kiwi_ring_ctrl(const struct kiwi_ring *r)
{
	return r->mem + (size_t)r->num * r->slot_size;
}

/*
 * Slot ownership (kiwi-abi.h): read a slot's contents only after seeing
 * its flags (acquire), and finish writing them before setting or clearing
 * the VALID bit (release).  Works on the u8 CQE and u16 WQE flags alike.
 */
/* acquire: the flags before the contents */
#define kiwi_slot_flags(pflags)		smp_load_acquire(pflags)
/* release: the contents before the flags */
#define kiwi_slot_set(pflags, v)	smp_store_release(pflags, v)

int kiwi_ring_alloc(struct kiwi_ring *r, u32 num, u32 slot_size,
		    struct ib_udata *udata);
void kiwi_ring_free(struct kiwi_ring *r);
u64 kiwi_ring_key(const struct kiwi_ring *r);

struct kiwi_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* producer side; consumer of kernel CQs */
	struct kiwi_ring ring;
	u32 prod;			/* next slot the kernel fills */
	u32 cons;			/* next slot polled (kernel CQs only) */
	bool user;
	struct kiwi_ucontext *uctx;	/* charged to; NULL: kernel */
};

/* What a producer (flush now, the engines later) reports for one WR. */
struct kiwi_wc {
	u64 id;
	u32 bytes;
	u32 qp_id;
	u32 inval_stag;
	u8 opcode;			/* enum kiwi_opcode */
	u8 status;			/* enum ib_wc_status */
	u8 flags;			/* KIWI_CQE_SOLICITED, KIWI_CQE_INVALIDATED */
	u32 seq;			/* tx: the WR's SQ position, for flushes */
};

int kiwi_cq_push(struct kiwi_cq *cq, const struct kiwi_wc *wc);

struct kiwi_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;		/* prod/cons of kernel SRQs, limit */
	struct kiwi_ring ring;
	u32 prod;
	u32 cons;
	u32 max_sge;
	u32 limit;			/* IB_SRQ_LIMIT, 0 when not armed */
	bool user;
	struct kiwi_ucontext *uctx;	/* charged to; NULL: kernel */
};

/* An RDMA Read we sent and wait for the Read Responses of (ORD). */
struct kiwi_ord_ent {
	u64 id;
	struct kiwi_mr *mr;		/* sink MR, referenced; NULL: 0 bytes */
	u32 gen;			/* mr's generation when it was checked */
	u32 sink_stag;
	u64 sink_to;
	u32 len;
	u32 placed;
	u32 inval_stag;			/* READ_LOCAL_INV */
	u8 opcode;
	bool signaled;
	u32 seq;			/* SQ position of the Read */
};

/* A Read Request the peer sent, answered by tx in order (IRD). */
struct kiwi_ird_ent {
	struct kiwi_mr *mr;		/* source MR, referenced; NULL: 0 bytes */
	u32 gen;			/* mr's generation when it was checked */
	u64 src_to;
	u32 sink_stag;
	u64 sink_to;
	u32 len;
	u32 sent;
};

/* The Send message being received (it may span many FPDUs). */
struct kiwi_rx_send {
	struct kiwi_rqe rqe;		/* validated copy */
	struct kiwi_mr *mr[KIWI_MAX_SGE];
	u32 gen[KIWI_MAX_SGE];		/* their generations when checked */
	u32 total;			/* bytes the RQE can take */
	u32 placed;
	u32 sge;			/* cursor: SGE index and offset in it */
	u32 sge_off;
	bool active;
	bool srq;
};

/*
 * Where payload comes from: SGEs with their MRs (NULL: a kernel address,
 * as for inline data) and a cursor.  zc: its pages may go to TCP by
 * reference (tx_batch.c, kiwi_tx_zc_ok()); pieces then stop at page ends.
 */
struct kiwi_cur {
	struct kiwi_sge sg[KIWI_MAX_SGE];
	struct kiwi_mr *mr[KIWI_MAX_SGE];
	u32 gen[KIWI_MAX_SGE];		/* their generations when checked */
	u32 nsge;
	u32 idx;
	u32 off;
	bool zc;
};

/* The SQ work request being transmitted. */
struct kiwi_tx_wr {
	struct kiwi_sqe sqe;		/* validated copy */
	struct kiwi_cur cur;
	u32 total;
	u32 off;			/* bytes framed so far */
	u32 msn;
	u32 seq;			/* SQ position: sq_cons when taken */
	bool active;
};

#define KIWI_TX_IOV	64
/*
 * The framing buffer starts at KIWI_TX_FBUF_MIN, where the kvecs bound a
 * batch of bulk FPDUs before it does, and grows to KIWI_TX_FBUF once it
 * bounds one instead: small inline messages, which it carries whole, or
 * (by a few bytes) a full batch of MSS-sized Sends.
 */
#define KIWI_TX_FBUF_MIN	1024
#define KIWI_TX_FBUF	2048
#define KIWI_TX_WC	16
#define KIWI_TX_MRS	32

/* engine flags (qp->eflags, atomic bitops) */
enum {
	KIWI_EF_ON,		/* between llp_start and llp_stop */
	KIWI_EF_HOLD,		/* p2p responder: no tx before the RTR */
	KIWI_EF_RTR_SEND,	/* p2p initiator: the RTR still to send */
	KIWI_EF_RTR_RRESP,	/* initiator: a 0-byte Read Response is due */
	KIWI_EF_WAIT_SPACE,	/* tx waits for sk_write_space */
	KIWI_EF_TERM_CLAIM,	/* txs->term is being built */
	KIWI_EF_TERM,		/* a Terminate is to be sent */
	KIWI_EF_TERM_SENT,
	KIWI_EF_RX_DEAD,	/* rx places nothing more */
	KIWI_EF_COMM_EST,	/* IB_EVENT_COMM_EST dispatched */
	KIWI_EF_FIN,		/* PEER_CLOSED reported */
	KIWI_EF_RST,		/* RESET reported */
	KIWI_EF_QUIESCED,	/* engines stopped, queues flushed */
	KIWI_EF_TX_STOP,	/* tx sends nothing more */
	KIWI_EF_FLUSHED,	/* kiwi_qp_flush_all() ran: flush at once */
};

/* Transmission engine state (tx*.c), serialised by qp->tx_mutex. */
struct kiwi_txs {
	struct kiwi_tx fr;		/* the framer */
	u32 msn[KIWI_QN_MAX];		/* next MSN per untagged queue */
	u32 max_ulpdu;			/* MULPDU from the MSS */
	struct kiwi_tx_wr wr;
	/* the batch handed to one tcp_sendmsg(), resumable */
	struct kvec iov[KIWI_TX_IOV];
	/* iov[i] is sent by reference, its page kiwi_iov_page() */
	DECLARE_BITMAP(zc, KIWI_TX_IOV);
	/* iov[i] points into iov_mr[i] as mapped at generation iov_gen[i] */
	struct kiwi_mr *iov_mr[KIWI_TX_IOV];
	u32 iov_gen[KIWI_TX_IOV];
	bool stale;			/* a piece's mapping was already gone */
	u32 niov;
	u32 npg;			/* entries with a page */
	u32 iov_done;			/* entries fully sent */
	size_t bytes;			/* total of the batch */
	u32 nfpdu;			/* its FPDUs, for the counters */
	u64 payload;			/* and their ULP payload */
	u32 flen;			/* framing bytes used in fbuf */
	u32 fsize;			/* fbuf's size */
	bool fgrow;			/* fbuf bounded a batch: grow it */
	/* MRs whose memory the batch references, put once it is sent */
	struct kiwi_mr *mrs[KIWI_TX_MRS];
	u32 nmrs;
	struct kiwi_wc wc[KIWI_TX_WC];	/* completions once the batch is out */
	u32 nwc;
	struct kiwi_hdr term;		/* Terminate to send (KIWI_EF_TERM) */
	bool term_queued;		/* it is in the batch */
	bool more;			/* more FPDUs wait: MSG_MORE */
	bool ord_wait;			/* the next SQE waits for Reads */
	struct kiwi_cur rr;		/* Read Response source */
	/*
	 * fsize bytes, allocated apart: without them the struct fits
	 * kmalloc-4k instead of kmalloc-8k (bench-memory, per idle QP)
	 */
	u8 *fbuf;
	/*
	 * The receive side's parser and the Receive being filled (rx.c's,
	 * through qp->rx and qp->rxs): allocated with the connection here
	 * rather than in kiwi_qp, which then fits kmalloc-1k (bench-memory).
	 */
	struct kiwi_rx rx;
	struct kiwi_rx_send rxs;
};

/* the remote rights a QP's access flags may grant (qp*.c, rx.c) */
#define KIWI_QP_REMOTE	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

struct kiwi_qp {
	struct ib_qp ibqp;
	struct kiwi_dev *kdev;
	/*
	 * References: one from creation, one per iw_add_ref (the iw_cm) and,
	 * later, per engine user.  destroy_qp drops the first and waits for
	 * the rest, because ib_core frees the memory when destroy_qp returns.
	 */
	struct kref ref;
	struct completion freed;

	/*
	 * The QP's locks, outermost first (derived from the code; the
	 * helpers that rely on one assert it with lockdep_assert_held()):
	 *
	 *   cep->mutex		the CM's (cep.h), held over llp_start/stop
	 *   stop_mutex		quiesce and llp_stop
	 *   tx_mutex		the transmit engine and *txs
	 *   the socket lock	tx's lock_sock(); rx runs under its bh lock,
	 *			rx_work under lock_sock()
	 *   sk_callback_lock	read by rx and write_space, written by
	 *			llp_start, llp_stop and the quiesce
	 *   lock		below
	 *   cq->lock		kiwi_cq_push() from flushes and completions
	 *
	 * stop_mutex waits for tx_work and rx_work (cancel_work_sync()), so
	 * neither work nor a holder of tx_mutex may take it.  The CM's cep->lock
	 * (kiwi_cm_llp_event(), kiwi_cm_disconnect()) is taken under
	 * tx_mutex or the socket lock, never under lock, and takes none.
	 */
	/* state and the queues' indices; posts run in atomic context */
	spinlock_t lock;
	enum ib_qp_state state;
	int access;			/* IB_QP_ACCESS_FLAGS in force (rx) */
	u8 ord;
	u8 ird;
	bool user;
	bool sig_all;
	struct pid *owner;		/* user QPs: the creating process */
	struct kiwi_ucontext *uctx;	/* charged to; NULL: kernel */

	struct kiwi_ring sq;
	u32 sq_prod;			/* kernel QPs */
	u32 sq_cons;
	struct kiwi_ring rq;		/* num == 0 with an SRQ */
	u32 rq_prod;
	u32 rq_cons;

	struct kiwi_cq *scq;
	struct kiwi_cq *rcq;
	struct kiwi_srq *srq;

	/* ---- the engines (tx*.c, rx.c), while connected ---- */
	unsigned long eflags;		/* KIWI_EF_* */
	struct kiwi_cep *cep;		/* referenced while KIWI_EF_ON */
	/*
	 * The initiator's endpoint holding this QP from iw_connect until
	 * it drops the QP (under lock): destroy_qp aborts its handshake.
	 */
	struct kiwi_cep *conn_cep;
	struct socket *sock;
	void (*sk_data_ready)(struct sock *sk);
	void (*sk_write_space)(struct sock *sk);
	void (*sk_state_change)(struct sock *sk);
	struct kiwi_mpa_result mpa;
	struct completion llp_stopped;	/* destroy_qp waits for llp_stop */

	/*
	 * ORD: Reads we sent, oldest at ord_tail (under lock).  The rings
	 * are allocated at llp_start for the depths the connection settled
	 * (a power of two, mask + 1 entries), not for KIWI_MAX_ORD/IRD: the
	 * QP then fits kmalloc-1k (bench-memory, per idle QP).
	 */
	struct kiwi_ord_ent *ordq;
	u32 ord_mask;
	u32 ord_head;
	u32 ord_tail;
	u32 ord_max;
	/* IRD: Read Requests to answer, oldest at ird_tail (under lock) */
	struct kiwi_ird_ent *irdq;
	u32 ird_mask;
	u32 ird_head;
	u32 ird_tail;
	u32 ird_max;

	/*
	 * Receive side, touched only by sk_data_ready (rx.c) and rx_work,
	 * which own the socket in turn.
	 */
	struct kiwi_rx *rx;		/* in txs, from the first llp_start */
	struct kiwi_rx_send *rxs;
	struct kiwi_mr *rx_mr;		/* destination of the tagged FPDU */
	u32 rx_gen;			/* rx_mr's generation when checked */
	u64 rx_to;
	u8 rx_kind;			/* what the FPDU being parsed is */
	bool rx_rtr;			/* it is the RTR (p2p responder) */
	u32 rx_bytes;			/* payload placed of this FPDU */
	struct kiwi_ird_ent rx_rreq;	/* Read Request queued at DONE */
	/*
	 * The status the oldest WR in flight completes with when the
	 * engines are flushed (a received Terminate blames it), under
	 * lock; IB_WC_SUCCESS: none, it is flushed like the rest.
	 */
	u8 term_status;

	struct work_struct tx_work;
	/* bulk arrivals placed on another CPU (rx.c, kiwi_rx_defer) */
	struct work_struct rx_work;
	struct mutex tx_mutex;		/* lock order: see lock above */
	struct mutex stop_mutex;	/* quiesce and llp_stop */
	struct kiwi_txs *txs;		/* allocated at llp_start */
};

enum kiwi_mr_type {
	KIWI_MR_USER,			/* pinned user memory (ib_umem) */
	KIWI_MR_DMA,			/* all of kernel memory, local use */
	KIWI_MR_FAST_REG,		/* page list set by map_mr_sg + REG_MR */
};

/*
 * Memory regions.  The STag is (index << 8) | key: the index finds the MR
 * in kdev->mr_xa, the 8-bit consumer key must match as well.  Lookups by
 * the data path take a reference under RCU; a user MR is freed by the
 * last of them (free_work), dereg of a kernel MR waits for them (freed).
 */
struct kiwi_mr {
	struct ib_mr ibmr;
	struct kiwi_dev *kdev;
	enum kiwi_mr_type type;
	struct ib_umem *umem;
	u64 *pages;			/* KIWI_MR_FAST_REG page addresses */
	u32 max_pages;
	u32 npages;
	int access;
	u32 stag;
	bool valid;			/* false after local/remote invalidate */
	bool registered;		/* FR: a REG_MR ran on it (counted) */
	/*
	 * Bumped by every invalidation, re-mapping and registration: what
	 * the engines admitted (an IRD entry, a Write FPDU, a cursor) keeps
	 * the generation it was checked at and compares it before each
	 * piece it places or sends, so that nothing goes through a mapping
	 * that was invalidated or replaced meanwhile (kiwi_mr_kaddr()).
	 */
	atomic_t gen;
	struct page **upages;		/* KIWI_MR_USER: the umem's pages */
	u32 nupages;
	u32 upage_off;			/* offset of iova in upages[0] */
	struct kiwi_ucontext *uctx;	/* charged to; NULL: kernel */
	struct kref ref;
	struct completion freed;	/* kernel MRs: dereg waits on it */
	struct work_struct free_work;	/* user MRs: freed by the last put */
	struct rcu_head rcu;
};

#define KIWI_STAG_INDEX(stag)	((stag) >> 8)

static inline struct kiwi_dev *to_kdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct kiwi_dev, ibdev);
}

static inline struct kiwi_ucontext *to_kuctx(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct kiwi_ucontext, ibuc);
}

static inline struct kiwi_pd *to_kpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct kiwi_pd, ibpd);
}

static inline struct kiwi_cq *to_kcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct kiwi_cq, ibcq);
}

static inline struct kiwi_qp *to_kqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct kiwi_qp, ibqp);
}

static inline struct kiwi_srq *to_ksrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct kiwi_srq, ibsrq);
}

static inline struct kiwi_mr *to_kmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct kiwi_mr, ibmr);
}

/*
 * A WR is posted in the SQ slot the engine takes next (qp->lock or the
 * engine's tx_mutex keeps sq_cons still; the slot is a snapshot).
 */
static inline bool kiwi_sq_next_posted(struct kiwi_qp *qp)
{
	struct kiwi_sqe *slot = kiwi_ring_slot(&qp->sq, qp->sq_cons);

	return kiwi_slot_flags(&slot->flags) & KIWI_WQE_VALID;
}

/* udata helpers (device.c) */
int kiwi_udata_in_ok(struct ib_udata *udata);
int kiwi_respond(struct ib_udata *udata, const void *resp, size_t len);
int kiwi_uobj_charge(struct ib_udata *udata, enum kiwi_uobj t,
		     struct kiwi_ucontext **uctx);
void kiwi_uobj_uncharge(struct kiwi_ucontext *uctx, enum kiwi_uobj t);

/* device.c */
extern const struct ib_device_ops kiwi_dev_ops;
void kiwi_port_event(struct kiwi_dev *kdev, enum ib_event_type type);
enum ib_mtu kiwi_dev_path_mtu(struct kiwi_dev *kdev);

/* uapi.c: ib_uverbs driver methods (the SQ doorbell) */
extern const struct uapi_definition kiwi_uapi_defs[];

/* mem.c */
int kiwi_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int kiwi_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *kiwi_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
			       u64 iova, int access, struct ib_udata *udata);
struct ib_mr *kiwi_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *kiwi_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			    u32 max_num_sg);
int kiwi_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset);
int kiwi_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int kiwi_mr_access_ok(int access);
struct kiwi_mr *kiwi_mr_get(struct kiwi_dev *kdev, u32 stag);
void kiwi_mr_put(struct kiwi_mr *mr);
int kiwi_mr_check(struct kiwi_mr *mr, struct ib_pd *pd, u64 to, u64 len,
		  int access, u32 *gen);
void *kiwi_mr_kaddr(struct kiwi_mr *mr, u32 gen, u64 to, u32 *contig);
void kiwi_mr_invalidate(struct kiwi_mr *mr);
void kiwi_mr_bump(struct kiwi_mr *mr);

/* The mapping admitted at generation gen is still the MR's (a snapshot). */
static inline bool kiwi_mr_current(struct kiwi_mr *mr, u32 gen)
{
	return (u32)atomic_read(&mr->gen) == gen;
}

int kiwi_mem_init(void);
void kiwi_mem_flush(void);
void kiwi_mem_exit(void);

/* cq.c */
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct kiwi_cq_udata_arg *cq_udata);
int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int kiwi_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int kiwi_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* qp.c, qp_state.c (modify_qp), qp_post.c (the posts, kiwi_rqe_from_wr) */
int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata);
int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata);
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int kiwi_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init);
int kiwi_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int kiwi_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int kiwi_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);
void kiwi_qp_add_ref(struct ib_qp *ibqp);
void kiwi_qp_rem_ref(struct ib_qp *ibqp);
struct ib_qp *kiwi_get_qp(struct ib_device *ibdev, int qpn);
struct kiwi_qp *kiwi_qp_lookup(struct kiwi_dev *kdev, u32 qpn);
struct iw_cm_id;
bool kiwi_qp_bind_ok(const struct kiwi_qp *qp, const struct iw_cm_id *id);
void kiwi_qp_get(struct kiwi_qp *qp);
void kiwi_qp_put(struct kiwi_qp *qp);
int kiwi_rqe_from_wr(struct kiwi_rqe *rqe, const struct ib_recv_wr *wr,
		     u32 max_sge);

/* qp_state.c: the engines' helpers */
void kiwi_qp_to_err(struct kiwi_qp *qp, enum ib_event_type ev);
void kiwi_qp_term_rcvd(struct kiwi_qp *qp, u8 status, enum ib_event_type ev);
void kiwi_qp_event(struct kiwi_qp *qp, enum ib_event_type type);
void kiwi_qp_flush_all(struct kiwi_qp *qp);

/* tx.c, tx_batch.c: the engines' workqueue (set up by main.c), the engine */
int kiwi_dp_init(struct dentry *debugfs);
void kiwi_dp_exit(void);
void kiwi_tx_kick(struct kiwi_qp *qp);
void kiwi_tx_kick_on(struct kiwi_qp *qp, int cpu);
int kiwi_tx_next_cpu(void);
void kiwi_tx_doorbell(struct kiwi_qp *qp);
void kiwi_tx_post(struct kiwi_qp *qp);
void kiwi_tx_busy_clear(struct kiwi_qp *qp);
void kiwi_tx_work(struct work_struct *work);
void kiwi_txs_free(struct kiwi_txs *txs);
void kiwi_tx_write_space(struct sock *sk);
void kiwi_tx_drop_batch(struct kiwi_qp *qp, u8 *status);

/* rx.c */
extern unsigned int kiwi_rx_defer;
int kiwi_rx_wq_init(void);
void kiwi_rx_wq_exit(void);
void kiwi_rx_work(struct work_struct *work);
void kiwi_rx_data_ready(struct sock *sk);
void kiwi_rx_state_change(struct sock *sk);
void kiwi_rx_read(struct kiwi_qp *qp);
void kiwi_rx_abort_fpdu(struct kiwi_qp *qp);
void kiwi_rx_fail(struct kiwi_qp *qp, enum kiwi_err err, bool with_hdr);

/* srq.c */
int kiwi_srq_take(struct kiwi_srq *srq, struct kiwi_rqe *rqe);
int kiwi_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		    struct ib_udata *udata);
int kiwi_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int kiwi_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int kiwi_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);

#endif /* KIWI_H */

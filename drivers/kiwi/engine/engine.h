/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kiwi's data path: a QP's engines (rx.c, tx*.c) and its state machine
 * (qp_state.c).  The CM reaches this floor through conn.h only.
 */
#ifndef KIWI_ENGINE_H
#define KIWI_ENGINE_H

#include "res/res.h"
#include "conn.h"

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
	u32 pend;			/* its entry in txs->held */
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
 * Where payload comes from: SGEs with their MRs (NULL: a kernel address)
 * and a cursor.  zc: its pages may go to TCP by reference, page by page.
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
/* the framing buffer grows to KIWI_TX_FBUF once it bounds a batch */
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
	KIWI_EF_ACK_WAIT,	/* tx waits for snd_una to pass txs->ack_seq */
};

/* a completion in txs->held waits for its WR, then every earlier one */
enum {
	KIWI_HELD_BATCH,	/* in the batch TCP has not taken yet */
	KIWI_HELD_ACK,		/* taken by reference: the peer's ACK of seq */
	KIWI_HELD_READ,		/* a Read: its last Read Response */
	KIWI_HELD_DONE,		/* done: posted once every earlier one is */
};

struct kiwi_held {
	struct kiwi_wc wc;
	u32 seq;
	u8 state;
	bool cqe;			/* false: an unsignaled Read, no CQE */
};

#define KIWI_TX_HELD	64	/* a power of two, >= 2 * KIWI_TX_WC */

/* Transmission engine state (tx*.c), serialised by qp->tx_mutex. */
struct kiwi_txs {
	struct kiwi_tx fr;		/* the framer */
	u32 msn[KIWI_QN_MAX];		/* next MSN per untagged queue */
	u32 max_ulpdu;			/* MULPDU, kiwi_txs_mulpdu() */
	u32 mss;			/* the MSS max_ulpdu is for */
	u16 fpdu_max;			/* negotiated longer FPDUs, 0: none */
	struct sock *sk;		/* for its MSS, held by qp->sock */
	struct kiwi_tx_wr wr;
	/* the batch handed to one tcp_sendmsg(), resumable */
	struct kvec iov[KIWI_TX_IOV];
	/* iov[i] is sent by reference, its page kiwi_iov_page() */
	DECLARE_BITMAP(zc, KIWI_TX_IOV);
	/* iov[i] is in a referenced page of kiwi's own (kiwi_own_copy()) */
	DECLARE_BITMAP(own, KIWI_TX_IOV);
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
	/* zero copy: the batch's bytes by reference, and their ubuf_info */
	u32 zcb;
	/* CRC on: the fill page (to ooff), own_on: the FPDU goes there */
	struct page *opage;
	u32 ooff;
	bool own_on;
	u32 ownb;			/* payload copied there, for counters */
	u32 passb;			/* payload CRC'd in a pass of its own */
	struct ubuf_info *ubuf;
	u32 zc_seq;			/* end of the last batch with some */
	bool zc_live;			/* not yet acked */
	/* held_tail to held_head under qp->lock; tx alone adds, reads unlocked */
	bool held_busy;			/* a kiwi_pend_drain() is posting */
	u8 nbq;				/* the batch's, from batch_first on */
	u64 zc_held;			/* bytes of zc_seq's and earlier batches */
	struct kiwi_held *held;
	u32 held_head;
	u32 held_tail;
	u32 ack_seq;
	u32 batch_first;
	struct kiwi_hdr term;		/* Terminate to send (KIWI_EF_TERM) */
	bool term_queued;		/* it is in the batch */
	bool more;			/* more FPDUs wait: MSG_MORE */
	bool ord_wait;			/* the next SQE waits for Reads */
	struct kiwi_cur rr;		/* Read Response source */
	u8 *fbuf;			/* fsize bytes, apart: a smaller txs */
	/* rx.c's parser and Receive (qp->rx, qp->rxs), per connection */
	struct kiwi_rx rx;
	struct kiwi_rx_send rxs;
};

/* the remote rights a QP's access flags may grant (qp*.c, rx.c) */
#define KIWI_QP_REMOTE	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

struct kiwi_qp {
	struct ib_qp ibqp;
	struct kiwi_dev *kdev;
	/* one from creation, one per iw_cm: destroy_qp waits for the rest */
	struct kref ref;
	struct completion freed;

	/*
	 * The QP's locks, outermost first (helpers assert theirs with
	 * lockdep_assert_held()):
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
	 * neither work nor a holder of tx_mutex may take it.  The CM's
	 * cep->lock (conn->ops llp_event and disconnect) is taken under
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
	bool rnic_strict;		/* the device's rnic_strict at creation */
	/* caps as created, enforced on every WQE, as RNICs do (rnic-compat) */
	u8 max_send_sge;
	u8 max_recv_sge;		/* 0 with an SRQ */
	u8 max_inline;
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
	struct kiwi_conn *conn;		/* referenced while KIWI_EF_ON */
	/* initiator's, iw_connect to QP drop (lock): destroy_qp aborts it */
	struct kiwi_conn *connecting;
	struct socket *sock;
	void (*sk_data_ready)(struct sock *sk);
	void (*sk_write_space)(struct sock *sk);
	void (*sk_state_change)(struct sock *sk);
	struct kiwi_mpa_result mpa;
	struct completion llp_stopped;	/* destroy_qp waits for llp_stop */

	/* ORD: Reads we sent, oldest at ord_tail (under lock; llp_start's) */
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

	/* receive side: sk_data_ready and rx_work, owning the socket in turn */
	struct kiwi_rx *rx;		/* in txs, from the first llp_start */
	struct kiwi_rx_send *rxs;
	struct kiwi_mr *rx_mr;		/* destination of the tagged FPDU */
	u32 rx_gen;			/* rx_mr's generation when checked */
	u64 rx_to;
	u8 rx_kind;			/* what the FPDU being parsed is */
	bool rx_rtr;			/* it is the RTR (p2p responder) */
	u32 rx_bytes;			/* payload placed of this FPDU */
	struct kiwi_ird_ent rx_rreq;	/* Read Request queued at DONE */
	/* received Terminate's status for the oldest WR at the flush */
	u8 term_status;

	struct work_struct tx_work;
	/* bulk arrivals placed on another CPU (rx.c, kiwi_rx_defer) */
	struct work_struct rx_work;
	struct mutex tx_mutex;		/* lock order: see lock above */
	struct mutex stop_mutex;	/* quiesce and llp_stop */
	struct kiwi_txs *txs;		/* allocated at llp_start */
};

static inline struct kiwi_qp *to_kqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct kiwi_qp, ibqp);
}

/* a WR is in the SQ slot taken next (a snapshot; qp->lock or tx_mutex) */
static inline bool kiwi_sq_next_posted(struct kiwi_qp *qp)
{
	struct kiwi_sqe *slot = kiwi_ring_slot(&qp->sq, qp->sq_cons);

	return kiwi_slot_flags(&slot->flags) & KIWI_WQE_VALID;
}

static inline void kiwi_qp_release(struct kref *ref)
{
	complete(&container_of(ref, struct kiwi_qp, ref)->freed);
}

static inline void kiwi_qp_get(struct kiwi_qp *qp)
{
	kref_get(&qp->ref);
}

static inline void kiwi_qp_put(struct kiwi_qp *qp)
{
	kref_put(&qp->ref, kiwi_qp_release);
}

struct kiwi_qp *kiwi_qp_lookup(struct kiwi_dev *kdev, u32 qpn);
int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata);

/* qp_state.c: the engines' helpers */
void kiwi_qp_to_err(struct kiwi_qp *qp, enum ib_event_type ev);
void kiwi_qp_term_rcvd(struct kiwi_qp *qp, u8 status, enum ib_event_type ev);
void kiwi_qp_event(struct kiwi_qp *qp, enum ib_event_type type);
void kiwi_qp_flush_all(struct kiwi_qp *qp);

/* tx.c, tx_batch.c: the engines' workqueues (set up by main.c), the engine */
int kiwi_dp_init(struct dentry *debugfs);
void kiwi_dp_exit(void);
void kiwi_tx_kick(struct kiwi_qp *qp);
void kiwi_tx_kick_on(struct kiwi_qp *qp, int cpu);
void kiwi_tx_doorbell(struct kiwi_qp *qp);
void kiwi_tx_post(struct kiwi_qp *qp);
void kiwi_tx_busy_clear(struct kiwi_qp *qp);
void kiwi_tx_work(struct work_struct *work);
void kiwi_txs_free(struct kiwi_txs *txs);
u32 kiwi_txs_mulpdu(struct kiwi_txs *txs);
void kiwi_tx_write_space(struct sock *sk);
void kiwi_tx_drop_batch(struct kiwi_qp *qp, u8 *status);
void kiwi_tx_reap(struct kiwi_qp *qp);
void kiwi_pend_drain(struct kiwi_qp *qp);
void kiwi_pend_read_done(struct kiwi_qp *qp, u32 pos, u8 status);
void kiwi_tx_pend_acked(struct kiwi_txs *txs, u32 una);
struct kiwi_wc *kiwi_tx_wc_pending(struct kiwi_txs *txs, u32 i, bool *done,
				   bool *cqe);
void kiwi_tx_wc_flushed(struct kiwi_txs *txs);
void kiwi_zc_ubufs_wait(void);

/* rx.c */
int kiwi_rx_wq_init(struct dentry *dir);
void kiwi_rx_wq_exit(void);
void kiwi_rx_work(struct work_struct *work);
void kiwi_rx_data_ready(struct sock *sk);
void kiwi_rx_state_change(struct sock *sk);
void kiwi_rx_read(struct kiwi_qp *qp);
void kiwi_rx_abort_fpdu(struct kiwi_qp *qp);
void kiwi_rx_fail(struct kiwi_qp *qp, enum kiwi_err err, bool with_hdr);

#endif /* KIWI_ENGINE_H */

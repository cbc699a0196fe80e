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
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>

#include <uapi/kiwi-abi.h>

#include "compat.h"

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

struct kiwi_dev {
	struct ib_device ibdev;
	/*
	 * Not a reference: ib_device_set_netdev() holds one for as long as the
	 * device is registered, and the netdev notifier unregisters us before
	 * the netdev goes away.  Prefer ib_device_get_netdev() where a
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
};

struct kiwi_ucontext {
	struct ib_ucontext ibuc;
	struct kiwi_dev *kdev;
};

struct kiwi_pd {
	struct ib_pd ibpd;
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
};

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

	/* state and the queues' indices; posts run in atomic context */
	spinlock_t lock;
	enum ib_qp_state state;
	int access;			/* IB_QP_ACCESS_FLAGS */
	u8 ord;
	u8 ird;
	bool user;
	bool sig_all;

	struct kiwi_ring sq;
	u32 sq_prod;			/* kernel QPs */
	u32 sq_cons;
	struct kiwi_ring rq;		/* num == 0 with an SRQ */
	u32 rq_prod;
	u32 rq_cons;

	struct kiwi_cq *scq;
	struct kiwi_cq *rcq;
	struct kiwi_srq *srq;
};

enum kiwi_mr_type {
	KIWI_MR_USER,			/* pinned user memory (ib_umem) */
	KIWI_MR_DMA,			/* all of kernel memory, local use */
	KIWI_MR_FAST_REG,		/* page list set by map_mr_sg + REG_MR */
};

/*
 * Memory regions.  The STag is (index << 8) | key: the index finds the MR
 * in kdev->mr_xa, the 8-bit consumer key must match as well.  Lookups by
 * the data path take a reference under RCU; dereg waits for them.
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
	struct kref ref;
	struct completion freed;
	struct rcu_head rcu;
};

#define KIWI_STAG_INDEX(stag)	((stag) >> 8)
#define KIWI_STAG_KEY(stag)	((stag) & 0xff)

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

/* udata helpers (device.c) */
int kiwi_udata_in_ok(struct ib_udata *udata);
int kiwi_respond(struct ib_udata *udata, const void *resp, size_t len);

/* device.c */
extern const struct ib_device_ops kiwi_dev_ops;
void kiwi_port_event(struct kiwi_dev *kdev, enum ib_event_type type);

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

/* cq.c */
int kiwi_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct kiwi_cq_udata_arg *cq_udata);
int kiwi_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int kiwi_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int kiwi_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* qp.c */
int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata);
int kiwi_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata);
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
void kiwi_qp_get(struct kiwi_qp *qp);
void kiwi_qp_put(struct kiwi_qp *qp);
int kiwi_rqe_from_wr(struct kiwi_rqe *rqe, const struct ib_recv_wr *wr,
		     u32 max_sge);

/* srq.c */
int kiwi_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		    struct ib_udata *udata);
int kiwi_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int kiwi_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int kiwi_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int kiwi_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);

#endif /* KIWI_H */

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kiwi resources: PDs, MRs (STags), CQs, SRQs and the RQE helper. */
#ifndef KIWI_RES_H
#define KIWI_RES_H

#include "core/core.h"

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

enum kiwi_mr_type {
	KIWI_MR_USER,			/* pinned user memory (ib_umem) */
	KIWI_MR_DMA,			/* all of kernel memory, local use */
	KIWI_MR_FAST_REG,		/* page list set by map_mr_sg + REG_MR */
};

/*
 * Memory regions, by STag (index << 8) | key in kdev->mr_xa.  The data
 * path's lookups take a reference under RCU.
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
	atomic_t gen;			/* bumped by every change of mapping */
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

static inline struct kiwi_cq *to_kcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct kiwi_cq, ibcq);
}

static inline struct kiwi_srq *to_ksrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct kiwi_srq, ibsrq);
}

static inline struct kiwi_mr *to_kmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct kiwi_mr, ibmr);
}

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
void kiwi_mrs_put(struct kiwi_mr **mr);
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

/* wqe.c */
int kiwi_sges_from_wr(struct kiwi_sge *dst, const struct ib_sge *src, int num,
		      u32 max);
int kiwi_rqe_from_wr(struct kiwi_rqe *rqe, const struct ib_recv_wr *wr,
		     u32 max_sge);

#endif /* KIWI_RES_H */

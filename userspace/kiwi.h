/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libkiwi: the libibverbs provider for the kiwi software iWARP device.
 */
#ifndef KIWI_H
#define KIWI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "kiwi-verbs-private.h"
#include "kiwi-abi.h"

#define kiwi_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Driver response wrappers: core response, then kiwi's driver data. */
struct kiwi_resp_get_context {
	struct ib_uverbs_get_context_resp ibv;
	struct kiwi_uresp_alloc_ctx drv;
};

struct kiwi_resp_create_cq {
	struct ib_uverbs_create_cq_resp ibv;
	struct kiwi_uresp_create_cq drv;
};

struct kiwi_resp_create_qp {
	struct ib_uverbs_create_qp_resp ibv;
	struct kiwi_uresp_create_qp drv;
};

struct kiwi_resp_create_srq {
	struct ib_uverbs_create_srq_resp ibv;
	struct kiwi_uresp_create_srq drv;
};

/* No implicit padding may separate the core and the driver parts. */
_Static_assert(offsetof(struct kiwi_resp_get_context, drv) ==
	       sizeof(struct ib_uverbs_get_context_resp), "resp layout");
_Static_assert(offsetof(struct kiwi_resp_create_cq, drv) ==
	       sizeof(struct ib_uverbs_create_cq_resp), "resp layout");
_Static_assert(offsetof(struct kiwi_resp_create_qp, drv) ==
	       sizeof(struct ib_uverbs_create_qp_resp), "resp layout");
_Static_assert(offsetof(struct kiwi_resp_create_srq, drv) ==
	       sizeof(struct ib_uverbs_create_srq_resp), "resp layout");

/* The slot sizes promised by kiwi-abi.h. */
_Static_assert(sizeof(struct kiwi_sqe) == 128, "SQ slot size");
_Static_assert(sizeof(struct kiwi_rqe) == 128, "RQ slot size");
_Static_assert(sizeof(struct kiwi_cqe) == 32, "CQ slot size");
_Static_assert(sizeof(struct kiwi_cq_ctrl) == 64, "CQ control size");
_Static_assert(sizeof(struct kiwi_sq_ctrl) == 64, "SQ control size");
_Static_assert(sizeof(struct kiwi_rq_ctrl) == 64, "RQ control size");

struct kiwi_device {
	struct kiwi_verbs_device vdev;
};

struct kiwi_context {
	struct verbs_context vctx;
	uint32_t dev_id;
	uint32_t max_sge;	/* min(kernel's, KIWI_MAX_SGE) */
	uint32_t max_inline;	/* min(kernel's, KIWI_MAX_INLINE) */
	/*
	 * 1 while the kernel takes the doorbell method; 0 once it answered
	 * EPROTONOSUPPORT (a kiwi.ko older than the method).
	 */
	int db_ioctl;
};

/* A mapped ring: `num' slots of `slot_size' bytes, then a control block. */
struct kiwi_ring {
	void *map;		/* NULL when there is no ring */
	size_t map_len;
	uint32_t num;
	uint32_t head;		/* next slot this side produces/consumes */
	pthread_spinlock_t lock;
	/*
	 * The control block's `alive' word and its value when mapped
	 * (kiwi-abi.h); 0 from a kernel without it.  dead: seen changed,
	 * the device is gone and the mapping is ib_uverbs' dummy page.
	 */
	const uint32_t *alive_word;
	uint32_t alive;
	int dead;
};

/*
 * Has the device gone away under this ring?  Once it has, nothing read
 * from the ring came from the kernel and nothing written reaches it.
 */
static inline int kiwi_ring_dead(struct kiwi_ring *ring)
{
	if (__atomic_load_n(&ring->dead, __ATOMIC_RELAXED))
		return 1;
	if (!ring->alive ||
	    __atomic_load_n(ring->alive_word, __ATOMIC_RELAXED) == ring->alive)
		return 0;
	__atomic_store_n(&ring->dead, 1, __ATOMIC_RELAXED);
	return 1;
}

struct kiwi_cq {
	struct ibv_cq ibv_cq;
	uint32_t id;
	struct kiwi_ring ring;
	struct kiwi_cqe *cqe;
	struct kiwi_cq_ctrl *ctrl;
};

struct kiwi_srq {
	struct ibv_srq ibv_srq;
	uint32_t max_sge;
	struct kiwi_ring ring;
	struct kiwi_rqe *rqe;
};

/* struct ib_uverbs_post_send, with its header, minus send_wr[] */
struct kiwi_db_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	uint64_t response;
	uint32_t qp_handle;
	uint32_t wr_count;
	uint32_t sge_count;
	uint32_t wqe_size;
};
_Static_assert(sizeof(struct kiwi_db_cmd) ==
	       sizeof(struct ib_uverbs_cmd_hdr) +
	       sizeof(struct ib_uverbs_post_send), "doorbell command layout");

/* the doorbell method (kiwi-abi.h): the ioctl header and its one attribute */
struct kiwi_db_ioctl {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr qp;
};
_Static_assert(offsetof(struct kiwi_db_ioctl, qp) ==
	       sizeof(struct ib_uverbs_ioctl_hdr), "doorbell ioctl layout");

struct kiwi_qp {
	struct ibv_qp ibv_qp;
	uint32_t id;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	int sq_sig_all;
	/*
	 * Moved to RESET by a modify: posts are refused.  Not ibv_qp.state,
	 * which reads RESET from creation (the kernel's QP is in INIT) until
	 * the application's first modify, and which iw_cm's move to RTS
	 * never updates.
	 */
	bool in_reset;
	struct kiwi_ring sq;
	struct kiwi_ring rq;	/* rq.map == NULL with an SRQ */
	struct kiwi_sqe *sqe;
	struct kiwi_rqe *rqe;
	struct kiwi_sq_ctrl *sq_ctrl;	/* after the last SQ slot */
	struct kiwi_rq_ctrl *rq_ctrl;	/* after the last RQ slot; NULL with an SRQ */
	/*
	 * The SQ doorbell: kiwi's ioctl method, or on an older kiwi.ko
	 * IB_USER_VERBS_CMD_POST_SEND without work requests by write() (the
	 * legacy path, which allocates a WR buffer per call in the kernel).
	 */
	struct kiwi_db_ioctl db_ioctl;
	struct kiwi_db_cmd db;
	struct ib_uverbs_post_send_resp db_resp;
};

static inline struct kiwi_context *kiwi_ctx(struct ibv_context *c)
{
	return kiwi_container_of(c, struct kiwi_context, vctx.context);
}

static inline struct kiwi_cq *kiwi_cq(struct ibv_cq *c)
{
	return kiwi_container_of(c, struct kiwi_cq, ibv_cq);
}

static inline struct kiwi_qp *kiwi_qp(struct ibv_qp *q)
{
	return kiwi_container_of(q, struct kiwi_qp, ibv_qp);
}

static inline struct kiwi_srq *kiwi_srq(struct ibv_srq *s)
{
	return kiwi_container_of(s, struct kiwi_srq, ibv_srq);
}

#define kiwi_log(ctx, fmt, ...)						\
	__verbs_log(&(ctx)->vctx, KIWI_VERBS_LOG_ERR, "kiwi: %s: " fmt,	\
		    (ctx)->vctx.context.device->name, ##__VA_ARGS__)

/* verbs.c: object verbs */
int kiwi_query_device(struct ibv_context *ctx,
		      const struct ibv_query_device_ex_input *input,
		      struct ibv_device_attr_ex *attr, size_t attr_size);
int kiwi_query_port(struct ibv_context *ctx, uint8_t port,
		    struct ibv_port_attr *attr);
struct ibv_pd *kiwi_alloc_pd(struct ibv_context *ctx);
int kiwi_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *kiwi_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			   uint64_t hca_va, int access);
int kiwi_dereg_mr(struct kiwi_verbs_mr *vmr);
struct ibv_cq *kiwi_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
int kiwi_destroy_cq(struct ibv_cq *cq);
struct ibv_qp *kiwi_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr);
struct ibv_qp *kiwi_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr);
int kiwi_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init_attr);
int kiwi_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int kiwi_destroy_qp(struct ibv_qp *qp);
struct ibv_srq *kiwi_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
int kiwi_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		    int mask);
int kiwi_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int kiwi_destroy_srq(struct ibv_srq *srq);

/* ring.c: the fast path on the mapped rings */
int kiwi_ring_map(struct kiwi_context *ctx, struct kiwi_ring *ring,
		  uint64_t key, uint32_t num, size_t slot_size,
		  size_t ctrl_size);
void kiwi_ring_unmap(struct kiwi_ring *ring);
int kiwi_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
int kiwi_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int kiwi_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int kiwi_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int kiwi_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);

#endif /* KIWI_H */

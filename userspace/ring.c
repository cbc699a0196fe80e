// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: the fast path.  Posting writes work requests into the SQ, RQ or
 * SRQ ring shared with kiwi.ko; polling reads completions from the CQ ring.
 * Ownership of a slot is its VALID bit (see kiwi-abi.h): a producer fills
 * the slot and then publishes it with a release store of the flags; a
 * consumer sees the bit with an acquire load, copies the slot, and hands
 * it back with a release store that clears the bit.  The kernel copies
 * and validates every slot we write, so nothing here is trusted by it.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kiwi.h"

/* Far above any device limit; only guards the size computation. */
#define KIWI_RING_MAX_SLOTS	(1U << 24)

int kiwi_ring_map(struct kiwi_context *ctx, struct kiwi_ring *ring,
		  uint64_t key, uint32_t num, size_t slot_size,
		  size_t ctrl_size)
{
	void *map;
	size_t len;

	if (key == KIWI_INVAL_KEY || !num || num > KIWI_RING_MAX_SLOTS ||
	    ctrl_size < KIWI_CTRL_ALIVE_OFFSET + sizeof(uint32_t)) {
		kiwi_log(ctx, "bad ring: key %#llx, %u slots\n",
			 (unsigned long long)key, num);
		return EPROTO;
	}
	len = (size_t)num * slot_size + ctrl_size;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ctx->vctx.context.cmd_fd, (off_t)key);
	if (map == MAP_FAILED) {
		int err = errno;

		kiwi_log(ctx, "mmap of ring %#llx (%zu bytes) failed: %s\n",
			 (unsigned long long)key, len, strerror(err));
		return err;
	}
	ring->map = map;
	ring->map_len = len;
	ring->num = num;
	ring->head = 0;
	ring->alive_word = (const uint32_t *)((char *)map +
					      (size_t)num * slot_size +
					      KIWI_CTRL_ALIVE_OFFSET);
	ring->alive = __atomic_load_n(ring->alive_word, __ATOMIC_RELAXED);
	ring->dead = 0;
	pthread_spin_init(&ring->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

void kiwi_ring_unmap(struct kiwi_ring *ring)
{
	if (!ring->map)
		return;
	munmap(ring->map, ring->map_len);
	pthread_spin_destroy(&ring->lock);
	ring->map = NULL;
}

static inline uint32_t kiwi_ring_next(const struct kiwi_ring *ring,
				      uint32_t idx)
{
	return idx + 1 == ring->num ? 0 : idx + 1;
}

/* enum kiwi_opcode of a CQE -> enum ibv_wc_opcode */
static int kiwi_wc_opcode(uint8_t op, enum ibv_wc_opcode *wc_op)
{
	switch (op) {
	case KIWI_OP_WRITE:
		*wc_op = IBV_WC_RDMA_WRITE;
		return 0;
	case KIWI_OP_READ:
	case KIWI_OP_READ_LOCAL_INV:
		*wc_op = IBV_WC_RDMA_READ;
		return 0;
	case KIWI_OP_SEND:
	case KIWI_OP_SEND_INV:
		*wc_op = IBV_WC_SEND;
		return 0;
	case KIWI_OP_LOCAL_INV:
		*wc_op = IBV_WC_LOCAL_INV;
		return 0;
	case KIWI_OP_RECEIVE:
		*wc_op = IBV_WC_RECV;
		return 0;
	default:
		return -1;
	}
}

static void kiwi_cqe_to_wc(const struct kiwi_cqe *cqe, uint8_t flags,
			   struct ibv_wc *wc)
{
	uint8_t status = cqe->status;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->id;
	wc->byte_len = cqe->bytes;
	wc->qp_num = cqe->qp_id;
	/* ib_wc_status and ibv_wc_status agree up to GENERAL_ERR. */
	wc->status = status <= IBV_WC_GENERAL_ERR ? (enum ibv_wc_status)status :
		     IBV_WC_GENERAL_ERR;
	if (kiwi_wc_opcode(cqe->opcode, &wc->opcode)) {
		wc->opcode = IBV_WC_SEND;
		wc->status = IBV_WC_GENERAL_ERR;
	}
	if (flags & KIWI_CQE_INVALIDATED) {
		wc->wc_flags |= IBV_WC_WITH_INV;
		wc->invalidated_rkey = cqe->inval_stag;
	}
}

int kiwi_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct kiwi_cq *cq = kiwi_cq(ibcq);
	int n;

	if (num < 0)
		return -EINVAL;

	pthread_spin_lock(&cq->ring.lock);
	/* A removed device completes nothing: its WRs are gone with it. */
	if (kiwi_ring_dead(&cq->ring)) {
		pthread_spin_unlock(&cq->ring.lock);
		return 0;
	}
	for (n = 0; n < num; n++) {
		struct kiwi_cqe *cqe = &cq->cqe[cq->ring.head];
		uint8_t flags = __atomic_load_n(&cqe->flags, __ATOMIC_ACQUIRE);

		if (!(flags & KIWI_CQE_VALID))
			break;
		kiwi_cqe_to_wc(cqe, flags, &wc[n]);
		/*
		 * The slot's loads before the check: if the ring was still
		 * the kernel's after them, so it was during them (the zap
		 * replaces all its pages at once).  Otherwise the "CQE" is
		 * whatever this process wrote into the dummy page.
		 */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (kiwi_ring_dead(&cq->ring))
			break;
		__atomic_store_n(&cqe->flags, 0, __ATOMIC_RELEASE);
		cq->ring.head = kiwi_ring_next(&cq->ring, cq->ring.head);
	}
	pthread_spin_unlock(&cq->ring.lock);
	return n;
}

int kiwi_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct kiwi_cq *cq = kiwi_cq(ibcq);

	if (kiwi_ring_dead(&cq->ring))
		return EIO;
	/*
	 * OR, not store: an armed "next completion" request stays the more
	 * inclusive one until the kernel raises the event and clears the
	 * word.  Sequentially consistent: the arming must be visible before
	 * the caller's next poll reads the ring, or a completion written in
	 * between would raise no event and be missed.
	 */
	__atomic_fetch_or(&cq->ctrl->notify,
			  solicited_only ? KIWI_NOTIFY_SOLICITED :
					   KIWI_NOTIFY_NEXT,
			  __ATOMIC_SEQ_CST);
	return 0;
}

static int kiwi_sqe_opcode(const struct ibv_send_wr *wr, uint8_t *op)
{
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
		*op = KIWI_OP_WRITE;
		return 0;
	case IBV_WR_RDMA_READ:
		*op = KIWI_OP_READ;
		return 0;
	case IBV_WR_SEND:
		*op = KIWI_OP_SEND;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		*op = KIWI_OP_SEND_INV;
		return 0;
	case IBV_WR_LOCAL_INV:
		*op = KIWI_OP_LOCAL_INV;
		return 0;
	default:
		/* No immediate data, atomics, MW binds or TSO on iWARP here. */
		return EINVAL;
	}
}

#define KIWI_SEND_FLAGS (IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
			 IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/* Fill the SQE *sqe (an unpublished slot) from wr; flags get published. */
static int kiwi_build_sqe(struct kiwi_qp *qp, const struct ibv_send_wr *wr,
			  struct kiwi_sqe *sqe, uint16_t *flags)
{
	uint8_t op;
	int i;

	if (kiwi_sqe_opcode(wr, &op))
		return EINVAL;
	if (wr->send_flags & ~KIWI_SEND_FLAGS)
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	if (wr->num_sge && !wr->sg_list)
		return EINVAL;

	*flags = 0;
	if ((wr->send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		*flags |= KIWI_WQE_SIGNALED;
	if (wr->send_flags & IBV_SEND_SOLICITED)
		*flags |= KIWI_WQE_SOLICITED;
	if (wr->send_flags & IBV_SEND_FENCE)
		*flags |= KIWI_WQE_READ_FENCE;

	sqe->id = wr->wr_id;
	sqe->opcode = op;
	sqe->rkey = 0;
	sqe->raddr = 0;
	sqe->inval_stag = 0;
	sqe->inline_len = 0;

	switch (op) {
	case KIWI_OP_READ:
		/* iWARP places a Read Response into one local buffer. */
		if (wr->num_sge > KIWI_MAX_SGE_RD)
			return EINVAL;
		/* fall through */
	case KIWI_OP_WRITE:
		sqe->rkey = wr->wr.rdma.rkey;
		sqe->raddr = wr->wr.rdma.remote_addr;
		break;
	case KIWI_OP_SEND_INV:
		sqe->inval_stag = wr->invalidate_rkey;
		break;
	case KIWI_OP_LOCAL_INV:
		sqe->inval_stag = wr->invalidate_rkey;
		if (wr->send_flags & IBV_SEND_INLINE)
			return EINVAL;
		sqe->num_sge = 0;
		return 0;
	default:
		break;
	}

	if (wr->send_flags & IBV_SEND_INLINE) {
		size_t total = 0;

		/* Inline data is the local source: a Read has none. */
		if (op == KIWI_OP_READ)
			return EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			size_t len = wr->sg_list[i].length;

			if (len > qp->max_inline - total)
				return EINVAL;
			if (len && !wr->sg_list[i].addr)
				return EINVAL;
			memcpy(sqe->inline_data + total,
			       (const void *)(uintptr_t)wr->sg_list[i].addr,
			       len);
			total += len;
		}
		*flags |= KIWI_WQE_INLINE;
		sqe->num_sge = 0;
		sqe->inline_len = (uint32_t)total;
		return 0;
	}

	for (i = 0; i < wr->num_sge; i++) {
		sqe->sge[i].addr = wr->sg_list[i].addr;
		sqe->sge[i].length = wr->sg_list[i].length;
		sqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	sqe->num_sge = (uint8_t)wr->num_sge;
	return 0;
}

/*
 * Tell the kernel the SQ has new work: kiwi's doorbell method, or where
 * the kernel lacks it a legacy POST_SEND command with no work requests,
 * which ib_uverbs hands to kiwi's post_send() as a NULL list.  Either
 * fails as post_send() does (EINVAL in RESET, EIO once the device went).
 */
static int kiwi_ring_doorbell(struct kiwi_qp *qp)
{
	struct ibv_context *ibctx = qp->ibv_qp.context;
	struct kiwi_context *ctx = kiwi_ctx(ibctx);
	ssize_t n;

	if (__atomic_load_n(&ctx->db_ioctl, __ATOMIC_RELAXED)) {
		if (!ioctl(ibctx->cmd_fd, RDMA_VERBS_IOCTL, &qp->db_ioctl))
			return 0;
		if (errno != EPROTONOSUPPORT)
			return errno;
		kiwi_log(ctx, "kernel has no doorbell method: POST_SEND instead\n");
		__atomic_store_n(&ctx->db_ioctl, 0, __ATOMIC_RELAXED);
	}
	n = write(ibctx->cmd_fd, &qp->db, sizeof(qp->db));

	if (n == (ssize_t)sizeof(qp->db))
		return 0;
	return n < 0 ? errno : EIO;
}

/*
 * The kernel refused the doorbell (the QP cannot process its SQ): take back
 * the `posted' WRs just published, newest first, which end before slot
 * `end'.  The compare-exchange loses only against a kernel that consumed
 * the slot already (a flush racing with this post); that WR and all older
 * ones then count as posted.  If another thread has posted behind ours
 * meanwhile, ours are no longer the newest and stay posted.  Returns how
 * many WRs stay posted.
 */
static unsigned int kiwi_sq_unpost(struct kiwi_qp *qp, unsigned int posted,
				   uint32_t end)
{
	struct kiwi_ring *sq = &qp->sq;
	unsigned int n = posted;

	pthread_spin_lock(&sq->lock);
	if (sq->head != end) {
		pthread_spin_unlock(&sq->lock);
		return posted;
	}
	while (n) {
		uint32_t idx = sq->head ? sq->head - 1 : sq->num - 1;
		struct kiwi_sqe *slot = &qp->sqe[idx];
		uint16_t flags = __atomic_load_n(&slot->flags,
						 __ATOMIC_ACQUIRE);

		if (!(flags & KIWI_WQE_VALID) ||
		    !__atomic_compare_exchange_n(&slot->flags, &flags, 0,
						 false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			break;
		sq->head = idx;
		n--;
	}
	pthread_spin_unlock(&sq->lock);
	return n;
}

int kiwi_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct kiwi_qp *qp = kiwi_qp(ibqp);
	struct kiwi_ring *sq = &qp->sq;
	struct ibv_send_wr *first = wr;
	unsigned int posted = 0, kept;
	uint32_t end;
	int err = 0, db;

	/*
	 * A QP moved to RESET has no queues.  Other states are the kernel's
	 * to judge (at the doorbell): iWARP connection setup moves the QP to
	 * RTS without libibverbs' cached state ever changing.
	 */
	if (qp->in_reset) {
		*bad_wr = wr;
		return EINVAL;
	}
	if (kiwi_ring_dead(sq)) {
		*bad_wr = wr;
		return EIO;
	}

	pthread_spin_lock(&sq->lock);
	for (; wr; wr = wr->next) {
		struct kiwi_sqe *slot = &qp->sqe[sq->head];
		uint16_t flags;

		if (__atomic_load_n(&slot->flags, __ATOMIC_ACQUIRE) &
		    KIWI_WQE_VALID) {
			err = ENOMEM;
			break;
		}
		/*
		 * The slot is ours until VALID is set: the kernel ignores it,
		 * so a WR rejected half-way leaves nothing behind.
		 */
		err = kiwi_build_sqe(qp, wr, slot, &flags);
		if (err)
			break;
		__atomic_store_n(&slot->flags, flags | KIWI_WQE_VALID,
				 __ATOMIC_RELEASE);
		sq->head = kiwi_ring_next(sq, sq->head);
		posted++;
	}
	end = sq->head;
	pthread_spin_unlock(&sq->lock);

	if (err)
		*bad_wr = wr;
	if (!posted)
		return err;
	/*
	 * Doorbell only when the kernel's engine is not certain to look at
	 * the SQ again.  The fence orders our VALID stores before the load
	 * of engine_busy; the kernel clears the word, fences and re-reads
	 * the slot, so one side always sees the other (kiwi-abi.h).
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/*
	 * The device went away while we posted: the WRs went to the dummy
	 * page (or to a QP already destroyed), none will ever complete.
	 */
	if (kiwi_ring_dead(sq)) {
		*bad_wr = first;
		return EIO;
	}
	if (__atomic_load_n(&qp->sq_ctrl->engine_busy, __ATOMIC_RELAXED))
		return err;
	db = kiwi_ring_doorbell(qp);
	kept = db ? kiwi_sq_unpost(qp, posted, end) : posted;
	/* The first WR taken back is where the failure lies. */
	if (kept < posted) {
		for (wr = first; kept--; wr = wr->next)
			;
		*bad_wr = wr;
		err = db;
	}
	return err;
}

static int kiwi_post_rqe(struct kiwi_ring *ring, struct kiwi_rqe *rqes,
			 uint32_t max_sge, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	struct ibv_recv_wr *first = wr;
	int err = 0;

	if (kiwi_ring_dead(ring)) {
		*bad_wr = wr;
		return EIO;
	}
	pthread_spin_lock(&ring->lock);
	for (; wr; wr = wr->next) {
		struct kiwi_rqe *slot = &rqes[ring->head];
		int i;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		if (__atomic_load_n(&slot->flags, __ATOMIC_ACQUIRE) &
		    KIWI_WQE_VALID) {
			err = ENOMEM;
			break;
		}
		slot->id = wr->wr_id;
		slot->num_sge = (uint8_t)wr->num_sge;
		slot->reserved0 = 0;
		slot->reserved1 = 0;
		memset(slot->reserved2, 0, sizeof(slot->reserved2));
		for (i = 0; i < wr->num_sge; i++) {
			slot->sge[i].addr = wr->sg_list[i].addr;
			slot->sge[i].length = wr->sg_list[i].length;
			slot->sge[i].lkey = wr->sg_list[i].lkey;
		}
		__atomic_store_n(&slot->flags, KIWI_WQE_VALID,
				 __ATOMIC_RELEASE);
		ring->head = kiwi_ring_next(ring, ring->head);
	}
	pthread_spin_unlock(&ring->lock);

	if (err)
		*bad_wr = wr;
	/*
	 * As for the SQ: posted into a ring that is gone.  No fence: a WR
	 * that reached the real ring just before the zap is as lost, the
	 * QP having been destroyed first; this only says so sooner.
	 */
	if (kiwi_ring_dead(ring)) {
		*bad_wr = first;
		return EIO;
	}
	return err;
}

int kiwi_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct kiwi_qp *qp = kiwi_qp(ibqp);
	int err;

	/* Receives of a QP with an SRQ go to the SRQ. */
	if (!qp->rq.map || qp->in_reset) {
		*bad_wr = wr;
		return EINVAL;
	}
	/*
	 * No doorbell while the QP works: the kernel takes an RQE when a
	 * message arrives.  Once the QP is in ERR and flushed, only a
	 * doorbell completes what is posted (see kiwi_rq_ctrl).
	 */
	err = kiwi_post_rqe(&qp->rq, qp->rqe, qp->max_recv_sge, wr, bad_wr);
	if (!err || *bad_wr != wr) {	/* something was posted */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&qp->rq_ctrl->flush, __ATOMIC_RELAXED)) {
			struct ibv_recv_wr *bad = NULL;

			ibv_cmd_post_recv(ibqp, NULL, &bad);
		}
	}
	return err;
}

int kiwi_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct kiwi_srq *srq = kiwi_srq(ibsrq);

	return kiwi_post_rqe(&srq->ring, srq->rqe, srq->max_sge, wr, bad_wr);
}

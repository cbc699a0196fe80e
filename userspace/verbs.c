// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: verbs objects.  Creation and destruction go through ib_uverbs
 * (libibverbs' ibv_cmd_* helpers); the kernel validates every attribute and
 * owns the limits.  The provider adds what only it can do: map the rings
 * the kernel returns keys for, and check the ring geometry it is given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kiwi.h"

int kiwi_query_device(struct ibv_context *ctx,
		      const struct ibv_query_device_ex_input *input,
		      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int err;

	err = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err)
		return err;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

int kiwi_query_port(struct ibv_context *ctx, uint8_t port,
		    struct ibv_port_attr *attr)
{
	struct kiwi_ibv_query_port cmd = {};

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *kiwi_alloc_pd(struct ibv_context *ctx)
{
	struct kiwi_ibv_alloc_pd cmd = {};
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	return pd;
}

int kiwi_dealloc_pd(struct ibv_pd *pd)
{
	int err = ibv_cmd_dealloc_pd(pd);

	if (err)
		return err;	/* e.g. EBUSY: the PD stays valid */
	free(pd);
	return 0;
}

struct ibv_mr *kiwi_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			   uint64_t hca_va, int access)
{
	struct kiwi_ibv_reg_mr cmd = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	struct kiwi_verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_reg_mr(pd, addr, len, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

int kiwi_dereg_mr(struct kiwi_verbs_mr *vmr)
{
	int err = ibv_cmd_dereg_mr(vmr);

	if (err)
		return err;
	free(vmr);
	return 0;
}

struct ibv_cq *kiwi_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct kiwi_context *ctx = kiwi_ctx(ibctx);
	struct kiwi_ibv_create_cq cmd = {};
	struct kiwi_resp_create_cq resp = {};
	struct kiwi_cq *cq;
	int err;

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->ibv_cq,
				&cmd, sizeof(cmd), &resp.ibv, sizeof(resp));
	if (err)
		goto fail_free;

	/* The ring must hold at least what the kernel promised the user. */
	if (resp.drv.num_cqe < resp.ibv.cqe || !resp.drv.num_cqe) {
		kiwi_log(ctx, "CQ ring of %u slots for %u CQEs\n",
			 resp.drv.num_cqe, resp.ibv.cqe);
		err = EPROTO;
		goto fail_destroy;
	}
	err = kiwi_ring_map(ctx, &cq->ring, resp.drv.cq_key, resp.drv.num_cqe,
			    sizeof(struct kiwi_cqe),
			    sizeof(struct kiwi_cq_ctrl));
	if (err)
		goto fail_destroy;
	cq->id = resp.drv.cq_id;
	cq->cqe = cq->ring.map;
	cq->ctrl = (struct kiwi_cq_ctrl *)(cq->cqe + cq->ring.num);
	return &cq->ibv_cq;

fail_destroy:
	ibv_cmd_destroy_cq(&cq->ibv_cq);
fail_free:
	free(cq);
	errno = err;
	return NULL;
}

int kiwi_destroy_cq(struct ibv_cq *ibcq)
{
	struct kiwi_cq *cq = kiwi_cq(ibcq);
	int err;

	/* The kernel refuses (EBUSY) while a QP uses the CQ: keep the ring. */
	err = ibv_cmd_destroy_cq(ibcq);
	if (err)
		return err;
	kiwi_ring_unmap(&cq->ring);
	free(cq);
	return 0;
}

struct ibv_qp *kiwi_create_qp(struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr)
{
	struct kiwi_context *ctx = kiwi_ctx(pd->context);
	struct kiwi_ibv_create_qp cmd = {};
	struct kiwi_resp_create_qp resp = {};
	struct kiwi_qp *qp;
	int err;

	/* libibverbs dereferences both CQs while building the command. */
	if (!attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_qp(pd, &qp->ibv_qp, attr, &cmd, sizeof(cmd),
				&resp.ibv, sizeof(resp));
	if (err)
		goto fail_free;

	if (resp.drv.num_sqe < attr->cap.max_send_wr || !resp.drv.num_sqe ||
	    (attr->srq && resp.drv.rq_key != KIWI_INVAL_KEY) ||
	    (!attr->srq && (resp.drv.rq_key == KIWI_INVAL_KEY ||
			    !resp.drv.num_rqe ||
			    resp.drv.num_rqe < attr->cap.max_recv_wr))) {
		kiwi_log(ctx, "bad QP ring geometry from kernel\n");
		err = EPROTO;
		goto fail_destroy;
	}
	err = kiwi_ring_map(ctx, &qp->sq, resp.drv.sq_key, resp.drv.num_sqe,
			    sizeof(struct kiwi_sqe),
			    sizeof(struct kiwi_sq_ctrl));
	if (err)
		goto fail_destroy;
	if (!attr->srq) {
		err = kiwi_ring_map(ctx, &qp->rq, resp.drv.rq_key,
				    resp.drv.num_rqe, sizeof(struct kiwi_rqe),
				    sizeof(struct kiwi_rq_ctrl));
		if (err)
			goto fail_unmap_sq;
	}
	qp->id = resp.drv.qp_id;
	qp->sqe = qp->sq.map;
	qp->sq_ctrl = (struct kiwi_sq_ctrl *)(qp->sqe + qp->sq.num);
	qp->rqe = qp->rq.map;
	qp->rq_ctrl = qp->rq.map ?
		(struct kiwi_rq_ctrl *)(qp->rqe + qp->rq.num) : NULL;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->db_ioctl.hdr.length = sizeof(qp->db_ioctl);
	qp->db_ioctl.hdr.object_id = UVERBS_OBJECT_QP;
	qp->db_ioctl.hdr.method_id = KIWI_IB_METHOD_QP_DOORBELL;
	qp->db_ioctl.hdr.num_attrs = 1;
	qp->db_ioctl.hdr.driver_id = KIWI_DRIVER_ID;
	qp->db_ioctl.qp.attr_id = KIWI_IB_ATTR_DOORBELL_QP;
	qp->db_ioctl.qp.data = qp->ibv_qp.handle;
	qp->db.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	qp->db.hdr.in_words = sizeof(qp->db) / 4;
	qp->db.hdr.out_words = sizeof(qp->db_resp) / 4;
	qp->db.response = (uintptr_t)&qp->db_resp;
	qp->db.qp_handle = qp->ibv_qp.handle;
	/* the kernel insists on a WR size it knows, even for no WRs */
	qp->db.wqe_size = sizeof(struct ib_uverbs_send_wr);
	/* Validate posts against what the kernel granted, never beyond the
	 * slot format. */
	qp->max_send_sge = attr->cap.max_send_sge < ctx->max_sge ?
			   attr->cap.max_send_sge : ctx->max_sge;
	qp->max_recv_sge = attr->cap.max_recv_sge < ctx->max_sge ?
			   attr->cap.max_recv_sge : ctx->max_sge;
	qp->max_inline = attr->cap.max_inline_data < ctx->max_inline ?
			 attr->cap.max_inline_data : ctx->max_inline;
	/*
	 * The kernel created the QP in INIT (ibv_query_qp says so), but
	 * ibv_qp.state keeps the RESET libibverbs gave it, as applications
	 * and rdma-core's tests expect of a new QP; in_reset, not that
	 * field, decides whether posts are taken.
	 */
	return &qp->ibv_qp;

fail_unmap_sq:
	kiwi_ring_unmap(&qp->sq);
fail_destroy:
	ibv_cmd_destroy_qp(&qp->ibv_qp);
fail_free:
	free(qp);
	errno = err;
	return NULL;
}

/*
 * ibv_create_qp_ex() comes here for any comp_mask but PD alone.  Of the
 * extensions kiwi has none (no XRC, RSS, send-ops API or create flags),
 * but a mask naming create flags with none set asks for nothing more
 * than ibv_create_qp() does: take it rather than refuse a plain RC QP.
 */
struct ibv_qp *kiwi_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t plain = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS;

	(void)ibctx;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & ~plain) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* the ex attributes begin with ibv_qp_init_attr, as libibverbs uses */
	return kiwi_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
}

int kiwi_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init_attr)
{
	struct kiwi_ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(qp, attr, mask, init_attr, &cmd, sizeof(cmd));
}

int kiwi_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct kiwi_ibv_modify_qp cmd = {};
	struct kiwi_qp *qp = kiwi_qp(ibqp);
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (err)
		return err;

	if (mask & IBV_QP_STATE)
		qp->in_reset = attr->qp_state == IBV_QPS_RESET;
	/*
	 * RESET empties the queues: the kernel has dropped every posted WQE
	 * and restarts at slot 0, so do we.
	 */
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		pthread_spin_lock(&qp->sq.lock);
		memset(qp->sq.map, 0, (size_t)qp->sq.num * sizeof(*qp->sqe));
		qp->sq.head = 0;
		pthread_spin_unlock(&qp->sq.lock);
		if (qp->rq.map) {
			pthread_spin_lock(&qp->rq.lock);
			memset(qp->rq.map, 0,
			       (size_t)qp->rq.num * sizeof(*qp->rqe));
			qp->rq.head = 0;
			pthread_spin_unlock(&qp->rq.lock);
		}
	}
	return 0;
}

int kiwi_destroy_qp(struct ibv_qp *ibqp)
{
	struct kiwi_qp *qp = kiwi_qp(ibqp);
	int err;

	err = ibv_cmd_destroy_qp(ibqp);
	if (err)
		return err;
	kiwi_ring_unmap(&qp->rq);
	kiwi_ring_unmap(&qp->sq);
	free(qp);
	return 0;
}

struct ibv_srq *kiwi_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct kiwi_context *ctx = kiwi_ctx(pd->context);
	struct kiwi_ibv_create_srq cmd = {};
	struct kiwi_resp_create_srq resp = {};
	struct kiwi_srq *srq;
	int err;

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv, sizeof(resp));
	if (err)
		goto fail_free;

	if (!resp.drv.num_rqe || resp.drv.num_rqe < attr->attr.max_wr) {
		kiwi_log(ctx, "SRQ ring of %u slots for %u WRs\n",
			 resp.drv.num_rqe, attr->attr.max_wr);
		err = EPROTO;
		goto fail_destroy;
	}
	err = kiwi_ring_map(ctx, &srq->ring, resp.drv.srq_key,
			    resp.drv.num_rqe, sizeof(struct kiwi_rqe),
			    sizeof(struct kiwi_rq_ctrl));
	if (err)
		goto fail_destroy;
	srq->rqe = srq->ring.map;
	srq->max_sge = attr->attr.max_sge < ctx->max_sge ?
		       attr->attr.max_sge : ctx->max_sge;
	return &srq->ibv_srq;

fail_destroy:
	ibv_cmd_destroy_srq(&srq->ibv_srq);
fail_free:
	free(srq);
	errno = err;
	return NULL;
}

int kiwi_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		    int mask)
{
	struct kiwi_ibv_modify_srq cmd = {};

	/* Resizing would need a new mapping: the ring is fixed at creation. */
	if (mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP;
	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

int kiwi_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct kiwi_ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int kiwi_destroy_srq(struct ibv_srq *ibsrq)
{
	struct kiwi_srq *srq = kiwi_srq(ibsrq);
	int err;

	err = ibv_cmd_destroy_srq(ibsrq);
	if (err)
		return err;
	kiwi_ring_unmap(&srq->ring);
	free(srq);
	return 0;
}

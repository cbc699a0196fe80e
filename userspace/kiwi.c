// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libkiwi: provider registration, device and context.
 *
 * libibverbs dlopen()s libkiwi-rdmav34.so (named by kiwi.driver or by
 * RDMAV_DRIVERS); our constructor registers kiwi_dev_ops, and the library
 * binds every uverbs device whose kernel driver id is KIWI_DRIVER_ID and
 * whose uverbs ABI version is KIWI_ABI_VERSION.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiwi.h"

static void kiwi_free_context(struct ibv_context *ibctx)
{
	struct kiwi_context *ctx = kiwi_ctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct kiwi_verbs_context_ops kiwi_ctx_ops = {
	.alloc_pd = kiwi_alloc_pd,
	.create_cq = kiwi_create_cq,
	.create_qp = kiwi_create_qp,
	.create_qp_ex = kiwi_create_qp_ex,
	.create_srq = kiwi_create_srq,
	.dealloc_pd = kiwi_dealloc_pd,
	.dereg_mr = kiwi_dereg_mr,
	.destroy_cq = kiwi_destroy_cq,
	.destroy_qp = kiwi_destroy_qp,
	.destroy_srq = kiwi_destroy_srq,
	.free_context = kiwi_free_context,
	.modify_qp = kiwi_modify_qp,
	.modify_srq = kiwi_modify_srq,
	.poll_cq = kiwi_poll_cq,
	.post_recv = kiwi_post_recv,
	.post_send = kiwi_post_send,
	.post_srq_recv = kiwi_post_srq_recv,
	.query_device_ex = kiwi_query_device,
	.query_port = kiwi_query_port,
	.query_qp = kiwi_query_qp,
	.query_srq = kiwi_query_srq,
	.reg_mr = kiwi_reg_mr,
	.req_notify_cq = kiwi_req_notify_cq,
};

static struct verbs_context *kiwi_alloc_context(struct ibv_device *ibdev,
						int cmd_fd, void *private_data)
{
	struct kiwi_ibv_get_context cmd = {};
	struct kiwi_resp_get_context resp = {};
	struct kiwi_context *ctx;
	int err;

	(void)private_data;
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    &((struct kiwi_context *)NULL)->vctx,
					    KIWI_DRIVER_ID);
	if (!ctx)
		return NULL;

	err = ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp.ibv,
				  sizeof(resp));
	if (err)
		goto fail;

	/*
	 * libibverbs matched the uverbs ABI version already; this checks the
	 * version of kiwi's own ring/response layouts, which the kernel
	 * reports here, so a mismatched pair fails loudly instead of
	 * misreading shared memory.
	 */
	if (resp.drv.abi_version != KIWI_ABI_VERSION) {
		kiwi_log(ctx, "kernel kiwi ABI version %u, provider supports %u\n",
			 resp.drv.abi_version, KIWI_ABI_VERSION);
		fprintf(stderr,
			"libkiwi: %s: kernel kiwi ABI version %u but this provider supports only %u; install matching kiwi.ko and libkiwi\n",
			ibdev->name, resp.drv.abi_version, KIWI_ABI_VERSION);
		err = EPROTO;
		goto fail;
	}
	if (!resp.drv.max_sge || !resp.drv.max_inline) {
		kiwi_log(ctx, "kernel reported no SGEs or no inline data\n");
		err = EPROTO;
		goto fail;
	}
	ctx->dev_id = resp.drv.dev_id;
	ctx->db_ioctl = 1;
	ctx->max_sge = resp.drv.max_sge < KIWI_MAX_SGE ?
		       resp.drv.max_sge : KIWI_MAX_SGE;
	ctx->max_inline = resp.drv.max_inline < KIWI_MAX_INLINE ?
			  resp.drv.max_inline : KIWI_MAX_INLINE;

	verbs_set_ops(&ctx->vctx, &kiwi_ctx_ops);
	return &ctx->vctx;

fail:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = err;
	return NULL;
}

static struct kiwi_verbs_device *
kiwi_alloc_device(struct kiwi_verbs_sysfs_dev *sysfs_dev)
{
	struct kiwi_device *dev;

	(void)sysfs_dev;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->vdev;
}

static void kiwi_uninit_device(struct kiwi_verbs_device *vdev)
{
	free(kiwi_container_of(vdev, struct kiwi_device, vdev));
}

static const struct kiwi_verbs_match_ent kiwi_match_table[] = {
	{ .u.driver_id = KIWI_DRIVER_ID, .kind = KIWI_VERBS_MATCH_DRIVER_ID },
	{}
};

static const struct kiwi_verbs_device_ops kiwi_dev_ops = {
	.name = "kiwi",
	.match_min_abi_version = KIWI_ABI_VERSION,
	.match_max_abi_version = KIWI_ABI_VERSION,
	.match_table = kiwi_match_table,
	.alloc_device = kiwi_alloc_device,
	.uninit_device = kiwi_uninit_device,
	.alloc_context = kiwi_alloc_context,
};

static void __attribute__((constructor)) kiwi_register(void)
{
	verbs_register_driver_34(&kiwi_dev_ops);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libabi-skew.so: an LD_PRELOAD shim that makes the kernel look one kiwi
 * ABI version newer than the provider, to test that libkiwi refuses the
 * context (tests/cases/20-verbs-objects.sh).  It interposes libibverbs'
 * ibv_cmd_get_context() and bumps kiwi_uresp_alloc_ctx.abi_version in the
 * response after the real call.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <rdma/ib_user_verbs.h>

#include "kiwi-abi.h"

typedef int (*kiwi_get_context_fn)(void *ctx, void *cmd, size_t cmd_size,
				   void *resp, size_t resp_size);

int ibv_cmd_get_context(void *ctx, void *cmd, size_t cmd_size, void *resp,
			size_t resp_size);

__attribute__((visibility("default")))
int ibv_cmd_get_context(void *ctx, void *cmd, size_t cmd_size, void *resp,
			size_t resp_size)
{
	const size_t off = sizeof(struct ib_uverbs_get_context_resp) +
			   offsetof(struct kiwi_uresp_alloc_ctx, abi_version);
	kiwi_get_context_fn real;
	int ret;

	real = (kiwi_get_context_fn)dlsym(RTLD_NEXT, "ibv_cmd_get_context");
	if (!real)
		return 38;	/* ENOSYS */
	ret = real(ctx, cmd, cmd_size, resp, resp_size);
	if (!ret && resp_size >= off + sizeof(uint32_t))
		(*(uint32_t *)((char *)resp + off))++;
	return ret;
}

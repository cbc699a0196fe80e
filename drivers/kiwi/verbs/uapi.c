// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi: the SQ doorbell as an ioctl driver method, without the buffer
 * write()'s POST_SEND allocates; ib_uverbs locks the QP handle as for it.
 */

#define UVERBS_MODULE_NAME kiwi
#include <rdma/uverbs_named_ioctl.h>

#include "verbs.h"

static int UVERBS_HANDLER(KIWI_IB_METHOD_QP_DOORBELL)(struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *ibqp = uverbs_attr_get_obj(attrs, KIWI_IB_ATTR_DOORBELL_QP);
	const struct ib_send_wr *bad_wr;

	if (IS_ERR(ibqp))
		return PTR_ERR(ibqp);
	return kiwi_post_send(ibqp->real_qp, NULL, &bad_wr);
}

DECLARE_UVERBS_NAMED_METHOD(KIWI_IB_METHOD_QP_DOORBELL,
			    UVERBS_ATTR_IDR(KIWI_IB_ATTR_DOORBELL_QP,
					    UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY));

ADD_UVERBS_METHODS(kiwi_qp_methods, UVERBS_OBJECT_QP,
		   &UVERBS_METHOD(KIWI_IB_METHOD_QP_DOORBELL));

const struct uapi_definition kiwi_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_QP, &kiwi_qp_methods),
	{},
};

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: work requests into ring slots, for QP and SRQ posts. */
#include <linux/string.h>

#include "res.h"

int kiwi_sges_from_wr(struct kiwi_sge *dst, const struct ib_sge *src, int num,
		      u32 max)
{
	int i;

	if (num < 0 || num > max)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
	return 0;
}

int kiwi_rqe_from_wr(struct kiwi_rqe *rqe, const struct ib_recv_wr *wr,
		     u32 max_sge)
{
	int rv;

	memset(rqe, 0, sizeof(*rqe));
	rv = kiwi_sges_from_wr(rqe->sge, wr->sg_list, wr->num_sge, max_sge);
	if (rv)
		return rv;
	rqe->id = wr->wr_id;
	rqe->num_sge = wr->num_sge;
	return 0;
}

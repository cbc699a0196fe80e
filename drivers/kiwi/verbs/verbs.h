/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kiwi verbs on queue pairs: qp.c, qp_post.c, uapi.c. */
#ifndef KIWI_VERBS_H
#define KIWI_VERBS_H

#include "engine/engine.h"

int kiwi_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		   struct ib_udata *udata);
int kiwi_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
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

/* uapi.c: ib_uverbs driver methods (the SQ doorbell) */
extern const struct uapi_definition kiwi_uapi_defs[];

#endif /* KIWI_VERBS_H */

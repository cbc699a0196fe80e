/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kiwi queue pairs: what qp.c, qp_state.c and qp_post.c share. */
#ifndef KIWI_QP_H
#define KIWI_QP_H

#include "engine.h"

/* qp_state.c */
void kiwi_qp_state_set(struct kiwi_qp *qp, enum ib_qp_state new);
void kiwi_flush_sq(struct kiwi_qp *qp);
void kiwi_flush_rq(struct kiwi_qp *qp);
bool kiwi_qp_flush_now(struct kiwi_qp *qp);

#endif /* KIWI_QP_H */

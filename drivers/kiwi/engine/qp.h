/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kiwi queue pairs, private to qp*.c: what the object (qp.c), its state
 * machine (qp_state.c) and the posting of work requests (qp_post.c)
 * share.  What the engines and the CM call is in engine.h and conn.h.
 */
#ifndef KIWI_QP_H
#define KIWI_QP_H

#include "engine.h"

/* qp_state.c */
void kiwi_qp_state_set(struct kiwi_qp *qp, enum ib_qp_state new);
void kiwi_flush_sq(struct kiwi_qp *qp);
void kiwi_flush_rq(struct kiwi_qp *qp);
bool kiwi_qp_flush_now(struct kiwi_qp *qp);

#endif /* KIWI_QP_H */

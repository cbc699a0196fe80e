/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kiwi transmit engine, private to tx.c and tx_batch.c. */
#ifndef KIWI_TX_H
#define KIWI_TX_H

#include "engine.h"

/* zero copy (tx_batch.c): the debugfs switches and counters */
extern bool kiwi_tx_zcopy;
extern u32 kiwi_tx_zcopy_min;
extern bool kiwi_tx_crc_own;
extern atomic64_t kiwi_tx_zc_bytes;
extern atomic64_t kiwi_tx_copy_bytes;
extern atomic64_t kiwi_tx_zc_held;

bool kiwi_cur_stale(const struct kiwi_cur *c);
void kiwi_cur_retire(struct kiwi_txs *txs, struct kiwi_cur *c);
u32 kiwi_batch_room(struct kiwi_txs *txs);
bool kiwi_tx_zc_ok(struct kiwi_qp *qp, u64 len, bool rresp);
bool kiwi_tx_held_full(const struct kiwi_txs *txs);
bool kiwi_held_ready(struct kiwi_txs *txs);
void kiwi_tx_wc_add(struct kiwi_qp *qp, const struct kiwi_wc *wc);
bool kiwi_tx_pend_room(struct kiwi_txs *txs);
u32 kiwi_tx_pend_read(struct kiwi_qp *qp, const struct kiwi_wc *wc, bool cqe);
u32 kiwi_fpdu_payload(struct kiwi_txs *txs, const struct kiwi_hdr *h,
		      const struct kiwi_cur *cur, u32 left, u32 room);
int kiwi_fpdu_add(struct kiwi_txs *txs, const struct kiwi_hdr *h,
		  struct kiwi_cur *cur, u32 len);
void kiwi_batch_complete(struct kiwi_qp *qp);

/* Hand the batch to TCP: 0, -EAGAIN, KIWI_TX_YIELD or a socket error. */
#define KIWI_TX_YIELD	1
int kiwi_batch_push(struct kiwi_qp *qp);

#endif /* KIWI_TX_H */

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi transmit engine: the batch.  FPDUs framed around a payload cursor
 * go to TCP as kvecs in one send, resumed where a partial send stopped.
 */
#include <linux/uio.h>
#include <linux/wait_bit.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "tx.h"
#include "core/kiwi_trace.h"

/* debugfs kiwi/tx_zcopy: zero copy (datapath.md "Zero copy"), for A/B */
bool kiwi_tx_zcopy = true;

/*
 * Shorter messages are copied: a completion held for the peer's (maybe
 * delayed) ACK would cost more than the copy.  debugfs kiwi/tx_zcopy_min.
 */
u32 kiwi_tx_zcopy_min = 16384;

/* debugfs kiwi/tx_crc_own N: CRC apart, TCP copies (A/B, kiwi_own_copy()) */
bool kiwi_tx_crc_own = true;

/* payload bytes TCP took by page reference (debugfs kiwi/tx_zcopy_bytes) */
atomic64_t kiwi_tx_zc_bytes;
/* payload bytes TCP (or the framing) copied (debugfs kiwi/tx_copy_bytes) */
atomic64_t kiwi_tx_copy_bytes;
/* bytes by reference not yet acknowledged (debugfs kiwi/tx_zcopy_held) */
atomic64_t kiwi_tx_zc_held;

/* outstanding ubuf_infos, one per batch: unload waits for their callback */
static atomic_t kiwi_zc_ubufs = ATOMIC_INIT(0);

/* TCP's skbs or their copies dropped a reference (any context) */
static void kiwi_zc_ubuf_put(struct sk_buff *skb, struct ubuf_info *u,
			     bool zerocopy_success)
{
	if (!refcount_dec_and_test(&u->refcnt))
		return;
	kfree(u);
	if (atomic_dec_and_test(&kiwi_zc_ubufs))
		wake_up_var(&kiwi_zc_ubufs);
}
KIWI_UBUF_OPS(kiwi_zc_ubuf_ops, kiwi_zc_ubuf_put);

/* the batch's ubuf_info, with the batch's reference; NULL: copy the page */
static struct ubuf_info *kiwi_zc_ubuf(struct kiwi_txs *txs)
{
	struct ubuf_info *u = txs->ubuf;

	if (u)
		return u;
	/* without waiting: the engine may run for memory reclaim's writeback */
	u = kzalloc(sizeof(*u), GFP_NOWAIT | __GFP_NOWARN);
	if (!u)
		return NULL;
	kiwi_ubuf_init(u, kiwi_zc_ubuf_ops);
	refcount_set(&u->refcnt, 1);
	/* as MSG_ZEROCOPY's: copied when delivered on this host only */
	u->flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
	atomic_inc(&kiwi_zc_ubufs);
	txs->ubuf = u;
	return u;
}

/* unload, after every QP; free_module()'s synchronize_rcu() covers the rest */
void kiwi_zc_ubufs_wait(void)
{
	wait_var_event(&kiwi_zc_ubufs, !atomic_read(&kiwi_zc_ubufs));
}

/* ---- payload cursor ---- */

/*
 * Contiguous bytes at the cursor, at most max; 0 at the end.  *p is NULL
 * if the piece's MR changed since it was checked (then at most a page).
 */
static u32 kiwi_cur_piece(struct kiwi_cur *c, u32 max, void **p)
{
	struct kiwi_sge *s;
	u32 left, contig;

	while (c->idx < c->nsge && c->off == c->sg[c->idx].length) {
		c->idx++;
		c->off = 0;
	}
	if (c->idx == c->nsge || !max)
		return 0;
	s = &c->sg[c->idx];
	left = s->length - c->off;
	if (c->mr[c->idx]) {
		*p = kiwi_mr_kaddr(c->mr[c->idx], c->gen[c->idx],
				   s->addr + c->off, &contig);
		if (!*p)
			contig = PAGE_SIZE;
		/* one page per piece: each may go to TCP by reference */
		else if (c->zc)
			contig = min_t(u32, contig,
				       PAGE_SIZE - offset_in_page(*p));
	} else {
		*p = (void *)(uintptr_t)(s->addr + c->off);
		contig = left;
	}
	return min3(max, left, contig);
}

/* Was an MR of the cursor invalidated or re-mapped since it was checked? */
bool kiwi_cur_stale(const struct kiwi_cur *c)
{
	u32 i;

	for (i = 0; i < c->nsge; i++)
		if (c->mr[i] && !kiwi_mr_current(c->mr[i], c->gen[i]))
			return true;
	return false;
}

/* how many of want bytes fit into at most pieces kvecs */
static u32 kiwi_cur_span(const struct kiwi_cur *cur, u32 want, u32 pieces)
{
	struct kiwi_cur c = *cur;
	u32 got = 0, n;
	void *p;

	while (got < want && pieces--) {
		n = kiwi_cur_piece(&c, want - got, &p);
		if (!n)
			break;
		c.off += n;
		got += n;
	}
	return got;
}

/*
 * The cursor's MRs are no longer needed for framing: a non-empty batch
 * keeps the references until TCP has taken it (kiwi_batch_room()).
 */
void kiwi_cur_retire(struct kiwi_txs *txs, struct kiwi_cur *c)
{
	u32 i;

	for (i = 0; i < KIWI_MAX_SGE; i++) {
		if (!c->mr[i])
			continue;
		if (txs->niov && !WARN_ON_ONCE(txs->nmrs == KIWI_TX_MRS))
			txs->mrs[txs->nmrs++] = c->mr[i];
		else
			kiwi_mr_put(c->mr[i]);
		c->mr[i] = NULL;
	}
}

/* ---- the batch ---- */

/* the page of a kvec sent by reference (it stays within it), NULL if copied */
static struct page *kiwi_iov_page(const struct kiwi_txs *txs, u32 i)
{
	return test_bit(i, txs->zc) ? virt_to_page(txs->iov[i].iov_base) :
		NULL;
}

/* n bytes at p, of mr as mapped at generation gen (mr NULL: not an MR's) */
static void kiwi_iov_add(struct kiwi_txs *txs, void *p, u32 n,
			 struct page *pg, struct kiwi_mr *mr, u32 gen)
{
	u32 last = txs->niov - 1;
	struct kvec *v = txs->niov ? &txs->iov[last] : NULL;

	if (pg)
		txs->zcb += n;
	if (v && kiwi_iov_page(txs, last) == pg && txs->iov_mr[last] == mr &&
	    txs->iov_gen[last] == gen && v->iov_base + v->iov_len == p) {
		v->iov_len += n;
	} else {
		txs->iov_mr[txs->niov] = mr;
		txs->iov_gen[txs->niov] = gen;
		if (pg) {
			__set_bit(txs->niov, txs->zc);
			txs->npg++;
		}
		v = &txs->iov[txs->niov++];
		v->iov_base = p;
		v->iov_len = n;
	}
	txs->bytes += n;
}

/*
 * ---- kiwi's own pages (datapath.md "One pass per byte with CRC") ----
 * With CRC on, what is not sent by reference is copied here with its CRC
 * in the same pass, and the pages go to TCP by reference.
 */

/* the page of own kvec i, whether or not TCP took some of it already */
static struct page *kiwi_own_page(const struct kiwi_txs *txs, u32 i)
{
	const struct kvec *v = &txs->iov[i];

	/* a kvec TCP took whole points just past its bytes */
	return virt_to_page(v->iov_len ? v->iov_base : v->iov_base - 1);
}

/* A fill page with room, a new one if the last is full.  false: none. */
static bool kiwi_own_room(struct kiwi_txs *txs)
{
	if (txs->opage && txs->ooff < PAGE_SIZE)
		return true;
	if (txs->opage)
		put_page(txs->opage);
	txs->ooff = 0;
	/* without waiting: the engine may run for memory reclaim's writeback */
	txs->opage = alloc_page(GFP_NOWAIT | __GFP_NOWARN);
	return txs->opage;
}

/*
 * The n bytes just written at ooff into the batch, copied from mr at gen
 * (NULL: framing, inline): kiwi_batch_stale() sees an invalidation.
 */
static void kiwi_own_add(struct kiwi_txs *txs, u32 n, struct kiwi_mr *mr,
			 u32 gen)
{
	void *d = page_address(txs->opage) + txs->ooff;
	u32 last = txs->niov - 1;
	struct kvec *v;

	txs->ooff += n;
	txs->bytes += n;
	/* not across pages, even where the next is the next in memory */
	if (txs->niov && test_bit(last, txs->own) && offset_in_page(d) &&
	    txs->iov[last].iov_base + txs->iov[last].iov_len == d &&
	    (!mr || !txs->iov_mr[last] ||
	     (txs->iov_mr[last] == mr && txs->iov_gen[last] == gen))) {
		txs->iov[last].iov_len += n;
		if (mr) {
			txs->iov_mr[last] = mr;
			txs->iov_gen[last] = gen;
		}
		return;
	}
	get_page(txs->opage);
	__set_bit(txs->niov, txs->own);
	txs->npg++;
	txs->iov_mr[txs->niov] = mr;
	txs->iov_gen[txs->niov] = gen;
	v = &txs->iov[txs->niov++];
	v->iov_base = d;
	v->iov_len = n;
}

/*
 * n bytes from src (in mr at generation gen) into own pages and the batch,
 * with crc into the FPDU's CRC.  Bytes placed: fewer if no page was had.
 */
static u32 kiwi_own_copy(struct kiwi_txs *txs, const u8 *src, u32 n,
			 bool crc, struct kiwi_mr *mr, u32 gen)
{
	u32 done, m;
	u8 *d;

	for (done = 0; done < n; done += m) {
		if (!kiwi_own_room(txs))
			break;
		m = min_t(u32, n - done, PAGE_SIZE - txs->ooff);
		d = page_address(txs->opage) + txs->ooff;
		if (crc)
			kiwi_tx_copy_data(&txs->fr, d, src + done, m);
		else
			memcpy(d, src + done, m);
		kiwi_own_add(txs, m, mr, gen);
	}
	return done;
}

/* n framing bytes just written at fb (fbuf) into the batch, own if own_on */
static void kiwi_frame_add(struct kiwi_txs *txs, u8 *fb, u32 n)
{
	u32 done = txs->own_on ? kiwi_own_copy(txs, fb, n, false, NULL, 0) :
		0;

	txs->flen += n;
	if (done < n)
		kiwi_iov_add(txs, fb + done, n - done, NULL, NULL, 0);
}

/* the batch's references to own pages, once TCP took it or it is dropped */
static void kiwi_own_put(struct kiwi_txs *txs)
{
	u32 i;

	for_each_set_bit(i, txs->own, txs->niov)
		put_page(kiwi_own_page(txs, i));
	bitmap_zero(txs->own, KIWI_TX_IOV);
}

/* The connection's transmit state goes; its batch was sent or dropped. */
void kiwi_txs_free(struct kiwi_txs *txs)
{
	if (!txs)
		return;
	kiwi_own_put(txs);
	if (txs->opage)
		put_page(txs->opage);
	kfree(txs->fbuf);
	kfree(txs->held);	/* empty: flushed at llp_stop */
	kfree(txs);
}

/* room for one more FPDU: kvecs its payload may use, 0 if none */
u32 kiwi_batch_room(struct kiwi_txs *txs)
{
	u32 reserve = 4 + (txs->fr.markers ? 24 : 0);
	u32 fneed = KIWI_TX_FRAME_MAX * (txs->fr.markers ? 12 : 2) +
		KIWI_MAX_INLINE;

	BUILD_BUG_ON(KIWI_TX_FRAME_MAX * 2 + KIWI_MAX_INLINE >
		     KIWI_TX_FBUF_MIN);
	BUILD_BUG_ON(KIWI_TX_FRAME_MAX * 12 + KIWI_MAX_INLINE > KIWI_TX_FBUF);
	if (txs->flen + fneed > txs->fsize) {
		txs->fgrow = txs->fsize < KIWI_TX_FBUF;
		return 0;
	}
	if (txs->niov + reserve >= KIWI_TX_IOV ||
	    txs->nwc + txs->nbq == KIWI_TX_WC ||
	    txs->nmrs + KIWI_MAX_SGE > KIWI_TX_MRS)
		return 0;
	return KIWI_TX_IOV - txs->niov - reserve;
}

/* the ring of held completions, allocated at the first Read or zero copy */
bool kiwi_held_ready(struct kiwi_txs *txs)
{
	if (likely(txs->held))
		return true;
	/* without waiting: the engine may run for memory reclaim's writeback */
	txs->held = kmalloc_array(KIWI_TX_HELD, sizeof(*txs->held),
				  GFP_NOWAIT | __GFP_NOWARN);
	return txs->held;
}

static u32 kiwi_held_count(const struct kiwi_txs *txs)
{
	return txs->held_head - txs->held_tail;
}

static struct kiwi_held *kiwi_held_at(struct kiwi_txs *txs, u32 pos)
{
	return &txs->held[pos & (KIWI_TX_HELD - 1)];
}

/*
 * May len bytes of payload (a Read Response's if rresp) go to TCP by page
 * reference (datapath.md "Zero copy")?  With CRC only a user QP's Sends
 * and Writes: others' memory may change between the CRC and TCP's read.
 */
bool kiwi_tx_zc_ok(struct kiwi_qp *qp, u64 len, bool rresp)
{
	struct kiwi_txs *txs = qp->txs;

	if (!READ_ONCE(kiwi_tx_zcopy) || len < READ_ONCE(kiwi_tx_zcopy_min))
		return false;
	if (txs->fr.crc_on && (rresp || !qp->user))
		return false;
	return kiwi_held_ready(txs);
}

/* the page at p if TCP may take a reference (sendpage_ok()), NULL: copy */
static struct page *kiwi_zc_page(void *p)
{
	struct page *pg;

	if (!virt_addr_valid(p))
		return NULL;
	pg = virt_to_page(p);
	return sendpage_ok(pg) ? pg : NULL;
}

/*
 * m payload bytes at p, from cur's current SGE, into the batch and the
 * FPDU's CRC: by reference (cur->zc), into own pages with CRC, or a kvec.
 */
static void kiwi_payload_add(struct kiwi_txs *txs, const struct kiwi_cur *cur,
			     u8 *p, u32 m)
{
	struct kiwi_mr *mr = cur->mr[cur->idx];
	u32 gen = cur->gen[cur->idx], done = 0;
	struct page *pg = NULL;
	u8 *fb;

	if (mr && cur->zc)
		pg = kiwi_zc_page(p);
	if (!pg && txs->fr.crc_on && READ_ONCE(kiwi_tx_crc_own)) {
		done = kiwi_own_copy(txs, p, m, true, mr, gen);
		txs->ownb += done;
		p += done;
		m -= done;
		if (!m)
			return;
	}
	if (!mr) {
		/* inline data: the next WR overwrites its copy; into fbuf */
		fb = txs->fbuf + txs->flen;
		kiwi_tx_copy_data(&txs->fr, fb, p, m);
		txs->flen += m;
		kiwi_iov_add(txs, fb, m, NULL, NULL, 0);
		return;
	}
	if (!pg && txs->fr.crc_on)
		txs->passb += m;
	kiwi_tx_crc_data(&txs->fr, p, m);
	kiwi_iov_add(txs, p, m, pg, mr, gen);
}

/* payload bytes the next FPDU of h may carry, given the batch's room */
u32 kiwi_fpdu_payload(struct kiwi_txs *txs, const struct kiwi_hdr *h,
		      const struct kiwi_cur *cur, u32 left, u32 room)
{
	u32 max = kiwi_txs_mulpdu(txs) - kiwi_hdr_len(h);
	u32 third = room / 3, own;

	if (!txs->fr.crc_on || cur->zc)
		return kiwi_cur_span(cur, min(left, max), room);
	/* own pages: a kvec per page, per MR, and per piece if none: a third */
	if (third < 2)
		return 0;
	own = (third - 1) * PAGE_SIZE - KIWI_TX_FRAME_MAX * 12;
	return kiwi_cur_span(cur, min3(left, max, own), third);
}

/* len payload bytes from cur into the batch and the FPDU's CRC */
static int kiwi_fpdu_payload_add(struct kiwi_txs *txs, struct kiwi_cur *cur,
				 u32 take)
{
	void *p;
	u32 m;

	while (take) {
		m = kiwi_cur_piece(cur, take, &p);
		if (WARN_ON_ONCE(!m))
			return -EFAULT;
		if (!p) {
			/* changed under us: frame zeros, never send it */
			txs->stale = true;
			p = page_address(ZERO_PAGE(0));
		}
		kiwi_payload_add(txs, cur, p, m);
		cur->off += m;
		take -= m;
	}
	return 0;
}

/* Without Markers: header, payload, pad and CRC (kiwi_tx_head()). */
static int kiwi_fpdu_add_plain(struct kiwi_txs *txs, const struct kiwi_hdr *h,
			       struct kiwi_cur *cur, u32 len)
{
	u8 *fb = txs->fbuf + txs->flen;
	int n, rv;

	/* kiwi_batch_room() left KIWI_TX_FRAME_MAX for each side */
	BUILD_BUG_ON(KIWI_WIRE_HDR_MAX > KIWI_TX_FRAME_MAX);
	n = kiwi_tx_head(&txs->fr, h, len, fb, KIWI_TX_FRAME_MAX);
	if (n < 0)
		return n;
	txs->nfpdu++;
	txs->payload += len;
	kiwi_frame_add(txs, fb, n);
	rv = kiwi_fpdu_payload_add(txs, cur, len);
	if (rv)
		return rv;
	fb = txs->fbuf + txs->flen;
	kiwi_frame_add(txs, fb, kiwi_tx_tail(&txs->fr, fb));
	return 0;
}

static int kiwi_fpdu_frame(struct kiwi_txs *txs, const struct kiwi_hdr *h,
			   struct kiwi_cur *cur, u32 len)
{
	u32 take, n;
	int rv;

	/* CRC on and not by reference: the FPDU into kiwi's own pages */
	txs->own_on = txs->fr.crc_on && !cur->zc &&
		READ_ONCE(kiwi_tx_crc_own);
	if (!txs->fr.markers)
		return kiwi_fpdu_add_plain(txs, h, cur, len);
	rv = kiwi_tx_begin(&txs->fr, h, len);
	if (rv)
		return rv;
	txs->nfpdu++;
	txs->payload += len;
	while (kiwi_tx_more(&txs->fr)) {
		u8 *fb = txs->fbuf + txs->flen;

		n = kiwi_tx_next(&txs->fr, fb, &take);
		if (n)
			kiwi_frame_add(txs, fb, n);
		rv = kiwi_fpdu_payload_add(txs, cur, take);
		if (rv)
			return rv;
	}
	return 0;
}

/*
 * Frame one FPDU of h around len payload bytes from cur into the batch,
 * closing the CRC's vector section (one per FPDU) before anything sleeps.
 */
int kiwi_fpdu_add(struct kiwi_txs *txs, const struct kiwi_hdr *h,
		  struct kiwi_cur *cur, u32 len)
{
	int rv = kiwi_fpdu_frame(txs, h, cur, len);

	kiwi_tx_run_end(&txs->fr);
	return rv;
}

/* Send the rest of a batch with pages by reference: bytes taken, or -errno */
static int kiwi_batch_send_zc(struct kiwi_txs *txs, struct sock *sk,
			      int flags)
{
	struct msghdr msg = {};
	u32 i = txs->iov_done, j;
	int rv = 0, sent = 0;
	size_t len;

	lock_sock(sk);
	while (i < txs->niov) {
		struct page *pg = kiwi_iov_page(txs, i);
		bool more;

		len = txs->iov[i].iov_len;
		j = i + 1;
		more = j < txs->niov;
		/* own page; a consumer's page; else kvecs for TCP to copy */
		if (test_bit(i, txs->own)) {
			rv = kiwi_splice_page_locked(sk,
					virt_to_page(txs->iov[i].iov_base),
					offset_in_page(txs->iov[i].iov_base),
					len, flags, more);
		} else if (pg && sendpage_ok(pg) && kiwi_zc_ubuf(txs)) {
			rv = kiwi_sendpage_locked(sk, pg,
					offset_in_page(txs->iov[i].iov_base),
					len, flags, more, txs->ubuf);
			if (rv > 0)
				atomic64_add(rv, &kiwi_tx_zc_bytes);
		} else {
			while (j < txs->niov) {
				struct page *next = kiwi_iov_page(txs, j);

				if ((next && sendpage_ok(next)) ||
				    test_bit(j, txs->own))
					break;
				len += txs->iov[j++].iov_len;
			}
			more = j < txs->niov;
			msg.msg_flags = flags | (more ? MSG_MORE : 0);
			iov_iter_kvec(&msg.msg_iter, WRITE, &txs->iov[i],
				      j - i, len);
			rv = tcp_sendmsg_locked(sk, &msg, len);
		}
		if (rv <= 0)
			break;
		sent += rv;
		if ((size_t)rv < len)
			break;
		i = j;
	}
	release_sock(sk);
	return sent ? sent : rv;
}

/* the bytes of zero-copy batches up to txs->zc_seq were acknowledged */
static void kiwi_zc_acked(struct kiwi_txs *txs)
{
	txs->zc_live = false;
	atomic64_sub(txs->zc_held, &kiwi_tx_zc_held);
	txs->zc_held = 0;
}

/*
 * The SQ's completions in posting order (datapath.md "SQ completions in
 * order"): those that must wait queue in txs->held.
 */

/* completions posted per hold of qp->lock */
#define KIWI_PEND_BURST	8

/* tx only: no completion waits (held_tail moves once its CQEs are out) */
static bool kiwi_pend_empty(struct kiwi_txs *txs)
{
	/* pairs with kiwi_pend_drain()'s release: its CQEs are in the CQ */
	return smp_load_acquire(&txs->held_tail) == txs->held_head;
}

/* queue a completion (tx, under qp->lock); callers keep room for it */
static u32 kiwi_pend_add(struct kiwi_txs *txs, const struct kiwi_wc *wc,
			 u8 state, bool cqe)
{
	u32 pos = txs->held_head;
	struct kiwi_held *h = kiwi_held_at(txs, pos);

	WARN_ON_ONCE(kiwi_held_count(txs) >= KIWI_TX_HELD);
	h->wc = *wc;
	h->seq = txs->zc_seq;
	h->state = state;
	h->cqe = cqe;
	if (state == KIWI_HELD_BATCH && !txs->nbq++)
		txs->batch_first = pos;
	txs->held_head = pos + 1;
	return pos;
}

/* a WR's completion: into the batch's list, or queued behind what waits */
void kiwi_tx_wc_add(struct kiwi_qp *qp, const struct kiwi_wc *wc)
{
	struct kiwi_txs *txs = qp->txs;
	unsigned long flags;

	/* nothing queued: the queue gets no entry before this batch's push */
	if (kiwi_pend_empty(txs)) {
		txs->wc[txs->nwc++] = *wc;
		return;
	}
	spin_lock_irqsave(&qp->lock, flags);
	kiwi_pend_add(txs, wc, KIWI_HELD_BATCH, true);
	spin_unlock_irqrestore(&qp->lock, flags);
}

/* room for a Read's entry and its batch's completions (tx) */
bool kiwi_tx_pend_room(struct kiwi_txs *txs)
{
	return txs->held && kiwi_held_count(txs) + KIWI_TX_WC - txs->nbq <
		KIWI_TX_HELD;
}

/* the batch's completions so far into the queue (under qp->lock) */
static void kiwi_pend_batch(struct kiwi_txs *txs)
{
	u32 i;

	for (i = 0; i < txs->nwc; i++)
		kiwi_pend_add(txs, &txs->wc[i], KIWI_HELD_BATCH, true);
	txs->nwc = 0;
}

/*
 * A Read is taken (under qp->lock): the batch's completions so far queue
 * first, then the Read's, at the position returned (kiwi_pend_read_done()).
 */
u32 kiwi_tx_pend_read(struct kiwi_qp *qp, const struct kiwi_wc *wc,
		      bool cqe)
{
	lockdep_assert_held(&qp->lock);
	kiwi_pend_batch(qp->txs);
	return kiwi_pend_add(qp->txs, wc, KIWI_HELD_READ, cqe);
}

/* rx, under qp->lock: the Read queued at pos got its last Response */
void kiwi_pend_read_done(struct kiwi_qp *qp, u32 pos, u8 status)
{
	struct kiwi_held *h = kiwi_held_at(qp->txs, pos);

	lockdep_assert_held(&qp->lock);
	h->wc.status = status;
	/* an error is reported even for an unsignaled Read */
	if (status != IB_WC_SUCCESS)
		h->cqe = true;
	WRITE_ONCE(h->state, KIWI_HELD_DONE);
}

static bool kiwi_pend_ready(const struct kiwi_held *h, u32 una)
{
	return h->state == KIWI_HELD_DONE ||
		(h->state == KIWI_HELD_ACK && !before(una, h->seq));
}

/*
 * Post the completions at the head of the queue whose WRs are done, one
 * caller at a time, outside qp->lock; held_tail moves once they are out.
 */
void kiwi_pend_drain(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_wc wc[KIWI_PEND_BURST];
	struct kiwi_held *h;
	unsigned long flags;
	u32 n, m, i, una;

	spin_lock_irqsave(&qp->lock, flags);
	if (txs->held_busy) {
		spin_unlock_irqrestore(&qp->lock, flags);
		return;
	}
	txs->held_busy = true;
	for (;;) {
		una = READ_ONCE(tcp_sk(txs->sk)->snd_una);
		for (n = 0, m = 0; m < KIWI_PEND_BURST &&
		     txs->held_tail + n != txs->held_head; n++) {
			h = kiwi_held_at(txs, txs->held_tail + n);
			if (!kiwi_pend_ready(h, una))
				break;
			if (h->cqe)
				wc[m++] = h->wc;
		}
		if (!n)
			break;
		spin_unlock_irqrestore(&qp->lock, flags);
		for (i = 0; i < m; i++)
			kiwi_cq_push(qp->scq, &wc[i]);
		spin_lock_irqsave(&qp->lock, flags);
		/* the CQEs before the tail tx reads without the lock */
		smp_store_release(&txs->held_tail, txs->held_tail + n);
	}
	txs->held_busy = false;
	spin_unlock_irqrestore(&qp->lock, flags);
}

/* the sequence number the oldest completion waiting for an ACK wants (tx) */
static bool kiwi_pend_ack_want(struct kiwi_txs *txs, u32 una, u32 *want)
{
	const struct kiwi_held *h;
	u32 i;

	for (i = READ_ONCE(txs->held_tail); i != txs->held_head; i++) {
		h = kiwi_held_at(txs, i);
		if (READ_ONCE(h->state) == KIWI_HELD_ACK &&
		    before(una, h->seq)) {
			*want = h->seq;
			return true;
		}
	}
	return false;
}

/*
 * Post the completions that are due, and make sure that the ACK the
 * oldest one still waiting for its pages waits for kicks the engine: TCP
 * calls sk_write_space on every ACK while SOCK_NOSPACE is set, after it
 * moved snd_una.  The ACK, not the ubuf_info's callback: it is what an
 * RNIC completes on, and the callback waits for clones in a qdisc too.
 */
void kiwi_tx_reap(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	struct sock *sk = qp->sock->sk;
	u32 una, want;
	bool wait;

	for (;;) {
		una = READ_ONCE(tcp_sk(sk)->snd_una);
		if (txs->zc_live && !before(una, txs->zc_seq))
			kiwi_zc_acked(txs);
		if (!kiwi_pend_empty(txs))
			kiwi_pend_drain(qp);
		wait = kiwi_pend_ack_want(txs, una, &want);
		if (!wait && txs->zc_live) {
			/* none held: for kiwi_tx_zc_held's sake only */
			want = txs->zc_seq;
			wait = true;
		}
		if (!wait || !sk->sk_socket) {
			if (test_bit(KIWI_EF_ACK_WAIT, &qp->eflags))
				clear_bit(KIWI_EF_ACK_WAIT, &qp->eflags);
			return;
		}
		WRITE_ONCE(txs->ack_seq, want);
		/* ack_seq before the flag write_space reads it by */
		smp_mb__before_atomic();
		set_bit(KIWI_EF_ACK_WAIT, &qp->eflags);
		/* ACK_WAIT before NOSPACE: kiwi_tx_write_space() */
		smp_mb__after_atomic();
		set_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		/* the flags before snd_una, pairs with tcp_check_space() */
		smp_mb__after_atomic();
		if (before(READ_ONCE(tcp_sk(sk)->snd_una), want))
			return;
	}
}

/*
 * The batch is in TCP's hands: its WRs are done or, while bytes by
 * reference are not acknowledged, wait for the last such batch's end.
 */
void kiwi_batch_complete(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_held *h;
	unsigned long flags;
	u32 i;

	/* no Read outstanding, nothing by reference: the fast path */
	if (likely(!txs->zc_live && kiwi_pend_empty(txs))) {
		for (i = 0; i < txs->nwc; i++)
			kiwi_cq_push(qp->scq, &txs->wc[i]);
		txs->nwc = 0;
		return;
	}
	/* nothing new (the engine idles): only the ACK to wait for */
	if (!txs->nwc && !txs->nbq)
		goto reap;
	spin_lock_irqsave(&qp->lock, flags);
	kiwi_pend_batch(txs);
	for (i = txs->batch_first; txs->nbq && i != txs->held_head; i++) {
		h = kiwi_held_at(txs, i);
		if (h->state != KIWI_HELD_BATCH)
			continue;
		h->seq = txs->zc_seq;
		h->state = txs->zc_live ? KIWI_HELD_ACK : KIWI_HELD_DONE;
		txs->nbq--;
	}
	WARN_ON_ONCE(txs->nbq);
	txs->nbq = 0;
	spin_unlock_irqrestore(&qp->lock, flags);
reap:
	kiwi_tx_reap(qp);
}

/* no room for another batch's completions: an ACK or Read Response frees */
bool kiwi_tx_held_full(const struct kiwi_txs *txs)
{
	BUILD_BUG_ON(KIWI_TX_HELD & (KIWI_TX_HELD - 1));
	BUILD_BUG_ON(KIWI_TX_HELD < 2 * KIWI_TX_WC);
	return kiwi_held_count(txs) > KIWI_TX_HELD - KIWI_TX_WC;
}

/* the flush (qp->lock held): completions the peer acknowledged are done */
void kiwi_tx_pend_acked(struct kiwi_txs *txs, u32 una)
{
	struct kiwi_held *h;
	u32 i;

	for (i = txs->held_tail; i != txs->held_head; i++) {
		h = kiwi_held_at(txs, i);
		if (kiwi_pend_ready(h, una))
			h->state = KIWI_HELD_DONE;
	}
}

/*
 * For the flush: the i-th transmit completion not yet posted (queue, then
 * batch), NULL past the last.  *done: as it is; *cqe: unless flushed.
 */
struct kiwi_wc *kiwi_tx_wc_pending(struct kiwi_txs *txs, u32 i, bool *done,
				   bool *cqe)
{
	u32 n = kiwi_held_count(txs);
	struct kiwi_held *h;

	if (i < n) {
		h = kiwi_held_at(txs, txs->held_tail + i);
		*done = h->state == KIWI_HELD_DONE;
		*cqe = h->cqe;
		return &h->wc;
	}
	i -= n;
	*done = false;
	*cqe = true;
	return i < txs->nwc ? &txs->wc[i] : NULL;
}

/* the flush posted them; TCP keeps what it holds by reference */
void kiwi_tx_wc_flushed(struct kiwi_txs *txs)
{
	txs->nwc = 0;
	txs->nbq = 0;
	txs->held_tail = txs->held_head;
	kiwi_zc_acked(txs);
}

/* does the rest of the batch point into a mapping changed since framed? */
static bool kiwi_batch_stale(struct kiwi_txs *txs)
{
	u32 i;

	if (txs->stale)
		return true;
	/* the addresses were read before these generations */
	smp_rmb();
	for (i = txs->iov_done; i < txs->niov; i++)
		if (txs->iov_mr[i] &&
		    !kiwi_mr_current(txs->iov_mr[i], txs->iov_gen[i]))
			return true;
	return false;
}

/* the batch is sent or dropped: its MRs released, empty again */
static void kiwi_batch_clear(struct kiwi_txs *txs)
{
	u32 i;

	for (i = 0; i < txs->nmrs; i++)
		kiwi_mr_put(txs->mrs[i]);
	/* TCP holds its own references to what it took */
	kiwi_own_put(txs);
	txs->ownb = 0;
	txs->passb = 0;
	txs->nmrs = 0;
	txs->niov = 0;
	txs->npg = 0;
	bitmap_zero(txs->zc, KIWI_TX_IOV);
	txs->iov_done = 0;
	txs->bytes = 0;
	txs->nfpdu = 0;
	txs->payload = 0;
	txs->zcb = 0;
	txs->flen = 0;
	txs->stale = false;
	if (txs->ubuf)
		net_zcopy_put(txs->ubuf);
	txs->ubuf = NULL;
}

/* with the batch sent, nothing points into fbuf: grow it (may fail) */
static void kiwi_fbuf_grow(struct kiwi_txs *txs)
{
	u8 *fb;

	txs->fgrow = false;
	fb = kmalloc(KIWI_TX_FBUF, GFP_NOWAIT | __GFP_NOWARN);
	if (!fb)
		return;
	kfree(txs->fbuf);
	txs->fbuf = fb;
	txs->fsize = KIWI_TX_FBUF;
}

/* TCP took rv more bytes of the batch: move its iov past them */
static void kiwi_batch_advance(struct kiwi_txs *txs, int rv)
{
	struct kvec *v;
	u32 n;

	txs->bytes -= rv;
	for (; rv > 0; rv -= n) {
		v = &txs->iov[txs->iov_done];
		n = min_t(size_t, rv, v->iov_len);
		v->iov_base += n;
		v->iov_len -= n;
		if (!v->iov_len)
			txs->iov_done++;
	}
}

/* TCP has all of the batch: count it, and its completions are due */
static void kiwi_batch_sent(struct kiwi_qp *qp, struct sock *sk)
{
	struct kiwi_txs *txs = qp->txs;

	kiwi_stat_add(qp->kdev, KIWI_STAT_TX_FPDUS, txs->nfpdu);
	kiwi_stat_add(qp->kdev, KIWI_STAT_TX_BYTES, txs->payload);
	atomic64_add(txs->payload - txs->zcb, &kiwi_tx_copy_bytes);
	if (txs->fr.crc_on) {
		kiwi_stat_add(qp->kdev, KIWI_STAT_TX_CRC_COPY_BYTES, txs->ownb);
		kiwi_stat_add(qp->kdev, KIWI_STAT_TX_CRC_PASS_BYTES,
			      txs->passb);
	}
	if (txs->zcb) {
		/* the peer's ACK of this sequence number frees its pages */
		txs->zc_seq = READ_ONCE(tcp_sk(sk)->write_seq);
		txs->zc_live = true;
		txs->zc_held += txs->zcb;
		atomic64_add(txs->zcb, &kiwi_tx_zc_held);
	}
	/* TCP copied or references the data: the MRs may go */
	kiwi_batch_clear(txs);
	if (unlikely(txs->fgrow))
		kiwi_fbuf_grow(txs);
	kiwi_batch_complete(qp);
}

int kiwi_batch_push(struct kiwi_qp *qp)
{
	struct kiwi_txs *txs = qp->txs;
	struct sock *sk = qp->sock->sk;
	struct msghdr msg = {};
	int rv, flags, retry = 4;

	lockdep_assert_held(&qp->tx_mutex);
	while (txs->iov_done < txs->niov) {
		/* part of an FPDU may be out: no Terminate, a reset */
		if (kiwi_batch_stale(txs))
			return -ESTALE;
		flags = MSG_DONTWAIT | MSG_NOSIGNAL | (txs->more ? MSG_MORE : 0);
		if (txs->npg) {
			rv = kiwi_batch_send_zc(txs, sk, flags);
		} else {
			/* straight to TCP: nothing above it decides anything */
			msg.msg_flags = flags;
			iov_iter_kvec(&msg.msg_iter, WRITE,
				      &txs->iov[txs->iov_done],
				      txs->niov - txs->iov_done, txs->bytes);
			rv = tcp_sendmsg(sk, &msg, txs->bytes);
		}
		if (rv > 0) {
			kiwi_batch_advance(txs, rv);
			if (txs->iov_done == txs->niov)
				break;
		} else if (rv != -EAGAIN) {
			return rv ? rv : -EPIPE;
		}
		/* TCP's send buffer is full: wait for sk_write_space */
		set_bit(KIWI_EF_WAIT_SPACE, &qp->eflags);
		/* flag before re-checking: or write_space finds it clear */
		smp_mb__after_atomic();
		if (!sk_stream_is_writeable(sk))
			return -EAGAIN;
		clear_bit(KIWI_EF_WAIT_SPACE, &qp->eflags);
		/* room again: yield after a few, write_space may be gone */
		if (!retry--)
			return KIWI_TX_YIELD;
	}
	kiwi_batch_sent(qp, sk);
	return 0;
}

/*
 * The engines are stopped (qp->lock held): the batch is never sent.  Its
 * Sends and Writes complete with *status, then flushed.  MRs released.
 */
void kiwi_tx_drop_batch(struct kiwi_qp *qp, u8 *status)
{
	struct kiwi_txs *txs = qp->txs;
	struct kiwi_wc *wc;
	u32 i;

	lockdep_assert_held(&qp->lock);
	if (!txs)
		return;
	for (i = 0; i < txs->nwc; i++) {
		wc = &txs->wc[i];
		if (wc->opcode != KIWI_OP_REG_MR &&
		    wc->opcode != KIWI_OP_LOCAL_INV) {
			/* a WR's own local error stays (kiwi_tx_wr_fail()) */
			if (wc->status == IB_WC_SUCCESS)
				wc->status = *status;
			wc->bytes = 0;
			*status = IB_WC_WR_FLUSH_ERR;
		}
		kiwi_cq_push(qp->scq, wc);
	}
	txs->nwc = 0;
	kiwi_batch_clear(txs);
}

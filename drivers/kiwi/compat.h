/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kiwi: the one place that knows about kernel versions (6.1 to 6.12). */
#ifndef KIWI_COMPAT_H
#define KIWI_COMPAT_H

#include <linux/version.h>
#include <linux/bvec.h>
#include <linux/uio.h>
#include <net/tcp.h>
#include <rdma/ib_verbs.h>

/*
 * Kernel consumers give a device without a DMA device virtual addresses, and
 * user MRs pin memory with ib_umem: required, or kiwi fails at run time.
 */
#if !IS_ENABLED(CONFIG_INFINIBAND_VIRT_DMA) || \
	!IS_ENABLED(CONFIG_INFINIBAND_USER_MEM)
#error "kiwi needs CONFIG_INFINIBAND_VIRT_DMA and CONFIG_INFINIBAND_USER_MEM"
#endif

/* The data path needs pinned user pages in the direct map. */
#if IS_ENABLED(CONFIG_HIGHMEM) || !IS_ENABLED(CONFIG_64BIT)
#error "kiwi supports 64-bit kernels without highmem only"
#endif

/* The kernel we are built against is at least version maj.min. */
#define KIWI_KERNEL_AT_LEAST(maj, min)					\
	(LINUX_VERSION_MAJOR * 256 + LINUX_VERSION_PATCHLEVEL >=	\
	 (maj) * 256 + (min))

/*
 * Since 6.11 create_cq receives the uverbs attribute bundle, not the udata
 * (NULL for kernel CQs); kiwi_create_cq() takes a kiwi_cq_udata_arg.
 */
#if KIWI_KERNEL_AT_LEAST(6, 11)
#include <rdma/uverbs_ioctl.h>
#define kiwi_cq_udata_arg	uverbs_attr_bundle

static inline struct ib_udata *kiwi_cq_udata(struct uverbs_attr_bundle *a)
{
	return a ? &a->driver_udata : NULL;
}
#else
#define kiwi_cq_udata_arg	ib_udata

static inline struct ib_udata *kiwi_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * Hand len bytes at off in page to TCP by reference (socket locked,
 * sendpage_ok() checked), attached to the zerocopy ubuf_info uarg (as
 * io_uring sends).  more: bytes follow at once.  Bytes taken, or -errno
 * (-EAGAIN: no room).
 *
 * Not sendpage or MSG_SPLICE_PAGES: kiwi completes a WR on the peer's
 * ACK, and a spliced page may be shared with a local receiver's skb long
 * after; an skb with a ubuf_info has its frags copied on local delivery.
 */
static inline int kiwi_sendpage_locked(struct sock *sk, struct page *page,
				       int off, size_t len, int flags,
				       bool more, struct ubuf_info *uarg)
{
	struct msghdr msg = {
		.msg_flags = flags | MSG_ZEROCOPY | (more ? MSG_MORE : 0),
		.msg_ubuf = uarg,
	};
	struct bio_vec bv;

	bvec_set_page(&bv, page, len, off);
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &bv, 1, len);
	return tcp_sendmsg_locked(sk, &msg, len);
}

/*
 * Hand len bytes at off in page, which kiwi filled and never writes
 * again, to TCP by reference without a ubuf_info (socket locked):
 * MSG_SPLICE_PAGES from 6.5, tcp_sendpage_locked() before (6.1 defines
 * the flag but ignores it).  Bytes taken, or -errno (-EAGAIN: no room).
 */
#if KIWI_KERNEL_AT_LEAST(6, 5)
static inline int kiwi_splice_page_locked(struct sock *sk, struct page *page,
					  int off, size_t len, int flags,
					  bool more)
{
	struct msghdr msg = {
		.msg_flags = flags | MSG_SPLICE_PAGES | MSG_NO_SHARED_FRAGS |
			     (more ? MSG_MORE : 0),
	};
	struct bio_vec bv;

	bvec_set_page(&bv, page, len, off);
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &bv, 1, len);
	return tcp_sendmsg_locked(sk, &msg, len);
}
#else
static inline int kiwi_splice_page_locked(struct sock *sk, struct page *page,
					  int off, size_t len, int flags,
					  bool more)
{
	flags |= MSG_NO_SHARED_FRAGS;
	if (more)
		flags |= MSG_MORE | MSG_SENDPAGE_NOTLAST;
	return tcp_sendpage_locked(sk, page, off, len, flags);
}
#endif

/*
 * A ubuf_info's release callback: a function pointer up to 6.9, an ops
 * structure since 6.10.  KIWI_UBUF_OPS(o, fn) defines o for kiwi_ubuf_init().
 */
#if KIWI_KERNEL_AT_LEAST(6, 10)
#define KIWI_UBUF_OPS(o, fn)						\
	static const struct ubuf_info_ops o = { .complete = fn }
#define kiwi_ubuf_init(u, o)	((u)->ops = &(o))
#else
#define KIWI_UBUF_OPS(o, fn)						\
	static void (* const o)(struct sk_buff *, struct ubuf_info *, bool) = fn
#define kiwi_ubuf_init(u, o)	((u)->callback = (o))
#endif

/*
 * A port's netdev with a reference (dev_put() it), or NULL while it
 * unregisters.  6.1 keeps ib_core's accessor private; there set, the
 * netdev we gave ib_core, is held by it until the device unregisters.
 */
#if KIWI_KERNEL_AT_LEAST(6, 12)
static inline struct net_device *kiwi_ib_netdev_get(struct ib_device *ibdev,
						    struct net_device *set)
{
	return ib_device_get_netdev(ibdev, 1);
}
#else
static inline struct net_device *kiwi_ib_netdev_get(struct ib_device *ibdev,
						    struct net_device *set)
{
	dev_hold(set);
	return set;
}
#endif

/*
 * TCP takes page fragments from current->task_frag unless the socket says
 * not to (sk_use_task_frag: 6.2, later 6.1 stables; Kbuild checks).  A task
 * mid-send reclaiming into block I/O would find its fragment reused, so
 * without it kernel posts never send from the poster's task.
 */
#ifdef KIWI_HAVE_SK_USE_TASK_FRAG
#define KIWI_SK_OWN_FRAGS	true
static inline void kiwi_sk_own_frags(struct sock *sk)
{
	sk->sk_use_task_frag = false;
}
#else
#define KIWI_SK_OWN_FRAGS	false
static inline void kiwi_sk_own_frags(struct sock *sk)
{
}
#endif

/*
 * Since 6.11 a name given by the user (rdma link add NAME) is marked so,
 * and rdma-core's udev rename leaves it alone; 6.1 has no such flag.
 */
#if KIWI_KERNEL_AT_LEAST(6, 11)
#define kiwi_mark_name_assigned_by_user(ibdev)	\
	ib_mark_name_assigned_by_user(ibdev)
#else
static inline void kiwi_mark_name_assigned_by_user(struct ib_device *ibdev)
{
}
#endif

/*
 * Rings are vmalloc memory mapped page by page, which rdma_user_mmap_io()
 * cannot do: kiwi_mmap() registers the VMA with ib_uverbs itself, so that
 * device removal zaps it.  rdma_umap_priv_init() is exported, but it and
 * its struct (the same in 6.1 and 6.12; ib_uverbs frees it) are declared
 * in ib_core's private core_priv.h.
 */
struct rdma_umap_priv {
	struct vm_area_struct *vma;
	struct list_head list;
	struct rdma_user_mmap_entry *entry;
};

void rdma_umap_priv_init(struct rdma_umap_priv *priv,
			 struct vm_area_struct *vma,
			 struct rdma_user_mmap_entry *entry);

#endif /* KIWI_COMPAT_H */

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi: protection domains and memory regions.  An STag's index is
 * allocated cyclically, so a stale STag from a peer misses; its 8-bit
 * key is random and must match too.
 */
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "res.h"

int kiwi_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct kiwi_dev *kdev = to_kdev(ibpd->device);
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return rv;
	rv = kiwi_charge(kdev, udata, KIWI_UOBJ_PD, &to_kpd(ibpd)->uctx);
	if (rv)
		return rv;
	kiwi_obj_inc(KIWI_OBJ_PD);
	return 0;
}

int kiwi_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct kiwi_dev *kdev = to_kdev(ibpd->device);

	kiwi_uncharge(kdev, to_kpd(ibpd)->uctx, KIWI_UOBJ_PD);
	kiwi_obj_dec(KIWI_OBJ_PD);
	return 0;
}

/* rights an MR may grant: remote atomic and MW bind accepted, as by RNICs */
#define KIWI_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND)
/* Hints a device may ignore by definition. */
#define KIWI_MR_HINTS	(IB_ACCESS_OPTIONAL | IB_ACCESS_HUGETLB)

int kiwi_mr_access_ok(int access)
{
	access &= ~KIWI_MR_HINTS;
	/* a real feature kiwi lacks: addresses would mean something else */
	if (access & IB_ZERO_BASED)
		return -EOPNOTSUPP;
	if (access & ~KIWI_MR_ACCESS)
		return -EINVAL;
	/* a remotely writable region must be locally writable too */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/* frees user MRs put last after dereg_mr: ib_umem_release() sleeps */
static struct workqueue_struct *kiwi_mr_wq;

int kiwi_mem_init(void)
{
	kiwi_mr_wq = alloc_workqueue("kiwi_mr", WQ_MEM_RECLAIM, 0);
	return kiwi_mr_wq ? 0 : -ENOMEM;
}

/* a gone device's deferred frees, before its ib_device (umem->ibdev) */
void kiwi_mem_flush(void)
{
	flush_workqueue(kiwi_mr_wq);
}

/* after every device is gone */
void kiwi_mem_exit(void)
{
	destroy_workqueue(kiwi_mr_wq);
}

/* What is left of an MR once its last reference is gone.  Sleeps. */
static void kiwi_mr_free(struct kiwi_mr *mr)
{
	kvfree(mr->upages);
	if (mr->umem)
		ib_umem_release(mr->umem);
	kfree(mr->pages);
	kiwi_obj_dec(KIWI_OBJ_MR);
	/* lookups that lost the race may still be reading it under RCU */
	kfree_rcu(mr, rcu);
}

static void kiwi_mr_free_work(struct work_struct *work)
{
	kiwi_mr_free(container_of(work, struct kiwi_mr, free_work));
}

/* The data path dropped the last reference, after dereg_mr (any context). */
static void kiwi_mr_release(struct kref *ref)
{
	struct kiwi_mr *mr = container_of(ref, struct kiwi_mr, ref);

	if (mr->type == KIWI_MR_USER)
		queue_work(kiwi_mr_wq, &mr->free_work);
	else
		complete(&mr->freed);	/* dereg_mr is waiting */
}

/* dereg_mr dropped the last reference itself: free at once. */
static void kiwi_mr_release_now(struct kref *ref)
{
	kiwi_mr_free(container_of(ref, struct kiwi_mr, ref));
}

/* The data path's lookup: a referenced MR whose STag matches, or NULL. */
struct kiwi_mr *kiwi_mr_get(struct kiwi_dev *kdev, u32 stag)
{
	struct kiwi_mr *mr;

	rcu_read_lock();
	mr = xa_load(&kdev->mr_xa, KIWI_STAG_INDEX(stag));
	if (mr && (mr->stag != stag || !kref_get_unless_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

void kiwi_mr_put(struct kiwi_mr *mr)
{
	kref_put(&mr->ref, kiwi_mr_release);
}

/* put and clear the references of an SGE list's KIWI_MAX_SGE MRs */
void kiwi_mrs_put(struct kiwi_mr **mr)
{
	int i;

	for (i = 0; i < KIWI_MAX_SGE; i++) {
		if (mr[i])
			kiwi_mr_put(mr[i]);
		mr[i] = NULL;
	}
}

/* Reserve an STag index; publish once complete: lookups see no half MR. */
static struct kiwi_mr *kiwi_mr_new(struct kiwi_dev *kdev,
				   enum kiwi_mr_type type, int access)
{
	struct kiwi_mr *mr;
	u32 idx;
	int rv;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	rv = xa_alloc_cyclic(&kdev->mr_xa, &idx, NULL,
			     XA_LIMIT(1, KIWI_MAX_MR), &kdev->mr_next,
			     GFP_KERNEL);
	if (rv < 0) {
		kfree(mr);
		/* -EBUSY: all KIWI_MAX_MR indexes in use */
		return ERR_PTR(rv == -EBUSY ? -ENOMEM : rv);
	}
	mr->kdev = kdev;
	mr->type = type;
	mr->access = access;
	mr->stag = idx << 8 | (get_random_u32() & 0xff);
	mr->ibmr.lkey = mr->stag;
	mr->ibmr.rkey = mr->stag;
	kref_init(&mr->ref);
	init_completion(&mr->freed);
	INIT_WORK(&mr->free_work, kiwi_mr_free_work);
	return mr;
}

static void kiwi_mr_publish(struct kiwi_mr *mr)
{
	xa_store(&mr->kdev->mr_xa, KIWI_STAG_INDEX(mr->stag), mr, GFP_KERNEL);
	kiwi_obj_inc(KIWI_OBJ_MR);
}

/* For an MR that was never published. */
static void kiwi_mr_abort(struct kiwi_mr *mr)
{
	xa_erase(&mr->kdev->mr_xa, KIWI_STAG_INDEX(mr->stag));
	kfree(mr);
}

/* User MR pages by index from (TO - iova): O(1) lookup. */
static int kiwi_mr_user_pages(struct kiwi_mr *mr)
{
	struct ib_umem *umem = mr->umem;
	struct sg_page_iter it;
	size_t n = ib_umem_num_pages(umem), i = 0;

	if (n > U32_MAX)
		return -EINVAL;
	mr->upages = kvmalloc_array(n, sizeof(*mr->upages), GFP_KERNEL);
	if (!mr->upages)
		return -ENOMEM;
	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (i == n)
			break;
		mr->upages[i++] = sg_page_iter_page(&it);
	}
	if (i != n) {
		kvfree(mr->upages);
		mr->upages = NULL;
		return -EFAULT;
	}
	mr->nupages = n;
	mr->upage_off = ib_umem_offset(umem);
	return 0;
}

struct ib_mr *kiwi_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
			       u64 iova, int access, struct ib_udata *udata)
{
	struct kiwi_dev *kdev = to_kdev(ibpd->device);
	struct kiwi_ucontext *uctx;
	struct ib_umem *umem;
	struct kiwi_mr *mr;
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return ERR_PTR(rv);
	if (!start || !len || len > KIWI_MAX_MR_SIZE ||
	    start + len < start || iova + len < iova)
		return ERR_PTR(-EINVAL);
	rv = kiwi_mr_access_ok(access);
	if (rv)
		return ERR_PTR(rv);
	rv = kiwi_charge(kdev, udata, KIWI_UOBJ_MR, &uctx);
	if (rv)
		return ERR_PTR(rv);

	mr = kiwi_mr_new(kdev, KIWI_MR_USER, access);
	if (IS_ERR(mr)) {
		kiwi_uncharge(kdev, uctx, KIWI_UOBJ_MR);
		return ERR_CAST(mr);
	}
	/* pins the pages, charged to RLIMIT_MEMLOCK; writable if needed */
	umem = ib_umem_get(ibpd->device, start, len, access);
	if (IS_ERR(umem)) {
		kiwi_mr_abort(mr);
		kiwi_uncharge(kdev, uctx, KIWI_UOBJ_MR);
		return ERR_CAST(umem);
	}
	mr->umem = umem;
	rv = kiwi_mr_user_pages(mr);
	if (rv) {
		ib_umem_release(umem);
		kiwi_mr_abort(mr);
		kiwi_uncharge(kdev, uctx, KIWI_UOBJ_MR);
		return ERR_PTR(rv);
	}
	mr->uctx = uctx;
	mr->ibmr.iova = iova;
	mr->ibmr.length = len;
	mr->valid = true;
	kiwi_mr_publish(mr);
	return &mr->ibmr;
}

/* All of kernel memory, for kernel consumers' local SGEs (ib_alloc_pd). */
struct ib_mr *kiwi_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct kiwi_mr *mr;
	int rv;

	rv = kiwi_mr_access_ok(access);
	if (rv)
		return ERR_PTR(rv);
	mr = kiwi_mr_new(to_kdev(ibpd->device), KIWI_MR_DMA, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->valid = true;
	kiwi_mr_publish(mr);
	return &mr->ibmr;
}

/* Fast-registration MRs: pages set by map_mr_sg, rights by a REG_MR WR. */
struct ib_mr *kiwi_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			    u32 max_num_sg)
{
	struct kiwi_mr *mr;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > KIWI_MAX_FRMR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = kiwi_mr_new(to_kdev(ibpd->device), KIWI_MR_FAST_REG, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->pages = kcalloc(max_num_sg, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		kiwi_mr_abort(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->max_pages = max_num_sg;
	kiwi_mr_publish(mr);
	return &mr->ibmr;
}

static int kiwi_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct kiwi_mr *mr = to_kmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	WRITE_ONCE(mr->pages[mr->npages], addr);
	WRITE_ONCE(mr->npages, mr->npages + 1);
	return 0;
}

int kiwi_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset)
{
	struct kiwi_mr *mr = to_kmr(ibmr);

	if (mr->type != KIWI_MR_FAST_REG)
		return -EINVAL;
	/* invalid, new generation, then pages[], iova and length change */
	kiwi_mr_invalidate(mr);
	WRITE_ONCE(mr->npages, 0);
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, kiwi_set_page);
}

/*
 * The data path may hold references as long as a peer likes, so dereg_mr
 * waits for them only where it must: a user MR is invalidated and freed
 * by the last put; a kernel MR's memory is freed by its consumer once
 * dereg_mr returns, after it stopped its QPs (which drop their references).
 */
int kiwi_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct kiwi_mr *mr = to_kmr(ibmr);

	/* unreachable for new lookups, refused by the checks of old ones */
	xa_erase(&mr->kdev->mr_xa, KIWI_STAG_INDEX(mr->stag));
	kiwi_mr_invalidate(mr);
	/* its STag index is free again: so is its place under the caps */
	kiwi_uncharge(mr->kdev, mr->uctx, KIWI_UOBJ_MR);
	if (mr->type == KIWI_MR_USER) {
		/* freed here if unused, else by the last kiwi_mr_put() */
		kref_put(&mr->ref, kiwi_mr_release_now);
		return 0;
	}
	kiwi_mr_put(mr);
	wait_for_completion(&mr->freed);
	kiwi_mr_free(mr);
	return 0;
}

/*
 * May the data path use [to, to + len) of mr for a QP of pd with these
 * rights?  -ENOENT, -EPERM (PD), -EACCES or -EFAULT (bounds) if not.
 * *gen: the generation the answer holds for, for kiwi_mr_kaddr().
 */
int kiwi_mr_check(struct kiwi_mr *mr, struct ib_pd *pd, u64 to, u64 len,
		  int access, u32 *gen)
{
	u32 g = atomic_read(&mr->gen);
	int rv = 0;

	/* seqcount-like: the fields read between two equal generations */
	smp_rmb();
	if (!READ_ONCE(mr->valid))
		return -ENOENT;
	if (mr->ibmr.pd != pd)
		return -EPERM;
	if (mr->type == KIWI_MR_DMA) {
		rv = access & (IB_ACCESS_REMOTE_READ |
			       IB_ACCESS_REMOTE_WRITE) ? -EACCES : 0;
	} else {
		u64 iova = READ_ONCE(mr->ibmr.iova);
		u64 length = READ_ONCE(mr->ibmr.length);

		if ((READ_ONCE(mr->access) & access) != access)
			return -EACCES;
		if (to < iova || len > length || to - iova > length - len)
			return -EFAULT;
	}
	/* the fields before the second look at the generation */
	smp_rmb();
	if (!kiwi_mr_current(mr, g))
		return -ENOENT;		/* invalidated or re-mapped meanwhile */
	if (gen)
		*gen = g;
	return rv;
}

/*
 * Kernel address of tagged offset to (checked at generation gen) and the
 * bytes contiguous from there, or NULL if the MR changed since.  64-bit,
 * no highmem: page_address() serves for pinned user pages.
 */
void *kiwi_mr_kaddr(struct kiwi_mr *mr, u32 gen, u64 to, u32 *contig)
{
	u64 pos, off, idx, base;
	void *p;
	u32 ps;

	switch (mr->type) {
	case KIWI_MR_USER:
		pos = to - mr->ibmr.iova + mr->upage_off;
		idx = pos >> PAGE_SHIFT;
		if (idx >= mr->nupages)
			return NULL;
		off = pos & ~PAGE_MASK;
		*contig = PAGE_SIZE - off;
		p = page_address(mr->upages[idx]) + off;
		break;
	case KIWI_MR_FAST_REG:
		ps = READ_ONCE(mr->ibmr.page_size);
		if (!is_power_of_2(ps))
			return NULL;
		pos = to - (READ_ONCE(mr->ibmr.iova) & ~(u64)(ps - 1));
		idx = pos >> __ffs(ps);
		/* npages <= max_pages, the size of pages[] */
		if (idx >= READ_ONCE(mr->npages))
			return NULL;
		base = READ_ONCE(mr->pages[idx]);
		off = pos & (ps - 1);
		*contig = ps - off;
		p = (void *)(uintptr_t)(base + off);
		break;
	default:			/* KIWI_MR_DMA */
		*contig = U32_MAX;
		p = (void *)(uintptr_t)to;
		break;
	}
	/* the mapping before the generation; kiwi_mr_bump() pairs */
	smp_rmb();
	return kiwi_mr_current(mr, gen) ? p : NULL;
}

/* a new generation: whatever was admitted under the old one stops */
void kiwi_mr_bump(struct kiwi_mr *mr)
{
	atomic_inc(&mr->gen);
	/* the new generation before any change to the mapping */
	smp_mb__after_atomic();
}

/* LOCAL_INV, remote invalidation, re-mapping, deregistration */
void kiwi_mr_invalidate(struct kiwi_mr *mr)
{
	WRITE_ONCE(mr->valid, false);
	kiwi_mr_bump(mr);
}

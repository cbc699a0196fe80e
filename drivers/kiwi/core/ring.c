// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi rings: slot arrays, mapped into the process for user objects. */
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/vmalloc.h>

#include "core.h"

/* Freed with the mmap entry's last reference, which each VMA holds. */
struct kiwi_umap {
	struct rdma_user_mmap_entry rdma;
	void *mem;
	struct mm_struct *mm;		/* pinned_vm charged to (mmgrab) */
	unsigned long npages;
};

/*
 * Rings are unswappable memory the user sizes: charged as pinned against
 * the creator's RLIMIT_MEMLOCK, as ib_umem does.  The mm is kept (mmgrab)
 * to uncharge the same counter after exit or disassociation.
 */
static int kiwi_umap_charge(struct kiwi_umap *um, size_t bytes)
{
	struct mm_struct *mm = current->mm;
	unsigned long npages = bytes >> PAGE_SHIFT;
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;

	if (!mm)
		return 0;
	if (atomic64_add_return(npages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	um->mm = mm;
	um->npages = npages;
	return 0;
}

static void kiwi_umap_uncharge(struct kiwi_umap *um)
{
	if (!um->mm)
		return;
	atomic64_sub(um->npages, &um->mm->pinned_vm);
	mmdrop(um->mm);
	um->mm = NULL;
}

void kiwi_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	struct kiwi_umap *um = container_of(rentry, struct kiwi_umap, rdma);

	vfree(um->mem);
	kiwi_umap_uncharge(um);
	kfree(um);
}

int kiwi_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	struct rdma_umap_priv *priv;
	struct kiwi_umap *um;
	unsigned long off;
	int rv;

	/* Checks VM_SHARED and that the length matches the ring exactly. */
	rentry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rentry)
		return -EINVAL;
	um = container_of(rentry, struct kiwi_umap, rdma);
	priv = kzalloc(sizeof(*priv), GFP_KERNEL);
	if (!priv) {
		rv = -ENOMEM;
		goto out;
	}
	/*
	 * Page by page, as PFN mappings: not VM_USERMAP memory, and device
	 * removal's zap_vma_ptes() touches VM_PFNMAP areas only.  The mmap
	 * entry, held for every tracked VMA (compat.h), keeps the pages.
	 * On failure mmap() unmaps what was mapped.
	 */
	for (off = 0, rv = 0; off < vma->vm_end - vma->vm_start && !rv;
	     off += PAGE_SIZE)
		rv = remap_pfn_range(vma, vma->vm_start + off,
				     vmalloc_to_pfn(um->mem + off), PAGE_SIZE,
				     vma->vm_page_prot);
	if (!rv)
		rdma_umap_priv_init(priv, vma, rentry);
	else
		kfree(priv);
out:
	rdma_user_mmap_entry_put(rentry);
	return rv;
}

int kiwi_ring_alloc(struct kiwi_ring *r, u32 num, u32 slot_size,
		    struct ib_udata *udata)
{
	struct kiwi_ucontext *uctx;
	struct kiwi_umap *um;
	int rv;

	r->num = num;
	r->slot_size = slot_size;
	r->bytes = PAGE_ALIGN((size_t)num * slot_size + KIWI_RING_CTRL_SIZE);
	r->mentry = NULL;
	if (!udata) {
		r->mem = vzalloc(r->bytes);
		return r->mem ? 0 : -ENOMEM;
	}

	uctx = rdma_udata_to_drv_context(udata, struct kiwi_ucontext, ibuc);
	um = kzalloc(sizeof(*um), GFP_KERNEL);
	if (!um)
		return -ENOMEM;
	rv = kiwi_umap_charge(um, r->bytes);
	if (rv)
		goto err;
	/* charged to the caller's memcg: ring sizes are the user's choice */
	um->mem = __vmalloc(r->bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	rv = um->mem ? rdma_user_mmap_entry_insert(&uctx->ibuc, &um->rdma,
						   r->bytes) : -ENOMEM;
	if (rv)
		goto err;
	r->mem = um->mem;
	r->mentry = &um->rdma;
	/* the provider's sign that the ring is still kiwi's (kiwi-abi.h) */
	WRITE_ONCE(*(u32 *)(kiwi_ring_ctrl(r) + KIWI_CTRL_ALIVE_OFFSET),
		   get_random_u32() | 1);
	return 0;
err:
	/* what there is of it (um was zeroed): no entry holds it */
	kiwi_mmap_free(&um->rdma);
	return rv;
}

void kiwi_ring_free(struct kiwi_ring *r)
{
	if (r->mentry)
		rdma_user_mmap_entry_remove(r->mentry);	/* frees r->mem */
	else
		vfree(r->mem);
	r->mem = NULL;
	r->mentry = NULL;
}

u64 kiwi_ring_key(const struct kiwi_ring *r)
{
	return r->mentry ? rdma_user_mmap_get_offset(r->mentry) :
		KIWI_INVAL_KEY;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kiwi's floor above proto/: device, accounting, counters, rings, udata. */
#ifndef KIWI_CORE_H
#define KIWI_CORE_H

#include <linux/completion.h>
#include <linux/etherdevice.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/uverbs_ioctl.h>

#include <uapi/kiwi-abi.h>

#include "compat.h"
#include "proto/kiwi_proto.h"

/* Object counts shown in debugfs; tests check they return to zero. */
enum kiwi_obj {
	KIWI_OBJ_DEVICE,
	KIWI_OBJ_UCONTEXT,
	KIWI_OBJ_PD,
	KIWI_OBJ_CQ,
	KIWI_OBJ_QP,
	KIWI_OBJ_SRQ,
	KIWI_OBJ_MR,
	KIWI_OBJ_CEP,
	KIWI_OBJ_MAX
};

void kiwi_obj_inc(enum kiwi_obj obj);
void kiwi_obj_dec(enum kiwi_obj obj);
/* user SQ doorbells received, in debugfs (kiwi/doorbells) */
void kiwi_doorbell_count(void);
/* the debugfs files above (objects, doorbells); the leak report at exit */
void kiwi_core_debugfs(struct dentry *dir);
void kiwi_core_leaks(void);

/* per-device counters (stats.h), per CPU for an unshared add */
enum kiwi_stat {
#define KIWI_STAT(e, ...)	e,
#include "stats.h"
#undef KIWI_STAT
	KIWI_STAT_MAX
};

struct kiwi_stats {
	u64 v[KIWI_STAT_MAX];
};

/* What objects are charged against (device limit, user caps). */
enum kiwi_uobj {
	KIWI_UOBJ_PD,
	KIWI_UOBJ_CQ,
	KIWI_UOBJ_QP,
	KIWI_UOBJ_SRQ,
	KIWI_UOBJ_MR,
	KIWI_UOBJ_MAX
};

struct kiwi_dev {
	struct ib_device ibdev;
	/* not a reference: ib_core's lasts until the notifier unregisters us */
	struct net_device *netdev;

	spinlock_t lock;		/* state, mac */
	enum ib_port_state state;
	u8 mac[ETH_ALEN];		/* the GID is derived from it */

	struct xarray qp_xa;		/* qp_num -> kiwi_qp */
	u32 qp_next;			/* cyclic QP number allocation */
	struct xarray mr_xa;		/* STag index -> kiwi_mr */
	u32 mr_next;			/* cyclic STag index allocation */

	/* against KIWI_MAX_*; QPs and MRs are bounded by their numbers */
	atomic_t nobj[KIWI_UOBJ_MAX];
	atomic_t cq_ids;		/* cq_id handed to the provider */
	atomic_t nuser[KIWI_UOBJ_MAX];	/* objects of all user contexts */

	struct kiwi_stats __percpu *stats;	/* freed by dealloc_driver */
	struct kiwi_cm_dev *cm;		/* the CM's record (cm/cm_policy.c) */
};

/* Any context; kdev->stats lives as long as the ib_device. */
static inline void kiwi_stat_add(struct kiwi_dev *kdev, enum kiwi_stat s,
				 u64 n)
{
	this_cpu_add(kdev->stats->v[s], n);
}

static inline void kiwi_stat_inc(struct kiwi_dev *kdev, enum kiwi_stat s)
{
	kiwi_stat_add(kdev, s, 1);
}

/* A Terminate's layer (KIWI_LAYER_RDMAP, _DDP, _LLP), counted. */
static inline void kiwi_stat_term(struct kiwi_dev *kdev, bool sent, u8 layer)
{
	if (layer > KIWI_LAYER_LLP)
		layer = KIWI_LAYER_LLP;
	kiwi_stat_inc(kdev, (sent ? KIWI_STAT_TERM_SENT_RDMAP :
			     KIWI_STAT_TERM_RCVD_RDMAP) + layer);
}

struct kiwi_ucontext {
	struct ib_ucontext ibuc;
	struct kiwi_dev *kdev;
	atomic_t nobj[KIWI_UOBJ_MAX];	/* this context's objects */
};

struct kiwi_pd {
	struct ib_pd ibpd;
	struct kiwi_ucontext *uctx;	/* charged to; NULL: kernel */
};

/* Every ring ends with one control block of this size (kiwi-abi.h). */
#define KIWI_RING_CTRL_SIZE	64

/* Slots and a 64-byte control block, for user and kernel objects. */
struct kiwi_ring {
	void *mem;
	u32 num;			/* slots, a power of two */
	u32 slot_size;
	size_t bytes;			/* page-aligned allocation */
	struct rdma_user_mmap_entry *mentry;	/* NULL for kernel rings */
};

static inline void *kiwi_ring_slot(const struct kiwi_ring *r, u32 idx)
{
	return r->mem + (size_t)(idx & (r->num - 1)) * r->slot_size;
}

static inline void *kiwi_ring_ctrl(const struct kiwi_ring *r)
{
	return r->mem + (size_t)r->num * r->slot_size;
}

/*
 * Slot ownership (kiwi-abi.h): read a slot's contents only after seeing
 * its flags (acquire), and finish writing them before setting or clearing
 * the VALID bit (release).  Works on the u8 CQE and u16 WQE flags alike.
 */
/* acquire: the flags before the contents */
#define kiwi_slot_flags(pflags)		smp_load_acquire(pflags)
/* release: the contents before the flags */
#define kiwi_slot_set(pflags, v)	smp_store_release(pflags, v)

int kiwi_ring_alloc(struct kiwi_ring *r, u32 num, u32 slot_size,
		    struct ib_udata *udata);
void kiwi_ring_free(struct kiwi_ring *r);
u64 kiwi_ring_key(const struct kiwi_ring *r);

static inline struct kiwi_dev *to_kdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct kiwi_dev, ibdev);
}

/* the netdev's MTU as a verbs MTU; Ethernet's while it unregisters */
static inline enum ib_mtu kiwi_dev_path_mtu(struct kiwi_dev *kdev)
{
	struct net_device *ndev = kiwi_ib_netdev_get(&kdev->ibdev,
						     kdev->netdev);
	unsigned int mtu = ETH_DATA_LEN;

	if (ndev) {
		mtu = READ_ONCE(ndev->mtu);
		dev_put(ndev);
	}
	return ib_mtu_int_to_enum(mtu);
}

static inline struct kiwi_ucontext *to_kuctx(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct kiwi_ucontext, ibuc);
}

static inline struct kiwi_pd *to_kpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct kiwi_pd, ibpd);
}

/* udata helpers (obj.c) */
int kiwi_udata_in_ok(struct ib_udata *udata);
int kiwi_respond(struct ib_udata *udata, const void *resp, size_t len);
int kiwi_charge(struct kiwi_dev *kdev, struct ib_udata *udata,
		enum kiwi_uobj t, struct kiwi_ucontext **uctx);
void kiwi_uncharge(struct kiwi_dev *kdev, struct kiwi_ucontext *uctx,
		   enum kiwi_uobj t);
int kiwi_fill_res_mpa(struct sk_buff *msg, const struct kiwi_mpa_result *r);

/* ring.c: the mapping of user rings (device.c's ops table) */
int kiwi_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void kiwi_mmap_free(struct rdma_user_mmap_entry *rentry);

/* crc.c: the CRC tables and path of payload copies at load, in debugfs */
void kiwi_crc_pick(struct dentry *dir);

#endif /* KIWI_CORE_H */

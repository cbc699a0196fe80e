// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: object counts and doorbells in debugfs, charges, udata, traces. */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <rdma/restrack.h>
#include <rdma/uverbs_ioctl.h>

#include "core.h"

/* the one place the trace events are instantiated */
#define CREATE_TRACE_POINTS
#include "kiwi_trace.h"

static atomic_t kiwi_objs[KIWI_OBJ_MAX];

static const char * const kiwi_obj_names[KIWI_OBJ_MAX] = {
	[KIWI_OBJ_DEVICE] = "devices",
	[KIWI_OBJ_UCONTEXT] = "ucontexts",
	[KIWI_OBJ_PD] = "pds",
	[KIWI_OBJ_CQ] = "cqs",
	[KIWI_OBJ_QP] = "qps",
	[KIWI_OBJ_SRQ] = "srqs",
	[KIWI_OBJ_MR] = "mrs",
	[KIWI_OBJ_CEP] = "ceps",
};

void kiwi_obj_inc(enum kiwi_obj obj)
{
	atomic_inc(&kiwi_objs[obj]);
}

void kiwi_obj_dec(enum kiwi_obj obj)
{
	WARN_ON_ONCE(atomic_dec_return(&kiwi_objs[obj]) < 0);
}

/*
 * SQ doorbells rung, all devices (tests show busy engines need none);
 * per CPU, so that both ends do not share one line per message.
 */
static DEFINE_PER_CPU(u64, kiwi_doorbells);

void kiwi_doorbell_count(void)
{
	this_cpu_inc(kiwi_doorbells);
}

static int kiwi_doorbells_show(struct seq_file *m, void *unused)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu(kiwi_doorbells, cpu);
	seq_printf(m, "%llu\n", (unsigned long long)sum);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kiwi_doorbells);

static int kiwi_objects_show(struct seq_file *m, void *unused)
{
	int i;

	for (i = 0; i < KIWI_OBJ_MAX; i++)
		seq_printf(m, "%s %d\n", kiwi_obj_names[i],
			   atomic_read(&kiwi_objs[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kiwi_objects);

void kiwi_core_debugfs(struct dentry *dir)
{
	debugfs_create_file("objects", 0444, dir, NULL, &kiwi_objects_fops);
	debugfs_create_file("doorbells", 0444, dir, NULL,
			    &kiwi_doorbells_fops);
}

void kiwi_core_leaks(void)
{
	int i;

	for (i = 0; i < KIWI_OBJ_MAX; i++)
		if (atomic_read(&kiwi_objs[i]))
			pr_err("kiwi: %d %s leaked\n",
			       atomic_read(&kiwi_objs[i]), kiwi_obj_names[i]);
}

/*
 * The provider sends no driver data with its requests today.  Accept
 * trailing zeroes (a newer provider's unused fields) and refuse anything
 * else, so that a request we would silently ignore never succeeds.
 */
int kiwi_udata_in_ok(struct ib_udata *udata)
{
	if (!udata || !udata->inlen)
		return 0;
	return ib_is_udata_cleared(udata, 0, udata->inlen) ? 0 : -EOPNOTSUPP;
}

/* A response the provider cannot hold is an ABI mismatch, not truncation. */
int kiwi_respond(struct ib_udata *udata, const void *resp, size_t len)
{
	if (udata->outlen < len)
		return -EINVAL;
	return ib_copy_to_udata(udata, (void *)resp, len);
}

/*
 * Caps on user objects (limits.md): a context gets at most a quarter of a
 * device limit, and user contexts together leave a sixteenth to kernel
 * consumers (NVMe-oF, NFS, iSER).
 */
static const u32 kiwi_uobj_max[KIWI_UOBJ_MAX] = {
	[KIWI_UOBJ_PD] = KIWI_MAX_PD,
	[KIWI_UOBJ_CQ] = KIWI_MAX_CQ,
	[KIWI_UOBJ_QP] = KIWI_MAX_QP,
	[KIWI_UOBJ_SRQ] = KIWI_MAX_SRQ,
	[KIWI_UOBJ_MR] = KIWI_MAX_MR,
};

/* the kinds kiwi_charge() counts against the device's limit */
#define KIWI_UOBJ_DEV_COUNTED	(BIT(KIWI_UOBJ_PD) | BIT(KIWI_UOBJ_CQ) | \
				 BIT(KIWI_UOBJ_SRQ))

static int kiwi_uobj_charge(struct ib_udata *udata, enum kiwi_uobj t,
			    struct kiwi_ucontext **uctx)
{
	struct kiwi_ucontext *uc;
	u32 max = kiwi_uobj_max[t];

	*uctx = NULL;
	if (!udata)
		return 0;
	uc = rdma_udata_to_drv_context(udata, struct kiwi_ucontext, ibuc);
	if (atomic_inc_return(&uc->nobj[t]) > max / 4) {
		atomic_dec(&uc->nobj[t]);
		return -ENOMEM;
	}
	if (atomic_inc_return(&uc->kdev->nuser[t]) > max - max / 16) {
		atomic_dec(&uc->kdev->nuser[t]);
		atomic_dec(&uc->nobj[t]);
		return -ENOMEM;
	}
	*uctx = uc;
	return 0;
}

/*
 * Charge one object of kind t to udata's context, then to the device.
 * *uctx is for kiwi_uncharge() (NULL: kernel).  -ENOMEM over a limit.
 */
int kiwi_charge(struct kiwi_dev *kdev, struct ib_udata *udata,
		enum kiwi_uobj t, struct kiwi_ucontext **uctx)
{
	int rv = kiwi_uobj_charge(udata, t, uctx);

	if (rv || !(KIWI_UOBJ_DEV_COUNTED & BIT(t)))
		return rv;
	if (atomic_inc_return(&kdev->nobj[t]) > kiwi_uobj_max[t]) {
		kiwi_uncharge(kdev, *uctx, t);
		return -ENOMEM;
	}
	return 0;
}

void kiwi_uncharge(struct kiwi_dev *kdev, struct kiwi_ucontext *uctx,
		   enum kiwi_uobj t)
{
	if (KIWI_UOBJ_DEV_COUNTED & BIT(t))
		atomic_dec(&kdev->nobj[t]);
	if (!uctx)
		return;
	atomic_dec(&uctx->kdev->nuser[t]);
	atomic_dec(&uctx->nobj[t]);
}

/* What the MPA exchange settled, in `rdma res show qp|cm_id -dd`. */
int kiwi_fill_res_mpa(struct sk_buff *msg, const struct kiwi_mpa_result *r)
{
	return rdma_nl_put_driver_u32(msg, "mpa_rev", r->rev) ||
	       rdma_nl_put_driver_u32(msg, "mpa_crc", r->crc) ||
	       rdma_nl_put_driver_u32(msg, "mpa_markers_rx", r->markers_rx) ||
	       rdma_nl_put_driver_u32(msg, "mpa_markers_tx", r->markers_tx) ||
	       rdma_nl_put_driver_u32(msg, "mpa_p2p", r->p2p) ||
	       rdma_nl_put_driver_u32(msg, "mpa_rtr", r->rtr) ? -EMSGSIZE : 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: the ib_device operations, queries and user contexts. */
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <rdma/uverbs_ioctl.h>

#include "kiwi.h"

/* Reported as vendor_id; "kiw" in ASCII (24-bit field, no OUI of ours). */
#define KIWI_VENDOR_ID	0x6b6977

static int kiwi_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *attr,
			     struct ib_udata *udata)
{
	struct kiwi_dev *kdev = to_kdev(ibdev);
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return rv;

	memset(attr, 0, sizeof(*attr));
	attr->vendor_id = KIWI_VENDOR_ID;
	attr->max_mr_size = KIWI_MAX_MR_SIZE;
	attr->page_size_cap = PAGE_SIZE;
	attr->max_qp = KIWI_MAX_QP;
	attr->max_qp_wr = KIWI_MAX_QP_WR;
	attr->device_cap_flags = IB_DEVICE_MEM_MGT_EXTENSIONS;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->max_send_sge = KIWI_MAX_SGE;
	attr->max_recv_sge = KIWI_MAX_SGE;
	attr->max_sge_rd = KIWI_MAX_SGE_RD;
	attr->max_cq = KIWI_MAX_CQ;
	attr->max_cqe = KIWI_MAX_CQE;
	attr->max_mr = KIWI_MAX_MR;
	attr->max_pd = KIWI_MAX_PD;
	attr->max_qp_rd_atom = KIWI_MAX_ORD;
	attr->max_qp_init_rd_atom = KIWI_MAX_ORD;
	attr->max_res_rd_atom = KIWI_MAX_QP * KIWI_MAX_IRD;
	attr->atomic_cap = IB_ATOMIC_NONE;
	attr->max_srq = KIWI_MAX_SRQ;
	attr->max_srq_wr = KIWI_MAX_SRQ_WR;
	attr->max_srq_sge = KIWI_MAX_SGE;
	attr->max_fast_reg_page_list_len = KIWI_MAX_FRMR_PAGES;
	spin_lock(&kdev->lock);
	addrconf_addr_eui48((u8 *)&attr->sys_image_guid, kdev->mac);
	spin_unlock(&kdev->lock);
	return 0;
}

static int kiwi_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *attr)
{
	struct kiwi_dev *kdev = to_kdev(ibdev);

	memset(attr, 0, sizeof(*attr));
	spin_lock(&kdev->lock);
	attr->state = kdev->state;
	spin_unlock(&kdev->lock);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
		IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;
	attr->gid_tbl_len = KIWI_GID_TBL_LEN;
	attr->max_msg_sz = KIWI_MAX_MSG_SIZE;
	attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_DEVICE_MGMT_SUP;

	attr->max_mtu = kiwi_dev_path_mtu(kdev);
	attr->active_mtu = attr->max_mtu;

	/*
	 * Takes the RTNL; never call query_port from the netdev notifier.
	 * Fails while the netdev unregisters: the speed is then unknown,
	 * which is no reason to fail the query.
	 */
	if (ib_get_eth_speed(ibdev, port, &attr->active_speed,
			     &attr->active_width)) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static int kiwi_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *imm)
{
	imm->gid_tbl_len = KIWI_GID_TBL_LEN;
	imm->core_cap_flags = RDMA_CORE_PORT_IWARP;
	return 0;
}

/* iWARP has no GID of its own; ours is the MAC, as iw_cm users expect. */
static int kiwi_query_gid(struct ib_device *ibdev, u32 port, int idx,
			  union ib_gid *gid)
{
	struct kiwi_dev *kdev = to_kdev(ibdev);

	if (idx != 0)
		return -EINVAL;
	memset(gid, 0, sizeof(*gid));
	spin_lock(&kdev->lock);
	memcpy(gid->raw, kdev->mac, ETH_ALEN);
	spin_unlock(&kdev->lock);
	return 0;
}

static int kiwi_alloc_ucontext(struct ib_ucontext *ibuc,
			       struct ib_udata *udata)
{
	struct kiwi_dev *kdev = to_kdev(ibuc->device);
	struct kiwi_uresp_alloc_ctx resp = {
		.abi_version = KIWI_ABI_VERSION,
		.dev_id = kdev->ibdev.index,
		.max_sge = KIWI_MAX_SGE,
		.max_inline = KIWI_MAX_INLINE,
	};
	int rv;

	rv = kiwi_udata_in_ok(udata);
	if (rv)
		return rv;
	rv = kiwi_respond(udata, &resp, sizeof(resp));
	if (rv)
		return rv;
	to_kuctx(ibuc)->kdev = kdev;
	kiwi_obj_inc(KIWI_OBJ_UCONTEXT);
	return 0;
}

static void kiwi_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	kiwi_obj_dec(KIWI_OBJ_UCONTEXT);
}

/*
 * The device is going away while a process holds it open.  Having this
 * operation is what matters: ib_uverbs then destroys the context's
 * objects and zaps its ring mappings itself at unregistration, instead
 * of waiting for the process to close the device.  kiwi keeps no other
 * per-context state.
 */
static void kiwi_disassociate_ucontext(struct ib_ucontext *ibuc)
{
	struct kiwi_ucontext *uctx = to_kuctx(ibuc);
	int t;

	for (t = 0; t < KIWI_UOBJ_MAX; t++)
		WARN_ON(atomic_read(&uctx->nobj[t]));
}

/* Per-device knob files, named at load (cm_policy.c parses them). */
static struct device_attribute kiwi_knob_attrs[KIWI_KNOB_MAX];

static ssize_t kiwi_knob_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct kiwi_dev *kdev = rdma_device_to_drv_device(dev, struct kiwi_dev,
							  ibdev);

	return kiwi_cm_knob_show(kdev, attr - kiwi_knob_attrs, buf);
}

static ssize_t kiwi_knob_store(struct device *dev,
			       struct device_attribute *attr, const char *buf,
			       size_t count)
{
	struct kiwi_dev *kdev = rdma_device_to_drv_device(dev, struct kiwi_dev,
							  ibdev);

	return kiwi_cm_knob_store(kdev, attr - kiwi_knob_attrs, buf, count);
}

/* read by iw_cm per listen and connect: mapped ports stay as they are */
static ssize_t port_map_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct kiwi_dev *kdev = rdma_device_to_drv_device(dev, struct kiwi_dev,
							  ibdev);

	return sysfs_emit(buf, "%d\n", !(READ_ONCE(kdev->ibdev.iw_driver_flags) &
					 IW_F_NO_PORT_MAP));
}

static ssize_t port_map_store(struct device *dev,
			      struct device_attribute *attr, const char *buf,
			      size_t count)
{
	struct kiwi_dev *kdev = rdma_device_to_drv_device(dev, struct kiwi_dev,
							  ibdev);
	bool on;
	int rv = kstrtobool(buf, &on);

	if (rv)
		return rv;
	WRITE_ONCE(kdev->ibdev.iw_driver_flags, on ? 0 : IW_F_NO_PORT_MAP);
	return count;
}

static DEVICE_ATTR_RW(port_map);

/* the knobs' files, then port_map; filled at load */
static struct attribute *kiwi_dev_attrs[KIWI_KNOB_MAX + 2];

void kiwi_dev_attrs_init(void)
{
	struct device_attribute *a;
	int k;

	for (k = 0; k < KIWI_KNOB_MAX; k++) {
		a = &kiwi_knob_attrs[k];
		sysfs_attr_init(&a->attr);
		a->attr.name = kiwi_cm_knob_name(k);
		a->attr.mode = 0644;
		a->show = kiwi_knob_show;
		a->store = kiwi_knob_store;
		kiwi_dev_attrs[k] = &a->attr;
	}
	kiwi_dev_attrs[KIWI_KNOB_MAX] = &dev_attr_port_map.attr;
}

static const struct attribute_group kiwi_dev_attr_group = {
	.attrs = kiwi_dev_attrs,
};

/* The counters' names, as `rdma statistic` and hw_counters show them. */
static const struct rdma_stat_desc kiwi_stat_descs[KIWI_STAT_MAX] = {
#define KIWI_STAT(e, s)							\
	[e] = { .name = s },
#include "core/stats.h"
#undef KIWI_STAT
};

/* One set for the one port; the core frees it at unregistration. */
static struct rdma_hw_stats *kiwi_alloc_hw_port_stats(struct ib_device *ibdev,
						      u32 port)
{
	return rdma_alloc_hw_stats_struct(kiwi_stat_descs, KIWI_STAT_MAX,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* Under stats->lock (the core's); sums the CPUs' shares. */
static int kiwi_get_hw_stats(struct ib_device *ibdev,
			     struct rdma_hw_stats *stats, u32 port, int index)
{
	struct kiwi_dev *kdev = to_kdev(ibdev);
	int cpu, i;

	if (!port || stats->num_counters != KIWI_STAT_MAX)
		return -EINVAL;
	memset(stats->value, 0, KIWI_STAT_MAX * sizeof(stats->value[0]));
	for_each_possible_cpu(cpu) {
		const struct kiwi_stats *s = per_cpu_ptr(kdev->stats, cpu);

		for (i = 0; i < KIWI_STAT_MAX; i++)
			stats->value[i] += READ_ONCE(s->v[i]);
	}
	return KIWI_STAT_MAX;
}

static void kiwi_dealloc_driver(struct ib_device *ibdev)
{
	struct kiwi_dev *kdev = to_kdev(ibdev);

	/* connections and listeners left over: close and wait for them */
	kiwi_cm_dev_del(kdev);
	/* user MRs freed by their last put, after the QPs that held them */
	kiwi_mem_flush();
	WARN_ON(!xa_empty(&kdev->qp_xa));
	WARN_ON(!xa_empty(&kdev->mr_xa));
	xa_destroy(&kdev->qp_xa);
	xa_destroy(&kdev->mr_xa);
	free_percpu(kdev->stats);
	kiwi_obj_dec(KIWI_OBJ_DEVICE);
}

const struct ib_device_ops kiwi_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = KIWI_DRIVER_ID,
	.uverbs_abi_ver = KIWI_ABI_VERSION,

	.alloc_hw_port_stats = kiwi_alloc_hw_port_stats,
	.alloc_mr = kiwi_alloc_mr,
	.alloc_pd = kiwi_alloc_pd,
	.alloc_ucontext = kiwi_alloc_ucontext,
	.create_cq = kiwi_create_cq,
	.create_qp = kiwi_create_qp,
	.create_srq = kiwi_create_srq,
	.dealloc_driver = kiwi_dealloc_driver,
	.dealloc_pd = kiwi_dealloc_pd,
	.dealloc_ucontext = kiwi_dealloc_ucontext,
	.dereg_mr = kiwi_dereg_mr,
	.device_group = &kiwi_dev_attr_group,
	.destroy_cq = kiwi_destroy_cq,
	.destroy_qp = kiwi_destroy_qp,
	.destroy_srq = kiwi_destroy_srq,
	.disassociate_ucontext = kiwi_disassociate_ucontext,
	.get_dma_mr = kiwi_get_dma_mr,
	.get_hw_stats = kiwi_get_hw_stats,
	.get_port_immutable = kiwi_get_port_immutable,
	.iw_accept = kiwi_iw_accept,
	.iw_add_ref = kiwi_qp_add_ref,
	.iw_connect = kiwi_iw_connect,
	.iw_create_listen = kiwi_iw_create_listen,
	.iw_destroy_listen = kiwi_iw_destroy_listen,
	.iw_get_qp = kiwi_get_qp,
	.iw_reject = kiwi_iw_reject,
	.iw_rem_ref = kiwi_qp_rem_ref,
	.map_mr_sg = kiwi_map_mr_sg,
	.mmap = kiwi_mmap,
	.mmap_free = kiwi_mmap_free,
	.fill_res_cm_id_entry = kiwi_fill_res_cm_id_entry,
	.fill_res_qp_entry = kiwi_fill_res_qp_entry,
	.modify_qp = kiwi_modify_qp,
	.modify_srq = kiwi_modify_srq,
	.poll_cq = kiwi_poll_cq,
	.post_recv = kiwi_post_recv,
	.post_send = kiwi_post_send,
	.post_srq_recv = kiwi_post_srq_recv,
	.query_device = kiwi_query_device,
	.query_gid = kiwi_query_gid,
	.query_port = kiwi_query_port,
	.query_qp = kiwi_query_qp,
	.query_srq = kiwi_query_srq,
	.reg_user_mr = kiwi_reg_user_mr,
	.req_notify_cq = kiwi_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, kiwi_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, kiwi_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, kiwi_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, kiwi_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, kiwi_ucontext, ibuc),
};

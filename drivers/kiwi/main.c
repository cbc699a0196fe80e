// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi: module entry points, the rdma link type, the netdev notifier. */
#include <linux/debugfs.h>
#include <linux/if_arp.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <linux/seq_file.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>

#include "kiwi.h"

/*
 * Off, a device uses the ports rdma_cm chose, as siw does.  On, iwpmd
 * maps them, as for RNICs: a ULP may then listen on a port a host TCP
 * socket holds (LIO's iSER portal beside iSCSI), but peers need iwpmd.
 */
static bool kiwi_port_map;
module_param_named(port_map, kiwi_port_map, bool, 0644);
MODULE_PARM_DESC(port_map,
		 "default of each new device's port_map: ports mapped by iwpmd (default N)");

static struct dentry *kiwi_debugfs;

/* One device per netdev: newlink itself runs under a shared lock only. */
static DEFINE_MUTEX(kiwi_link_mutex);

static enum ib_port_state kiwi_carrier_state(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev) ?
		IB_PORT_ACTIVE : IB_PORT_DOWN;
}

/*
 * Ethernet-like links: the GID and node GUID come from a 6-byte MAC.  lo
 * has one too (all zeros), and siw accepts it: so do we.
 */
static bool kiwi_netdev_ok(struct net_device *ndev)
{
	return (ndev->type == ARPHRD_ETHER ||
		ndev->type == ARPHRD_LOOPBACK) && ndev->addr_len == ETH_ALEN;
}

/* A new device's fields and what ib_core reads of it, before registration. */
static void kiwi_dev_init(struct kiwi_dev *kdev, struct net_device *ndev)
{
	struct ib_device *ibdev = &kdev->ibdev;

	kdev->netdev = ndev;
	spin_lock_init(&kdev->lock);
	xa_init_flags(&kdev->qp_xa, XA_FLAGS_ALLOC1);
	xa_init_flags(&kdev->mr_xa, XA_FLAGS_ALLOC1);
	ether_addr_copy(kdev->mac, ndev->dev_addr);
	/*
	 * lo's all-zero address would give a zero GID, which ib_core's GID
	 * cache does not keep; 6.12's rdma_cm binds an iWARP device by its
	 * first cached GID's netdev, so a device on lo needs a real one.
	 */
	if (is_zero_ether_addr(kdev->mac))
		eth_random_addr(kdev->mac);
	kdev->state = kiwi_carrier_state(ndev);

	addrconf_addr_eui48((u8 *)&ibdev->node_guid, kdev->mac);
	ibdev->node_type = RDMA_NODE_RNIC;
	strscpy(ibdev->node_desc, "kiwi software iWARP",
		sizeof(ibdev->node_desc));
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	/* empty POST_SEND and POST_RECV are the provider's doorbells */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV);
	memcpy(ibdev->iw_ifname, ndev->name, sizeof(ibdev->iw_ifname));
	/* iwpmd maps our ports only when asked (port_map, device.c) */
	ibdev->iw_driver_flags = kiwi_port_map ? 0 : IW_F_NO_PORT_MAP;
	ib_set_device_ops(ibdev, &kiwi_dev_ops);
	/* the SQ doorbell's ioctl method (uapi.c) */
	ibdev->driver_def = kiwi_uapi_defs;
}

/*
 * Registration cannot run under the RTNL (query_port takes it), so the
 * netdev may have begun to unregister before the notifier could find us:
 * under the RTNL, either it did and we remove the device here, or the
 * notifier runs after and finds it.
 */
static int kiwi_newlink_recheck(struct ib_device *ibdev,
				struct net_device *ndev)
{
	bool gone;

	rtnl_lock();
	gone = ndev->reg_state != NETREG_REGISTERED;
	rtnl_unlock();
	if (!gone)
		return 0;
	/* fails if the notifier's unregistration got there first */
	if (ib_device_try_get(ibdev))
		ib_unregister_device_and_put(ibdev);
	return -ENODEV;
}

static int kiwi_newlink(const char *name, struct net_device *ndev)
{
	struct ib_device *other;
	struct kiwi_dev *kdev;
	struct ib_device *ibdev;
	int rv;

	if (!kiwi_netdev_ok(ndev))
		return -EOPNOTSUPP;

	mutex_lock(&kiwi_link_mutex);
	other = ib_device_get_by_netdev(ndev, KIWI_DRIVER_ID);
	if (other) {
		ib_device_put(other);
		rv = -EEXIST;
		goto out;
	}

	kdev = ib_alloc_device(kiwi_dev, ibdev);
	if (!kdev) {
		rv = -ENOMEM;
		goto out;
	}
	kiwi_obj_inc(KIWI_OBJ_DEVICE);
	ibdev = &kdev->ibdev;
	kiwi_dev_init(kdev, ndev);
	kdev->stats = alloc_percpu(struct kiwi_stats);
	if (!kdev->stats) {
		rv = -ENOMEM;
		goto err_cm;
	}
	rv = kiwi_cm_dev_add(kdev);
	if (rv)
		goto err_cm;

	/* keeps *kdev while the notifier may unregister and free it */
	get_device(&ibdev->dev);
	rv = ib_device_set_netdev(ibdev, ndev, 1);
	if (rv)
		goto err;
	/* the name is the one given to rdma link add */
	kiwi_mark_name_assigned_by_user(ibdev);
	rv = ib_register_device(ibdev, name, NULL);
	if (rv)
		goto err;
	rv = kiwi_newlink_recheck(ibdev, ndev);
	put_device(&ibdev->dev);
	mutex_unlock(&kiwi_link_mutex);
	return rv;

err:
	/* calls our dealloc_driver, which undoes the count */
	ib_dealloc_device(ibdev);
	put_device(&ibdev->dev);
	goto out;
err_cm:
	ib_dealloc_device(ibdev);
out:
	mutex_unlock(&kiwi_link_mutex);
	return rv;
}

static struct rdma_link_ops kiwi_link_ops = {
	.type = "kiwi",
	.newlink = kiwi_newlink,
};

static void kiwi_port_event(struct kiwi_dev *kdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &kdev->ibdev,
		.event = type,
		.element.port_num = 1,
	};

	ib_dispatch_event(&ev);
}

static void kiwi_port_update(struct kiwi_dev *kdev, struct net_device *ndev)
{
	enum ib_port_state state = kiwi_carrier_state(ndev);
	bool changed;

	spin_lock(&kdev->lock);
	changed = kdev->state != state;
	kdev->state = state;
	spin_unlock(&kdev->lock);
	if (changed)
		kiwi_port_event(kdev, state == IB_PORT_ACTIVE ?
				IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
}

static void kiwi_addr_update(struct kiwi_dev *kdev, struct net_device *ndev)
{
	bool changed;

	if (ndev->addr_len != ETH_ALEN)
		return;
	spin_lock(&kdev->lock);
	changed = !ether_addr_equal(kdev->mac, ndev->dev_addr);
	ether_addr_copy(kdev->mac, ndev->dev_addr);
	spin_unlock(&kdev->lock);
	/* makes ib_core re-read the GID table through query_gid */
	if (changed)
		kiwi_port_event(kdev, IB_EVENT_GID_CHANGE);
}

static int kiwi_netdev_event(struct notifier_block *nb, unsigned long event,
			     void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct ib_device *ibdev;
	struct kiwi_dev *kdev;

	ibdev = ib_device_get_by_netdev(ndev, KIWI_DRIVER_ID);
	if (!ibdev)
		return NOTIFY_DONE;
	kdev = to_kdev(ibdev);

	switch (event) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		kiwi_port_update(kdev, ndev);
		break;
	case NETDEV_CHANGEADDR:
		kiwi_addr_update(kdev, ndev);
		break;
	case NETDEV_UNREGISTER:
		/* The netdev waits for our reference: let it go, async. */
		ib_unregister_device_queued(ibdev);
		break;
	default:
		break;
	}
	ib_device_put(ibdev);
	return NOTIFY_OK;
}

static struct notifier_block kiwi_netdev_nb = {
	.notifier_call = kiwi_netdev_event,
};

static int __init kiwi_init(void)
{
	int rv;

	BUILD_BUG_ON(sizeof(struct kiwi_sqe) != 128);
	BUILD_BUG_ON(sizeof(struct kiwi_rqe) != 128);
	BUILD_BUG_ON(sizeof(struct kiwi_cqe) != 32);
	BUILD_BUG_ON(sizeof(struct kiwi_cq_ctrl) != KIWI_RING_CTRL_SIZE);
	BUILD_BUG_ON(sizeof(struct kiwi_sq_ctrl) != KIWI_RING_CTRL_SIZE);
	BUILD_BUG_ON(sizeof(struct kiwi_rq_ctrl) != KIWI_RING_CTRL_SIZE);
	BUILD_BUG_ON(offsetof(struct kiwi_cq_ctrl, alive) !=
		     KIWI_CTRL_ALIVE_OFFSET);
	BUILD_BUG_ON(offsetof(struct kiwi_sq_ctrl, alive) !=
		     KIWI_CTRL_ALIVE_OFFSET);
	BUILD_BUG_ON(offsetof(struct kiwi_rq_ctrl, alive) !=
		     KIWI_CTRL_ALIVE_OFFSET);
	BUILD_BUG_ON(KIWI_MAX_MR >= 1 << 24);	/* index field of the STag */

	kiwi_dev_attrs_init();
	kiwi_debugfs = debugfs_create_dir("kiwi", NULL);
	kiwi_core_debugfs(kiwi_debugfs);
	kiwi_crc_pick(kiwi_debugfs);

	rv = kiwi_mem_init();
	if (rv)
		goto err_mem;
	rv = kiwi_dp_init(kiwi_debugfs);
	if (rv)
		goto err_dp;
	rv = kiwi_cm_init();
	if (rv)
		goto err_cm;
	rv = register_netdevice_notifier(&kiwi_netdev_nb);
	if (rv)
		goto err_nb;
	rdma_link_register(&kiwi_link_ops);
	return 0;

err_nb:
	kiwi_cm_exit();
err_cm:
	kiwi_dp_exit();
err_dp:
	kiwi_mem_exit();
err_mem:
	debugfs_remove_recursive(kiwi_debugfs);
	return rv;
}

static void __exit kiwi_exit(void)
{
	/* no new devices, then remove the existing ones and wait for them */
	rdma_link_unregister(&kiwi_link_ops);
	ib_unregister_driver(KIWI_DRIVER_ID);
	unregister_netdevice_notifier(&kiwi_netdev_nb);
	/* after the devices: their removal waits for the CM's work */
	kiwi_cm_exit();
	/* every QP is gone, so no engine work can be queued any more */
	kiwi_dp_exit();
	/* each device's removal flushed its MR frees */
	kiwi_mem_exit();

	kiwi_core_leaks();
	debugfs_remove_recursive(kiwi_debugfs);
}

module_init(kiwi_init);
module_exit(kiwi_exit);

MODULE_DESCRIPTION("kiwi: software iWARP RDMA provider");
MODULE_AUTHOR("The kiwi authors");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("kiwi");

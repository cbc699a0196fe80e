/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kiwi connection management: the iw_cm operations, the MPA policy
 * (module parameters as defaults, per-device overrides in sysfs) and the
 * per-device bookkeeping that lets device removal wait for its
 * connections.  The seam with the QP engines is conn.h.
 */
#ifndef KIWI_CM_H
#define KIWI_CM_H

#include <rdma/iw_cm.h>

#include "engine/engine.h"
#include "conn.h"

/*
 * The connection knobs, each named as its module parameter (the default a
 * device copies when it is created) and its per-device sysfs file: the
 * MPA policy, then how soon a connection whose peer or path died is
 * declared dead (set on each connection's TCP socket when it enters RDMA
 * mode, cm.md).
 */
enum kiwi_cm_knob {
	KIWI_POL_CRC,		/* mpa_crc: enum kiwi_mpa_crc */
	KIWI_POL_REV,		/* mpa_rev: 1 or 2 */
	KIWI_POL_P2P,		/* mpa_p2p: 0 or 1 */
	KIWI_POL_RTR,		/* mpa_rtr: one KIWI_RTR_* bit */
	KIWI_POL_MARKERS,	/* mpa_markers: 0 or 1 */
	KIWI_POL_FPDU,		/* mpa_fpdu_max: bytes, 0 = one MSS */
	KIWI_TCP_USER_TIMEOUT,	/* tcp_user_timeout_ms: TCP_USER_TIMEOUT */
	KIWI_TCP_KEEPALIVE,	/* tcp_keepalive_s: idle time, 0 = off */
	KIWI_KNOB_MAX
};

/* READ_ONCE/WRITE_ONCE: sysfs races connects */
struct kiwi_cm_knobs {
	unsigned int v[KIWI_KNOB_MAX];
};

/* module parameters (main.c) set the defaults */
int kiwi_knob_set_default(enum kiwi_cm_knob k, const char *val);
int kiwi_knob_get_default(enum kiwi_cm_knob k, char *buf);
int kiwi_cm_set_timeout(const char *val);
unsigned int kiwi_cm_get_timeout(void);

/* per-device sysfs attributes (device.c) */
ssize_t kiwi_cm_knob_show(struct kiwi_dev *kdev, enum kiwi_cm_knob k,
			  char *buf);
ssize_t kiwi_cm_knob_store(struct kiwi_dev *kdev, enum kiwi_cm_knob k,
			   const char *buf, size_t count);

/* module and device lifetime (main.c, device.c) */
int kiwi_cm_init(void);
void kiwi_cm_exit(void);
int kiwi_cm_dev_add(struct kiwi_dev *kdev);
void kiwi_cm_dev_del(struct kiwi_dev *kdev);

/* iw_cm operations (device.c's ops table) */
int kiwi_iw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int kiwi_iw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int kiwi_iw_reject(struct iw_cm_id *id, const void *pdata, u8 pdata_len);
int kiwi_iw_create_listen(struct iw_cm_id *id, int backlog);
int kiwi_iw_destroy_listen(struct iw_cm_id *id);

/* `rdma res show cm_id -dd` (device.c's ops table) */
struct rdma_cm_id;
int kiwi_fill_res_cm_id_entry(struct sk_buff *msg, struct rdma_cm_id *id);

#endif /* KIWI_CM_H */

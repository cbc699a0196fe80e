/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kiwi connection management: the iw_cm operations, the MPA policy
 * (per-device sysfs files, most with a module parameter as default) and the
 * per-device bookkeeping that lets device removal wait for its
 * connections.  The seam with the QP engines is conn.h.
 */
#ifndef KIWI_CM_H
#define KIWI_CM_H

#include <rdma/iw_cm.h>

#include "engine/engine.h"
#include "conn.h"

#define KIWI_TIMEOUT_MAX_MS	600000

/* KIWI_POL_CRC ... KIWI_RNIC_STRICT, in the order of knobs.h */
#define KIWI_KNOB(knob, ...)	knob,
enum kiwi_cm_knob {
#include "knobs.h"
	KIWI_KNOB_MAX
};
#undef KIWI_KNOB

/* READ_ONCE/WRITE_ONCE: sysfs races connects */
struct kiwi_cm_knobs {
	unsigned int v[KIWI_KNOB_MAX];
};

/* connect_timeout_ms */
unsigned int kiwi_cm_get_timeout(void);
/* a knob's name: its sysfs file's (and module parameter's, if any) */
const char *kiwi_cm_knob_name(enum kiwi_cm_knob k);
/* a knob's value on a registered device */
unsigned int kiwi_cm_knob_get(struct kiwi_dev *kdev, enum kiwi_cm_knob k);

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

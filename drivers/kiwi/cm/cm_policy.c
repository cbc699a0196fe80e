// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kiwi connection management: the MPA and liveness policy per device. */

#include <linux/module.h>
#include <linux/sysfs.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cep.h"

/* kdev->cm between sysfs and device removal */
static DEFINE_MUTEX(kiwi_cm_devs_mutex);

/* ---- knobs ---- */

struct kiwi_pol_name {
	const char *name;
	u8 val;
};

static const struct kiwi_pol_name kiwi_pol_crc[] = {
	{ "off", KIWI_MPA_CRC_OFF },
	{ "preferred", KIWI_MPA_CRC_PREFERRED },
	{ "required", KIWI_MPA_CRC_REQUIRED },
	{ }
};

static const struct kiwi_pol_name kiwi_pol_rev[] = {
	{ "1", 1 }, { "2", 2 }, { }
};

static const struct kiwi_pol_name kiwi_pol_bool[] = {
	{ "0", 0 }, { "1", 1 }, { }
};

static const struct kiwi_pol_name kiwi_pol_rtr[] = {
	{ "send", KIWI_RTR_SEND },
	{ "write", KIWI_RTR_WRITE },
	{ "read", KIWI_RTR_READ },
	{ }
};

/* The knobs: how each parses and prints, and new devices' default. */
static struct kiwi_knob {
	enum kiwi_cm_knob id;
	const char *name;
	const struct kiwi_pol_name *names;
	unsigned int max;
	unsigned int def;
} kiwi_knobs[KIWI_KNOB_MAX] = {
#define KIWI_KNOB(k, n, l, m, d)					\
	{ .id = k, .name = #n, .names = l, .max = m, .def = d },
#include "knobs.h"
#undef KIWI_KNOB
};

/*
 * 60 s, as cxgb4's ep_timeout_secs: the wait for the Reply includes the
 * responder's set-up.  The pending caps bound silent peers meanwhile.
 */
static unsigned int kiwi_connect_timeout_ms = 60000;

/* Garbage or a name not in the list: EINVAL; a number too large: ERANGE. */
static int kiwi_knob_parse(enum kiwi_cm_knob k, const char *val,
			   unsigned int *out)
{
	const struct kiwi_pol_name *n;
	unsigned int v;
	int rv;

	if (k >= KIWI_KNOB_MAX || !val)
		return -EINVAL;
	n = kiwi_knobs[k].names;
	if (!n) {
		rv = kstrtouint(val, 0, &v);
		if (rv)
			return rv;
		if (v > kiwi_knobs[k].max)
			return -ERANGE;
		*out = v;
		return 0;
	}
	for (; n->name; n++) {
		if (sysfs_streq(val, n->name)) {
			*out = n->val;
			return 0;
		}
	}
	return -EINVAL;
}

/* A module parameter's buffer is a page too, as a sysfs file's. */
static int kiwi_knob_format(enum kiwi_cm_knob k, unsigned int v, char *buf)
{
	const struct kiwi_pol_name *n = kiwi_knobs[k].names;

	if (!n)
		return scnprintf(buf, PAGE_SIZE, "%u\n", v);
	for (; n->name; n++)
		if (n->val == v)
			break;
	return scnprintf(buf, PAGE_SIZE, "%s\n", n->name ?: "?");
}

unsigned int kiwi_cm_get_timeout(void)
{
	return READ_ONCE(kiwi_connect_timeout_ms);
}

const char *kiwi_cm_knob_name(enum kiwi_cm_knob k)
{
	return kiwi_knobs[k].name;
}

/* The module parameters: each knob's default, and connect_timeout_ms. */
static int kiwi_param_knob_set(const char *val, const struct kernel_param *kp)
{
	struct kiwi_knob *kn = kp->arg;
	unsigned int v;
	int rv = kiwi_knob_parse(kn->id, val, &v);

	if (!rv)
		WRITE_ONCE(kn->def, v);
	return rv;
}

static int kiwi_param_knob_get(char *buf, const struct kernel_param *kp)
{
	struct kiwi_knob *kn = kp->arg;

	return kiwi_knob_format(kn->id, READ_ONCE(kn->def), buf);
}

static const struct kernel_param_ops kiwi_param_knob_ops = {
	.set = kiwi_param_knob_set,
	.get = kiwi_param_knob_get,
};

/*
 * The knobs that are module parameters too. mpa_rev, mpa_p2p, mpa_rtr and
 * mpa_markers are per peer: per-device sysfs files only.
 */
#define KIWI_KNOB_PARAM(name, knob, desc)				\
	module_param_cb(name, &kiwi_param_knob_ops, &kiwi_knobs[knob], 0644); \
	MODULE_PARM_DESC(name, desc)

KIWI_KNOB_PARAM(mpa_crc, KIWI_POL_CRC,
		"MPA CRC: off (use it only if the peer asks), preferred, required (default off)");
KIWI_KNOB_PARAM(mpa_fpdu_max, KIWI_POL_FPDU,
		"offer FPDUs longer than one MSS, up to this many bytes, to peers that offer them too; 0: one MSS (default 65535)");
KIWI_KNOB_PARAM(tcp_user_timeout_ms, KIWI_TCP_USER_TIMEOUT,
		"a connection whose sent data stays unacknowledged this long fails; 0: TCP's own limit (default 30000)");
KIWI_KNOB_PARAM(tcp_keepalive_s, KIWI_TCP_KEEPALIVE,
		"keepalive probes after this many idle seconds, then 3 more a third of it apart; 0: off (default 30)");

static int kiwi_param_timeout_set(const char *val,
				  const struct kernel_param *kp)
{
	unsigned int ms;
	int rv = kstrtouint(val, 0, &ms);

	if (rv)
		return rv;
	if (!ms || ms > KIWI_TIMEOUT_MAX_MS)
		return -EINVAL;
	WRITE_ONCE(kiwi_connect_timeout_ms, ms);
	return 0;
}

static int kiwi_param_timeout_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%u\n", kiwi_cm_get_timeout());
}

static const struct kernel_param_ops kiwi_param_timeout_ops = {
	.set = kiwi_param_timeout_set,
	.get = kiwi_param_timeout_get,
};

module_param_cb(connect_timeout_ms, &kiwi_param_timeout_ops, NULL, 0644);
MODULE_PARM_DESC(connect_timeout_ms,
		 "TCP connect plus MPA exchange limit, ms, 1..600000 (default 60000)");

/* ---- devices ---- */

/* Valid while the device is registered: dev_del runs at dealloc. */
struct kiwi_cm_dev *kiwi_cm_dev_get(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kdev->cm;
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev;
}

ssize_t kiwi_cm_knob_show(struct kiwi_dev *kdev, enum kiwi_cm_knob k,
			  char *buf)
{
	struct kiwi_cm_dev *cdev;
	ssize_t rv = -ENODEV;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kdev->cm;
	if (cdev)
		rv = kiwi_knob_format(k, READ_ONCE(cdev->knobs.v[k]), buf);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return rv;
}

ssize_t kiwi_cm_knob_store(struct kiwi_dev *kdev, enum kiwi_cm_knob k,
			   const char *buf, size_t count)
{
	struct kiwi_cm_dev *cdev;
	unsigned int v;
	int rv;

	rv = kiwi_knob_parse(k, buf, &v);
	if (rv)
		return rv;
	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kdev->cm;
	if (cdev)
		WRITE_ONCE(cdev->knobs.v[k], v);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev ? count : -ENODEV;
}

/* The device's value, or the default once its record is gone. */
unsigned int kiwi_cm_knob_get(struct kiwi_dev *kdev, enum kiwi_cm_knob k)
{
	struct kiwi_cm_dev *cdev;
	unsigned int v;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kdev->cm;
	v = cdev ? READ_ONCE(cdev->knobs.v[k]) : READ_ONCE(kiwi_knobs[k].def);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return v;
}

int kiwi_cm_dev_add(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev = kzalloc(sizeof(*cdev), GFP_KERNEL);
	int i;

	if (!cdev)
		return -ENOMEM;
	cdev->kdev = kdev;
	for (i = 0; i < KIWI_KNOB_MAX; i++)
		cdev->knobs.v[i] = READ_ONCE(kiwi_knobs[i].def);
	spin_lock_init(&cdev->lock);
	INIT_LIST_HEAD(&cdev->ceps);
	init_waitqueue_head(&cdev->empty);
	mutex_lock(&kiwi_cm_devs_mutex);
	kdev->cm = cdev;
	mutex_unlock(&kiwi_cm_devs_mutex);
	return 0;
}

/* Device removal (kiwi_cm_dev_del()): no sysfs or connect finds it now. */
struct kiwi_cm_dev *kiwi_cm_dev_unlink(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kdev->cm;
	kdev->cm = NULL;
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev;
}

/* ---- applied to a connection ---- */

/*
 * The MPA exchange is over: the QP takes the stream, with the device's
 * liveness settings, so that a dead peer or path fails the socket, and so
 * the QP.  Three keepalive probes a third of the idle time apart: an idle
 * connection is given up about twice the idle time after the peer's last
 * sign of life.
 */
int kiwi_cep_llp_start(struct kiwi_cep *cep, struct kiwi_qp *qp,
		       bool initiator)
{
	struct sock *sk = cep->sock->sk;
	unsigned int ut = READ_ONCE(cep->cdev->knobs.v[KIWI_TCP_USER_TIMEOUT]);
	unsigned int ka = READ_ONCE(cep->cdev->knobs.v[KIWI_TCP_KEEPALIVE]);
	struct kiwi_conn_params params = {
		.mpa = cep->res,
		.initiator = initiator,
		.mss = READ_ONCE(tcp_sk(sk)->mss_cache),
	};

	tcp_sock_set_user_timeout(sk, ut);
	if (ka) {
		tcp_sock_set_keepidle(sk, ka);
		tcp_sock_set_keepintvl(sk, max(1U, ka / 3));
		tcp_sock_set_keepcnt(sk, 3);
		sock_set_keepalive(sk);
	}
	return kiwi_qp_llp_start(qp, &cep->conn, cep->sock, &params);
}

/* The policy as it is now: it applies to connections started from now on. */
void kiwi_cep_cfg(struct kiwi_cep *cep, u16 ird, u16 ord)
{
	const struct kiwi_cm_knobs *p = &cep->cdev->knobs;
	struct kiwi_mpa_cfg *c = &cep->cfg;

	c->rev = READ_ONCE(p->v[KIWI_POL_REV]);
	c->crc = READ_ONCE(p->v[KIWI_POL_CRC]);
	c->markers = READ_ONCE(p->v[KIWI_POL_MARKERS]);
	/* peer-to-peer mode is an extension of revision 2 */
	c->p2p = READ_ONCE(p->v[KIWI_POL_P2P]) && c->rev == 2;
	c->rtr = READ_ONCE(p->v[KIWI_POL_RTR]);
	c->fpdu_max = READ_ONCE(p->v[KIWI_POL_FPDU]);
	c->ird = ird;
	c->ord = ord;
}

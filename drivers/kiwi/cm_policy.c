// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi connection management: the MPA and liveness policy (module
 * parameters as defaults, per-device overrides in sysfs), the connect
 * timeout, and the per-device records that hold them.
 */

#include <linux/module.h>
#include <linux/sysfs.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "cep.h"

static LIST_HEAD(kiwi_cm_devs);
static DEFINE_MUTEX(kiwi_cm_devs_mutex);

/* ---- policy ---- */

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

static const struct kiwi_pol_name *const kiwi_pol_names[KIWI_POL_MAX] = {
	[KIWI_POL_CRC] = kiwi_pol_crc,
	[KIWI_POL_REV] = kiwi_pol_rev,
	[KIWI_POL_P2P] = kiwi_pol_bool,
	[KIWI_POL_RTR] = kiwi_pol_rtr,
	[KIWI_POL_MARKERS] = kiwi_pol_bool,
};

static struct kiwi_mpa_policy kiwi_pol_default = {
	.v = {
		[KIWI_POL_CRC] = KIWI_MPA_CRC_OFF,
		[KIWI_POL_REV] = 2,
		[KIWI_POL_P2P] = 1,
		[KIWI_POL_RTR] = KIWI_RTR_WRITE,
		[KIWI_POL_MARKERS] = 0,
	},
};

static unsigned int kiwi_connect_timeout_ms = 10000;
#define KIWI_TIMEOUT_MAX_MS	600000

/*
 * Dead peer or path: unacknowledged data for 30 s, or an idle connection
 * whose keepalive probes (after 30 s, then three 10 s apart) go
 * unanswered, fails the connection.  TCP's own default would take about
 * 15 minutes and never notice an idle one.
 */
static unsigned int kiwi_llp_default[KIWI_LLP_MAX] = {
	[KIWI_LLP_USER_TIMEOUT] = 30000,
	[KIWI_LLP_KEEPALIVE] = 30,
};

static const unsigned int kiwi_llp_max[KIWI_LLP_MAX] = {
	[KIWI_LLP_USER_TIMEOUT] = KIWI_TIMEOUT_MAX_MS,
	[KIWI_LLP_KEEPALIVE] = MAX_TCP_KEEPIDLE,
};

static int kiwi_pol_parse(enum kiwi_pol pol, const char *val, u8 *out)
{
	const struct kiwi_pol_name *n;

	if (pol >= KIWI_POL_MAX || !val)
		return -EINVAL;
	for (n = kiwi_pol_names[pol]; n->name; n++) {
		if (sysfs_streq(val, n->name)) {
			*out = n->val;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *kiwi_pol_name(enum kiwi_pol pol, u8 v)
{
	const struct kiwi_pol_name *n;

	for (n = kiwi_pol_names[pol]; n->name; n++)
		if (n->val == v)
			return n->name;
	return "?";
}

int kiwi_policy_set_default(enum kiwi_pol pol, const char *val)
{
	u8 v;
	int rv = kiwi_pol_parse(pol, val, &v);

	if (!rv)
		WRITE_ONCE(kiwi_pol_default.v[pol], v);
	return rv;
}

int kiwi_policy_get_default(enum kiwi_pol pol, char *buf)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n",
			 kiwi_pol_name(pol, READ_ONCE(kiwi_pol_default.v[pol])));
}

static int kiwi_llp_parse(enum kiwi_llp_knob k, const char *val,
			  unsigned int *out)
{
	unsigned int v;
	int rv;

	if (k >= KIWI_LLP_MAX || !val)
		return -EINVAL;
	rv = kstrtouint(val, 0, &v);
	if (rv)
		return rv;
	if (v > kiwi_llp_max[k])
		return -ERANGE;
	*out = v;
	return 0;
}

int kiwi_llp_set_default(enum kiwi_llp_knob k, const char *val)
{
	unsigned int v;
	int rv = kiwi_llp_parse(k, val, &v);

	if (!rv)
		WRITE_ONCE(kiwi_llp_default[k], v);
	return rv;
}

unsigned int kiwi_llp_get_default(enum kiwi_llp_knob k)
{
	return READ_ONCE(kiwi_llp_default[k]);
}

int kiwi_cm_set_timeout(const char *val)
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

unsigned int kiwi_cm_get_timeout(void)
{
	return READ_ONCE(kiwi_connect_timeout_ms);
}

/* ---- devices ---- */

static struct kiwi_cm_dev *kiwi_cm_dev_find(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;

	lockdep_assert_held(&kiwi_cm_devs_mutex);
	list_for_each_entry(cdev, &kiwi_cm_devs, entry)
		if (cdev->kdev == kdev)
			return cdev;
	return NULL;
}

/* Valid while the device is registered: dev_del runs at dealloc. */
struct kiwi_cm_dev *kiwi_cm_dev_get(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev;
}

ssize_t kiwi_cm_policy_show(struct kiwi_dev *kdev, enum kiwi_pol pol,
			    char *buf)
{
	struct kiwi_cm_dev *cdev;
	ssize_t rv = -ENODEV;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		rv = sysfs_emit(buf, "%s\n",
				kiwi_pol_name(pol, READ_ONCE(cdev->pol.v[pol])));
	mutex_unlock(&kiwi_cm_devs_mutex);
	return rv;
}

ssize_t kiwi_cm_policy_store(struct kiwi_dev *kdev, enum kiwi_pol pol,
			     const char *buf, size_t count)
{
	struct kiwi_cm_dev *cdev;
	int rv;
	u8 v;

	rv = kiwi_pol_parse(pol, buf, &v);
	if (rv)
		return rv;
	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		WRITE_ONCE(cdev->pol.v[pol], v);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev ? count : -ENODEV;
}

ssize_t kiwi_cm_llp_show(struct kiwi_dev *kdev, enum kiwi_llp_knob k,
			 char *buf)
{
	struct kiwi_cm_dev *cdev;
	ssize_t rv = -ENODEV;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		rv = sysfs_emit(buf, "%u\n", READ_ONCE(cdev->llp[k]));
	mutex_unlock(&kiwi_cm_devs_mutex);
	return rv;
}

ssize_t kiwi_cm_llp_store(struct kiwi_dev *kdev, enum kiwi_llp_knob k,
			  const char *buf, size_t count)
{
	struct kiwi_cm_dev *cdev;
	unsigned int v;
	int rv;

	rv = kiwi_llp_parse(k, buf, &v);
	if (rv)
		return rv;
	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		WRITE_ONCE(cdev->llp[k], v);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev ? count : -ENODEV;
}

int kiwi_cm_dev_add(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev = kzalloc(sizeof(*cdev), GFP_KERNEL);
	int i;

	if (!cdev)
		return -ENOMEM;
	cdev->kdev = kdev;
	for (i = 0; i < KIWI_POL_MAX; i++)
		cdev->pol.v[i] = READ_ONCE(kiwi_pol_default.v[i]);
	for (i = 0; i < KIWI_LLP_MAX; i++)
		cdev->llp[i] = READ_ONCE(kiwi_llp_default[i]);
	spin_lock_init(&cdev->lock);
	INIT_LIST_HEAD(&cdev->ceps);
	init_waitqueue_head(&cdev->empty);
	mutex_lock(&kiwi_cm_devs_mutex);
	list_add_tail(&cdev->entry, &kiwi_cm_devs);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return 0;
}

/* Device removal (kiwi_cm_dev_del()): no sysfs or connect finds it now. */
struct kiwi_cm_dev *kiwi_cm_dev_unlink(struct kiwi_dev *kdev)
{
	struct kiwi_cm_dev *cdev;

	mutex_lock(&kiwi_cm_devs_mutex);
	cdev = kiwi_cm_dev_find(kdev);
	if (cdev)
		list_del(&cdev->entry);
	mutex_unlock(&kiwi_cm_devs_mutex);
	return cdev;
}

/* ---- applied to a connection ---- */

/*
 * The device's liveness settings, on a connection entering RDMA mode: a
 * peer or path that dies shows up as an error on the socket, which fails
 * the QP.  Keepalive probes go every third of the idle time, three of
 * them, so an idle connection is given up about twice the idle time after
 * the peer's last sign of life.
 */
void kiwi_cep_llp_opts(struct kiwi_cep *cep)
{
	struct sock *sk = cep->sock->sk;
	unsigned int ut = READ_ONCE(cep->cdev->llp[KIWI_LLP_USER_TIMEOUT]);
	unsigned int ka = READ_ONCE(cep->cdev->llp[KIWI_LLP_KEEPALIVE]);

	tcp_sock_set_user_timeout(sk, ut);
	if (!ka)
		return;
	tcp_sock_set_keepidle(sk, ka);
	tcp_sock_set_keepintvl(sk, max(1U, ka / 3));
	tcp_sock_set_keepcnt(sk, 3);
	sock_set_keepalive(sk);
}

/* The policy as it is now: it applies to connections started from now on. */
void kiwi_cep_cfg(struct kiwi_cep *cep, u16 ird, u16 ord)
{
	const struct kiwi_mpa_policy *p = &cep->cdev->pol;
	struct kiwi_mpa_cfg *c = &cep->cfg;

	c->rev = READ_ONCE(p->v[KIWI_POL_REV]);
	c->crc = READ_ONCE(p->v[KIWI_POL_CRC]);
	c->markers = READ_ONCE(p->v[KIWI_POL_MARKERS]);
	/* peer-to-peer mode is an extension of revision 2 */
	c->p2p = READ_ONCE(p->v[KIWI_POL_P2P]) && c->rev == 2;
	c->rtr = READ_ONCE(p->v[KIWI_POL_RTR]);
	c->ird = ird;
	c->ord = ord;
}

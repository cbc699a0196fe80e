// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kiwi connection management: listeners.  A listener owns one listening
 * socket per local address it covers (a wildcard one follows its netdev's
 * addresses), accepts connections on kiwi_cm_wq and admits each to its
 * handshake (cm_passive.c) within the pending_per_* limits.
 */

#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/sort.h>
#include <linux/tcp.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <rdma/rdma_cm.h>

#include "cep.h"

/* addresses one wildcard listener covers per family */
#define KIWI_LISTEN_ADDRS	16

/* One listening socket of a listener. */
struct kiwi_lsock {
	struct list_head entry;
	struct kiwi_cep *cep;		/* the listener outlives us */
	struct socket *sock;
	struct work_struct work;	/* accept loop */
	struct sockaddr_storage addr;
};

/* wildcard listeners, for the address notifiers (which may be atomic) */
static LIST_HEAD(kiwi_wild);
static DEFINE_SPINLOCK(kiwi_wild_lock);
/* TCP's own sk_data_ready, for sockets cloned from our listeners */
static void (*kiwi_tcp_data_ready)(struct sock *sk);

/*
 * Accepted connections whose Request is not delivered yet (0: no limit), in all
 * and per source: a silent peer holds each for connect_timeout_ms.
 */
static unsigned int kiwi_pending_listener = 1024;
module_param_named(pending_per_listener, kiwi_pending_listener, uint, 0644);
MODULE_PARM_DESC(pending_per_listener,
		 "connections awaiting their MPA Request per listener; more are reset (0: no limit)");
static unsigned int kiwi_pending_source = 256;
module_param_named(pending_per_source, kiwi_pending_source, uint, 0644);
MODULE_PARM_DESC(pending_per_source,
		 "connections awaiting their MPA Request per listener and remote address; more are reset (0: no limit)");

static bool kiwi_addr_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
			htonl(INADDR_ANY);
	return ipv6_addr_any(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

/*
 * What the caps count by: an IPv4 address or an IPv6 /64 (RFC 8981 hosts pick
 * in it at will).  IPv4 keys lie in ff00::/8, never a TCP peer's.
 */
static u64 kiwi_source_key(const struct sockaddr_storage *a)
{
	const struct in6_addr *a6;
	__be64 prefix;

	if (a->ss_family == AF_INET)
		return 0xffffffff00000000ULL |
			ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr);
	a6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
	if (ipv6_addr_v4mapped(a6))
		return 0xffffffff00000000ULL | ntohl(a6->s6_addr32[3]);
	memcpy(&prefix, a6->s6_addr, sizeof(prefix));
	return be64_to_cpu(prefix);
}

static int kiwi_key_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Under lcep->mutex, listener full: the oldest pending connection of the source
 * with the most, if more than the newcomer's (which has mine).
 */
static struct kiwi_cep *kiwi_cep_victim(struct kiwi_cep *lcep,
					unsigned int n, unsigned int mine)
{
	unsigned int i, run = 0, best = 0;
	struct kiwi_cep *c;
	u64 *keys, key = 0;

	keys = kmalloc_array(n, sizeof(*keys), GFP_KERNEL);
	if (!keys)
		return NULL;
	i = 0;
	list_for_each_entry(c, &lcep->children, child_entry)
		keys[i++] = kiwi_source_key(&c->raddr);
	sort(keys, n, sizeof(*keys), kiwi_key_cmp, NULL);
	for (i = 0; i < n; i++) {
		run = (i && keys[i] == keys[i - 1]) ? run + 1 : 1;
		if (run > best) {
			best = run;
			key = keys[i];
		}
	}
	kfree(keys);
	if (best <= mine + 1)
		return NULL;
	list_for_each_entry(c, &lcep->children, child_entry)
		if (kiwi_source_key(&c->raddr) == key &&
		    kiwi_cep_hs_status(c) == KIWI_HS_READING)
			return c;
	return NULL;
}

/* Under lcep->mutex: room for one more pending (evicting if need be)? */
static bool kiwi_cep_admit(struct kiwi_cep *lcep, struct kiwi_cep *cep)
{
	unsigned int max_l = READ_ONCE(kiwi_pending_listener);
	unsigned int max_s = READ_ONCE(kiwi_pending_source);
	u64 key = kiwi_source_key(&cep->raddr);
	unsigned int n = 0, same = 0;
	struct kiwi_cep *c, *victim;

	lockdep_assert_held(&lcep->mutex);
	list_for_each_entry(c, &lcep->children, child_entry) {
		n++;
		same += kiwi_source_key(&c->raddr) == key;
	}
	if (max_s && same >= max_s) {
		atomic64_inc(&kiwi_cm_cap_source);
		return false;
	}
	if (!max_l || n < max_l)
		return true;
	victim = kiwi_cep_victim(lcep, n, same);
	if (!victim) {
		atomic64_inc(&kiwi_cm_cap_listener);
		return false;
	}
	/* its handshake work closes it with an RST; it no longer counts */
	kiwi_cep_child_done(victim, lcep);
	mutex_lock(&victim->mutex);
	victim->dead = true;
	victim->evicted = true;
	kiwi_cep_hs_kick(victim);
	mutex_unlock(&victim->mutex);
	atomic64_inc(&kiwi_cm_evicted);
	/* a cap lowered meanwhile is met as connections leave */
	return true;
}

/* A new connection on a listening socket, read by its callbacks. */
static void kiwi_cep_spawn(struct kiwi_cep *lcep, struct socket *ns)
{
	struct sock *sk = ns->sk;
	struct kiwi_cep *cep;
	bool ok;

	/* the clone inherited the listener's callback: give TCP's back */
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = kiwi_tcp_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	tcp_sock_set_nodelay(sk);
	kiwi_sock_reflect_tos(ns);

	cep = kiwi_cep_alloc(lcep->cdev, kiwi_cep_req_work);
	if (!cep) {
		sock_no_linger(sk);
		sock_release(ns);
		return;
	}
	kiwi_cep_get(cep);	/* ours, until the end of this function */
	cep->sock = ns;
	kiwi_cep_cfg(cep, KIWI_MAX_IRD, KIWI_MAX_ORD);
	kiwi_cep_addrs(cep);
	cep->born = jiffies;
	cep->deadline = cep->born + kiwi_cm_timeout();
	kiwi_cep_get(lcep);
	cep->parent = lcep;

	mutex_lock(&lcep->mutex);
	/* before cep->mutex: an eviction takes another child's */
	ok = lcep->state == KIWI_CEP_LISTEN && kiwi_cep_admit(lcep, cep);
	mutex_lock(&cep->mutex);
	if (!ok) {
		/* at once, and with an RST: it costs us nothing more */
		kiwi_cep_release_sock(cep, true);
		kiwi_cep_finish(cep);
		mutex_unlock(&cep->mutex);
		mutex_unlock(&lcep->mutex);
		kiwi_cep_put(cep);
		return;
	}
	cep->state = KIWI_CEP_AWAIT_REQ;
	list_add_tail(&cep->child_entry, &lcep->children);
	atomic_inc(&kiwi_cm_pending);
	mutex_unlock(&lcep->mutex);

	kiwi_cep_hs_attach(cep, false);
	/* read what came before the callbacks; an early close is in sk_state */
	lock_sock(sk);
	kiwi_cep_hs_read(cep, sk);
	release_sock(sk);
	if (kiwi_cep_hs_status(cep) != KIWI_HS_READING ||
	    READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		kiwi_cep_hs_kick(cep);
	else
		kiwi_cep_hs_arm(cep, cep->deadline);
	mutex_unlock(&cep->mutex);
	kiwi_cep_put(cep);
}

static void kiwi_lsock_work(struct work_struct *work)
{
	struct kiwi_lsock *ls = container_of(work, struct kiwi_lsock, work);
	struct socket *ns;

	while (!kernel_accept(ls->sock, &ns, O_NONBLOCK))
		kiwi_cep_spawn(ls->cep, ns);
}

/* softirq: a connection is ready to be accepted */
static void kiwi_lsock_ready(struct sock *sk)
{
	struct kiwi_lsock *ls;

	read_lock_bh(&sk->sk_callback_lock);
	ls = sk->sk_user_data;
	if (ls && sk->sk_state == TCP_LISTEN)
		queue_work(kiwi_cm_wq, &ls->work);
	else
		kiwi_tcp_data_ready(sk);	/* a clone not accepted yet */
	read_unlock_bh(&sk->sk_callback_lock);
}

static void kiwi_lsock_free(struct kiwi_lsock *ls)
{
	struct sock *sk = ls->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = kiwi_tcp_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	cancel_work_sync(&ls->work);
	/* connections not accepted yet go with it (RST) */
	sock_release(ls->sock);
	kfree(ls);
}

static int kiwi_lsock_add(struct kiwi_cep *lcep,
			  const struct sockaddr_storage *addr, bool wild)
{
	struct kiwi_lsock *ls = kzalloc(sizeof(*ls), GFP_KERNEL);
	struct sock *sk;
	int rv;

	if (!ls)
		return -ENOMEM;
	rv = kiwi_sock_create(lcep->cdev, addr->ss_family, &ls->sock);
	if (rv) {
		kfree(ls);
		return rv;
	}
	sk = ls->sock->sk;
	/* the connections it accepts inherit it (kiwi_sock_reflect_tos()) */
	kiwi_sock_set_tos(ls->sock, lcep->cm_id);
	if (wild) {
		/* it may cover an IPv6 address still in DAD */
		ip_sock_set_freebind(sk);
		/*
		 * Bound to our netdev: an unbound listening socket conflicts
		 * with every overlapping one on the port (siw's wildcard
		 * listener among them), while sockets bound to different
		 * devices share it.  Local connections to the netdev's
		 * addresses still find it; a client whose source is another
		 * local netdev's address does not (a martian), as with siw.
		 */
		rv = sock_bindtoindex(sk, lcep->cdev->kdev->netdev->ifindex,
				      true);
		if (rv)
			goto err;
	}
	if (lcep->port_mapped)
		kiwi_port_take(ls->sock);
	rv = kernel_bind(ls->sock, (struct sockaddr *)addr,
			 kiwi_addr_len(addr));
	if (rv)
		goto err;
	ls->cep = lcep;
	ls->addr = *addr;
	INIT_WORK(&ls->work, kiwi_lsock_work);
	write_lock_bh(&sk->sk_callback_lock);
	if (!kiwi_tcp_data_ready)
		kiwi_tcp_data_ready = sk->sk_data_ready;
	sk->sk_user_data = ls;
	sk->sk_data_ready = kiwi_lsock_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	rv = kernel_listen(ls->sock, lcep->backlog);
	if (rv) {
		ls->sock->sk->sk_user_data = NULL;
		goto err;
	}
	list_add_tail(&ls->entry, &lcep->lsocks);
	return 0;
err:
	sock_release(ls->sock);
	kfree(ls);
	return rv;
}

/* The netdev's addresses of a family, as of now, with the given port. */
static int kiwi_netdev_addrs(struct net_device *nd, int family, __be16 port,
			     struct sockaddr_storage *out, int max)
{
	int n = 0;

	if (family == AF_INET) {
		const struct in_ifaddr *ifa;
		struct in_device *in;

		rcu_read_lock();
		in = __in_dev_get_rcu(nd);
		if (in) {
			in_dev_for_each_ifa_rcu(ifa, in) {
				struct sockaddr_in *s = (void *)&out[n];

				if (n == max)
					break;
				memset(&out[n], 0, sizeof(out[n]));
				s->sin_family = AF_INET;
				s->sin_port = port;
				s->sin_addr.s_addr = ifa->ifa_local;
				n++;
			}
		}
		rcu_read_unlock();
	} else {
		struct inet6_dev *in6 = in6_dev_get(nd);
		struct inet6_ifaddr *ifp;

		if (!in6)
			return 0;
		read_lock_bh(&in6->lock);
		list_for_each_entry(ifp, &in6->addr_list, if_list) {
			struct sockaddr_in6 *s = (void *)&out[n];

			if (n == max)
				break;
			memset(&out[n], 0, sizeof(out[n]));
			s->sin6_family = AF_INET6;
			s->sin6_port = port;
			s->sin6_addr = ifp->addr;
			if (ipv6_addr_type(&ifp->addr) & IPV6_ADDR_LINKLOCAL)
				s->sin6_scope_id = nd->ifindex;
			n++;
		}
		read_unlock_bh(&in6->lock);
		in6_dev_put(in6);
	}
	return n;
}

static bool kiwi_lsock_has(struct kiwi_cep *lcep,
			   const struct sockaddr_storage *addr)
{
	struct kiwi_lsock *ls;

	list_for_each_entry(ls, &lcep->lsocks, entry)
		if (kiwi_addr_same(&ls->addr, addr))
			return true;
	return false;
}

/*
 * Under lcep->mutex: a wildcard listener listens on each of its netdev's
 * addresses, so several kiwi devices in one namespace may share a port.
 * Run at listen time and when the netdev gains an address.
 */
static int kiwi_listen_sync(struct kiwi_cep *lcep)
{
	struct net_device *nd = lcep->cdev->kdev->netdev;
	struct sockaddr_storage *addrs;
	int n = 0, i, rv = 0;

	lockdep_assert_held(&lcep->mutex);
	if (lcep->foreign)
		return 0;
	addrs = kcalloc(2 * KIWI_LISTEN_ADDRS, sizeof(*addrs), GFP_KERNEL);
	if (!addrs)
		return -ENOMEM;
	if (lcep->family == AF_INET6)
		n = kiwi_netdev_addrs(nd, AF_INET6, lcep->port, addrs,
				      KIWI_LISTEN_ADDRS);
	if (lcep->family == AF_INET || lcep->v4too)
		n += kiwi_netdev_addrs(nd, AF_INET, lcep->port, addrs + n,
				       KIWI_LISTEN_ADDRS);
	for (i = 0; i < n && !rv; i++)
		if (!kiwi_lsock_has(lcep, &addrs[i]))
			rv = kiwi_lsock_add(lcep, &addrs[i], true);
	kfree(addrs);
	return rv;
}

static void kiwi_listen_resync(struct work_struct *work)
{
	struct kiwi_cep *lcep = container_of(work, struct kiwi_cep,
					     resync_work);

	mutex_lock(&lcep->mutex);
	/* a port taken meanwhile on the new address: that one is left out */
	if (lcep->state == KIWI_CEP_LISTEN)
		kiwi_listen_sync(lcep);
	mutex_unlock(&lcep->mutex);
	kiwi_cep_put(lcep);
}

/* An address appeared on nd: wildcard listeners on nd take it up. */
static void kiwi_wild_kick(struct net_device *nd)
{
	struct kiwi_cep *lcep;
	unsigned long flags;

	spin_lock_irqsave(&kiwi_wild_lock, flags);
	list_for_each_entry(lcep, &kiwi_wild, wild_entry) {
		if (lcep->cdev->kdev->netdev != nd)
			continue;
		kiwi_cep_get(lcep);
		if (!queue_work(kiwi_cm_wq, &lcep->resync_work))
			kiwi_cep_put(lcep);
	}
	spin_unlock_irqrestore(&kiwi_wild_lock, flags);
}

static int kiwi_inetaddr_event(struct notifier_block *nb,
			       unsigned long event, void *ptr)
{
	const struct in_ifaddr *ifa = ptr;

	if (event == NETDEV_UP && ifa->ifa_dev)
		kiwi_wild_kick(ifa->ifa_dev->dev);
	return NOTIFY_DONE;
}

static int kiwi_inet6addr_event(struct notifier_block *nb,
				unsigned long event, void *ptr)
{
	const struct inet6_ifaddr *ifp = ptr;

	if (event == NETDEV_UP && ifp->idev)
		kiwi_wild_kick(ifp->idev->dev);
	return NOTIFY_DONE;
}

static struct notifier_block kiwi_inetaddr_nb = {
	.notifier_call = kiwi_inetaddr_event,
};

static struct notifier_block kiwi_inet6addr_nb = {
	.notifier_call = kiwi_inet6addr_event,
};

/* Under lcep->mutex: stop listening; the sockets are freed by the caller. */
void kiwi_cep_unlisten(struct kiwi_cep *lcep, struct list_head *socks)
{
	struct kiwi_cep *child;

	lockdep_assert_held(&lcep->mutex);
	if (lcep->wildcard) {
		spin_lock_irq(&kiwi_wild_lock);
		list_del_init(&lcep->wild_entry);
		spin_unlock_irq(&kiwi_wild_lock);
	}
	list_splice_init(&lcep->lsocks, socks);
	/* the children's handshakes end now: they see the listener is gone */
	list_for_each_entry(child, &lcep->children, child_entry) {
		mutex_lock(&child->mutex);
		child->dead = true;
		kiwi_cep_hs_kick(child);
		mutex_unlock(&child->mutex);
	}
	kiwi_cep_finish(lcep);
}

void kiwi_lsocks_free(struct list_head *socks)
{
	struct kiwi_lsock *ls, *tmp;

	list_for_each_entry_safe(ls, tmp, socks, entry)
		kiwi_lsock_free(ls);
}

/*
 * Is a wildcard listen from a namespace other than the device's netdev's?
 * In shared netns mode rdma_cm's wildcard listen visits every device; the
 * listener would get connections from a network it is not in, so kiwi
 * listens on nothing there.  The namespace is the rdma_cm id's (see
 * kiwi_qp_bind_ok()).
 */
static bool kiwi_listen_foreign(const struct iw_cm_id *id,
				struct kiwi_cm_dev *cdev)
{
	const struct rdma_cm_id *cm_id = id->context;
	struct net *net = cm_id ? cm_id->route.addr.dev_addr.net : NULL;

	return net && !net_eq(net, dev_net(cdev->kdev->netdev));
}

int kiwi_iw_create_listen(struct iw_cm_id *id, int backlog)
{
	struct kiwi_cm_dev *cdev = kiwi_cm_dev_get(to_kdev(id->device));
	struct kiwi_cep *lcep;
	LIST_HEAD(socks);
	int rv;

	if (!cdev)
		return -ENODEV;
	if (!kiwi_family_ok(&id->m_local_addr))
		return -EAFNOSUPPORT;
	/* a listener exchanges no MPA frame; its children do */
	lcep = kiwi_cep_alloc(cdev, NULL);
	if (!lcep)
		return -ENOMEM;
	lcep->backlog = backlog > 0 ? backlog : 1;
	lcep->cm_id = id;	/* no reference: destroy_listen comes first */
	WRITE_ONCE(lcep->ulp_id, id->context);

	lcep->family = id->m_local_addr.ss_family;
	lcep->port = kiwi_ss_port(&id->m_local_addr);
	/* an IPv6 wildcard also takes IPv4 unless the consumer said v6only */
	lcep->v4too = lcep->family == AF_INET6 && !id->afonly;
	lcep->port_mapped = kiwi_port_mapped(id);
	INIT_WORK(&lcep->resync_work, kiwi_listen_resync);

	mutex_lock(&lcep->mutex);
	lcep->state = KIWI_CEP_LISTEN;
	if (kiwi_addr_any(&id->m_local_addr)) {
		lcep->wildcard = true;
		lcep->foreign = kiwi_listen_foreign(id, cdev);
		spin_lock_irq(&kiwi_wild_lock);
		list_add_tail(&lcep->wild_entry, &kiwi_wild);
		spin_unlock_irq(&kiwi_wild_lock);
		rv = kiwi_listen_sync(lcep);
	} else {
		rv = kiwi_lsock_add(lcep, &id->m_local_addr, false);
	}
	if (rv) {
		kiwi_cep_get(lcep);
		kiwi_cep_unlisten(lcep, &socks);
		mutex_unlock(&lcep->mutex);
		kiwi_lsocks_free(&socks);
		kiwi_cep_put(lcep);
		return rv;
	}
	id->provider_data = lcep;
	mutex_unlock(&lcep->mutex);
	return 0;
}

int kiwi_iw_destroy_listen(struct iw_cm_id *id)
{
	struct kiwi_cep *lcep = id->provider_data;
	LIST_HEAD(socks);

	if (!lcep)
		return 0;
	kiwi_cep_get(lcep);
	mutex_lock(&lcep->mutex);
	if (lcep->state == KIWI_CEP_LISTEN)
		kiwi_cep_unlisten(lcep, &socks);
	lcep->cm_id = NULL;
	WRITE_ONCE(lcep->ulp_id, NULL);
	mutex_unlock(&lcep->mutex);
	/* outside the mutex: an accept loop may be waiting for it */
	kiwi_lsocks_free(&socks);
	id->provider_data = NULL;
	kiwi_cep_put(lcep);
	return 0;
}

int kiwi_cm_listen_init(void)
{
	int rv;

	rv = register_inetaddr_notifier(&kiwi_inetaddr_nb);
	if (rv)
		return rv;
	rv = register_inet6addr_notifier(&kiwi_inet6addr_nb);
	if (rv)
		unregister_inetaddr_notifier(&kiwi_inetaddr_nb);
	return rv;
}

void kiwi_cm_listen_exit(void)
{
	unregister_inet6addr_notifier(&kiwi_inet6addr_nb);
	unregister_inetaddr_notifier(&kiwi_inetaddr_nb);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the connected test programs share: see common.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

long long kiwi_clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

long long kiwi_now_ms(void)
{
	return kiwi_clock_ms(CLOCK_MONOTONIC);
}

int kiwi_poll_cq_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms,
		   void (*idle)(void))
{
	long long end = kiwi_now_ms() + ms;
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			break;
		got += r;
		if (r)
			continue;
		if (kiwi_now_ms() > end)
			break;
		if (idle)
			idle();
	}
	return got;
}

struct rdma_cm_event *kiwi_cm_next(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int r;

	r = poll(&p, 1, ms);
	if (r == 0)
		return NULL;
	if (r < 0 || rdma_get_cm_event(ch, &ev)) {
		fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name,
			r < 0 ? "poll" : "rdma_get_cm_event", strerror(errno));
		return NULL;
	}
	return ev;
}

int kiwi_cm_expect(struct rdma_event_channel *ch,
		   enum rdma_cm_event_type type, int ms,
		   struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev = kiwi_cm_next(ch, ms);
	int good;

	if (!ev) {
		fprintf(stderr, "%s: no %s within %d ms\n",
			program_invocation_short_name, rdma_event_str(type),
			ms);
		return -1;
	}
	good = ev->event == type && !ev->status;
	if (!good)
		fprintf(stderr, "%s: %s (status %d), wanted %s\n",
			program_invocation_short_name,
			rdma_event_str(ev->event), ev->status,
			rdma_event_str(type));
	else if (id)
		*id = ev->id;
	rdma_ack_cm_event(ev);
	return good ? 0 : -1;
}

void kiwi_cm_drop(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

int kiwi_sockaddr_in(struct sockaddr_in *sa, const char *ip, int port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

/* What kiwi_cm_listen() does once in the namespace it was asked for. */
static int cm_listen_here(struct rdma_event_channel *ch,
			  const struct sockaddr *addr, int backlog,
			  struct rdma_cm_id **id)
{
	const char *step = "rdma_create_id";

	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP))
		goto err;
	step = "rdma_bind_addr";
	if (rdma_bind_addr(*id, (struct sockaddr *)addr))
		goto err_id;
	step = "rdma_listen";
	if (rdma_listen(*id, backlog))
		goto err_id;
	return 0;
err_id:
	rdma_destroy_id(*id);
err:
	fprintf(stderr, "%s: listen: %s: %s\n", program_invocation_short_name,
		step, strerror(errno));
	*id = NULL;
	return -1;
}

int kiwi_cm_listen(struct rdma_event_channel *ch, const struct sockaddr *addr,
		   int backlog, const char *netns, struct rdma_cm_id **id)
{
	char path[256];
	int self, ns, rv = -1;

	if (!netns)
		return cm_listen_here(ch, addr, backlog, id);
	snprintf(path, sizeof(path), "%s%s", strchr(netns, '/') ? "" :
		 "/var/run/netns/", netns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	*id = NULL;
	/* rdma_cm takes the namespace at id creation; the id keeps it */
	if (self < 0 || ns < 0 || setns(ns, CLONE_NEWNET)) {
		fprintf(stderr, "%s: netns %s: %s\n",
			program_invocation_short_name, path, strerror(errno));
		goto out;
	}
	rv = cm_listen_here(ch, addr, backlog, id);
	/* back home, or this thread's later ids would be in the wrong one */
	if (setns(self, CLONE_NEWNET)) {
		fprintf(stderr, "%s: setns back: %s\n",
			program_invocation_short_name, strerror(errno));
		if (*id)
			rdma_destroy_id(*id);
		*id = NULL;
		rv = -1;
	}
out:
	if (self >= 0)
		close(self);
	if (ns >= 0)
		close(ns);
	return rv;
}

int kiwi_cm_resolve(struct rdma_event_channel *ch, const struct sockaddr *src,
		    const struct sockaddr *dst, int resolve_ms, int wait_ms,
		    struct rdma_cm_id **id)
{
	const char *step = "rdma_resolve_addr";

	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP)) {
		fprintf(stderr, "%s: rdma_create_id: %s\n",
			program_invocation_short_name, strerror(errno));
		*id = NULL;
		return -1;
	}
	if (rdma_resolve_addr(*id, (struct sockaddr *)src,
			      (struct sockaddr *)dst, resolve_ms))
		goto err;
	/* kiwi_cm_expect() says what came instead */
	if (kiwi_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, wait_ms, NULL))
		goto drop;
	step = "rdma_resolve_route";
	if (rdma_resolve_route(*id, resolve_ms))
		goto err;
	if (kiwi_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, wait_ms, NULL))
		goto drop;
	return 0;
err:
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, step,
		strerror(errno));
drop:
	rdma_destroy_id(*id);
	*id = NULL;
	return -1;
}

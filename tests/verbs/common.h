/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the connected test programs (fastpath, semantics, liveness,
 * cm-reject, inline-burst) each spelled out: a millisecond clock, polling
 * a CQ for n completions within a time limit, and waiting for one rdma_cm
 * event of a given type.  Complaints go to stderr, prefixed with the
 * program's name; a test program's TAP stays on stdout.
 */
#ifndef KIWI_VERBS_COMMON_H
#define KIWI_VERBS_COMMON_H

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Milliseconds on CLOCK (CLOCK_MONOTONIC for time limits). */
static inline long long kiwi_clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static inline long long kiwi_now_ms(void)
{
	return kiwi_clock_ms(CLOCK_MONOTONIC);
}

/*
 * Poll cq until n completions are in wc or ms have passed without them:
 * returns how many were collected (fewer if ibv_poll_cq() fails).  idle,
 * if given, runs after each empty poll: a yield, so that kiwi's engines
 * get the guest's vCPUs, or a look at the program's other events.
 */
static inline int kiwi_poll_cq_n(struct ibv_cq *cq, struct ibv_wc *wc, int n,
				 int ms, void (*idle)(void))
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

/*
 * The next rdma_cm event on ch within ms (-1: no limit), or NULL: quietly
 * when none came in time (a program may poll for one), else with the error
 * on stderr.  The caller acks it.
 */
static inline struct rdma_cm_event *kiwi_cm_next(struct rdma_event_channel *ch,
						 int ms)
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

/*
 * The next rdma_cm event on ch, within ms (-1: no limit), must be type with
 * status 0: then 0, its cm_id in *id if id is not NULL.  Else -1, with what
 * came instead on stderr.  The event is acked either way.
 */
static inline int kiwi_cm_expect(struct rdma_event_channel *ch,
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

/* An rdma_cm id and its QP, if it has one, destroyed. */
static inline void kiwi_cm_drop(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

#endif /* KIWI_VERBS_COMMON_H */

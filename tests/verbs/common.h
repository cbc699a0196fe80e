/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the connected test programs (fastpath, semantics, liveness,
 * cm-reject, cm-cycle, qp-hold, inline-burst, and tests/adversary's
 * victim) share, in common.c: a millisecond clock, polling a CQ for n
 * completions within a time limit, waiting for one rdma_cm event of a
 * given type, an IPv4 address from its text, and the connection set-up:
 * a listener (in another network namespace if asked) and a client id
 * with its address and route resolved.  Complaints go to stderr,
 * prefixed with the program's name; a test program's TAP stays on stdout.
 */
#ifndef KIWI_VERBS_COMMON_H
#define KIWI_VERBS_COMMON_H

#include <time.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Milliseconds on CLOCK (CLOCK_MONOTONIC for time limits). */
long long kiwi_clock_ms(clockid_t clock);
long long kiwi_now_ms(void);

/*
 * Poll cq until n completions are in wc or ms have passed without them:
 * returns how many were collected (fewer if ibv_poll_cq() fails).  idle,
 * if given, runs after each empty poll: a yield, so that kiwi's engines
 * get the guest's vCPUs, or a look at the program's other events.
 */
int kiwi_poll_cq_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms,
		   void (*idle)(void));

/*
 * The next rdma_cm event on ch within ms (-1: no limit), or NULL: quietly
 * when none came in time (a program may poll for one), else with the error
 * on stderr.  The caller acks it.
 */
struct rdma_cm_event *kiwi_cm_next(struct rdma_event_channel *ch, int ms);

/*
 * The next rdma_cm event on ch, within ms (-1: no limit), must be type with
 * status 0: then 0, its cm_id in *id if id is not NULL.  Else -1, with what
 * came instead on stderr.  The event is acked either way.
 */
int kiwi_cm_expect(struct rdma_event_channel *ch,
		   enum rdma_cm_event_type type, int ms,
		   struct rdma_cm_id **id);

/* An rdma_cm id and its QP, if it has one, destroyed. */
void kiwi_cm_drop(struct rdma_cm_id *id);

/* sa = IPv4 address ip, port port: 0, or -1 if ip is not one. */
int kiwi_sockaddr_in(struct sockaddr_in *sa, const char *ip, int port);

/*
 * A listening id on ch (backlog as rdma_listen() takes it) bound to addr,
 * created in network namespace netns: NULL for this one, a path, or a
 * name under /var/run/netns.  0 with the id in *id, else -1 with why on
 * stderr.
 */
int kiwi_cm_listen(struct rdma_event_channel *ch, const struct sockaddr *addr,
		   int backlog, const char *netns, struct rdma_cm_id **id);

/*
 * A client id on ch with its address (from src, NULL: any) and its route
 * to dst resolved: rdma_resolve_addr() and rdma_resolve_route() given
 * resolve_ms, their events waited for wait_ms each (-1: no limit).  0 with
 * the id in *id, else -1 with why on stderr and no id.
 */
int kiwi_cm_resolve(struct rdma_event_channel *ch, const struct sockaddr *src,
		    const struct sockaddr *dst, int resolve_ms, int wait_ms,
		    struct rdma_cm_id **id);

#endif /* KIWI_VERBS_COMMON_H */

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fast path of libkiwi, kiwi to kiwi over librdmacm, in one process:
 * the client's QPs on CLI_DEV in this network namespace, the server's on
 * SRV_DEV in the namespace NETNS (the listening rdma_cm id is created
 * there; its connections stay there).
 *
 *   fastpath NETNS SRV_IP CLI_DEV SRV_DEV
 *
 * Checks, bytes compared and completion statuses asserted:
 * - doorbells (kiwi's debugfs counter): one per post on an idle QP; a burst
 *   posted while the engine is busy rings far fewer times than it posts;
 *   posts racing with the engine going idle all complete; a post in ERR
 *   still rings and completes with IBV_WC_WR_FLUSH_ERR;
 * - inline Sends and Writes up to 96 bytes (the source may change as soon
 *   as the post returns); 97 bytes fail with EINVAL, nothing posted;
 * - several threads posting Sends and Writes on one QP, and receives on
 *   one RQ and one SRQ, at the same time: every WR completes exactly once;
 * - two QPs sharing an SRQ: each message arrives at its own QP;
 * - completion events: one per arming (NEXT and SOLICITED), none without,
 *   several CQs on one channel, and no event lost when arming races with
 *   arriving completions.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "kiwi-abi.h"
#include "kiwi-tap.h"
#include "common.h"

#define PORT		20079
#define TMO_MS		20000	/* anything that must happen, on a slow TCG guest */
#define QUIET_MS	300	/* how long "no event" is watched for */
#define DOORBELLS	"/sys/kernel/debug/kiwi/doorbells"

#define MSG		64	/* bytes of a small Send */
#define NTHR		4
#define PER_THR		200
#define NMT		(NTHR * PER_THR)
#define WR_PER_THR	100
#define WR_SIZE		4096
#define BURST		64
#define BURST_SIZE	(128 * 1024)
#define SRQ_WR		512
#define SRQ_MSGS	32	/* per QP of the SRQ pair */
#define RACE_MSGS	150
#define JITTER		200	/* per thread */

struct conn {
	struct rdma_cm_id *cid;		/* client side */
	struct rdma_cm_id *sid;		/* server side */
	struct ibv_qp *cqp;
	struct ibv_qp *sqp;
	struct ibv_cq *cscq;		/* the client QP's send CQ */
	struct ibv_cq *srcq;		/* the server QP's receive CQ */
};

static struct rdma_event_channel *cli_ch, *srv_ch;
static struct rdma_cm_id *listen_id;
static struct ibv_context *cctx, *sctx;
static struct ibv_pd *cpd, *spd;
static struct sockaddr_in srv_addr;

/* ---- small helpers ---- */

static long long doorbells(void)
{
	long long v = -1;
	FILE *f = fopen(DOORBELLS, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static uint8_t pat(uint64_t id, size_t i)
{
	return (uint8_t)(id * 131 + i * 7 + (i >> 8));
}

static void fill(void *buf, size_t len, uint64_t id)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(id, i);
}

static int check(const void *buf, size_t len, uint64_t id)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(id, i))
			return 0;
	return 1;
}

/* A small message: its id in the first 8 bytes, the pattern after. */
static void msg_fill(void *buf, size_t len, uint64_t id)
{
	fill(buf, len, id);
	memcpy(buf, &id, sizeof(id));
}

static int msg_id(const void *buf, size_t len, uint64_t *id)
{
	const uint8_t *p = buf;
	size_t i;

	memcpy(id, buf, sizeof(*id));
	for (i = sizeof(*id); i < len; i++)
		if (p[i] != pat(*id, i))
			return 0;
	return 1;
}

/* Between empty polls, let the engines run on the guest's two vCPUs. */
static void yield_cpu(void)
{
	sched_yield();
}

static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int tmo_ms)
{
	return kiwi_poll_cq_n(cq, wc, n, tmo_ms, yield_cpu);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return poll_n(cq, wc, 1, TMO_MS) == 1;
}

/*
 * A Write's completion at its sender says nothing about placement at the
 * target; the data is checked once it has landed (or the time is up).
 */
static int wait_check(const void *buf, size_t len, uint64_t id)
{
	long long end = kiwi_now_ms() + TMO_MS;

	while (!check(buf, len, id)) {
		if (kiwi_now_ms() > end)
			return 0;
		sched_yield();
	}
	return 1;
}

/* An event on the channel within ms, as (cq, 1); 0 when none came. */
static int get_event(struct ibv_comp_channel *ch, int ms, struct ibv_cq **cq)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	void *ctx;

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	if (ibv_get_cq_event(ch, cq, &ctx))
		return 0;
	ibv_ack_cq_events(*cq, 1);
	return 1;
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *buf, size_t len)
{
	return ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
}

static int post_send1(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t id,
		      void *addr, uint32_t len, uint32_t lkey,
		      unsigned int flags, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = flags,
	}, *bad = NULL;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv1(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t id,
		      void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 },
		*bad = NULL;

	return srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		     ibv_post_recv(qp, &wr, &bad);
}

/* ---- rdma_cm ---- */

static struct ibv_context *find_ctx(const char *name)
{
	struct ibv_context **list, *found = NULL;
	int i, n;

	list = rdma_get_devices(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]->device), name))
			found = list[i];
	rdma_free_devices(list);
	return found;
}

static int conn_make(struct conn *c, struct ibv_qp_init_attr *ca,
		     struct ibv_qp_init_attr *sa)
{
	struct rdma_conn_param p = {
		.initiator_depth = 4, .responder_resources = 4,
		.retry_count = 7,
	};
	struct rdma_cm_id *id;

	memset(c, 0, sizeof(*c));
	c->cscq = ca->send_cq;
	c->srcq = sa->recv_cq;
	/*
	 * The case made the server's neighbour known (a ping) first: a
	 * resolution that fails is a failure, not a reason to try again.
	 */
	if (kiwi_cm_resolve(cli_ch, NULL, (struct sockaddr *)&srv_addr, 5000,
			    TMO_MS, &c->cid)) {
		diag("address or route resolution failed");
		return -1;
	}
	if (c->cid->verbs != cctx) {
		diag("client id not on the client device");
		return -1;
	}
	if (rdma_create_qp(c->cid, cpd, ca)) {
		diag("client rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	c->cqp = c->cid->qp;
	if (rdma_connect(c->cid, &p) ||
	    kiwi_cm_expect(srv_ch, RDMA_CM_EVENT_CONNECT_REQUEST, TMO_MS,
			   &id))
		return -1;
	c->sid = id;
	if (id->verbs != sctx || rdma_create_qp(id, spd, sa)) {
		diag("server rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	c->sqp = id->qp;
	if (rdma_accept(id, &p) ||
	    kiwi_cm_expect(cli_ch, RDMA_CM_EVENT_ESTABLISHED, TMO_MS, NULL) ||
	    kiwi_cm_expect(srv_ch, RDMA_CM_EVENT_ESTABLISHED, TMO_MS, NULL))
		return -1;
	return 0;
}

/* Drain events until n DISCONNECTED came on ch (or the time limit). */
static int wait_disconnects(struct rdma_event_channel *ch, int n)
{
	long long end = kiwi_now_ms() + TMO_MS;
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	while (n > 0 && kiwi_now_ms() < end) {
		if (poll(&pfd, 1, 500) != 1)
			continue;
		if (rdma_get_cm_event(ch, &ev))
			return -1;
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			n--;
		rdma_ack_cm_event(ev);
	}
	return n ? -1 : 0;
}

static void conn_destroy(struct conn *c)
{
	if (c->cid && c->cid->qp)
		rdma_destroy_qp(c->cid);
	if (c->sid && c->sid->qp)
		rdma_destroy_qp(c->sid);
	if (c->cid)
		rdma_destroy_id(c->cid);
	if (c->sid)
		rdma_destroy_id(c->sid);
}

/*
 * A 0-byte Send after Writes: once its receive completes at the server,
 * the Writes before it are placed (RDMAP orders the Send's completion
 * after them).  The server QP must have an RQ.
 */
static int sync_send(struct conn *c)
{
	struct ibv_recv_wr rwr = { .wr_id = 0x5eed }, *rbad;
	struct ibv_send_wr swr = {
		.wr_id = 0x5eed, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *sbad;
	struct ibv_wc wc;

	return !ibv_post_recv(c->sqp, &rwr, &rbad) &&
	       !ibv_post_send(c->cqp, &swr, &sbad) &&
	       poll_one(c->cscq, &wc) && wc.status == IBV_WC_SUCCESS &&
	       wc.wr_id == 0x5eed &&
	       poll_one(c->srcq, &wc) && wc.status == IBV_WC_SUCCESS &&
	       wc.wr_id == 0x5eed && wc.byte_len == 0;
}

/* ---- doorbells ---- */

static char *cbuf, *sbuf;		/* client source, server sink */
static size_t cbuf_len, sbuf_len;
static struct ibv_mr *cmr, *smr;

/* One Write at a time on an idle QP: each post rings exactly once. */
static void test_doorbell_idle(struct conn *c, struct ibv_cq *scq)
{
	long long before, after;
	struct ibv_wc wc;
	int i, good = 1;

	usleep(100000);
	before = doorbells();
	for (i = 0; i < 10; i++) {
		fill(cbuf, 4096, 1000 + i);
		if (post_send1(c->cqp, IBV_WR_RDMA_WRITE, 1000 + i, cbuf,
			       4096, cmr->lkey, IBV_SEND_SIGNALED,
			       (uintptr_t)sbuf, smr->rkey) ||
		    !poll_one(scq, &wc) || wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != 1000 + (uint64_t)i ||
		    wc.opcode != IBV_WC_RDMA_WRITE ||
		    !wait_check(sbuf, 4096, 1000 + i))
			good = 0;
		/* the engine goes idle after the completion */
		usleep(50000);
	}
	after = doorbells();
	ok(good, "10 single Writes on an idle QP complete, data verified");
	ok(before >= 0 && after - before == 10,
	   "a single post on an idle QP rings exactly one doorbell (10 posts, %lld doorbells)",
	   after - before);
}

/*
 * kiwi's doorbell method (kiwi-abi.h) called by hand, past the provider
 * and any LD_PRELOAD shim (syscall()): on the QP it rings once; a handle
 * that names nothing, a CQ's handle and a call without the handle fail
 * with ib_uverbs' errors and ring nothing.
 */
static int db_method(struct ibv_context *ctx, uint32_t handle, int nattrs)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr qp;
	} cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.length = sizeof(cmd.hdr) + nattrs * sizeof(cmd.qp);
	cmd.hdr.object_id = UVERBS_OBJECT_QP;
	cmd.hdr.method_id = KIWI_IB_METHOD_QP_DOORBELL;
	cmd.hdr.num_attrs = nattrs;
	cmd.hdr.driver_id = KIWI_DRIVER_ID;
	cmd.qp.attr_id = KIWI_IB_ATTR_DOORBELL_QP;
	cmd.qp.data = handle;
	if (syscall(SYS_ioctl, ctx->cmd_fd, RDMA_VERBS_IOCTL, &cmd))
		return errno;
	return 0;
}

static void test_doorbell_method(struct conn *c)
{
	long long before, mid, after;
	int rv, nobj, wrong, none;

	usleep(100000);
	before = doorbells();
	rv = db_method(cctx, c->cqp->handle, 1);
	mid = doorbells();
	ok(rv == 0 && before >= 0 && mid - before == 1,
	   "the doorbell method on an idle connected QP: status %d, %lld doorbell(s)",
	   rv, mid - before);
	nobj = db_method(cctx, 0x7fffffff, 1);
	wrong = db_method(cctx, c->cscq->handle, 1);
	none = db_method(cctx, c->cqp->handle, 0);
	after = doorbells();
	ok(nobj == ENOENT && wrong == EINVAL && none == EINVAL &&
	   after == mid,
	   "the doorbell method refuses a made-up handle (%s), a CQ's (%s) and no handle (%s), ringing nothing (%lld)",
	   strerror(nobj), strerror(wrong), strerror(none), after - mid);
}

/*
 * Shape the client's egress (KIWI_FP_SHAPE_DEV, a netdev in our
 * namespace) to a rate, or lift it (rate NULL).  False if tc failed.
 */
static int shape(const char *rate)
{
	const char *dev = getenv("KIWI_FP_SHAPE_DEV");
	char cmd[256];

	if (!dev)
		return 1;
	if (rate)
		snprintf(cmd, sizeof(cmd),
			 "tc qdisc add dev %s root netem rate %s", dev, rate);
	else
		snprintf(cmd, sizeof(cmd), "tc qdisc del dev %s root", dev);
	return system(cmd) == 0;
}

/*
 * Posts behind a busy engine ring no doorbell.  The first Write carries
 * all BURST regions (8 MiB), the next BURST - 1 rewrite one region each
 * with the same bytes; only the first, on an idle QP, needs a doorbell.
 * The wire is held to 100 Mbit/s meanwhile (KIWI_FP_SHAPE_DEV), so that
 * the engine is still busy, waiting for TCP's room, while the poster
 * posts the rest.  Unshaped, the engine's work item (on the poster's
 * CPU, high priority) could preempt the poster, finish the 8 MiB and
 * then each 128 KiB Write before the next post, which then found it idle
 * and rang every time: correct elision, but no test of it.
 */
static void test_doorbell_burst(struct conn *c, struct ibv_cq *scq)
{
	static struct ibv_wc wc[BURST];
	long long before, first, after;
	int i, n, good = 1, seen[BURST] = { 0 };

	for (i = 0; i < BURST; i++)
		fill(cbuf + (size_t)i * BURST_SIZE, BURST_SIZE, 5000 + i);
	memset(sbuf, 0, (size_t)BURST * BURST_SIZE);
	ok(shape("100mbit"), "the client's egress shaped to 100 Mbit/s (%s)",
	   getenv("KIWI_FP_SHAPE_DEV") ?: "not asked for");
	usleep(50000);
	before = doorbells();
	if (post_send1(c->cqp, IBV_WR_RDMA_WRITE, 5000, cbuf,
		       BURST * BURST_SIZE, cmr->lkey, IBV_SEND_SIGNALED,
		       (uintptr_t)sbuf, smr->rkey))
		good = 0;
	first = doorbells();
	for (i = 1; i < BURST; i++)
		if (post_send1(c->cqp, IBV_WR_RDMA_WRITE, 5000 + i,
			       cbuf + (size_t)i * BURST_SIZE, BURST_SIZE,
			       cmr->lkey, IBV_SEND_SIGNALED,
			       (uintptr_t)sbuf + (size_t)i * BURST_SIZE,
			       smr->rkey))
			good = 0;
	after = doorbells();
	n = poll_n(scq, wc, BURST, 4 * TMO_MS);
	ok(shape(NULL), "the shaping lifted");
	for (i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id - 5000;

		if (wc[i].status != IBV_WC_SUCCESS || k >= BURST || seen[k]++)
			good = 0;
	}
	if (!sync_send(c))
		good = 0;
	for (i = 0; i < BURST; i++)
		if (!check(sbuf + (size_t)i * BURST_SIZE, BURST_SIZE, 5000 + i))
			good = 0;
	ok(good && n == BURST,
	   "a Write of %d MiB, then %d of %d KiB: each completes once, data verified",
	   BURST * BURST_SIZE / (1024 * 1024), BURST - 1, BURST_SIZE / 1024);
	/* a poster stalled longer than the 8 MiB Write may ring once more */
	ok(before >= 0 && first - before == 1 && after - first <= 1,
	   "posts behind a busy engine: %lld doorbell(s) for the first post, %lld for the %d behind it",
	   first - before, after - first, BURST - 1);
}

/*
 * Two threads post Sends one at a time with jittered gaps: a doorbell of
 * one runs the engine in its system call while the other posts, so many
 * posts meet the engine just as it goes idle.  A lost wakeup would leave
 * a Send uncompleted.
 */
struct jit {
	struct conn *c;
	int t;
	int errs;
};

static void *jitter_sender(void *arg)
{
	struct jit *j = arg;
	unsigned int seed = 11 + j->t;
	int i;

	for (i = 0; i < JITTER; i++) {
		int k = j->t * JITTER + i;
		char *b = cbuf + (size_t)k * MSG;

		msg_fill(b, MSG, 800000 + k);
		if (post_send1(j->c->cqp, IBV_WR_SEND, 800000 + k, b, MSG,
			       cmr->lkey, IBV_SEND_SIGNALED, 0, 0))
			j->errs++;
		usleep((unsigned int)(rand_r(&seed) % 100));
	}
	return NULL;
}

static void test_doorbell_jitter(struct conn *c)
{
	static struct ibv_wc wc[2 * JITTER];
	static unsigned char sseen[2 * JITTER], rseen[2 * JITTER];
	struct jit j[2] = { { .c = c, .t = 0 }, { .c = c, .t = 1 } };
	long long before, after;
	pthread_t th[2];
	int i, n, ns, bad = 0;

	memset(sseen, 0, sizeof(sseen));
	memset(rseen, 0, sizeof(rseen));
	for (i = 0; i < 2 * JITTER; i++)
		if (post_recv1(c->sqp, NULL, i, sbuf + (size_t)i * MSG, MSG,
			       smr->lkey))
			bad++;
	before = doorbells();
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, jitter_sender, &j[i]);
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		bad += j[i].errs;
	}
	after = doorbells();
	ns = poll_n(c->cscq, wc, 2 * JITTER, 4 * TMO_MS);
	for (i = 0; i < ns; i++) {
		uint64_t k = wc[i].wr_id - 800000;

		if (wc[i].status != IBV_WC_SUCCESS || k >= 2 * JITTER ||
		    sseen[k]++)
			bad++;
	}
	n = poll_n(c->srcq, wc, 2 * JITTER, 4 * TMO_MS);
	for (i = 0; i < n; i++) {
		uint64_t id;

		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].wr_id >= 2 * JITTER ||
		    !msg_id(sbuf + wc[i].wr_id * MSG, MSG, &id) ||
		    id - 800000 >= 2 * JITTER || rseen[id - 800000]++)
			bad++;
	}
	ok(ns == 2 * JITTER && n == 2 * JITTER && !bad,
	   "2 threads post %d Sends with jittered gaps: all complete once and arrive intact (%lld doorbells)",
	   2 * JITTER, after - before);
}

/* ---- inline ---- */

static void test_inline(struct conn *c, struct ibv_cq *scq,
			struct ibv_cq *rcq)
{
	uint8_t src[128], src2[96];
	struct ibv_sge sge[3];
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	char *rb = sbuf;
	int rv, good;

	ok(c->cqp && c->sqp, "inline: connection up");

	/* a 96-byte inline Send, the source overwritten as soon as posted */
	memset(rb, 0, 256);
	good = !post_recv1(c->sqp, NULL, 71, rb, 256, smr->lkey);
	fill(src, 96, 71);
	good = good && !post_send1(c->cqp, IBV_WR_SEND, 71, src, 96, 0,
				   IBV_SEND_INLINE | IBV_SEND_SIGNALED, 0, 0);
	memset(src, 0xee, sizeof(src));
	good = good && poll_one(scq, &wc) && wc.status == IBV_WC_SUCCESS &&
	       wc.wr_id == 71 && wc.opcode == IBV_WC_SEND;
	good = good && poll_one(rcq, &wc) && wc.status == IBV_WC_SUCCESS &&
	       wc.wr_id == 71 && wc.byte_len == 96 && wc.opcode == IBV_WC_RECV;
	ok(good && check(rb, 96, 71),
	   "inline Send of 96 B (unregistered source, reused at once) arrives intact");

	/* a 96-byte inline Write from three SGEs, and a 1-byte one */
	memset(rb, 0, 256);
	fill(src2, 96, 72);
	memcpy(src, src2, 96);
	sge[0] = (struct ibv_sge){ (uintptr_t)src, 40, 0 };
	sge[1] = (struct ibv_sge){ (uintptr_t)src + 40, 0, 0 };
	sge[2] = (struct ibv_sge){ (uintptr_t)src + 40, 56, 0 };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 72;
	wr.sg_list = sge;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)rb;
	wr.wr.rdma.rkey = smr->rkey;
	good = !ibv_post_send(c->cqp, &wr, &bad);
	memset(src, 0xee, sizeof(src));
	good = good && poll_one(scq, &wc) && wc.status == IBV_WC_SUCCESS &&
	       wc.wr_id == 72 && wc.opcode == IBV_WC_RDMA_WRITE &&
	       sync_send(c);
	ok(good && !memcmp(rb, src2, 96) && rb[96] == 0,
	   "inline Write of 96 B gathered from 3 SGEs lands intact");

	src[0] = 0x5a;
	good = !post_send1(c->cqp, IBV_WR_RDMA_WRITE, 73, src, 1, 0,
			   IBV_SEND_INLINE | IBV_SEND_SIGNALED,
			   (uintptr_t)rb + 200, smr->rkey);
	good = good && poll_one(scq, &wc) && wc.status == IBV_WC_SUCCESS &&
	       wc.wr_id == 73 && sync_send(c);
	ok(good && (uint8_t)rb[200] == 0x5a && rb[201] == 0,
	   "inline Write of 1 B lands");

	/* 97 bytes: refused, nothing posted; the next WR is unaffected */
	sge[0] = (struct ibv_sge){ (uintptr_t)src, 97, 0 };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 74;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	bad = NULL;
	rv = ibv_post_send(c->cqp, &wr, &bad);
	ok(rv == EINVAL && bad == &wr,
	   "inline Send of 97 B fails with EINVAL, bad_wr at it (got %d)", rv);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)rb;
	wr.wr.rdma.rkey = smr->rkey;
	bad = NULL;
	rv = ibv_post_send(c->cqp, &wr, &bad);
	ok(rv == EINVAL && bad == &wr,
	   "inline Write of 97 B fails with EINVAL (got %d)", rv);
	good = !post_send1(c->cqp, IBV_WR_RDMA_WRITE, 75, cbuf, 8, cmr->lkey,
			   IBV_SEND_SIGNALED, (uintptr_t)rb, smr->rkey);
	good = good && poll_one(scq, &wc) && wc.wr_id == 75 &&
	       wc.status == IBV_WC_SUCCESS && ibv_poll_cq(scq, 1, &wc) == 0;
	ok(good, "no completion for the refused WRs; the next post completes");
}

/* ---- several threads on one QP ---- */

struct mt {
	struct conn *c;
	struct ibv_srq *srq;		/* receives into it, not the RQ */
	char *rbase;			/* receive buffers, MSG bytes each */
	uint32_t rkey_l;		/* lkey of the receive buffers */
	int t;
	int errs;
	enum ibv_wr_opcode op;
};

static void *mt_post_recv(void *arg)
{
	struct mt *m = arg;
	int i;

	for (i = 0; i < PER_THR; i++) {
		int k = m->t * PER_THR + i;

		if (post_recv1(m->c->sqp, m->srq, k, m->rbase + (size_t)k * MSG,
			       MSG, m->rkey_l))
			m->errs++;
	}
	return NULL;
}

static void *mt_post_send(void *arg)
{
	struct mt *m = arg;
	int i, n = m->op == IBV_WR_SEND ? PER_THR : WR_PER_THR;

	for (i = 0; i < n; i++) {
		int k = m->t * PER_THR + i;
		uint64_t id = 100000 + k;
		int rv;

		if (m->op == IBV_WR_SEND) {
			char *b = cbuf + (size_t)k * MSG;

			msg_fill(b, MSG, id);
			rv = post_send1(m->c->cqp, IBV_WR_SEND, id, b, MSG,
					cmr->lkey, IBV_SEND_SIGNALED, 0, 0);
		} else {
			size_t off = (size_t)k * WR_SIZE;

			fill(cbuf + off, WR_SIZE, id);
			rv = post_send1(m->c->cqp, IBV_WR_RDMA_WRITE, id,
					cbuf + off, WR_SIZE, cmr->lkey,
					IBV_SEND_SIGNALED,
					(uintptr_t)sbuf + off, smr->rkey);
		}
		if (rv)
			m->errs++;
	}
	return NULL;
}

static int run_threads(void *(*fn)(void *), struct mt *m)
{
	pthread_t th[NTHR];
	int i, errs = 0;

	for (i = 0; i < NTHR; i++)
		if (pthread_create(&th[i], NULL, fn, &m[i]))
			return -1;
	for (i = 0; i < NTHR; i++) {
		pthread_join(th[i], NULL);
		errs += m[i].errs;
		m[i].errs = 0;
	}
	return errs;
}

/* Sends: each send WR completes once; each message is received once. */
static int mt_check_sends(struct ibv_cq *scq, struct ibv_cq *rcq,
			  const char *rbase, const char *what)
{
	static struct ibv_wc wc[NMT];
	static unsigned char sseen[NMT], rseen[NMT], mseen[NMT];
	int i, n, bad = 0;

	memset(sseen, 0, sizeof(sseen));
	memset(rseen, 0, sizeof(rseen));
	memset(mseen, 0, sizeof(mseen));
	n = poll_n(scq, wc, NMT, 4 * TMO_MS);
	for (i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id - 100000;

		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_SEND || k >= NMT || sseen[k]++)
			bad++;
	}
	ok(n == NMT && !bad,
	   "%s: %d Sends posted by %d threads each complete exactly once (%d completions, %d bad)",
	   what, NMT, NTHR, n, bad);

	bad = 0;
	n = poll_n(rcq, wc, NMT, 4 * TMO_MS);
	for (i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id, id;

		if (wc[i].status != IBV_WC_SUCCESS || k >= NMT || rseen[k]++ ||
		    wc[i].byte_len != MSG ||
		    !msg_id(rbase + k * MSG, MSG, &id) ||
		    id - 100000 >= NMT || mseen[id - 100000]++)
			bad++;
	}
	ok(n == NMT && !bad,
	   "%s: %d receives posted by %d threads each complete once, every message intact and once (%d, %d bad)",
	   what, NMT, NTHR, n, bad);
	return 0;
}

static void test_mt(struct conn *c, struct ibv_cq *scq, struct ibv_cq *rcq)
{
	static struct ibv_wc wc[NTHR * WR_PER_THR];
	static unsigned char seen[NTHR * PER_THR];
	char *rbase = sbuf;
	struct mt m[NTHR];
	int i, n, bad = 0, errs;
	long long db;

	memset(m, 0, sizeof(m));
	for (i = 0; i < NTHR; i++) {
		m[i].c = c;
		m[i].rbase = rbase;
		m[i].rkey_l = smr->lkey;
		m[i].t = i;
	}
	memset(rbase, 0, (size_t)NMT * MSG);
	errs = run_threads(mt_post_recv, m);
	ok(!errs, "%d threads post %d receives on one RQ at once", NTHR, NMT);
	for (i = 0; i < NTHR; i++)
		m[i].op = IBV_WR_SEND;
	db = doorbells();
	errs = run_threads(mt_post_send, m);
	ok(!errs, "%d threads post %d Sends on one QP at once (%lld doorbells)",
	   NTHR, NMT, doorbells() - db);
	mt_check_sends(scq, rcq, rbase, "RQ");

	memset(sbuf, 0, (size_t)NTHR * PER_THR * WR_SIZE);
	for (i = 0; i < NTHR; i++)
		m[i].op = IBV_WR_RDMA_WRITE;
	errs = run_threads(mt_post_send, m);
	n = poll_n(scq, wc, NTHR * WR_PER_THR, 4 * TMO_MS);
	if (!sync_send(c))
		bad++;
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id - 100000;

		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_RDMA_WRITE ||
		    k >= NTHR * PER_THR || seen[k]++ ||
		    !check(sbuf + k * WR_SIZE, WR_SIZE, wc[i].wr_id))
			bad++;
	}
	ok(!errs && n == NTHR * WR_PER_THR && !bad,
	   "%d threads post %d Writes of %d B on one QP: each completes once, data verified (%d, %d bad)",
	   NTHR, NTHR * WR_PER_THR, WR_SIZE, n, bad);
}

/* ---- SRQ ---- */

static void test_srq(struct conn *a, struct conn *b, struct ibv_srq *srq,
		     struct ibv_cq *scq_a, struct ibv_cq *scq_b,
		     struct ibv_cq *rcq_a, struct ibv_cq *rcq_b)
{
	static struct ibv_wc wc[2 * SRQ_MSGS];
	static unsigned char seen[2 * SRQ_MSGS];
	char *rbase = sbuf;
	int i, n, na, nb, bad = 0, good = 1;
	struct mt m[2];

	memset(rbase, 0, (size_t)2 * SRQ_MSGS * MSG);
	for (i = 0; i < 2 * SRQ_MSGS; i++)
		if (post_recv1(NULL, srq, i, rbase + (size_t)i * MSG, MSG,
			       smr->lkey))
			good = 0;
	ok(good, "%d receives posted to the SRQ from user space", 2 * SRQ_MSGS);

	for (i = 0; i < SRQ_MSGS; i++) {
		msg_fill(cbuf + (size_t)i * MSG, MSG, 200000 + i);
		msg_fill(cbuf + (size_t)(SRQ_MSGS + i) * MSG, MSG, 300000 + i);
		if (post_send1(a->cqp, IBV_WR_SEND, 200000 + i,
			       cbuf + (size_t)i * MSG, MSG, cmr->lkey,
			       IBV_SEND_SIGNALED, 0, 0) ||
		    post_send1(b->cqp, IBV_WR_SEND, 300000 + i,
			       cbuf + (size_t)(SRQ_MSGS + i) * MSG, MSG,
			       cmr->lkey, IBV_SEND_SIGNALED, 0, 0))
			good = 0;
	}
	na = poll_n(scq_a, wc, SRQ_MSGS, TMO_MS);
	nb = poll_n(scq_b, wc + SRQ_MSGS, SRQ_MSGS, TMO_MS);
	for (i = 0; i < na + nb; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			good = 0;
	ok(good && na == SRQ_MSGS && nb == SRQ_MSGS,
	   "%d Sends on each of two QPs complete", SRQ_MSGS);

	na = poll_n(rcq_a, wc, SRQ_MSGS, TMO_MS);
	nb = poll_n(rcq_b, wc + na, SRQ_MSGS, TMO_MS);
	n = na + nb;
	for (i = 0; i < n; i++) {
		uint64_t k = wc[i].wr_id, id, base;
		struct ibv_qp *want;

		if (wc[i].status != IBV_WC_SUCCESS || k >= 2 * SRQ_MSGS ||
		    seen[k]++ || wc[i].byte_len != MSG ||
		    !msg_id(rbase + k * MSG, MSG, &id)) {
			bad++;
			continue;
		}
		/* the message came over the QP its id names */
		base = id >= 300000 ? 300000 : 200000;
		want = base == 300000 ? b->sqp : a->sqp;
		if (id - base >= SRQ_MSGS || wc[i].qp_num != want->qp_num ||
		    (i < na) != (want == a->sqp))
			bad++;
	}
	ok(n == 2 * SRQ_MSGS && !bad,
	   "two QPs sharing an SRQ: every message received once, intact, at its own QP (%d, %d bad)",
	   n, bad);

	/* the SRQ from several threads at once; its messages via QP a */
	memset(m, 0, sizeof(m));
	memset(rbase, 0, (size_t)NMT * MSG);
	for (i = 0; i < 2; i++) {
		m[i].c = a;
		m[i].srq = srq;
		m[i].rbase = rbase;
		m[i].rkey_l = smr->lkey;
		m[i].t = i;
	}
	good = 1;
	{
		pthread_t th[2];

		for (i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, mt_post_recv, &m[i]);
		for (i = 0; i < 2; i++) {
			pthread_join(th[i], NULL);
			if (m[i].errs)
				good = 0;
		}
	}
	ok(good, "2 threads post %d receives to one SRQ at once",
	   2 * PER_THR);
	memset(seen, 0, sizeof(seen));
	bad = 0;
	for (i = 0; i < 2 * PER_THR; i++) {
		msg_fill(cbuf + (size_t)i * MSG, MSG, 400000 + i);
		if (post_send1(a->cqp, IBV_WR_SEND, 400000 + i,
			       cbuf + (size_t)i * MSG, MSG, cmr->lkey,
			       i % 16 == 15 ? IBV_SEND_SIGNALED : 0, 0, 0))
			bad++;
		/* keep the SQ from filling: reap every 16th */
		if (i % 16 == 15 && (!poll_one(scq_a, wc) ||
				     wc[0].status != IBV_WC_SUCCESS))
			bad++;
	}
	{
		static unsigned char got[2 * PER_THR], msg[2 * PER_THR];
		struct ibv_wc w;

		memset(got, 0, sizeof(got));
		memset(msg, 0, sizeof(msg));
		for (i = 0; i < 2 * PER_THR; i++) {
			uint64_t id;

			if (!poll_one(rcq_a, &w)) {
				bad++;
				break;
			}
			if (w.status != IBV_WC_SUCCESS ||
			    w.wr_id >= 2 * PER_THR || got[w.wr_id]++ ||
			    !msg_id(rbase + w.wr_id * MSG, MSG, &id) ||
			    id - 400000 >= 2 * PER_THR ||
			    msg[id - 400000]++)
				bad++;
		}
	}
	ok(!bad, "%d messages into those SRQ receives: each once, intact",
	   2 * PER_THR);
}

/* ---- completion events ---- */

struct racer {
	struct conn *c;
	int errs;
};

static void *race_sender(void *arg)
{
	struct racer *r = arg;
	int i;

	for (i = 0; i < RACE_MSGS; i++) {
		/* a buffer of its own: unsignaled Sends may still be queued */
		char *b = cbuf + (size_t)(64 + i) * MSG;

		/* unsignaled: the receiver is what is under test */
		msg_fill(b, MSG, 600000 + i);
		if (post_send1(r->c->cqp, IBV_WR_SEND, 600000 + i, b, MSG,
			       cmr->lkey, i % 32 == 31 ? IBV_SEND_SIGNALED : 0,
			       0, 0))
			r->errs++;
		if (i % 32 == 31) {
			struct ibv_wc wc;

			if (!poll_one(r->c->cscq, &wc) ||
			    wc.status != IBV_WC_SUCCESS)
				r->errs++;
		}
		/* vary the timing against the consumer's arm-and-poll */
		if (i % 3)
			usleep((unsigned int)(rand() % 300));
	}
	return NULL;
}

/* the n-th racing message, in a receive of the SRQ */
static int race_ok(const struct ibv_wc *wc, int n)
{
	uint64_t id, k = wc->wr_id - 500;

	return wc->status == IBV_WC_SUCCESS && k < 16 + RACE_MSGS &&
	       wc->byte_len == MSG && msg_id(sbuf + k * MSG, MSG, &id) &&
	       id == 600000 + (uint64_t)n;
}

static void test_events(struct conn *a, struct conn *b, struct ibv_srq *srq,
			struct ibv_comp_channel *ch, struct ibv_cq *rcq_a,
			struct ibv_cq *rcq_b)
{
	struct ibv_cq *scq_a = a->cscq;
	struct ibv_cq *ecq = NULL;
	struct ibv_wc wc;
	struct racer r = { .c = a };
	pthread_t th;
	int i, n, got, events, arms, good;

	/* receive buffer i has wr_id 500 + i */
	memset(sbuf, 0, (size_t)(16 + RACE_MSGS) * MSG);
	for (i = 0; i < 16; i++)
		post_recv1(NULL, srq, 500 + i, sbuf + (size_t)i * MSG, MSG,
			   smr->lkey);

	/* NEXT: one event, naming the CQ; none more without re-arming */
	good = !ibv_req_notify_cq(rcq_a, 0) && ibv_poll_cq(rcq_a, 1, &wc) == 0;
	msg_fill(cbuf, MSG, 501);
	good = good && !post_send1(a->cqp, IBV_WR_SEND, 501, cbuf, MSG,
				   cmr->lkey, IBV_SEND_SIGNALED, 0, 0) &&
	       poll_one(scq_a, &wc);
	got = get_event(ch, TMO_MS, &ecq);
	ok(good && got && ecq == rcq_a,
	   "armed (next): ibv_get_cq_event returns the CQ after a Send arrives");
	n = poll_n(rcq_a, &wc, 1, TMO_MS);
	ok(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id >= 500 &&
	   wc.wr_id < 516, "the completion is there to poll");
	for (i = 0; i < 3; i++) {
		msg_fill(cbuf, MSG, 502 + i);
		post_send1(a->cqp, IBV_WR_SEND, 502 + i, cbuf, MSG, cmr->lkey,
			   IBV_SEND_SIGNALED, 0, 0);
		poll_one(scq_a, &wc);
	}
	n = poll_n(rcq_a, &wc, 1, TMO_MS);
	n += poll_n(rcq_a, &wc, 2, TMO_MS);
	got = get_event(ch, QUIET_MS, &ecq);
	ok(n == 3 && !got,
	   "3 more completions without re-arming raise no event (%d polled)",
	   n);

	/* SOLICITED: an unsolicited Send raises none, a solicited one does */
	ibv_req_notify_cq(rcq_a, 1);
	post_send1(a->cqp, IBV_WR_SEND, 505, cbuf, MSG, cmr->lkey,
		   IBV_SEND_SIGNALED, 0, 0);
	poll_one(scq_a, &wc);
	n = poll_n(rcq_a, &wc, 1, TMO_MS);
	got = get_event(ch, QUIET_MS, &ecq);
	ok(n == 1 && !got,
	   "armed (solicited): an unsolicited Send completes without an event");
	post_send1(a->cqp, IBV_WR_SEND, 506, cbuf, MSG, cmr->lkey,
		   IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, 0, 0);
	poll_one(scq_a, &wc);
	got = get_event(ch, TMO_MS, &ecq);
	n = poll_n(rcq_a, &wc, 1, TMO_MS);
	ok(got && ecq == rcq_a && n == 1,
	   "armed (solicited): a solicited Send raises the event");
	got = get_event(ch, QUIET_MS, &ecq);
	ok(!got, "and only one");

	/* two CQs on one channel: each event names its CQ */
	ibv_req_notify_cq(rcq_a, 0);
	ibv_req_notify_cq(rcq_b, 0);
	post_send1(b->cqp, IBV_WR_SEND, 507, cbuf, MSG, cmr->lkey,
		   IBV_SEND_SIGNALED, 0, 0);
	poll_one(b->cscq, &wc);
	got = get_event(ch, TMO_MS, &ecq);
	ok(got && ecq == rcq_b && poll_n(rcq_b, &wc, 1, TMO_MS) == 1,
	   "two CQs on one channel: a Send to QP b raises b's CQ event");
	post_send1(a->cqp, IBV_WR_SEND, 508, cbuf, MSG, cmr->lkey,
		   IBV_SEND_SIGNALED, 0, 0);
	poll_one(scq_a, &wc);
	got = get_event(ch, TMO_MS, &ecq);
	ok(got && ecq == rcq_a && poll_n(rcq_a, &wc, 1, TMO_MS) == 1,
	   "then a Send to QP a raises a's");
	got = get_event(ch, QUIET_MS, &ecq);
	ok(!got, "no third event");

	/*
	 * The race: a sender thread with jittered timing; the consumer
	 * polls, arms, polls again and only then waits.  A lost event would
	 * stall the wait.
	 */
	for (i = 16; i < 16 + RACE_MSGS; i++)
		post_recv1(NULL, srq, 500 + i, sbuf + (size_t)i * MSG, MSG,
			   smr->lkey);
	srand(7);
	pthread_create(&th, NULL, race_sender, &r);
	events = 0;
	arms = 0;
	good = 1;
	for (n = 0; n < RACE_MSGS && good;) {
		if (ibv_poll_cq(rcq_a, 1, &wc) == 1) {
			if (!race_ok(&wc, n))
				good = 0;
			n++;
			continue;
		}
		ibv_req_notify_cq(rcq_a, 0);
		arms++;
		if (ibv_poll_cq(rcq_a, 1, &wc) == 1) {
			if (!race_ok(&wc, n))
				good = 0;
			n++;
			continue;
		}
		if (!get_event(ch, TMO_MS, &ecq) || ecq != rcq_a) {
			diag("no event after %d of %d messages", n, RACE_MSGS);
			good = 0;
			break;
		}
		events++;
	}
	pthread_join(th, NULL);
	/* events of armings whose completion the second poll found */
	while (get_event(ch, QUIET_MS, &ecq))
		events++;
	ok(good && !r.errs && n == RACE_MSGS,
	   "arm/poll racing with %d arriving Sends: no event lost, messages in order",
	   RACE_MSGS);
	ok(events <= arms,
	   "at most one event per arming (%d events, %d armings)", events,
	   arms);
}

/* ---- ERR ---- */

static void test_err(struct conn *c, struct ibv_cq *scq)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	long long before, after;
	struct ibv_wc wc;
	int rv, n;

	rv = ibv_modify_qp(c->cqp, &attr, IBV_QP_STATE);
	ok(!rv, "modify the client QP to ERR");
	while (ibv_poll_cq(scq, 1, &wc) == 1)
		;
	usleep(100000);
	before = doorbells();
	rv = post_send1(c->cqp, IBV_WR_SEND, 900, cbuf, MSG, cmr->lkey,
			IBV_SEND_SIGNALED, 0, 0);
	after = doorbells();
	n = poll_n(scq, &wc, 1, TMO_MS);
	ok(!rv && n == 1 && wc.wr_id == 900 &&
	   wc.status == IBV_WC_WR_FLUSH_ERR,
	   "a post in ERR completes with IBV_WC_WR_FLUSH_ERR (status %d)",
	   n == 1 ? (int)wc.status : -1);
	ok(after - before == 1, "and rang the doorbell (%lld)",
	   after - before);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr ca, sa;
	struct ibv_cq *c_scq, *c_rcq, *s_scq, *s_rcq;
	struct ibv_cq *cb_scq, *ea_rcq, *eb_rcq, *ea_scq;
	struct ibv_comp_channel *ch = NULL;
	struct ibv_srq_init_attr srq_attr = {
		.attr = { .max_wr = SRQ_WR, .max_sge = 1 },
	};
	struct ibv_srq *srq = NULL;
	struct conn c1, ca1, cb1;
	int up1 = 0, upa = 0, upb = 0, nconn;

	if (argc != 5) {
		fprintf(stderr, "usage: %s NETNS SRV_IP CLI_DEV SRV_DEV\n",
			argv[0]);
		return 2;
	}
	if (kiwi_sockaddr_in(&srv_addr, argv[2], PORT)) {
		fprintf(stderr, "bad address %s\n", argv[2]);
		return 2;
	}

	cli_ch = rdma_create_event_channel();
	srv_ch = rdma_create_event_channel();
	cctx = find_ctx(argv[3]);
	sctx = find_ctx(argv[4]);
	if (!ok(cli_ch && srv_ch && cctx && sctx,
		"rdma_cm sees %s and %s", argv[3], argv[4]))
		return tap_end();
	if (!ok(doorbells() >= 0, "%s is readable", DOORBELLS))
		return tap_end();
	if (!ok(!kiwi_cm_listen(srv_ch, (struct sockaddr *)&srv_addr, 8,
			       argv[1], &listen_id),
		"listening on %s in netns %s", argv[2], argv[1]))
		return tap_end();

	cbuf_len = (size_t)BURST * BURST_SIZE;
	sbuf_len = cbuf_len;
	cbuf = aligned_alloc(4096, cbuf_len);
	sbuf = aligned_alloc(4096, sbuf_len);
	cpd = ibv_alloc_pd(cctx);
	spd = ibv_alloc_pd(sctx);
	cmr = cpd && cbuf ? reg(cpd, cbuf, cbuf_len) : NULL;
	smr = spd && sbuf ? reg(spd, sbuf, sbuf_len) : NULL;
	c_scq = ibv_create_cq(cctx, 4096, NULL, NULL, 0);
	c_rcq = ibv_create_cq(cctx, 64, NULL, NULL, 0);
	s_scq = ibv_create_cq(sctx, 64, NULL, NULL, 0);
	s_rcq = ibv_create_cq(sctx, 4096, NULL, NULL, 0);
	ch = ibv_create_comp_channel(sctx);
	ea_rcq = ch ? ibv_create_cq(sctx, 1024, NULL, ch, 0) : NULL;
	eb_rcq = ch ? ibv_create_cq(sctx, 1024, NULL, ch, 0) : NULL;
	ea_scq = ibv_create_cq(cctx, 1024, NULL, NULL, 0);
	cb_scq = ibv_create_cq(cctx, 1024, NULL, NULL, 0);
	srq = spd ? ibv_create_srq(spd, &srq_attr) : NULL;
	if (!ok(cmr && smr && c_scq && c_rcq && s_scq && s_rcq && ea_rcq &&
		eb_rcq && ea_scq && cb_scq && srq,
		"PDs, MRs, CQs (two on one channel), SRQ created"))
		return tap_end();

	/* connection 1: RQ, SQ deep enough for the threads' posts */
	memset(&ca, 0, sizeof(ca));
	ca.send_cq = c_scq;
	ca.recv_cq = c_rcq;
	ca.qp_type = IBV_QPT_RC;
	ca.cap.max_send_wr = 1024;
	ca.cap.max_recv_wr = 16;
	ca.cap.max_send_sge = 3;
	ca.cap.max_recv_sge = 1;
	ca.cap.max_inline_data = 96;
	memset(&sa, 0, sizeof(sa));
	sa.send_cq = s_scq;
	sa.recv_cq = s_rcq;
	sa.qp_type = IBV_QPT_RC;
	sa.cap.max_send_wr = 16;
	sa.cap.max_recv_wr = 1024;
	sa.cap.max_send_sge = 1;
	sa.cap.max_recv_sge = 1;
	up1 = !conn_make(&c1, &ca, &sa);
	ok(up1, "connection 1 established (client QP %u, server QP %u)",
	   up1 ? c1.cqp->qp_num : 0, up1 ? c1.sqp->qp_num : 0);
	ok(up1 && ca.cap.max_inline_data >= 96,
	   "max_inline_data 96 granted (%u)", ca.cap.max_inline_data);

	/* connections a and b: server QPs on one SRQ, CQs on one channel */
	ca.send_cq = ea_scq;
	ca.cap.max_send_wr = 256;
	sa.recv_cq = ea_rcq;
	sa.srq = srq;
	sa.cap.max_recv_wr = 0;
	upa = !conn_make(&ca1, &ca, &sa);
	ca.send_cq = cb_scq;
	sa.recv_cq = eb_rcq;
	upb = !conn_make(&cb1, &ca, &sa);
	ok(upa && upb, "connections a and b established, server QPs on one SRQ");

	if (up1) {
		test_doorbell_idle(&c1, c_scq);
		test_doorbell_method(&c1);
		test_doorbell_burst(&c1, c_scq);
		test_doorbell_jitter(&c1);
		test_inline(&c1, c_scq, s_rcq);
		test_mt(&c1, c_scq, s_rcq);
	}
	if (upa && upb) {
		test_srq(&ca1, &cb1, srq, ea_scq, cb_scq, ea_rcq, eb_rcq);
		test_events(&ca1, &cb1, srq, ch, ea_rcq, eb_rcq);
	}
	if (up1)
		test_err(&c1, c_scq);

	/* c1 is disconnecting after ERR; a and b are closed here */
	nconn = up1 + upa + upb;
	if (upa)
		rdma_disconnect(ca1.cid);
	if (upb)
		rdma_disconnect(cb1.cid);
	ok(!wait_disconnects(cli_ch, nconn) && !wait_disconnects(srv_ch, nconn),
	   "every connection reports DISCONNECTED on both sides");
	if (up1)
		conn_destroy(&c1);
	if (upa)
		conn_destroy(&ca1);
	if (upb)
		conn_destroy(&cb1);
	rdma_destroy_id(listen_id);
	ok(!ibv_destroy_srq(srq) && !ibv_destroy_cq(ea_rcq) &&
	   !ibv_destroy_cq(eb_rcq) && !ibv_destroy_cq(ea_scq) &&
	   !ibv_destroy_cq(cb_scq) && !ibv_destroy_cq(c_scq) &&
	   !ibv_destroy_cq(c_rcq) && !ibv_destroy_cq(s_scq) &&
	   !ibv_destroy_cq(s_rcq) && !ibv_destroy_comp_channel(ch) &&
	   !ibv_dereg_mr(cmr) && !ibv_dereg_mr(smr) &&
	   !ibv_dealloc_pd(cpd) && !ibv_dealloc_pd(spd),
	   "every object destroyed");
	rdma_destroy_event_channel(cli_ch);
	rdma_destroy_event_channel(srv_ch);
	free(cbuf);
	free(sbuf);
	return tap_end();
}
